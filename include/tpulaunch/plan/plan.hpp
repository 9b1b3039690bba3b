#pragma once
// The planner turns an allowed routing decision into the exact commands: argv data (ShellLine)
// for each step, in order. Nothing here runs anything; `render.hpp` turns a Plan into text.
#include <array>
#include <optional>
#include <string>
#include <vector>

#include "tpulaunch/catalog/catalog.hpp"
#include "tpulaunch/util/error.hpp"
#include "tpulaunch/matrix/matrix.hpp"
#include "tpulaunch/route/router.hpp"
#include "tpulaunch/classify/script_class.hpp"
#include "tpulaunch/target/target.hpp"
#include "tpulaunch/values/validate.hpp"
#include "tpulaunch/shell/shell.hpp"
#include "tpulaunch/receipts/verify.hpp"

namespace tpulaunch {

// `course`: the course's own stage and run lines, byte for byte, then one fetch per worker.
// `full`: the lifecycle — preflight, staged-digest check inside the run call, a per-run artifacts
// folder (TPU_RUN_DIR), per-host logs, parallel fetch, verify, and optional bootstrap/teardown.
enum class PlanForm { course, full };

// One --env KEY=VALUE for the script: a validated shell name, and any value.
struct EnvVar {
  std::string name;
  std::string value;
};

// The options of the TPU's life around the run; all off by default (the three round trips).
// The planner resolves capacity, provisioning, runtime_version and queued_resource into the plan's
// Target; durations are Duration values (validate.hpp), checked where they were parsed.
struct LifecycleOptions {
  Capacity capacity = Capacity::existing;
  Provisioning provisioning = Provisioning::standard;
  std::string runtime_version; // --runtime-version; empty: the catalog's
  std::string queued_resource; // --queued-resource; empty: <tpu>-qr
  std::optional<Duration> valid_until;   // --valid-until-duration (queued only); none: no limit
  std::optional<Duration> ready_timeout; // --ready-timeout; none: 30m for --create, 12h for --queued
  std::optional<Duration> poll;          // --poll; none: 15s for --create, 60s for --queued
  std::optional<Duration> timeout;       // --timeout; none: the program may run as long as it likes
  std::optional<Duration> grace;         // --grace: SIGTERM to SIGKILL, for --timeout and --kill-stale; none: 30s
  bool kill_stale = false;     // --kill-stale: end the TPU's holders instead of refusing
  bool internal_ips = false;   // --internal-ips (with --create/--queued): workers without external addresses
};

struct PlanOptions {
  // The TPU as asked for; the planner checks them and resolves them into Plan::target.
  std::string tpu;     // validated TPU name (required for TPU routes)
  std::string zone;    // validated zone (required for TPU routes)
  std::string project; // empty: --project is not emitted
  std::string run_id;  // validated; the CLI defaults it to a UTC timestamp
  PlanForm form = PlanForm::full;
  bool bootstrap = false;
  bool teardown = false;
  int parallel = 8;                      // fetches in flight at once, 1-1024 (the CLI checks --parallel)
  std::optional<VerifyKind> verify;      // default: what the script's review declares it proves, else logs
  std::string tpulaunch_program = "tpulaunch"; // the program the write and verify steps call (the CLI: its own absolute path)
  // The folder the plan's relative paths resolve in (absolute); the commands start by changing to
  // it, so a script or a pasted plan works wherever it is started. Empty: no change of folder.
  std::string directory;
  std::string matrix_file;  // absolute; verify gets --matrix= it (empty: not passed)
  std::string catalog_file; // absolute; verify gets --catalog= it (empty: the built-in catalog)
  // The interpreter: on each worker for TPU routes (default the venv's, a leading ~/ is the
  // worker's home), on this machine for the CPU route (default python3). Empty: the default.
  std::string python;
  std::vector<EnvVar> env;       // set for the script on every route, in order
  std::vector<std::string> args; // the script's arguments, after its path
  std::string results; // --results gs://BUCKET[/PREFIX], validated by the planner; "": per-worker fetch
  // --checkpoint-dir gs://BUCKET[/PREFIX]: exported to the program as TPU_CHECKPOINT_DIR (restoring
  // from it is the script's business); "": none.
  std::string checkpoint_dir;
  std::string resumes; // plan --resume RUN: the run id this run resumes, for its plan record; "": none
  // How every ssh and scp reaches the workers: --internal-ip, --tunnel-through-iap (the CLI
  // refuses both together, as gcloud does), or their external addresses.
  Connection connection = Connection::external;
  LifecycleOptions lifecycle;
};

// What a step does. Renderers dispatch on it (one emitter per kind); `to_string` is the name the
// text and JSON forms show.
// prepare changes to the plan's folder and creates the download folders; write fills the run's
// local stage folder (the run guard, the script or the discovery program, its course files, each
// checked against its pinned digest) and writes the plan record, and stage copies that folder into
// the run folder on every worker; create/queue get the TPU, after name_check has found no TPU (or
// queued resource) of that name; release defines how to delete what holds quota (used when
// capacity fails, on preemption with --teardown); wait polls until the TPU is usable;
// preemption_check defines the one state query a failed step on a spot or preemptible TPU makes;
// stop ends a slice's run when another slice's failed first (--slices); `collect` is the one local
// download of every worker's folder from the results bucket (--results), which replaces the
// per-worker `fetch` steps.
enum class StepKind {
  prepare,
  write,
  preflight,
  name_check,
  create,
  queue,
  release,
  wait,
  preemption_check,
  bootstrap,
  stage,
  run,
  stop,
  fetch,
  collect,
  verify,
  teardown
};
std::string_view to_string(StepKind kind);

enum class StepWhere { local, remote };

// When a step runs. Every form says the same: the sh script runs a conditional step only when its
// condition holds, the text form shows it commented and labelled with `condition_text`, and the
// JSON form names the condition (`"when"`). A step is never printed as a plain command unless it
// always runs.
// always: in order, when the steps before it succeeded.
// capacity_unusable: release, only if what was asked for never becomes usable (a dead-end state,
//   or --ready-timeout), or after a preemption with --teardown.
// step_failed: the preemption check, only if a step on a spot or preemptible TPU failed.
// verify_succeeded: teardown, only after every worker's results are back and verified.
// other_slice_failed: stop, only when the run call of another slice ended first with a failure
//   (the run calls of all slices start together, and a Multislice program would otherwise wait for
//   the failed slice until a timeout).
// not_collected: the per-worker fetch of a worker whose folder the one download from the results
// bucket did not bring back (its upload failed).
enum class StepWhen { always, capacity_unusable, step_failed, verify_succeeded, other_slice_failed, not_collected };
std::string_view to_string(StepWhen when);

// What runs beside a step: the steps of one group run together, the others one after another.
// none: in order, alone.
// fetch: each worker's download beside the others, at most --parallel at once.
// run: the run calls of several slices (--slices), started together (a Multislice program waits
//   in initialization for every slice) and waited for, each.
// `to_string` is the group's name in every form ("" for none); `describe` the JSON form's sentence.
enum class StepGroup { none, fetch, run };
std::string_view to_string(StepGroup group);
std::string_view describe(StepGroup group);
// How the steps of a group start: "together" for run; "" for the others (fetch: --parallel at once).
std::string_view start_of(StepGroup group);

// What a failure of a step does to the steps after it. The step builders set it; the sh form does
// it, and the JSON form's concurrency groups name it (`to_string`, `describe`).
// stop: nothing after it runs; the script stops with the step's own status (set -e), or with
//   Step::failure_exit's status and message when the step states them.
// keep_status: a run call: its status is kept and retrieval still runs (every worker's log is
//   what explains a failure); after the downloads' report, the script stops with it.
// stop_the_others: the run call of one of several slices, all started together: as keep_status,
//   and the first to fail runs the stop step of every other slice still running.
// report_after_all: a download: a failure never stops the others; after all of them, the failed
//   ones are named, the run's own failure (keep_status) stops the script with its status, then a
//   failed download stops it.
enum class OnFailure { stop, keep_status, stop_the_others, report_after_all };
std::string_view to_string(OnFailure on_failure);
std::string_view describe(OnFailure on_failure);

// What a script that stops after a step's failure says (after "tpulaunch: error: ") and the
// status it stops with.
struct FailureExit {
  std::string message;
  int status = 1;
};

// When the script says it leaves the TPU running (and billing), with the release step's command
// that deletes it: never; on_failure (--teardown: only a way out before the teardown leaves it);
// always (capacity the plan made and was not told to delete). The release step carries it.
enum class LeftRunning { never, on_failure, always };
std::string_view to_string(LeftRunning left_running);

// The workers a remote step reaches: every one (`--worker=all` on a multi-host slice), or one by
// index.
class Workers {
public:
  static Workers all() { return Workers(-1); }
  static Workers one(int index) { return Workers(index); }
  [[nodiscard]] bool is_all() const { return m_index < 0; }
  [[nodiscard]] int index() const { return m_index; } // meaningful when !is_all()
  [[nodiscard]] std::string text() const;            // "all" or the index
  friend bool operator==(const Workers&, const Workers&) = default;

private:
  explicit Workers(int index) : m_index(index) {}
  int m_index;
};

// How a wait step polls: the state it waits for, the states it gives up on, how often, how long.
struct Poll {
  std::string until;                // READY or ACTIVE
  std::vector<std::string> stop_on; // states that never lead there
  int every_seconds = 60;
  int deadline_seconds = 0;
};

struct Step {
  StepKind kind = StepKind::run;
  StepWhere where = StepWhere::local;
  std::optional<Workers> workers; // the workers it reaches; nullopt for a step that names none
  std::optional<int> slice;       // the slice (node) it reaches with --slices; nullopt on one slice
  std::string summary;            // one line for a person
  ShellLine line;                 // the command (argv data; code only in remote command strings)
  std::optional<Poll> poll;       // wait steps: the line is the describe call to repeat
  StepWhen when = StepWhen::always;
  // On capacity the plan creates: the describe call that prints the TPU's mark. The step runs only
  // when it prints the plan's (Target::mark), so a pasted plan whose create failed on a name someone
  // else holds touches nothing of theirs. nullopt: the step needs no mark.
  std::optional<ShellLine> mark_check;
  // A fetch written once for the workers of a slice that has more than k_fetch_lines_max: its line
  // names the worker as "$w" (k_each_worker), and it runs once for each w from 0 to each_worker - 1,
  // so that no form of a plan grows by a line per worker. nullopt: the line runs once, as written.
  std::optional<int> each_worker;
  // The folder the step's download lands in, when no earlier step made it (the --results
  // fallback: the prepare step made only the run folder): every form makes it first (mkdir -p),
  // then runs the line. nullopt: the folder exists.
  std::optional<Word> make_folder;
  // Failure and concurrency are data: what a failure does (OnFailure), what runs beside the step
  // (StepGroup); renderers print what these say and decide none of it.
  StepGroup group = StepGroup::none;
  OnFailure on_failure = OnFailure::stop;
  // The full form, which defines the preemption check (StepKind::preemption_check): after this
  // step fails, the script first asks whether the TPU was preempted and stops with that status if
  // so; after the downloads, that answer and each worker's run record make the per-worker report.
  bool check_preemption = false;
  // With OnFailure::stop: the message and status of the stop; nullopt: the step's own status.
  std::optional<FailureExit> failure_exit;
  // create and queue: once the call succeeded the capacity is the plan's, and every way out of the
  // script after it reports it if it is left running (as from the first step that reaches a TPU).
  bool makes_capacity = false;
  // release: when the script reports the TPU as left running (never on other steps).
  LeftRunning left_running = LeftRunning::never;

