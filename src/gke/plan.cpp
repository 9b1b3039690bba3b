// The GKE backend's plan: the same script, route and topology as a TPU-VM plan, placed as a
// JobSet on a cluster. docs/gke.md gives each step and each manifest field with its source.
#include "tpulaunch/gke/plan.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "tpulaunch/gcloud/gcloud.hpp"
#include "tpulaunch/gke/manifest.hpp"
#include "tpulaunch/plan/digest.hpp"
#include "tpulaunch/plan/request.hpp"
#include "tpulaunch/util/sha256.hpp"
#include "tpulaunch/util/text_file.hpp"
#include "tpulaunch/values/results_url.hpp"

#include "gke/steps.hpp"
#include "tpulaunch/embedded/gke_pod_bash.hpp"

namespace tpulaunch::gke {
namespace {

using Json = nlohmann::ordered_json;

bool lower_alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

// GKE's cluster names: a lower-case letter, then lower-case letters, digits and '-', at most 40,
// not ending in '-'. Locations (a zone or a region) and namespaces: RFC 1123 labels.
bool is_name(std::string_view value, std::size_t max, bool letter_first) {
  if (value.empty() || value.size() > max || !lower_alnum(value.front()) || !lower_alnum(value.back()) ||
      (letter_first && !(value.front() >= 'a' && value.front() <= 'z'))) {
    return false;
  }
  return std::all_of(value.begin(), value.end(), [](char c) { return lower_alnum(c) || c == '-'; });
}

// An image reference: [registry/]path[:tag][@digest], no space, quote or control byte.
bool is_image(std::string_view value) {
  const auto allowed = [](char c) {
    return lower_alnum(c) || (c >= 'A' && c <= 'Z') || c == '.' || c == '-' || c == '_' || c == '/' || c == ':' ||
           c == '@';
  };
  return !value.empty() && value.size() <= 1024 && std::all_of(value.begin(), value.end(), allowed);
}

Status check_placement(const GkePlacement& placement) {
  if (!is_name(placement.cluster, 40, true)) {
    return usage_error(fmt::format("--gke '{}' is not a GKE cluster name (a lower-case letter, then lower-case "
                                   "letters, digits and '-', at most 40)",
                                   printable(placement.cluster)));
  }
  if (!is_name(placement.location, 63, true)) {
    return usage_error(fmt::format("--location '{}' is not a zone or region (e.g. us-east5-b, us-central1); a GKE "
                                   "route needs it",
                                   printable(placement.location)));
  }
  if (!placement.project.empty()) {
    TPULAUNCH_CHECK(validate_value(ValueKind::project, placement.project));
  }
  if (!is_name(placement.name_space, 63, false)) {
    return usage_error(fmt::format("--namespace '{}' is not a Kubernetes namespace (lower-case letters, digits and "
                                   "'-', at most 63)",
                                   printable(placement.name_space)));
  }
  if (!is_image(placement.image)) {
    return usage_error(fmt::format("--image '{}' is not a container image reference; a GKE route needs one that "
                                   "holds bash, python with jax[tpu] and gcloud",
                                   printable(placement.image)));
  }
  return Ok{};
}

// The JobSet's name: the script id in lower case, non-alphanumerics as '-', at most 20, a letter
// first, then the plan id's first 8 hex digits. Pods are <name>-slice-<s>-<i>: well under 63.
std::string jobset_name(std::string_view id, std::string_view plan_id) {
  std::string name;
  for (const char c : id) {
    const char lower = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    const char kept = lower_alnum(lower) ? lower : '-';
    if (!(kept == '-' && (name.empty() || name.back() == '-'))) {
      name += kept;
    }
    if (name.size() == 20) {
      break;
    }
  }
  while (!name.empty() && name.back() == '-') {
    name.pop_back();
  }
  if (name.empty() || !(name.front() >= 'a' && name.front() <= 'z')) {
    name.insert(0, "run-");
  }
  return name + "-" + std::string(plan_id.substr(0, 8));
}

// The digest of what runs: written out unambiguously (each value with its length) and hashed.
std::string gke_plan_digest(const GkePlan& plan) {
  DigestWriter digest("tpulaunch-gke-plan 1");
  digest.add("script", plan.script);
  digest.add("run-id", plan.options.run_id);
  digest.add("slice", plan.topology.slice->name);
  digest.add("slices", std::to_string(plan.topology.slices));
  digest.add("cluster", plan.placement.cluster);
  digest.add("location", plan.placement.location);
  digest.add("project", plan.placement.project);
  digest.add("namespace", plan.placement.name_space);
  digest.add("image", plan.placement.image);
  digest.add("pod-program", pod_program_sha256());
  for (const StagedFile& file : plan.staged) {
    digest.add("file", file.path);
    digest.add("sha256", file.sha256);
  }
  digest.add("python", plan.python);
  digest.add("timeout", std::to_string(plan.timeout_seconds));
  digest.add("grace", std::to_string(plan.grace_seconds));
  digest.add("jax-platforms", plan.jax_platforms);
  for (const EnvVar& var : plan.env) {
    digest.add("env", var.name + "=" + var.value);
  }
  for (const std::string& arg : plan.options.args) {
    digest.add("arg", arg);
  }
  digest.add("results", plan.results_run_url);
  return digest.sha256();
}

std::string file_key(std::size_t index) {
  return fmt::format("file-{}", index);
}

// The ConfigMap (the pod program and every staged file, each read now and checked against the
// digest the plan pins) and the JobSet, as one v1 List kubectl applies.
Result<Json> build_manifest(const GkePlan& plan) {
  ConfigMapSpec files{plan.config_map, plan.placement.name_space, {}, {}};
  files.files.emplace(std::string(k_pod_program_file), std::string(embedded::gke_pod_bash));
  std::vector<std::string> argv{"bash",     fmt::format("{}/{}", k_mount_path, k_pod_program_file),
                                "--plan",   plan.plan_sha256,
                                "--upload", plan.results_run_url,
                                "--python", plan.python,
                                "--grace",  std::to_string(plan.grace_seconds)};
  if (plan.timeout_seconds > 0) {
    argv.insert(argv.end(), {"--timeout", std::to_string(plan.timeout_seconds)});
  }
  for (std::size_t i = 0; i < plan.staged.size(); ++i) {
    const StagedFile& file = plan.staged[i];
    TPULAUNCH_TRY(const std::string text, read_text_file(file.local, "staged file"));
    if (sha256_hex(text) != file.sha256) {
      return config_error(
          fmt::format("{} changed while the plan was made (its digest is no longer {})", file.local, file.sha256));
    }
    files.files.emplace(file_key(i), text);
    argv.insert(argv.end(), {"--file", file.sha256, file_key(i), file.path});
  }
  argv.emplace_back("--");
  argv.push_back(plan.staged.front().path);
  argv.insert(argv.end(), plan.options.args.begin(), plan.options.args.end());
  const Pairs labels{{"tpulaunch/run-id", plan.options.run_id}, {"tpulaunch/plan", plan.plan_id()}};
  files.labels = labels;
  TPULAUNCH_TRY(Json config_map, config_map_manifest(files));

  JobSetSpec spec;
  spec.name = plan.jobset;
  spec.name_space = plan.placement.name_space;
  spec.slice = plan.topology.slice;
  spec.slices = plan.topology.slices;
  spec.image = plan.placement.image;
  spec.argv = std::move(argv);
  spec.env.emplace_back("JAX_PLATFORMS", plan.jax_platforms);
  for (const EnvVar& var : plan.env) {
    spec.env.emplace_back(var.name, var.value);
  }
  spec.config_map = plan.config_map;
  spec.mount_path = std::string(k_mount_path);
  spec.labels = labels;
  spec.termination_grace_seconds = plan.grace_seconds + k_upload_seconds;
  TPULAUNCH_TRY(Json jobset, jobset_manifest(spec));
  Json list = Json::object();
  list["apiVersion"] = "v1";
  list["kind"] = "List";
  list["items"] = Json::array({std::move(config_map), std::move(jobset)});
  return list;
}

} // namespace

const std::string& pod_program_sha256() {
  static const std::string digest = sha256_hex(embedded::gke_pod_bash);
  return digest;
}

Result<GkePlan> build_gke_plan(const ScriptStatus& script, RouteKind route, const PlanRequest& request) {
  TPULAUNCH_CHECK(validate(request, script, route)); // the rules between options, TPU-VM flags refused
  const Topology& topology = request.topology;
  const GkePlacement& placement = std::get<GkePlacement>(request.placement);
  const PlanOptions& options = request.options;
  TPULAUNCH_CHECK(check_placement(placement));
  TPULAUNCH_CHECK(validate_value(ValueKind::run_id, options.run_id));
  GkePlan plan;
  plan.script = script.id;
  plan.path = script.path;
  plan.script_class = script.route_class();
  plan.sha256 = script.actual_sha256;
  plan.route = route;
  plan.topology = topology;
  plan.placement = placement;
  plan.options = options;
  plan.python = options.python.empty() ? "python3" : options.python;
  if (script.entry != nullptr && !script.entry->jax_platforms.empty()) {
    plan.jax_platforms = script.entry->jax_platforms;
  }
  plan.env = options.env;
  std::erase_if(plan.env, [](const EnvVar& var) { return var.name == "JAX_PLATFORMS"; });
  if (options.lifecycle.timeout) {
    plan.timeout_seconds = static_cast<int>(options.lifecycle.timeout->seconds());
    plan.wait_seconds = plan.timeout_seconds + k_schedule_slack_seconds;
  }
  if (options.lifecycle.grace) {
    plan.grace_seconds = static_cast<int>(options.lifecycle.grace->seconds());
  }
  TPULAUNCH_TRY(const ResultsUrl url, parse_results_url(options.results));
  plan.results_run_url = url.join({placement.cluster, script.id, options.run_id});
  plan.local_run_dir = fmt::format("./gke-runs/{}/{}/{}", placement.cluster, script.id, options.run_id);
  plan.staged.push_back(StagedFile{script.path, script.course_path, script.actual_sha256});
  for (const LessonFile& file : script.files) {
    plan.staged.push_back(StagedFile{file.path, file.course_path, file.sha256});
  }
  plan.plan_sha256 = gke_plan_digest(plan);
  plan.jobset = jobset_name(script.id, plan.plan_sha256);
  plan.config_map = plan.jobset + "-files";
  TPULAUNCH_TRY(plan.manifest, build_manifest(plan));
  add_gke_steps(plan);
  return plan;
}

Result<GkePlan> build_gke_plan(const ScriptStatus& script, RouteKind route, const Topology& topology,
                               const GkePlacement& placement, const PlanOptions& options) {
  return build_gke_plan(script, route, PlanRequest{topology, placement, options, {}, false});
}

} // namespace tpulaunch::gke
