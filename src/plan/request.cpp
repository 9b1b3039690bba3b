// The one layer of rules between a plan request's options (request.hpp). Rules of one value stay
// with its parser (values/validate.hpp); rules the capacity flags make together are resolve_target's
// (target.cpp), which `validate` runs here before any step is built.
#include "tpulaunch/plan/request.hpp"

#include <algorithm>
#include <array>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "steps.hpp"

namespace tpulaunch {
namespace {

// The flags that only steer a TPU pipeline: on the CPU route (no --slice) each is a mistake.
constexpr std::array<std::string_view, 26> k_tpu_route_flags{"--create",
                                                             "--queued",
                                                             "--spot",
                                                             "--preemptible",
                                                             "--reserved",
                                                             "--guaranteed",
                                                             "--internal-ips",
                                                             "--runtime-version",
                                                             "--queued-resource",
                                                             "--valid-until-duration",
                                                             "--ready-timeout",
                                                             "--poll",
                                                             "--timeout",
                                                             "--grace",
                                                             "--kill-stale",
                                                             "--tpu",
                                                             "--bootstrap",
                                                             "--teardown",
                                                             "--internal-ip",
                                                             "--tunnel-through-iap",
                                                             "--parallel",
                                                             "--results",
                                                             "--checkpoint-dir",
                                                             "--resume",
                                                             "--slices",
                                                             "--verify"};

// Flags of which at most one may be given: each group is one choice, the message its refusal.
struct ExclusiveFlags {
  std::array<std::string_view, 4> flags; // unused places are empty
  std::string_view message;
};
constexpr std::array<ExclusiveFlags, 3> k_exclusive_flags{{
    {{"--create", "--queued"}, "--create and --queued exclude each other: create the TPU VM, or queue for it"},
    {{"--spot", "--preemptible", "--reserved", "--guaranteed"},
     "--spot, --preemptible, --reserved and --guaranteed exclude each other"},
    // gcloud's own words for the pair (one mutually exclusive group wherever both flags exist).
    {{"--internal-ip", "--tunnel-through-iap"}, "at most one of --internal-ip | --tunnel-through-iap can be specified"},
}};

// The CPU route runs here, with no TPU: options that only steer a TPU pipeline are a mistake.
Status refuse_tpu_only_options(const PlanRequest& request) {
  std::vector<std::string> given;
  for (const std::string& flag : request.given) {
    if (std::find(k_tpu_route_flags.begin(), k_tpu_route_flags.end(), flag) != k_tpu_route_flags.end()) {
      given.push_back(flag);
    }
  }
  if (given.empty()) {
    return Ok{};
  }
  return usage_error(fmt::format("{} {} nothing on the CPU route (no --slice); give --slice for a TPU route, or leave "
                                 "{} out",
                                 fmt::join(given, ", "), given.size() == 1 ? "means" : "mean",
                                 given.size() == 1 ? "it" : "them"));
}

// Options that steer a TPU VM (its name, zone, capacity, connection, bootstrap, --course) mean
// nothing on GKE, and a pod keeps nothing after it ends: --results is where its run folder goes.
Status refuse_tpu_vm_options(const PlanRequest& request, RouteKind route) {
  for (const char* name : {"--tpu", "--zone"}) {
    if (request.gave(name)) {
      return usage_error(
          fmt::format("{} names a TPU VM; a GKE route is placed by --gke CLUSTER --location LOCATION", name));
    }
  }
  const Slice* slice = request.topology.slice;
  if (route == RouteKind::cpu || slice == nullptr) {
    return usage_error("a GKE route needs --slice: the CPU route runs on this machine");
  }
  if (!slice->on_gke()) {
    return usage_error(fmt::format(
        "the catalog holds no GKE node pool for {}; tpulaunch slices --gke lists those it has", slice->name));
  }
  const PlanOptions& options = request.options;
  const LifecycleOptions& life = options.lifecycle;
  if (options.form == PlanForm::course) {
    return usage_error("--course emits the course's own TPU VM commands; a GKE route has none: leave --course out");
  }
  if (options.bootstrap || life.capacity != Capacity::existing || life.kill_stale || life.internal_ips ||
      options.connection != Connection::external || life.provisioning != Provisioning::standard) {
    return usage_error("--bootstrap, --create, --queued, --spot, --preemptible, --kill-stale, --internal-ip(s) and "
                       "--tunnel-through-iap steer a TPU VM; on GKE the node pool and the image provide them");
  }
  if (options.results.empty()) {
    return usage_error("a GKE route needs --results gs://BUCKET[/PREFIX]: a pod keeps nothing after it ends, so each "
                       "uploads its run folder there");
  }
  return Ok{};
}

// --course emits the course's own stage and run lines, nothing else: every option that only the
// full form carries out is refused here, in one place, by the names the user gave.
Status check_course_form(const PlanRequest& request) {
  const PlanOptions& options = request.options;
  if (options.form != PlanForm::course) {
    return Ok{};
  }
  const LifecycleOptions& life = options.lifecycle;
  const std::array<std::pair<bool, std::string_view>, 14> k_full_only{{
      {life.capacity == Capacity::create, "--create"},
      {life.capacity == Capacity::queued, "--queued"},
      {life.provisioning == Provisioning::spot, "--spot"},
      {life.provisioning == Provisioning::preemptible, "--preemptible"},
      {life.provisioning == Provisioning::reserved, "--reserved"},
      {life.provisioning == Provisioning::guaranteed, "--guaranteed"},
      {life.timeout.has_value(), "--timeout"},
      {life.kill_stale, "--kill-stale"},
      {options.bootstrap, "--bootstrap"},
      {options.teardown, "--teardown"},
      {options.verify.has_value(), "--verify"},
      {!options.python.empty(), "--python"},
      {!options.results.empty(), "--results"},
      {request.gave("--slices") || request.topology.slices > 1, "--slices"},
  }};
  std::vector<std::string_view> given;
  for (const auto& [set, flag] : k_full_only) {
    if (set) {
      given.push_back(flag);
    }
  }
  if (given.empty()) {
    return Ok{};
  }
  return usage_error(
      fmt::format("--course emits the course's own commands only; {} {} the full form (leave --course out)",
                  fmt::join(given, ", "), given.size() == 1 ? "needs" : "need"));
}

// The TPU-VM route's names and capacity flags (its --course form is checked before the values).
Status validate_tpu_vm(const PlanRequest& request, RouteKind route) {
  const PlanOptions& options = request.options;
  if (route == RouteKind::cpu) {
    return Ok{};
  }
  const Slice* slice = request.topology.slice;
  if (slice == nullptr) {
    return usage_error("a TPU route needs a slice");
  }
  TPULAUNCH_CHECK(planning::validate_tpu_options(options));
  const int slices = request.topology.slices;
  if (request.gave("--slices") && slices < 2) {
    return usage_error(fmt::format("--slices {}: expected 2 to {} slices (one slice is a plan without --slices)",
                                   slices, k_max_slices));
  }
  TPULAUNCH_CHECK(planning::resolve_target(options, *slice, slices));
  return Ok{};
}

// Whether the run guard sets the MEGASCALE_* values itself, from each worker's tpu-env: a TPU-VM
// run over several slices (a GKE pod's come from JobSet and the TPU webhook).
bool multislice_guard(const PlanRequest& request) {
  return request.backend() == Backend::tpu_vm && (request.topology.slices > 1 || request.gave("--slices"));
}

} // namespace

Status check_exclusive_flags(const std::vector<std::string>& given) {
  for (const ExclusiveFlags& group : k_exclusive_flags) {
    const auto count = std::count_if(group.flags.begin(), group.flags.end(), [&](std::string_view flag) {
      return !flag.empty() && std::find(given.begin(), given.end(), flag) != given.end();
    });
    if (count > 1) {
      return usage_error(std::string(group.message));
    }
  }
  return Ok{};
}

bool PlanRequest::gave(std::string_view flag) const {
  return std::find(given.begin(), given.end(), flag) != given.end();
}

Status validate_options(const PlanRequest& request) {
  TPULAUNCH_CHECK(check_exclusive_flags(request.given));
  const bool on_gke = request.backend() == Backend::gke;
  if (!on_gke && request.manifest) {
    return usage_error(
        "--format yaml and --manifest print a GKE route's manifest: give --gke CLUSTER --location LOCATION");
  }
  if (on_gke && (request.gave("--resume") || request.gave("--checkpoint-dir"))) {
    return usage_error(fmt::format("{} is not on the GKE route yet (a JobSet has no run record to resume from)",
                                   request.gave("--resume") ? "--resume" : "--checkpoint-dir"));
  }
  return Ok{};
}

Status validate(const PlanRequest& request, const ScriptStatus& script, RouteKind route) {
  TPULAUNCH_CHECK(validate_options(request));
  if (request.topology.slice == nullptr) {
    TPULAUNCH_CHECK(refuse_tpu_only_options(request));
  }
  if (request.backend() == Backend::gke) {
    TPULAUNCH_CHECK(refuse_tpu_vm_options(request, route));
  } else {
    TPULAUNCH_CHECK(check_course_form(request));
  }
  const bool reviewed = route != RouteKind::cpu && script.entry != nullptr && !script.entry->jax_platforms.empty();
  TPULAUNCH_CHECK(planning::validate_script_options(
      request.options, route, script.id, reviewed ? std::string_view(script.entry->jax_platforms) : std::string_view(),
      multislice_guard(request)));
  if (request.backend() == Backend::gke) {
    return Ok{};
  }
  return validate_tpu_vm(request, route);
}

} // namespace tpulaunch
