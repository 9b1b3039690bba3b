#include "tpulaunch/plan/plan.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <ctime>
#include <random>

#include <fmt/chrono.h>
#include <fmt/format.h>

#include "steps.hpp"
#include "tpulaunch/gcloud/gcloud.hpp"
#include "tpulaunch/matrix/exercises.hpp"
#include "tpulaunch/plan/digest.hpp"
#include "tpulaunch/receipts/run_folder.hpp"

namespace tpulaunch {
namespace {

using namespace planning;

// The files the full form stages below the stage folder's code/: the script (or the discovery
// program) and the course files it imports, each at its course-relative path, pinned by its digest.
std::vector<StagedFile> staged_files(const Plan& plan, const ScriptStatus* script) {
  if (script == nullptr) {
    const RemoteProgram& program = discovery_program();
    return {StagedFile{"", std::string(k_discovery_file), program.sha256}}; // tpulaunch's own: `stage --discovery` writes it
  }
  std::vector<StagedFile> files{StagedFile{plan.path, script->course_path, plan.sha256}};
  for (const LessonFile& file : script->files) {
    files.push_back(StagedFile{file.path, file.course_path, file.sha256});
  }
  return files;
}

// What verify checks by default: what the review declares the script proves; nothing declared,
// its logs and every worker's recorded status (never a training claim the script did not make).
VerifyKind verify_kind_of(std::optional<Proves> proves) {
  switch (proves.value_or(Proves::logs)) {
  case Proves::training:
    return VerifyKind::training;
  case Proves::discovery:
    return VerifyKind::discovery;
  case Proves::logs:
    return VerifyKind::logs;
  }
  return VerifyKind::logs;
}

// The plan's digest: what the run is, written out unambiguously (each value with its length) and
// hashed. Two plans with the same digest stage the same files and run them the same way.
std::string plan_digest(const Plan& plan) {
  DigestWriter digest("tpulaunch-plan 1");
  digest.add("script", plan.script);
  digest.add("run-id", plan.options.run_id);
  digest.add("slice", plan.target.slice->name);
  digest.add("slices", std::to_string(plan.target.nodes));
  digest.add("guard", run_guard_program().sha256);
  for (const StagedFile& file : plan.staged) {
    digest.add("file", file.path);
    digest.add("sha256", file.sha256);
  }
  digest.add("python", plan.options.python);
  digest.add("jax-platforms", plan.jax_platforms);
  for (const EnvVar& var : plan.env) {
    digest.add("env", var.name + "=" + var.value);
  }
  for (const std::string& arg : plan.options.args) {
    digest.add("arg", arg);
  }
  digest.add("timeout", std::to_string(plan.timeout_seconds));
  digest.add("grace", std::to_string(plan.grace_seconds));
  digest.add("kill-stale", plan.options.lifecycle.kill_stale ? "1" : "0");
  digest.add("results", plan.results_run_url.value_or(""));
  if (!plan.checkpoint_dir.empty()) { // added only when set: every other plan keeps its digest
    digest.add("checkpoint-dir", plan.checkpoint_dir);
  }
  return digest.sha256();
}

// The full form's files and identity: what it stages, its digest, and the mark of capacity it
// creates.
void seal(Plan& plan, const ScriptStatus* script) {
  plan.staged = staged_files(plan, script);
  plan.plan_sha256 = plan_digest(plan);
  if (plan.target.capacity != Capacity::existing) {
    plan.target.mark = plan.plan_id();
  }
}

// One bootstrap, stage and run call per slice (node); the sh form starts the runs together, since
// a Multislice program waits in initialization for every slice.
void add_bootstrap(Plan& plan) {
  for (int slice = 0; plan.bootstrap && slice < plan.target.nodes; ++slice) {
    plan.steps.push_back(bootstrap_step(plan, slice));
  }
}

void add_stage(Plan& plan) {
  for (int slice = 0; slice < plan.target.nodes; ++slice) {
    plan.steps.push_back(stage_step(plan, slice));
  }
}

// The run's own folder on every worker: one per script and run id (the run key).
std::string remote_run_dir(std::string_view script, std::string_view run_id) {
  return fmt::format("{}runs/{}/{}", k_lab, script, run_id);
}

// With --slices, one stop step per slice before the runs (defined there, as the release step is
// before the wait): the first slice whose run fails stops the others.
void add_runs(Plan& plan, const std::vector<Word>& program, const std::string& summary) {
  for (int slice = 0; plan.target.multislice() && slice < plan.target.nodes; ++slice) {
    plan.steps.push_back(stop_step(plan, slice));
  }
  for (int slice = 0; slice < plan.target.nodes; ++slice) {
    plan.steps.push_back(full_run_step(plan, program, summary, slice));
  }
}

void add_fetch_verify_teardown(Plan& plan, bool full) {
  if (plan.results_run_url) {
    plan.steps.push_back(collect_step(plan));
    // The fallback: a worker whose folder did not arrive is fetched from the worker itself.
    for (int slice = 0; full && slice < plan.target.nodes; ++slice) {
      plan.steps.push_back(fetch_loop_step(plan, slice, true));
      plan.steps.back().when = StepWhen::not_collected;
      plan.steps.back().make_folder = each_worker_folder(plan, slice);
      plan.steps.back().summary = "bring back, from the workers themselves, the folder of each worker w that did "
                                  "not arrive from the results bucket, one download each" +
                                  on_slice(plan, slice);
    }
  } else if (fetch_loops(plan)) {
    for (int slice = 0; slice < plan.target.nodes; ++slice) {
      plan.steps.push_back(fetch_loop_step(plan, slice, full));
    }
  } else {
    for (int worker = 0; worker < plan.workers(); ++worker) {
      plan.steps.push_back(fetch_step(plan, worker, full));
    }
  }
  if (full && plan.verify != VerifyKind::none) {
    plan.steps.push_back(verify_step(plan));
  }
  if (plan.options.teardown) {
    plan.steps.push_back(teardown_step(plan));
  }
}

// The CPU route: the --env values, the interpreter and the script, keeping a CPU receipt.
Result<Plan> build_cpu_plan(Plan plan) {
  plan.cpu_receipt = plan.script + "-cpu.txt";
  if (!plan.options.directory.empty() || is_nested_script_id(plan.script)) {
    plan.steps.push_back(prepare_step(plan));
  }
  plan.steps.push_back(cpu_run_step(plan));
  return plan;
}

} // namespace

std::string_view to_string(StepKind kind) {
  switch (kind) {
  case StepKind::prepare: return "prepare";
  case StepKind::write: return "write";
  case StepKind::preflight: return "preflight";
  case StepKind::name_check: return "name-check";
  case StepKind::create: return "create";
  case StepKind::queue: return "queue";
  case StepKind::release: return "release";
  case StepKind::wait: return "wait";
  case StepKind::preemption_check: return "preemption-check";
  case StepKind::bootstrap: return "bootstrap";
  case StepKind::stage: return "stage";
  case StepKind::run: return "run";
  case StepKind::stop: return "stop";
  case StepKind::fetch: return "fetch";
  case StepKind::collect: return "collect";
  case StepKind::verify: return "verify";
  case StepKind::teardown: return "teardown";
  }
  return "run";
}

std::string_view to_string(StepWhen when) {
  switch (when) {
  case StepWhen::always: return "always";
  case StepWhen::capacity_unusable: return "capacity-unusable";
  case StepWhen::step_failed: return "step-failed";
  case StepWhen::verify_succeeded: return "verify-succeeded";
  case StepWhen::other_slice_failed: return "other-slice-failed";
  case StepWhen::not_collected:
    return "not-collected";
  }
  return "always";
}

namespace {

// The one table of the groups' words: the name every form shows, how they start, and the JSON
// form's sentence.
struct GroupWords {
  StepGroup group;
  std::string_view name;
  std::string_view start;
  std::string_view sentence;
};
constexpr std::array<GroupWords, 3> k_group_words{{
    {StepGroup::none, "", "", ""},
    {StepGroup::fetch, "fetch", "", "each worker's fetch is independent"},
    {StepGroup::run, "run", "together", "start every step of the group at once, and wait for all"},
}};

// The one table of what a failure does: its name, and the JSON form's sentence.
struct FailureWords {
  OnFailure on_failure;
  std::string_view name;
  std::string_view sentence;
};
constexpr std::array<FailureWords, 4> k_failure_words{{
    {OnFailure::stop, "stop", "a failure stops the script"},
    {OnFailure::keep_status, "keep-status",
     "a failure keeps its status, retrieval still runs, and the script stops with it after the report"},
    {OnFailure::stop_the_others, "stop-the-others",
     "when one fails, run the stop step of each slice whose run is still going (a slice waits for the others in "
     "initialization)"},
    {OnFailure::report_after_all, "report-after-all", "a failure never stops the others"},
}};

const GroupWords& words_of(StepGroup group) {
  return *std::find_if(k_group_words.begin(), k_group_words.end(),
                       [group](const GroupWords& row) { return row.group == group; });
}

const FailureWords& words_of(OnFailure on_failure) {
  return *std::find_if(k_failure_words.begin(), k_failure_words.end(),
                       [on_failure](const FailureWords& row) { return row.on_failure == on_failure; });
}

} // namespace

std::string_view to_string(StepGroup group) {
  return words_of(group).name;
}
std::string_view describe(StepGroup group) {
  return words_of(group).sentence;
}
std::string_view start_of(StepGroup group) {
  return words_of(group).start;
}
std::string_view to_string(OnFailure on_failure) {
  return words_of(on_failure).name;
}
std::string_view describe(OnFailure on_failure) {
  return words_of(on_failure).sentence;
}

std::string_view concurrent_group(const Step& step) {
  return to_string(step.group);
}

std::string_view to_string(LeftRunning left_running) {
  switch (left_running) {
  case LeftRunning::never:
    return "never";
  case LeftRunning::on_failure:
    return "on-failure";
  case LeftRunning::always:
    return "always";
  }
  return "never";
}

Word each_worker_folder(const Plan& plan, int slice) {
  Word folder(gcloud::local_path(plan.local_run_dir + "/"));
  if (plan.target.multislice()) {
    folder.append(slice_folder(slice) + "/");
  }
  return folder.append(std::string(k_worker_folder_prefix)).append(k_each_worker).append("/");
}

std::string Workers::text() const { return is_all() ? std::string("all") : std::to_string(m_index); }

std::string run_folder_parent(const Plan& plan) {
  return plan.local_run_dir.substr(0, plan.local_run_dir.rfind('/') + 1);
}

std::string_view class_name(const Plan& plan) {
  if (plan.program == PlanProgram::discovery) {
    return "discovery";
  }
  return plan.script_class ? to_string(*plan.script_class) : k_review_required;
}

std::string default_run_id() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::random_device random;
  return fmt::format("{:%Y%m%dT%H%M%SZ}-{:06x}", fmt::gmtime(now), random() & 0xffffffU);
}

