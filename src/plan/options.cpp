// The planner's option checks: the values every route takes, the names a TPU route needs, the
// lifecycle's derived values (the Target's rules in target.cpp), and --results. request.cpp runs
// them in the one order a user meets them.
#include <string_view>

#include <fmt/format.h>

#include "steps.hpp"
#include "tpulaunch/classify/classifier.hpp"
#include "tpulaunch/values/results_url.hpp"

namespace tpulaunch::planning {

// Checks the lifecycle options against each other and fills the plan's target and derived values.
Status resolve_lifecycle(Plan& plan, const Slice& slice, int slices) {
  const LifecycleOptions& life = plan.options.lifecycle;
  const bool creates = life.capacity != Capacity::existing;
  TPULAUNCH_TRY(plan.target, resolve_target(plan.options, slice, slices));
  // A TPU the plan creates is a fresh VM, with python3 only: without an interpreter the run could
  // only fail (status 96) while the TPU bills. So the plan bootstraps it, unless --python names one.
  plan.bootstrap = plan.options.bootstrap || (creates && plan.options.python.empty());
  // Durations are at most 30 days (validate.cpp), so their seconds fit an int.
  plan.timeout_seconds = life.timeout ? static_cast<int>(life.timeout->seconds()) : 0;
  plan.grace_seconds = life.grace ? static_cast<int>(life.grace->seconds()) : 30;
  return Ok{};
}

// The values every route takes: the interpreter and the --env names (a TPU route sets
// TPU_RUN_DIR and JAX_PLATFORMS itself, and an --env must not quietly move the run off the TPU:
// --env JAX_PLATFORMS is taken only when it repeats the script's reviewed value, `reviewed`, and
// no value the classifier reads as CPU selection in a source is taken here: env_selects_cpu).
Status validate_script_options(const PlanOptions& options, RouteKind route, std::string_view script,
                               std::string_view reviewed, bool multislice) {
  if (!options.python.empty()) {
    TPULAUNCH_CHECK(validate_value(ValueKind::interpreter, options.python));
  }
  for (const EnvVar& var : options.env) {
    TPULAUNCH_CHECK(validate_value(ValueKind::env_name, var.name));
    if (route == RouteKind::cpu) {
      continue;
    }
    if (var.name == "JAX_PLATFORMS" && !reviewed.empty() && var.value == reviewed) {
      continue;
    }
    // The classifier's own table of environment values that select the CPU: what it refuses in a
    // script's source, plan refuses on its command line.
    if (const auto rule = env_selects_cpu(var.name, var.value)) {
      const ClassifierRule& row = classifier_rule(*rule);
      return usage_error(
          fmt::format("--env {}={}: a TPU route refuses a value that moves the work off the TPU ({}: {})", var.name,
                      printable(var.value), row.id, row.implies));
    }
    if (var.name == "JAX_PLATFORMS") {
      return usage_error(fmt::format(
          "--env JAX_PLATFORMS={}: a TPU route sets JAX_PLATFORMS={} itself; another value needs a review that records "
          "it: tpulaunch review {} --class CLASS --by NAME --jax-platforms tpu,cpu",
          printable(var.value), reviewed.empty() ? "tpu" : reviewed, script.empty() ? "SCRIPT" : script));
    }
    // With --slices the run guard sets the MEGASCALE_* values (docs/multislice.md §3.2).
    if (multislice && var.name.starts_with("MEGASCALE_")) {
      return usage_error(fmt::format("--env {}: with --slices tpulaunch sets MEGASCALE_COORDINATOR_ADDRESS, "
                                     "MEGASCALE_NUM_SLICES and MEGASCALE_SLICE_ID itself, from each worker's tpu-env",
                                     var.name));
    }
    for (const std::string_view reserved : {"TPU_RUN_DIR", "JAX_PLATFORM_NAME"}) {
      if (var.name == reserved) {
        return usage_error(fmt::format("--env {}: a TPU route sets {} itself", var.name, var.name));
      }
    }
  }
  return Ok{};
}

Status validate_tpu_options(const PlanOptions& options) {
  if (options.tpu.empty()) {
    return usage_error("a TPU route needs --tpu NAME (or TPU_NAME in the environment)");
  }
  TPULAUNCH_CHECK(validate_value(ValueKind::tpu_name, options.tpu));
  if (options.zone.empty()) {
    return usage_error("a TPU route needs --zone ZONE (or CLOUDSDK_COMPUTE_ZONE in the environment)");
  }
  TPULAUNCH_CHECK(validate_value(ValueKind::zone, options.zone));
  if (!options.project.empty()) {
    TPULAUNCH_CHECK(validate_value(ValueKind::project, options.project));
  }
  TPULAUNCH_CHECK(validate_value(ValueKind::run_id, options.run_id));
  return Ok{};
}

// --results gs://BUCKET[/PREFIX]: the bucket URL the run folder goes to, mirroring the local one
// (<tpu>/<id>/<run-id>). Each part is a validated name: no separator, wildcard or '#'.
Status set_results(Plan& plan, std::string_view id) {
  if (plan.options.results.empty()) {
    return Ok{};
  }
  TPULAUNCH_TRY(const ResultsUrl url, parse_results_url(plan.options.results));
  plan.results_run_url = url.join({plan.target.tpu, id, plan.options.run_id});
  return Ok{};
}

Status set_checkpoint_dir(Plan& plan) {
  if (plan.options.checkpoint_dir.empty()) {
    return Ok{};
  }
  auto url = parse_results_url(plan.options.checkpoint_dir);
  if (!url) {
    return usage_error("--checkpoint-dir: " + url.error().message);
  }
  plan.checkpoint_dir = url->text();
  return Ok{};
}

} // namespace tpulaunch::planning
