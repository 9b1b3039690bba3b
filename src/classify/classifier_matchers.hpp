#pragma once
// How the scanner recognises each rule: the callees it matches (after alias resolution) with the
// argument check that decides whether a call is evidence, and the environment and configuration
// keys whose values select a platform. Internal to the classifier.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "tpulaunch/classify/classifier.hpp"

namespace tpulaunch::scan {

// How a matched callee's arguments decide whether it is evidence.
enum class ArgCheck : std::uint8_t {
  none,          // the call itself (or, for `reference` rows, any use of the name) is the evidence
  backend_cpu,   // a positional argument or backend= is "cpu"
  cpu_device,    // the device argument is a CPU device (a jax.devices("cpu") call or a name assigned
                 // from one) or the platform name "cpu", which JAX takes where a device goes
  config_key,    // (name, value): name looked up in k_config_keys
  env_pair,      // (name, value): name looked up in k_env_keys
  env_mapping,   // {name: value, ...} or name=value: names looked up in k_env_keys
  backend_probe, // jax.default_backend(): not evidence itself, one side of backend-is-tpu
  computed,      // getattr(<namespace>, name): a function of jax or os picked by a computed name
  // Code that arrives by other doors (scanner_loads.cpp):
  load_module,     // importlib.import_module(name, package): a module loaded by name
  dunder_import,   // __import__(name, globals, locals, fromlist, level)
  run_module,      // runpy.run_module(mod_name): a module run by name
  load_path,       // runpy.run_path(path), spec_from_file_location(name, path)...: a file loaded by path
  exec_code,       // exec(source), eval(source): code from a string, a file read, compile()
  started_program, // subprocess.run(...), os.system(...): a command line that may set JAX_PLATFORMS=cpu
};

struct CallMatcher {
  std::string_view callee; // fully-qualified, after alias resolution
  std::optional<Rule> rule; // nullopt when the key table decides
  ArgCheck check;
  bool reference; // also matches a use that is not a call (e.g. partial(shard_map, ...))
  // The checked parameter: its position and keyword (backend_cpu: the backend; cpu_device: the
  // device; config_key and env_pair: the key, with the value at position + 1 and keywords[1]).
  std::uint8_t position = 0;
  std::array<std::string_view, 2> keywords{};
  // The call lists devices: whatever it returns is a device (a CPU one when the backend is "cpu"),
  // so a device argument built from it, or a name assigned from it, is no platform name.
  bool lists_devices = false;
  // The rule of a `none` match whose nearest enclosing call prints or logs it (k_output_calls):
  // `print(jax.process_index())` reports which process this is, it is no per-process data.
  std::optional<Rule> output_rule{};
  // A `none` match whose row says the condition it runs under (statement_condition.hpp).
  bool says_condition = false;
};

inline constexpr std::array<CallMatcher, 75> k_call_matchers{{
    {"jax.devices", Rule::devices_cpu, ArgCheck::backend_cpu, false, 0, {"backend", ""}, true},
    // local_devices(process_index=None, backend=None, host_id=None)
    {"jax.local_devices", Rule::local_devices_cpu, ArgCheck::backend_cpu, false, 1, {"backend", ""}, true},
    {"jax.extend.backend.get_backend", Rule::get_backend_cpu, ArgCheck::backend_cpu, false, 0, {"platform", ""}},
    {"jax.lib.xla_bridge.get_backend", Rule::get_backend_cpu, ArgCheck::backend_cpu, false, 0, {"platform", ""}},
    {"jax._src.xla_bridge.get_backend", Rule::get_backend_cpu, ArgCheck::backend_cpu, false, 0, {"platform", ""}},
    // default_device(new_val): a Device, or a platform name ('cpu', 'gpu', 'tpu': jax/_src/config.py)
    {"jax.default_device", Rule::default_device_cpu, ArgCheck::cpu_device, false, 0, {"new_val", ""}},
    // Config.update(self, name, val)
    {"jax.config.update", {}, ArgCheck::config_key, false, 0, {"name", "val"}},
    // `config.update` with an unresolved `config`: the keys below are JAX's own names.
    {"config.update", {}, ArgCheck::config_key, false, 0, {"name", "val"}},
    {"os.environ.setdefault", {}, ArgCheck::env_pair, false, 0, {"key", "default"}},
    {"os.environ.__setitem__", {}, ArgCheck::env_pair, false, 0, {}},
    {"os.putenv", {}, ArgCheck::env_pair, false, 0, {}},
    {"os.environ.update", {}, ArgCheck::env_mapping, false},
    // getattr(object, name): platform-unresolved when it reaches a selecting function by name.
    {"getattr", {}, ArgCheck::computed, false},
    {"jax.distributed.initialize", Rule::distributed_initialize, ArgCheck::none, false, 0, {}, false, {}, true},
    {"jax.process_index", Rule::process_index, ArgCheck::none, false, 0, {}, false, Rule::process_index_printed},
    {"jax.process_count", Rule::process_count, ArgCheck::none, false, 0, {}, false, Rule::process_index_printed},
    {"jax.lax.psum", Rule::collective, ArgCheck::none, true},
    {"jax.lax.pmean", Rule::collective, ArgCheck::none, true},
    {"jax.lax.pmax", Rule::collective, ArgCheck::none, true},
    {"jax.lax.pmin", Rule::collective, ArgCheck::none, true},
    {"jax.lax.all_gather", Rule::collective, ArgCheck::none, true},
    {"jax.lax.psum_scatter", Rule::collective, ArgCheck::none, true},
    {"jax.lax.ppermute", Rule::collective, ArgCheck::none, true},
    {"jax.lax.all_to_all", Rule::collective, ArgCheck::none, true},
    {"jax.experimental.shard_map.shard_map", Rule::collective, ArgCheck::none, true},
    {"jax.shard_map", Rule::collective, ArgCheck::none, true},
    // Both a collective and per-process data, so it yields two rows.
    {"jax.make_array_from_process_local_data", Rule::collective, ArgCheck::none, false},
    {"jax.make_array_from_process_local_data", Rule::process_local_data, ArgCheck::none, false},
    {"jax.make_array_from_single_device_arrays", Rule::collective, ArgCheck::none, false},
    {"jax.experimental.multihost_utils.process_allgather", Rule::collective, ArgCheck::none, false},
    {"jax.experimental.multihost_utils.host_local_array_to_global_array", Rule::collective, ArgCheck::none, false},
    {"jax.experimental.multihost_utils.sync_global_devices", Rule::global_barrier, ArgCheck::none, false},
    // Code loaded by name or path, or run from a string (docs/matrix.md lists the forms followed).
    {"importlib.import_module", {}, ArgCheck::load_module, false, 0, {"name", "package"}},
    {"__import__", {}, ArgCheck::dunder_import, false, 0, {"name", ""}},
    {"builtins.__import__", {}, ArgCheck::dunder_import, false, 0, {"name", ""}},
    {"importlib.__import__", {}, ArgCheck::dunder_import, false, 0, {"name", ""}},
    {"runpy.run_module", {}, ArgCheck::run_module, false, 0, {"mod_name", ""}},
    {"runpy.run_path", {}, ArgCheck::load_path, false, 0, {"path_name", ""}},
    {"importlib.util.spec_from_file_location", {}, ArgCheck::load_path, false, 1, {"location", ""}},
    {"importlib.machinery.SourceFileLoader", {}, ArgCheck::load_path, false, 1, {"path", ""}},
    {"imp.load_source", {}, ArgCheck::load_path, false, 1, {"pathname", ""}},
    {"exec", {}, ArgCheck::exec_code, false, 0, {"source", ""}},
    {"eval", {}, ArgCheck::exec_code, false, 0, {"source", ""}},
    {"builtins.exec", {}, ArgCheck::exec_code, false, 0, {"source", ""}},
    {"builtins.eval", {}, ArgCheck::exec_code, false, 0, {"source", ""}},
    // Programs the script starts: their command line may hand on a CPU platform.
    {"subprocess.run", {}, ArgCheck::started_program, false},
    {"subprocess.Popen", {}, ArgCheck::started_program, false},
    {"subprocess.call", {}, ArgCheck::started_program, false},
    {"subprocess.check_call", {}, ArgCheck::started_program, false},
    {"subprocess.check_output", {}, ArgCheck::started_program, false},
    {"subprocess.getoutput", {}, ArgCheck::started_program, false},
    {"subprocess.getstatusoutput", {}, ArgCheck::started_program, false},
    {"os.system", {}, ArgCheck::started_program, false},
    {"os.popen", {}, ArgCheck::started_program, false},
    {"os.execv", {}, ArgCheck::started_program, false},
    {"os.execve", {}, ArgCheck::started_program, false},
    {"os.execvp", {}, ArgCheck::started_program, false},
    {"os.execvpe", {}, ArgCheck::started_program, false},
    {"os.execl", {}, ArgCheck::started_program, false},
    {"os.execle", {}, ArgCheck::started_program, false},
    {"os.execlp", {}, ArgCheck::started_program, false},
    {"os.execlpe", {}, ArgCheck::started_program, false},
    {"os.spawnv", {}, ArgCheck::started_program, false},
    {"os.spawnve", {}, ArgCheck::started_program, false},
    {"os.spawnvp", {}, ArgCheck::started_program, false},
    {"os.spawnvpe", {}, ArgCheck::started_program, false},
    {"os.spawnl", {}, ArgCheck::started_program, false},
    {"os.spawnle", {}, ArgCheck::started_program, false},
    {"os.spawnlp", {}, ArgCheck::started_program, false},
    {"os.spawnlpe", {}, ArgCheck::started_program, false},
    {"os.posix_spawn", {}, ArgCheck::started_program, false},
    {"os.posix_spawnp", {}, ArgCheck::started_program, false},
    {"asyncio.create_subprocess_exec", {}, ArgCheck::started_program, false},
    {"asyncio.create_subprocess_shell", {}, ArgCheck::started_program, false},
    {"pty.spawn", {}, ArgCheck::started_program, false},
}};

// The last part of a dotted name: "devices" of "jax.devices".
constexpr std::string_view last_name(std::string_view dotted) {
  return dotted.substr(dotted.rfind('.') + 1);
}

// A name's bucket in the scanner's 4096-bit name filter (its length and first and last bytes):
// cheap enough for every name token.
constexpr std::size_t name_bucket(std::string_view name) {
  if (name.empty()) {
    return 0;
  }
  const auto first = static_cast<unsigned char>(name.front());
  const auto last = static_cast<unsigned char>(name.back());
  return (name.size() * 131U + first * 31U + last) & 4095U;
}

// The matchers' indexes grouped by the bucket of their callee's last name, in table order within a
// bucket: a chain that ends in a name no callee ends in matches no row, and one that does is
// compared with the few matchers of its bucket, not with the whole table.
struct MatcherIndex {
  std::array<std::uint8_t, 4097> offsets{}; // bucket b's matchers are indexes[offsets[b], offsets[b + 1])
  std::array<std::uint8_t, k_call_matchers.size()> indexes{};
};
static_assert(k_call_matchers.size() < 256);
constexpr MatcherIndex make_matcher_index() {
  MatcherIndex index;
  std::array<std::uint8_t, 4096> counts{};
  for (const auto& matcher : k_call_matchers) {
    ++counts[name_bucket(last_name(matcher.callee))];
  }
  for (std::size_t b = 0; b < counts.size(); ++b) {
    index.offsets[b + 1] = static_cast<std::uint8_t>(index.offsets[b] + counts[b]);
  }
  std::array<std::uint8_t, 4096> filled{};
  for (std::size_t i = 0; i < k_call_matchers.size(); ++i) {
    const std::size_t b = name_bucket(last_name(k_call_matchers[i].callee));
    index.indexes[index.offsets[b] + filled[b]++] = static_cast<std::uint8_t>(i);
  }
  return index;
}
inline constexpr MatcherIndex k_matcher_index = make_matcher_index();

// The matchers whose callee's last name is in `name`'s bucket (most often only those ending in
// `name`, but compare the callee), in table order.
inline std::span<const std::uint8_t> matchers_named(std::string_view name) {
  const std::size_t b = name_bucket(name);
  return std::span<const std::uint8_t>(k_matcher_index.indexes)
      .subspan(k_matcher_index.offsets[b], k_matcher_index.offsets[b + 1] - k_matcher_index.offsets[b]);
}

// A matcher whose arguments can select the CPU (not a plain use, the backend probe, a computed
// attribute or a started program's command line).
constexpr bool arg_selects(const CallMatcher& matcher) {
  return matcher.check == ArgCheck::backend_cpu || matcher.check == ArgCheck::cpu_device ||
         matcher.check == ArgCheck::config_key || matcher.check == ArgCheck::env_pair ||
         matcher.check == ArgCheck::env_mapping;
}

// A matcher that loads code (a module, a file, a string).
constexpr bool loads_code(const CallMatcher& matcher) {
  return matcher.check == ArgCheck::load_module || matcher.check == ArgCheck::dunder_import ||
         matcher.check == ArgCheck::run_module || matcher.check == ArgCheck::load_path ||
         matcher.check == ArgCheck::exec_code;
}

inline constexpr CallMatcher k_default_backend{"jax.default_backend", {}, ArgCheck::backend_probe, false};

// How a value decides whether it is evidence.
enum class ValueCheck : std::uint8_t {
  is_cpu,             // a backend or platform name: "cpu" (any case, surrounding space ignored)
  first_platform_cpu, // a string literal whose first comma-separated platform is "cpu"
  force_host_flag,    // any string in the value contains --xla_force_host_platform_device_count
  device,             // a device or a platform name: a CPU device expression, a name holding one, or
                      // "cpu" (decided as for jax.default_device's argument)
  any,                // the key alone is the evidence
};

struct KeyRule {
  std::string_view key;
  Rule rule;
  ValueCheck check;
};

// Each JAX option's environment variable is its name in upper case; the environment holds
// strings only, so JAX_DEFAULT_DEVICE can only be a platform name.
inline constexpr std::array<KeyRule, 4> k_env_keys{{
    {"JAX_PLATFORMS", Rule::env_platforms_cpu, ValueCheck::first_platform_cpu},
    {"JAX_PLATFORM_NAME", Rule::env_platforms_cpu, ValueCheck::first_platform_cpu},
    {"JAX_DEFAULT_DEVICE", Rule::env_default_device_cpu, ValueCheck::is_cpu},
    {"XLA_FLAGS", Rule::xla_force_host_devices, ValueCheck::force_host_flag},
}};

inline constexpr std::array<KeyRule, 4> k_config_keys{{
    {"jax_platforms", Rule::config_platforms_cpu, ValueCheck::first_platform_cpu},
    {"jax_platform_name", Rule::config_platforms_cpu, ValueCheck::first_platform_cpu},
    {"jax_default_device", Rule::config_default_device_cpu, ValueCheck::device},
    {"jax_num_cpu_devices", Rule::num_cpu_devices, ValueCheck::any},
}};

inline constexpr std::string_view k_force_host_flag = "--xla_force_host_platform_device_count";

// Keywords that define a name: `def NAME(` and `class NAME(` open a list of parameters (or bases),
// not a call's arguments, so `def describe(backend="cpu"):` is a default value, not a selection,
// and `def devices(...)` is not a use of a callee.
inline constexpr std::array<std::string_view, 2> k_definition_keywords{"def", "class"};

inline bool is_definition_keyword(std::string_view word) {
  return std::find(k_definition_keywords.begin(), k_definition_keywords.end(), word) != k_definition_keywords.end();
}

// Calls that print or log their arguments: a name before `(`, and whether it follows a `.`
// (`logger.info`, `logging.warning`, `jax.debug.print`) or not (`print`).
struct OutputCall {
  std::string_view name;
  bool attribute;
};
inline constexpr std::array<OutputCall, 12> k_output_calls{{
    {"print", false},
    {"pprint", false},
    {"print", true},
    {"pprint", true},
    {"info", true},
    {"debug", true},
    {"warning", true},
    {"warn", true},
    {"error", true},
    {"critical", true},
    {"exception", true},
    {"fatal", true},
}};

// Keywords a `(` may follow without being a call (`if (`, `return (`, `in (`): such a bracket
// groups, and the call that encloses an argument is further out.
inline constexpr std::array<std::string_view, 20> k_grouping_keywords{
    "if",  "elif", "while", "return", "and",    "or",   "not",    "in",     "is",    "yield",
    "await", "assert", "else", "for", "with", "del", "except", "lambda", "raise", "import"};

// The attributes an assert reads when it checks an array's metadata, not a computed value:
// `assert x.shape == (8, 4)` is a shape-assert, not a result-check.
inline constexpr std::array<std::string_view, 4> k_metadata_attributes{"shape", "ndim", "dtype", "size"};

// Compound statements whose body runs only when a condition holds (or once per item): a
// jax.distributed.initialize() in one is conditional. `if __name__ == "__main__":` is not.
inline constexpr std::array<std::string_view, 7> k_conditional_keywords{"if",    "elif", "else", "while",
                                                                       "for", "except", "case"};

template <std::size_t N> bool listed_in(std::string_view word, const std::array<std::string_view, N>& words) {
  return std::find(words.begin(), words.end(), word) != words.end();
}

// Evidence text longer than this (bytes) is cut and ends with "...".
inline constexpr std::size_t k_max_evidence_text = 200;


} // namespace tpulaunch::scan
