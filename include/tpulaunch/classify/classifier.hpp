#pragma once
// The script classifier: reads Python source as tokens (never as text, so strings, docstrings and
// comments are never evidence), resolves dotted calls through the script's imports, and reports
// evidence rows from a rule table plus a suggested ScriptClass. A suggestion is never a review: it
// only helps a reviewer, and `suggested == nullopt` means a human has to decide.
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tpulaunch/classify/python_lexer.hpp"
#include "tpulaunch/classify/script_class.hpp"

namespace tpulaunch {

enum class Category { cpu_selection, multi_host, backend_assertion };

// "cpu-selection", "multi-host" or "backend-assertion".
std::string_view to_string(Category category);

// Every rule of the classifier, in the order of its table (classifier_rules()).
enum class Rule : std::uint8_t {
  devices_cpu,
  local_devices_cpu,
  get_backend_cpu,
  default_device_cpu,
  backend_cpu_kwarg,
  config_platforms_cpu,
  config_default_device_cpu,
  env_platforms_cpu,
  env_default_device_cpu,
  xla_force_host_devices,
  num_cpu_devices,
  platform_unresolved,
  source_unreadable,
  import_unresolved,
  distributed_initialize,
  process_index,
  process_count,
  process_index_printed,
  process_local_data,
  collective,
  global_barrier,
  result_check,
  shape_assert,
  backend_is_tpu,
};

// The rule's stable kebab-case id, as output, docs and matrix files spell it: "devices-cpu".
std::string_view to_string(Rule rule);

// One match of a rule in the source.
// `implies` is the rule table's own text (static, like every ClassifierRule's): a row costs no
// copy of it, and the classifier makes tens of thousands of rows for a large course.
struct Evidence {
  Rule rule = Rule::devices_cpu; // printed as to_string(rule), e.g. "devices-cpu"
  Category category = Category::cpu_selection;
  std::uint32_t line = 0;   // 1-based, of the token where the match starts
  std::uint32_t column = 0; // 1-based, in bytes of the UTF-8 text read (see classify_source)
  std::string text;       // that source line, trimmed (cut to 200 bytes + "...")
  std::string_view implies; // the rule's one-line meaning
  std::string detail{};   // for a rule that cannot decide: what it could not read, e.g.
                          // "'PLAT' is bound 2 times (lines 3, 9)"; for distributed-initialize, the
                          // condition it runs under ("conditional: it runs only inside `if ...:`
                          // (line 3), ..."); empty otherwise
  std::string file{};     // the course file the row was found in, relative to the script's folder
                          // ("lesson_helpers.py", "pkg/mod.py"); empty for the script itself
  // The top-level function of that course file the row is in, when nothing in the lesson calls it
  // (the lesson reader decides: lesson.hpp): the row is reported and counts for nothing, so
  // has_rule, has_category, of_category and the suggestion pass over it. Empty: the row counts.
  std::string uncalled{};

  // True when the row counts for the script (it is in no uncalled function).
  [[nodiscard]] bool counts() const { return uncalled.empty(); }
};

// Where `evidence` is, for a person: "line 4", or "lesson_helpers.py line 4" for a helper's row.
std::string evidence_place(const Evidence& evidence);

// One import statement's module, as written: `import a.b as z` is {0, "a.b", {}}, `from .x import
// y, z` is {1, "x", {"y", "z"}} and `from .. import y` is {2, "", {"y"}}; or a module a call loads
// by a literal name (`importlib.import_module("common.backends")` is {0, "common.backends", {}}
// with `call` set). Which of these name a file of the course is for the lesson reader (lesson.hpp).
struct ImportedModule {
  std::uint32_t level = 0;          // leading dots of a relative import; 0 for an absolute one
  std::string module;               // dotted, without the leading dots; may be empty when level > 0
  std::vector<std::string> names{}; // of `from ... import names` (each may be a submodule)
  std::uint32_t line = 0;           // of the `import` or `from` keyword, or of the call
  std::string call{};               // the call that loads it ("importlib.import_module()"); empty for
                                    // an import statement

  friend bool operator==(const ImportedModule&, const ImportedModule&) = default;
};

// A file a call loads by its path (`runpy.run_path("common/setup.py")`, `exec(open(path).read())`,
// `importlib.util.spec_from_file_location(name, path)`): the lesson reader follows it like an
// import when it names a file of the course. Until then the scanner's import-unresolved row at
// (line, column) stands for it, and stays when the path names no course file.
struct LoadedFile {
  std::string path;              // the literal path, as written
  bool from_file_folder = false; // relative to the loading file's folder (`os.path.dirname(__file__)`),
                                 // not to the working folder
  std::uint32_t line = 0;        // of the call, as its import-unresolved row
  std::uint32_t column = 0;
  std::string call; // "runpy.run_path()"

  friend bool operator==(const LoadedFile&, const LoadedFile&) = default;
};

// The result of classifying one script.
struct Classification {
  std::vector<Evidence> evidence;          // in source order
  std::optional<ScriptClass> suggested;    // nullopt: no suggestion is possible; `why` says why
  std::string why;                         // one sentence explaining the suggestion (or its absence)
  std::vector<std::string> contradictions; // e.g. "cpu selection at line 3 contradicts ... at line 9"
  std::optional<LexError> lex_error;       // the source is not valid Python there; no suggestion
  std::vector<ImportedModule> imports;     // every import statement's module (and every module a
                                           // call loads by a literal name), in source order
  std::vector<LoadedFile> loaded_files;    // every file a call loads by a literal path, in source order

