#pragma once
// The GKE backend: a run as a JobSet on a GKE cluster (docs/gke.md). It takes what the TPU-VM
// backend takes (the script's reviewed status, its route, the topology, PlanOptions) and a
// GkePlacement, and returns steps of the same `Step` type, whose conditions (StepWhen) and
// concurrency (concurrent_group) are data the renderers print: credentials, a name check, the
// manifest written and applied, a bounded wait on the JobSet's terminal state, every pod's log,
// the results from the bucket, verify, and with --teardown the JobSet deleted after verify.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tpulaunch/plan/backend.hpp"
#include "tpulaunch/plan/plan.hpp"
#include "tpulaunch/plan/request.hpp"

namespace tpulaunch::gke {

// The pod program's name in the ConfigMap (and so beside the staged files at k_mount_path).
inline constexpr std::string_view k_pod_program_file = "gke-pod.sh";
inline constexpr std::string_view k_mount_path = "/tpulaunch";
// How long the wait step waits for the JobSet's terminal state unless --timeout bounds the
// program: then that plus k_schedule_slack_seconds for scheduling and image pulls.
inline constexpr int k_default_wait_seconds = 24 * 3600;
inline constexpr int k_schedule_slack_seconds = 3600;
// What a pod's terminationGracePeriodSeconds leaves, after --grace, for the pod program to upload
// its record, log and artifacts once Kubernetes has asked it to stop (docs/gke.md).
inline constexpr int k_upload_seconds = 120;
// --grace's default, as for the TPU-VM run guard.
inline constexpr int k_default_grace_seconds = 30;

struct GkePlan {
  std::string script;
  std::string path;
  std::optional<ScriptClass> script_class;
  std::string sha256;
  RouteKind route = RouteKind::single_host;
  Topology topology;
  GkePlacement placement;
  PlanOptions options;         // as asked for (run id, env, args, python, teardown), never rewritten
  std::string python;          // --python, or python3 (the image's)
  std::vector<EnvVar> env;     // --env, less JAX_PLATFORMS (the pod's comes from the review)
  std::string jobset;          // the JobSet's name: <script, shortened>-<plan id's first 8>
  std::string config_map;      // <jobset>-files
  std::string plan_sha256;     // the digest of what runs (the pods record it; verify checks it)
  std::string local_run_dir;   // ./gke-runs/<cluster>/<id>/<run-id>
  std::string results_run_url; // gs://BUCKET/PREFIX/<cluster>/<id>/<run-id>
  std::string jax_platforms = "tpu";
  int wait_seconds = k_default_wait_seconds;
  int timeout_seconds = 0;                     // --timeout: the pod program stops the program then (124); 0: never
  int grace_seconds = k_default_grace_seconds; // --grace: SIGTERM to SIGKILL in the pod program
  std::vector<StagedFile> staged;  // the script, then its course files (path: course-relative)
  nlohmann::ordered_json manifest; // a v1 List: the ConfigMap, then the JobSet
  std::vector<Step> steps;

  [[nodiscard]] int pods_per_slice() const { return topology.hosts(Backend::gke); }
  [[nodiscard]] std::string plan_id() const { return plan_sha256.substr(0, 16); }
};

// The plan for an allowed multi-host or single-host decision on GKE. A usage Error for a missing
// or invalid --gke/--location/--namespace/--image/--results, a slice without GKE facts, the
// --course form or TPU-VM-only options (capacity, connection, --bootstrap).
// The request's placement is a GkePlacement; the request goes through validate (request.hpp) first.
Result<GkePlan> build_gke_plan(const ScriptStatus& script, RouteKind route, const PlanRequest& request);
// The same for a request without flag names (tests, tools).
Result<GkePlan> build_gke_plan(const ScriptStatus& script, RouteKind route, const Topology& topology,
                               const GkePlacement& placement, const PlanOptions& options);

// The forms: text (steps for a person, the manifest named, not printed), sh (a script that runs
// them, the manifest written by its write step), JSON (the plan's values and steps), YAML-free
// manifest JSON for --manifest, and YAML for --format yaml.
std::string render_gke_text(const GkePlan& plan);
std::string render_gke_sh(const GkePlan& plan);
nlohmann::ordered_json gke_plan_json(const GkePlan& plan);
std::string manifest_yaml(const nlohmann::ordered_json& manifest);

} // namespace tpulaunch::gke
