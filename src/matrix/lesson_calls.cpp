// Rows in a course module's function that nothing in the lesson calls: the module's call graph
// (module_graph.hpp), reached from its own top-level code and from what each file importing it
// reads of it, through the functions' own calls.
#include "lesson_calls.hpp"

#include <algorithm>
#include <deque>
#include <vector>

#include <fmt/format.h>

#include "lesson_imports.hpp"
#include "tpulaunch/classify/module_graph.hpp"

namespace tpulaunch::lesson {
namespace {

// The names of `graph`'s functions something reaches, or nullopt when anything may: the module's
// own top-level code, and the reads of each importer, followed through the functions' bodies.
std::optional<std::set<std::string, std::less<>>> reached_functions(const std::string& staged,
                                                                    const CourseModule& module,
                                                                    const ModuleGraph& graph,
                                                                    const LessonModules& lesson) {
  std::deque<std::string> queue(graph.reached.begin(), graph.reached.end());
  for (const auto& importer : module.importers) {
    const std::string* text = nullptr;
    std::string_view source = lesson.script_text;
    if (importer != lesson.script) {
      const auto it = lesson.modules.find(importer);
      text = it == lesson.modules.end() ? nullptr : it->second.text;
      if (text == nullptr) {
        return std::nullopt; // an importer not read: nothing is known of what it calls
      }
      source = *text;
    }
    const ModuleUse use = read_module_use(source, [&](std::uint32_t level, std::string_view dotted) {
      const auto file = module_file(level, dotted, importer, lesson.script, *lesson.probe);
      return file && *file == staged;
    });
    if (!use.all.empty()) {
      return std::nullopt;
    }
    queue.insert(queue.end(), use.names.begin(), use.names.end());
  }
  std::set<std::string, std::less<>> reached;
  while (!queue.empty()) {
    std::string name = std::move(queue.front());
    queue.pop_front();
    if (!reached.insert(name).second) {
      continue;
    }
    for (const auto& function : graph.functions) {
      if (function.name == name) {
        queue.insert(queue.end(), function.names.begin(), function.names.end());
      }
    }
  }
  return reached;
}

} // namespace

void mark_uncalled(Classification& classification, const LessonModules& lesson) {
  for (const auto& [staged, module] : lesson.modules) {
    if (module.open || module.text == nullptr) {
      continue; // loaded by a call or a path, declared, or never read: every row counts
    }
    std::vector<Evidence*> rows;
    for (auto& row : classification.evidence) {
      if (row.file == module.shown && row.counts()) {
        rows.push_back(&row);
      }
    }
    if (rows.empty()) {
      continue; // most helpers: nothing to decide, nothing more to read
    }
    const ModuleGraph graph = read_module_graph(*module.text);
    if (!graph.open.empty() || graph.functions.empty()) {
      continue;
    }
    std::optional<std::set<std::string, std::less<>>> reached;
    bool asked = false;
    for (Evidence* row : rows) {
      const ModuleFunction* function = graph.function_at(row->line, row->column);
      if (function == nullptr) {
        continue; // module-level code runs when the module is imported
      }
      if (!asked) {
        reached = reached_functions(staged, module, graph, lesson);
        asked = true;
      }
      if (!reached || reached->contains(function->name)) {
        continue;
      }
      row->uncalled = function->name;
      row->detail =
          fmt::format("uncalled: it is in {}() ({} line {}), which nothing in the lesson calls, so it counts "
                      "for nothing{}{}",
                      function->name, module.shown, function->line, row->detail.empty() ? "" : "; ", row->detail);
    }
  }
}

} // namespace tpulaunch::lesson