Result<Plan> planning::build_tpu_vm_plan(const ScriptStatus& script, RouteKind route, const Topology& topology,
                                         const PlanOptions& options) {
  const Slice* slice = topology.slice;
  Plan plan;
  plan.script = script.id;
  plan.path = script.path;
  plan.script_class = script.route_class();
  plan.sha256 = script.actual_sha256;
  plan.route = route;
  plan.options = options;
  if (script.entry != nullptr) {
    plan.proves = script.entry->proves;
    plan.initialize_condition = route == RouteKind::multi_host ? script.entry->initialize_condition : std::nullopt;
  }
  if (route != RouteKind::cpu && script.entry != nullptr && !script.entry->jax_platforms.empty()) {
    plan.jax_platforms = script.entry->jax_platforms;
    plan.jax_platforms_reviewed = true;
  }
  // The reviewed value given again with --env is the one the route sets already.
  plan.env = options.env;
  std::erase_if(plan.env, [&](const EnvVar& var) { return route != RouteKind::cpu && var.name == "JAX_PLATFORMS"; });

  if (route == RouteKind::cpu) {
    plan.target.slice = slice;
    return build_cpu_plan(std::move(plan));
  }
  if (slice == nullptr) {
    return usage_error("a TPU route needs a slice");
  }
  TPULAUNCH_CHECK(resolve_lifecycle(plan, *slice, topology.slices));
  if (options.form == PlanForm::course && is_nested_script_id(script.id)) {
    return usage_error(fmt::format("'{}' is in a subfolder of the exercises folder; --course emits the course's own "
                                   "commands, which copy into ~/jax-tpu-lab/ only: leave --course out",
                                   script.id));
  }
  plan.local_run_dir = fmt::format("./tpu-runs/{}/{}/{}", plan.target.tpu, script.id, options.run_id);
  plan.remote_run_dir = remote_run_dir(script.id, options.run_id);
  TPULAUNCH_CHECK(set_results(plan, script.id));
  TPULAUNCH_CHECK(set_checkpoint_dir(plan));
  const bool full = options.form == PlanForm::full;
  plan.steps.push_back(prepare_step(plan));
  if (!script.files.empty() && !full) {
    return usage_error(fmt::format("'{}' imports course files ({} and more); --course emits the course's own commands, "
                                   "which copy the script alone: leave --course out",
                                   script.id, script.files.front().course_path));
  }
  if (full) {
    seal(plan, &script);
    plan.steps.push_back(write_step(plan));
    plan.verify = options.verify.value_or(verify_kind_of(plan.proves));
    if (plan.multi_host()) {
      plan.steps.push_back(preflight_step());
    }
    TPULAUNCH_CHECK(add_capacity_steps(plan));
  }
  add_stage(plan);
  if (full) {
    add_bootstrap(plan);
    // Relative to the stage folder's code/, where the guard runs it ("./" before a leading '-').
    add_runs(plan, {Word(gcloud::local_path(script.course_path))},
             plan.multi_host()
                 ? "check the staged files' digests and the TPU's holders, then run on every worker at once"
                 : "check the staged files' digests and the TPU's holders, then run on the TPU VM");
  } else {
    plan.steps.push_back(course_run_step(plan));
  }
  add_fetch_verify_teardown(plan, full);
  return plan;
}

