#pragma once
// The script classifier: reads Python source as tokens (never as text, so strings, docstrings and
// comments are never evidence), resolves dotted calls through the script's imports, and reports
// evidence rows from a rule table plus a suggested ScriptClass. A suggestion is never a review: it
// only helps a reviewer, and `suggested == nullopt` means a human has to decide.
#include <cstdint>
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
};

// Where `evidence` is, for a person: "line 4", or "lesson_helpers.py line 4" for a helper's row.
std::string evidence_place(const Evidence& evidence);

// One import statement's module, as written: `import a.b as z` is {0, "a.b", {}}, `from .x import
// y, z` is {1, "x", {"y", "z"}} and `from .. import y` is {2, "", {"y"}}. Which of these name a
// file of the course is for the lesson reader (lesson.hpp) to find.
struct ImportedModule {
  std::uint32_t level = 0;          // leading dots of a relative import; 0 for an absolute one
  std::string module;               // dotted, without the leading dots; may be empty when level > 0
  std::vector<std::string> names{}; // of `from ... import names` (each may be a submodule)
  std::uint32_t line = 0;           // of the `import` or `from` keyword

  friend bool operator==(const ImportedModule&, const ImportedModule&) = default;
};

// The result of classifying one script.
struct Classification {
  std::vector<Evidence> evidence;          // in source order
  std::optional<ScriptClass> suggested;    // nullopt: no suggestion is possible; `why` says why
  std::string why;                         // one sentence explaining the suggestion (or its absence)
  std::vector<std::string> contradictions; // e.g. "cpu selection at line 3 contradicts ... at line 9"
  std::optional<LexError> lex_error;       // the source is not valid Python there; no suggestion
  std::vector<ImportedModule> imports;     // every import statement's module, in source order

  // True when some evidence row is of `rule`.
  [[nodiscard]] bool has_rule(Rule rule) const;
  // True when some evidence row is in `category`.
  [[nodiscard]] bool has_category(Category category) const;
  // The evidence rows in `category`, in source order (pointers into `evidence`).
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

// The evidence and imports of `source` with no suggestion yet: the lesson reader scans a script
// and each course file it imports this way, adds the files' rows to the script's, then suggests once.
Classification scan_source(std::string_view source);

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