  [[nodiscard]] std::string_view name() const { return to_string(kind); }
};
// Up to this many hosts per slice, each worker's fetch is its own step (and line); above it, one
// step per slice loops over the workers (Step::each_worker).
inline constexpr int k_fetch_lines_max = 8;
// The loop variable of such a step, as its line uses it.
inline constexpr Code k_each_worker{"\"$w\""};
// The download folder of worker "$w" of slice `slice`, as such a step's line names it.
struct Plan;
Word each_worker_folder(const Plan& plan, int slice);
// The concurrent group of a step, as every form names it: to_string(step.group).
std::string_view concurrent_group(const Step& step);

// What a plan runs: a script of the course, or the built-in discovery program.
enum class PlanProgram { script, discovery };

// A file of the run's stage folder: the write step copies it there from `local`, checking
// `sha256`, to `path` below code/ (the course's own layout, "public/exercises/lesson.py"); the stage
// step copies the folder into the run folder on every worker, and the run guard checks the digest
// again before the program starts.
struct StagedFile {
  std::string local;  // where to read it, as the plan's folder sees it
  std::string path;   // below the stage folder's code/, '/'-separated: the course-relative path
  std::string sha256; // lower-case hex

  friend bool operator==(const StagedFile&, const StagedFile&) = default;
};

struct Plan {
  PlanProgram program = PlanProgram::script;
  std::string script;
  std::string path;
  std::optional<ScriptClass> script_class; // the reviewed class; nullopt: review-required
  std::string sha256;
  RouteKind route = RouteKind::cpu;
  Target target;       // where it runs (its slice is nullptr on the CPU route): read this, not options
  PlanOptions options; // as asked for: the planner reads it and never rewrites it
  // What the plan derives from its options: whether it bootstraps the workers (--bootstrap, or
  // capacity it creates without --python: a fresh VM has python3 only), the environment the program
  // gets (--env, less a JAX_PLATFORMS equal to the reviewed value the route sets itself) and the
  // --checkpoint-dir URL in its normal form ("" without one).
  bool bootstrap = false;
  std::vector<EnvVar> env;
  std::string checkpoint_dir;
  VerifyKind verify = VerifyKind::none;
  // What the script's review declares its runs prove (MatrixEntry::proves): verify's default kind.
  // nullopt: nothing declared, so verify checks logs and recorded statuses, no training claim.
  std::optional<Proves> proves;
  // On a multi-host route: the reviewed acceptance of an initialize() that runs only under a
  // condition, which the notes repeat (tpulaunch sets none of the values it reads).
  std::optional<InitializeCondition> initialize_condition;
  std::string local_run_dir;  // ./tpu-runs/<tpu>/<id>/<run-id>
  // The run's own folder on every worker, below its home: jax-tpu-lab/runs/<id>/<run-id> (the run
  // key). Nothing the plan stages lands outside it.
  std::string remote_run_dir;
  // The plan's digest (SHA-256, lower-case hex) of what it stages and how it runs it: the script
  // id, run id, slice, the run guard's and every staged file's digest and path, the interpreter,
  // the environment, the arguments and the run's limits. Each worker records it; a second start of
  // the run with another digest is refused, and verify takes only records of this digest.
  std::string plan_sha256;
  std::string cpu_receipt;    // the CPU route's kept output, <id>-cpu.txt (empty on TPU routes)
  // With --results: where each worker uploads (gs://BUCKET/PREFIX/<tpu>/<id>/<run-id>, then
  // worker-<i>/ below it), mirroring local_run_dir; nullopt: every worker is fetched with scp.
  std::optional<std::string> results_run_url;
  int timeout_seconds = 0;      // 0: no --timeout
  int grace_seconds = 30;
  std::vector<StagedFile> staged; // full TPU form: the script (or the discovery program), then its course files
  // What a TPU route sets JAX_PLATFORMS to: "tpu", or the script's reviewed value
  // (MatrixEntry::jax_platforms, then `jax_platforms_reviewed`).
  std::string jax_platforms = "tpu";
  bool jax_platforms_reviewed = false;
  std::vector<Step> steps;

