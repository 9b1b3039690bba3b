// The classifier's rule table: every rule id with its category, the code it matches and what a
// match implies (docs/cli.md and `classify --help` print this table), the multi-host markers a
// multi-host-qualified review needs, and the Classification accessors.
#include <algorithm>
#include <array>

#include "tpulaunch/classify/classifier.hpp"

#include "classify/call_args.hpp"

namespace tpulaunch {
namespace {

// Tables. Everything the classifier recognizes is a row here, so docs and --help can list it.

constexpr std::array<ClassifierRule, 24> k_rules{{
    {Rule::devices_cpu, "devices-cpu", Category::cpu_selection, "jax.devices(\"cpu\"), jax.devices(backend=\"cpu\")",
     "selects CPU devices: the script runs on the CPU even on a TPU VM"},
    {Rule::local_devices_cpu, "local-devices-cpu", Category::cpu_selection,
     "jax.local_devices(backend=\"cpu\"), jax.local_devices(\"cpu\")",
     "selects this host's CPU devices: the script runs on the CPU even on a TPU VM"},
    {Rule::get_backend_cpu, "get-backend-cpu", Category::cpu_selection,
     "jax.extend.backend.get_backend(\"cpu\"), xla_bridge.get_backend(\"cpu\") (jax.lib or jax._src)",
     "takes the CPU backend: work placed on it runs on the CPU"},
    {Rule::default_device_cpu, "default-device-cpu", Category::cpu_selection,
     "jax.default_device(<CPU device>), e.g. jax.devices(\"cpu\")[0] or a name assigned from one, or "
     "jax.default_device(\"cpu\") (JAX takes a platform name for a device)",
     "makes a CPU device the default: computations run on the CPU"},
    {Rule::backend_cpu_kwarg, "backend-cpu-kwarg", Category::cpu_selection,
     "any call with backend=\"cpu\", e.g. jax.jit(f, backend=\"cpu\")", "compiles or places work on the CPU backend"},
    {Rule::config_platforms_cpu, "config-platforms-cpu", Category::cpu_selection,
     "jax.config.update(\"jax_platforms\" | \"jax_platform_name\", \"cpu[,...]\")",
     "makes CPU the first JAX platform: the TPU is not used"},
    {Rule::config_default_device_cpu, "config-default-device-cpu", Category::cpu_selection,
     "jax.config.update(\"jax_default_device\", \"cpu\" | <CPU device>)",
     "makes a CPU device the default: computations run on the CPU"},
    {Rule::env_platforms_cpu, "env-platforms-cpu", Category::cpu_selection,
     "JAX_PLATFORMS / JAX_PLATFORM_NAME = \"cpu[,...]\" via os.environ[...] =, os.environ.setdefault, "
     "os.environ.update, os.putenv; or handed on to a program the script starts: in a dict display "
     "({**os.environ, \"JAX_PLATFORMS\": \"cpu\"}), a keyword argument (dict(os.environ, JAX_PLATFORMS=\"cpu\")), "
     "any mapping's item (env[\"JAX_PLATFORMS\"] = \"cpu\") or a command line that subprocess, os.system, "
     "os.exec*/spawn* or asyncio start (\"JAX_PLATFORMS=cpu python x.py\")",
     "makes CPU the first JAX platform through the environment: the TPU is not used"},
    {Rule::env_default_device_cpu, "env-default-device-cpu", Category::cpu_selection,
     "JAX_DEFAULT_DEVICE = \"cpu\" via os.environ[...] =, os.environ.setdefault, os.environ.update, os.putenv, "
     "or handed on to a started program (the forms of env-platforms-cpu)",
     "makes a CPU device the default through the environment: computations run on the CPU"},
    {Rule::xla_force_host_devices, "xla-force-host-devices", Category::cpu_selection,
     "XLA_FLAGS set (same forms) to a value containing --xla_force_host_platform_device_count",
     "fakes several CPU devices: a CPU simulation of a multi-device run"},
    {Rule::num_cpu_devices, "num-cpu-devices", Category::cpu_selection, "jax.config.update(\"jax_num_cpu_devices\", N)",
     "sets the number of CPU devices: a CPU simulation of a multi-device run"},
    {Rule::platform_unresolved, "platform-unresolved", Category::cpu_selection,
     "a backend, platform or device value above (JAX_PLATFORMS, JAX_DEFAULT_DEVICE, XLA_FLAGS and the config "
     "forms included) that is not a string literal nor a name bound once to one (a parameter, a name bound twice, "
     "args.x, a call, an f-string; a device may also be a jax.devices()/local_devices() expression or a name "
     "assigned from one), an environment or config key that is neither (os.environ[KEY] = ...), a getattr() that "
     "reaches a function above by name (getattr(jax, name)(...)), an os.environ update from something other "
     "than a literal mapping, a function above used as a value (functools.partial(jax.devices, \"cpu\")), or a "
     "name imported from a course module that does not bind it once to a literal",
     "may select CPU devices: the value is only known at run time, so a reviewer decides", true},
    {Rule::source_unreadable, "source-unreadable", Category::cpu_selection,
     "source the tokenizer cannot read (an unterminated string or bracket, a stray byte), or brackets nested "
     "deeper than 4096",
     "the classifier cannot see what that part selects: it may select CPU devices", true},
    {Rule::import_unresolved, "import-unresolved", Category::cpu_selection,
     "code loaded by a call the classifier cannot follow: importlib.import_module, __import__, "
     "runpy.run_module given no string literal (or a relative name without a literal package); "
     "runpy.run_path, importlib.util.spec_from_file_location, importlib.machinery.SourceFileLoader, "
     "imp.load_source given a path that is no literal naming a course file; exec() or eval() of anything "
     "but a string literal, open(PATH).read(), Path(PATH).read_text() or compile() of one",
     "runs code the classifier cannot read: it may select CPU devices, so a reviewer decides", true},
    {Rule::distributed_initialize, "distributed-initialize", Category::multi_host,
     "jax.distributed.initialize(...); its detail says when it runs only under a condition (inside an if, elif, "
     "else, while, for, except or case body, not if __name__ == \"__main__\", or in a conditional expression)",
     "joins a multi-process JAX cluster: every host must run it"},
    {Rule::process_index, "process-index", Category::multi_host, "jax.process_index()",
     "reads this process's index: per-process behaviour"},
    {Rule::process_count, "process-count", Category::multi_host, "jax.process_count()",
     "reads the number of processes: per-process behaviour"},
    {Rule::process_index_printed, "process-index-printed", Category::multi_host,
     "jax.process_index() or jax.process_count() whose nearest enclosing call prints or logs it: print(...), "
     "pprint, jax.debug.print, logger.info/debug/warning/error/critical/exception(...)",
     "only reports which process this is: output, not per-process data"},
    {Rule::process_local_data, "process-local-data", Category::multi_host,
     "jax.make_array_from_process_local_data(...)", "builds a global array from each process's own data"},
    {Rule::collective, "collective", Category::multi_host,
     "lax.psum/pmean/pmax/pmin/all_gather/psum_scatter/ppermute/all_to_all, shard_map, "
     "jax.make_array_from_process_local_data/_single_device_arrays, "
     "multihost_utils.process_allgather/host_local_array_to_global_array",
     "communicates across devices or processes"},
    {Rule::global_barrier, "global-barrier", Category::multi_host, "multihost_utils.sync_global_devices(...)",
     "waits for every process at a barrier"},
    {Rule::result_check, "result-check", Category::multi_host,
     "a raise or assert statement (not one that only checks the backend, nor a shape-assert)",
     "checks a result and fails loudly"},
    {Rule::shape_assert, "shape-assert", Category::multi_host,
     "an assert whose every condition (between and/or) reads .shape, .ndim, .dtype or .size",
     "checks an array's metadata, not a computed value: not a result check"},
    {Rule::backend_is_tpu, "backend-is-tpu", Category::backend_assertion,
     "jax.default_backend() or <x>.platform compared with \"tpu\" (==, !=, in, not in)",
     "checks that it runs on a TPU backend"},
}};

// The table is in the enum's order, so a Rule is its row's index.
constexpr bool rules_in_enum_order() {
  for (std::size_t i = 0; i < k_rules.size(); ++i) {
    if (static_cast<std::size_t>(k_rules[i].rule) != i) {
      return false;
    }
  }
  return true;
}
static_assert(rules_in_enum_order());

constexpr std::array k_initialize_rules{Rule::distributed_initialize};
constexpr std::array k_per_process_rules{Rule::process_index, Rule::process_count, Rule::process_local_data};
constexpr std::array k_collective_rules{Rule::collective};
constexpr std::array k_result_check_rules{Rule::result_check};

constexpr std::array<MultiHostMarker, 4> k_markers{{
    {Marker::initialize, "initialize", k_initialize_rules,
     "plan refuses every multi-host route of a source without jax.distributed.initialize() "
     "(source-lacks-initialize): its processes would not form one job"},
    {Marker::per_process_data, "per-process data", k_per_process_rules, ""},
    {Marker::collective, "collective", k_collective_rules, ""},
    {Marker::result_check, "result check", k_result_check_rules, ""},
}};
// The environment keys of the scanner's own table (classifier_matchers.hpp), as the public view has them.
constexpr auto k_cpu_selecting_env = [] {
  std::array<CpuSelectingEnv, scan::k_env_keys.size()> out{};
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i] = CpuSelectingEnv{scan::k_env_keys[i].key, scan::k_env_keys[i].rule};
  }
  return out;
}();

} // namespace