  // True when some evidence row that counts (Evidence::counts) is of `rule`.
  [[nodiscard]] bool has_rule(Rule rule) const;
  // True when some evidence row that counts is in `category`.
  [[nodiscard]] bool has_category(Category category) const;
  // The evidence rows that count in `category`, in source order (pointers into `evidence`).
  [[nodiscard]] std::vector<const Evidence*> of_category(Category category) const;
};

// Logs (spdlog debug, shown with -v) how much evidence the classifier found in the file at `path`.
void log_classification(std::string_view path, const Classification& classification);

// True when `evidence` is a row of an undecided rule (a possible selection, not a certain one).
bool is_undecided(const Evidence& evidence);

// Classifies Python source, read as Python reads it: a file that declares Latin-1 or cp1252
// (PEP 263, source_encoding.hpp) is decoded to UTF-8 first. Never fails, and fails closed: a value it cannot resolve, source it
// cannot read (a lex_error) or nesting past its limits is cpu-selection evidence of an
// `undecided` rule, never a clean single-host-compatible.
Classification classify_source(std::string_view source);

// What a course module binds a name to, for a platform value a script imports from it (`from
// common.cfg import PLATFORM` ... `jax.config.update("jax_platforms", PLATFORM)`).
struct ImportedConstant {
  std::optional<std::string> value; // the string literal the module binds the name to (bound once)
  std::string where;                // where that is, for a person: "common/cfg.py line 3"
  std::string why_unknown;          // when `value` is empty, why: "'PLATFORM' is bound 2 times ..."
};

// Answers for the scanner what `name` holds in `module` (an import of the file being scanned);
// nullopt when `module` is no file of the course. The lesson reader gives one; without one, a
// value imported from another file stays unknown (platform-unresolved).
using ConstantLookup =
    std::function<std::optional<ImportedConstant>(const ImportedModule& module, std::string_view name)>;

// The evidence and imports of `source` with no suggestion yet: the lesson reader scans a script
// and each course file it imports this way, adds the files' rows to the script's, then suggests
// once. `lookup` (may be empty) resolves values the file imports from course modules.
Classification scan_source(std::string_view source, const ConstantLookup& lookup = {});

// What `source` (a Python module) binds `name` to at its top level, for a ConstantLookup: the
// string literal of a name bound once to one (directly or through other names of the file);
// else why not, and, for `from M import NAME [as name]`, that import (`from` set, its `names`
// holding NAME) for the caller to follow into M.
struct ModuleConstant {
  std::optional<std::string> value;
  std::uint32_t line = 0; // of the binding that gives the value, or of the import
  std::string why_unknown;
  std::optional<ImportedModule> from; // the name comes from this import
};
ModuleConstant module_constant(std::string_view source, std::string_view name);

// True when the module `source` may bind `name` at all: some statement of it binds the name (an
// assignment, def, class, import...), or it star-imports or defines a module __getattr__ (then any
// name may exist). For `from package import name`, where a name that is no submodule must be
// bound in the package's __init__.py.
bool module_may_bind(std::string_view source, std::string_view name);

// Fills `suggested`, `why` and `contradictions` from the evidence (classify_source does this
// after scan_source); whatever they held before is replaced.
void suggest_class(Classification& classification);

// A row of the rule table: a stable kebab-case id, its category, the matched code as human text
// and what a match implies. docs and `--help` print this table.
struct ClassifierRule {
  Rule rule;
  std::string_view id; // to_string(rule)
  Category category;
  std::string_view pattern;
  std::string_view implies;
  bool undecided = false; // the classifier cannot tell: evidence of a possible selection, not proof
};

// Every rule, grouped by category, in a fixed order.
std::span<const ClassifierRule> classifier_rules();

// The rule with this id, or nullptr.
const ClassifierRule* find_classifier_rule(std::string_view id);

// The table's row of `rule`.
const ClassifierRule& classifier_rule(Rule rule);

// The evidence a multi-host-qualified review needs, in the order they are reported.
enum class Marker : std::uint8_t { initialize, per_process_data, collective, result_check };

// A marker a multi-host-qualified review needs: present when any of `rules` has evidence.
struct MultiHostMarker {
  Marker marker;
  std::string_view name;       // as printed: "initialize", "per-process data", "collective", "result check"
  std::span<const Rule> rules; // evidence of any of these is the marker
  // Why a reviewer's override cannot stand in for this marker (empty: it can). `review`,
  // `plan` and `check` all read this one field.
  std::string_view not_overridable;
};

// The four marker groups, in the order they are reported.
std::span<const MultiHostMarker> multi_host_markers();

// Names of the marker groups without evidence in `classification`, in table order.
std::vector<std::string_view> missing_multi_host_markers(const Classification& classification);

// An environment variable the classifier reads as CPU selection when a script sets it
// (os.environ[KEY] = VALUE and the other forms of its rules): the name, and the rule a selecting
// value is evidence of. plan refuses the same values as `--env` on a TPU route.
struct CpuSelectingEnv {
  std::string_view key;
  Rule rule;
};

// Every such variable, in the classifier's own table order.
std::span<const CpuSelectingEnv> cpu_selecting_env();

// The rule a script setting `key` to `value` would be evidence of ("JAX_DEFAULT_DEVICE", "cpu":
// env-default-device-cpu), or nullopt when that value selects no CPU device.
std::optional<Rule> env_selects_cpu(std::string_view key, std::string_view value);

} // namespace tpulaunch