  [[nodiscard]] bool multi_host() const { return route == RouteKind::multi_host; }
  [[nodiscard]] bool preemptible() const { return target.preemptible(); }
  // The workers the plan reaches, one per host of the target (0 on the CPU route).
  [[nodiscard]] int workers() const { return target.processes(); }
  // The plan's id, the first 16 hex digits of its digest: the stage folder's name (staged-<id>) and
  // the mark of a TPU the plan creates.
  [[nodiscard]] std::string plan_id() const { return plan_sha256.substr(0, 16); }
  // The stage folder below the local run folder, which the write step fills: its jax-tpu-lab/
  // mirrors the worker's home, so one scp of it lands in the run folder and nowhere else.
  [[nodiscard]] std::string local_stage_dir() const { return local_run_dir + "/stage/jax-tpu-lab"; }
  // The stage folder in the worker's run folder: <remote_run_dir>/staged-<plan id>.
  [[nodiscard]] std::string remote_staged_dir() const { return remote_run_dir + "/staged-" + plan_id(); }
};

// The environment variable the run guard exports with --checkpoint-dir (docs/lifecycle.md).
inline constexpr std::string_view k_checkpoint_env = "TPU_CHECKPOINT_DIR";

// The folder that holds the plan's run folder, with a final '/': "./tpu-runs/<tpu>/<id>/". The
// --results download goes there, so the run folder arrives with its own name.
std::string run_folder_parent(const Plan& plan);

// The class a plan shows: the reviewed class's name, "review-required", or "discovery" for the
// discovery program.
std::string_view class_name(const Plan& plan);

// Remote exit statuses the run step may report, besides the program's own (k_pipeline_statuses
// in exit_code.hpp has them all).
inline constexpr int k_remote_mapped_255 = to_int(PipelineStatus::mapped_255);
inline constexpr int k_remote_no_python = to_int(PipelineStatus::no_python);
inline constexpr int k_remote_upload_failed = to_int(PipelineStatus::upload_failed);

// Builds the one-slice TPU-VM plan for an allowed decision: tpu_vm_plan (backend.hpp) with
// `slice` x 1 and no flag names, so through the same validate (usage Error naming the value).
Result<Plan> build_plan(const ScriptStatus& script, RouteKind route, const Slice* slice, const PlanOptions& options);

// The discovery-only plan: every worker prints its process index, process count, and global
// and local device counts, and writes a discovery receipt (never a training one).
Result<Plan> build_discovery_plan(const Slice& slice, const PlanOptions& options);

// The default run id: the UTC time and six random hex digits, 20261202T101500Z-3fa9c2, so that plans
// made in the same second never share one.
std::string default_run_id();

} // namespace tpulaunch
