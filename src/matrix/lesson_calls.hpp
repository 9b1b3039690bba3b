#pragma once
// Evidence in a course module's function that nothing in the lesson calls: reported, and counts
// for nothing (Evidence::uncalled). The lesson reader gives what it learnt while following the
// imports; the call graph of each module and the uses of it in each importer come from
// module_graph.hpp. Fails closed: a module loaded by a call, by path or declared, one whose
// functions may be reached by name (globals(), sys.modules...), one an importer star-imports or
// hands on as an object, keeps every row. Internal to the matrix folder.
#include <map>
#include <set>
#include <string>
#include <string_view>

#include "tpulaunch/classify/classifier.hpp"
#include "tpulaunch/matrix/lesson.hpp"

namespace tpulaunch::lesson {

// One Python file of the lesson other than the script.
struct CourseModule {
  std::string shown;                 // as Evidence::file names it (relative to the script's folder)
  const std::string* text = nullptr; // its source, as read
  bool open = false;                 // loaded by a call, by a path or declared: any function may run
  std::set<std::string> importers;   // the files (staged paths; the script too) whose import statements lead to it
};

// What mark_uncalled needs to know of the lesson.
struct LessonModules {
  std::string_view script;      // the script's staged path
  std::string_view script_text; // its source
  const ImportProbe* probe = nullptr;
  std::map<std::string, CourseModule> modules; // by staged path
};

// Sets Evidence::uncalled (and says so in its detail) on every row of `classification` found in
// a top-level function of a course module that nothing in the lesson calls.
void mark_uncalled(Classification& classification, const LessonModules& lesson);

} // namespace tpulaunch::lesson