Result<Plan> build_discovery_plan(const Slice& slice, const PlanOptions& options) {
  if (options.form != PlanForm::full) {
    return usage_error("the discovery program has no --course form: it runs as tpulaunch stages it");
  }
  TPULAUNCH_CHECK(validate_tpu_options(options));
  TPULAUNCH_CHECK(validate_script_options(options, RouteKind::multi_host));
  Plan plan;
  plan.program = PlanProgram::discovery;
  plan.script = "discovery";
  plan.route = slice.multi_host() ? RouteKind::multi_host : RouteKind::single_host;
  plan.options = options;
  plan.env = options.env;
  plan.verify = VerifyKind::discovery;
  TPULAUNCH_CHECK(resolve_lifecycle(plan, slice, 1));
  plan.local_run_dir = fmt::format("./tpu-runs/{}/discovery/{}", plan.target.tpu, options.run_id);
  plan.remote_run_dir = remote_run_dir(plan.script, options.run_id);
  TPULAUNCH_CHECK(set_results(plan, plan.script));
  TPULAUNCH_CHECK(set_checkpoint_dir(plan));
  plan.steps.push_back(prepare_step(plan));
  seal(plan, nullptr);
  plan.steps.push_back(write_step(plan));
  if (plan.multi_host()) {
    plan.steps.push_back(preflight_step());
  }
  TPULAUNCH_CHECK(add_capacity_steps(plan));
  add_stage(plan);
  add_bootstrap(plan);
  add_runs(plan, {Word(std::string(k_discovery_file))},
           "discovery receipt only (not training): every worker reports its topology");
  add_fetch_verify_teardown(plan, true);
  return plan;
}

} // namespace tpulaunch