std::span<const CpuSelectingEnv> cpu_selecting_env() {
  return k_cpu_selecting_env;
}

std::optional<Rule> env_selects_cpu(std::string_view key, std::string_view value) {
  const scan::KeyRule* row = scan::find_env_key(key);
  if (row == nullptr || !scan::value_test(row->check, value)) {
    return std::nullopt;
  }
  return row->rule;
}

std::string_view to_string(Category category) {
  switch (category) {
  case Category::cpu_selection:
    return "cpu-selection";
  case Category::multi_host:
    return "multi-host";
  case Category::backend_assertion:
    return "backend-assertion";
  }
  return "cpu-selection";
}

std::string_view to_string(Rule rule) { return classifier_rule(rule).id; }

bool Classification::has_rule(Rule rule) const {
  return std::any_of(evidence.begin(), evidence.end(),
                     [rule](const Evidence& e) { return e.rule == rule && e.counts(); });
}

bool Classification::has_category(Category category) const {
  return std::any_of(evidence.begin(), evidence.end(),
                     [category](const Evidence& e) { return e.category == category && e.counts(); });
}

std::vector<const Evidence*> Classification::of_category(Category category) const {
  std::vector<const Evidence*> out;
  for (const auto& e : evidence) {
    if (e.category == category && e.counts()) {
      out.push_back(&e);
    }
  }
  return out;
}

std::span<const ClassifierRule> classifier_rules() { return k_rules; }

const ClassifierRule* find_classifier_rule(std::string_view id) {
  for (const auto& rule : k_rules) {
    if (rule.id == id) {
      return &rule;
    }
  }
  return nullptr;
}

const ClassifierRule& classifier_rule(Rule rule) { return k_rules[static_cast<std::size_t>(rule)]; }

std::span<const MultiHostMarker> multi_host_markers() { return k_markers; }

bool is_undecided(const Evidence& evidence) { return classifier_rule(evidence.rule).undecided; }

std::vector<std::string_view> missing_multi_host_markers(const Classification& classification) {
  std::vector<std::string_view> missing;
  for (const auto& marker : k_markers) {
    const bool present = std::any_of(marker.rules.begin(), marker.rules.end(),
                                     [&](Rule rule) { return classification.has_rule(rule); });
    if (!present) {
      missing.push_back(marker.name);
    }
  }
  return missing;
}

} // namespace tpulaunch

