#pragma once
// Which top-level functions of a course module may run, as far as tokens show: the lesson reader's
// call graph (lesson.hpp), so that evidence in a helper's function nothing calls (a
// `cpu_debug_devices()` in common/mesh.py) counts for nothing while evidence in one a lesson calls,
// or at module level, counts. Read only for modules with evidence inside a function, so most
// files never pay for it. Fails closed: a name read anywhere reaches the function of that name,
// a decorator reaches the function it wraps, and a module that may call its functions by name
// (globals(), vars(), sys.modules, eval, exec...) is `open`: every function may run.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace tpulaunch {

// One top-level `def` (or `async def`) of a module.
struct ModuleFunction {
  std::string name;
  std::uint32_t line = 0; // of its `def`
  // Its body: from the first token after the header's `:` to its last token (lines and columns
  // as Evidence counts them). A row between them is in the function.
  std::uint32_t body_line = 0;
  std::uint32_t body_column = 0;
  std::uint32_t end_line = 0;
  std::uint32_t end_column = 0;
  std::vector<std::string> names{}; // the bare names its body reads (a call, a reference), in order
};

struct ModuleGraph {
  std::vector<ModuleFunction> functions; // every top-level def, in source order
  // The bare names the rest of the module reads when it is imported: top-level statements, class
  // bodies, decorators (so a decorated function is reached), default values and annotations.
  std::vector<std::string> reached;
  std::string open; // why any function may run ("globals() at line 12"); empty when none can so

  // The function whose body holds the position, or nullptr (module-level code, a class body).
  [[nodiscard]] const ModuleFunction* function_at(std::uint32_t line, std::uint32_t column) const;
};

// The call graph of the module `source`.
ModuleGraph read_module_graph(std::string_view source);

// What one file that imports a module reads of it: the names it imports from it and the attributes
// of it it reads; or `all`, why every function may be reached (a star import, the module object
// used as a value: passed on, returned, handed to getattr).
struct ModuleUse {
  std::vector<std::string> names;
  std::string all;
};

// True when the import `level` dots + `dotted` (as the importer writes it) names the module.
using ModuleTest = std::function<bool(std::uint32_t level, std::string_view dotted)>;

// What the file `importer` reads of the module for which `is_module` is true.
ModuleUse read_module_use(std::string_view importer, const ModuleTest& is_module);

} // namespace tpulaunch
