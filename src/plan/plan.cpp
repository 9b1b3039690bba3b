#include "tpulaunch/plan/plan.hpp"

#include <chrono>
#include <ctime>

#include <fmt/chrono.h>
#include <fmt/format.h>

#include "steps.hpp"
#include "tpulaunch/matrix/exercises.hpp"

namespace tpulaunch {
namespace {

using namespace planning;

// The files the full form stages: the run guard (called where it lands), then the script moved
// into ~/jax-tpu-lab/ (or the discovery program into the run folder), then the course files the
// script imports, each moved to its place below ~/jax-tpu-lab/ and pinned by its digest.
std::vector<StagedFile> staged_files(const Plan& plan, const std::vector<LessonFile>& lesson = {}) {
  const auto written = [&](const RemoteProgram& program, std::string place) {
    return StagedFile{plan.local_run_dir + "/" + program.file_name, program.file_name, std::move(place), program.sha256};
  };
  std::vector<StagedFile> files{written(run_guard_program(), "")};
  if (plan.program == PlanProgram::discovery) {
    files.push_back(written(discovery_program(), plan.remote_run_dir + "/" + std::string(k_discovery_file)));
  } else {
    const StagedScript staged = staged_script(plan.script);
    files.push_back(StagedFile{plan.path, staged.name + ".py", std::string(k_lab) + staged.file, plan.sha256});
    for (const LessonFile& file : lesson) {
      const auto slash = file.staged.rfind('/');
      files.push_back(StagedFile{file.path, file.staged.substr(slash == std::string::npos ? 0 : slash + 1),
                                 std::string(k_lab) + file.staged, file.sha256});
    }
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

// gcloud scp copies every source into the home folder by its name: two files of one name would
// land on each other.
Status check_staged_names(const Plan& plan) {
  for (std::size_t i = 1; i < plan.staged.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (plan.staged[i].home_name == plan.staged[j].home_name) {
        return usage_error(fmt::format("'{}' stages {} and {}, which share the name {}: one scp call lands every "
                                       "file in the worker's home folder by its name; rename one of them",
                                       plan.script, plan.staged[j].local, plan.staged[i].local, plan.staged[i].home_name));
      }
    }
  }
  return Ok{};
}

// One bootstrap, stage and run call per slice (node); the sh form starts the runs together, since
// a Multislice program waits in initialization for every slice.
void add_bootstrap(Plan& plan) {
  for (int slice = 0; plan.options.bootstrap && slice < plan.target.nodes; ++slice) {
    plan.steps.push_back(bootstrap_step(plan, slice));
  }
}

void add_stage(Plan& plan) {
  for (int slice = 0; slice < plan.target.nodes; ++slice) {
    plan.steps.push_back(stage_step(plan, slice));
  }
}

void add_runs(Plan& plan, const std::vector<Word>& program, const std::string& summary) {
  for (int slice = 0; slice < plan.target.nodes; ++slice) {
    plan.steps.push_back(full_run_step(plan, program, summary, slice));
  }
}

void add_fetch_verify_teardown(Plan& plan, bool full) {
  if (plan.results_run_url) {
    plan.steps.push_back(collect_step(plan));
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
  }
  return "always";
}

std::string_view concurrent_group(StepKind kind) { return kind == StepKind::fetch ? "fetch" : ""; }

std::string_view concurrent_group(const Step& step) {
  return step.kind == StepKind::run && step.slice ? "run" : concurrent_group(step.kind);
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
  return fmt::format("{:%Y%m%dT%H%M%SZ}", fmt::gmtime(now));
}

Result<Plan> build_plan(const ScriptStatus& script, RouteKind route, const Slice* slice, const PlanOptions& options) {
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
  TPULAUNCH_CHECK(check_course_form(options));
  TPULAUNCH_CHECK(validate_script_options(options, route, script.id,
                                          plan.jax_platforms_reviewed ? plan.jax_platforms : std::string_view()));
  // The reviewed value given again with --env is the one the route sets already.
  std::erase_if(plan.options.env, [&](const EnvVar& var) { return route != RouteKind::cpu && var.name == "JAX_PLATFORMS"; });

  if (route == RouteKind::cpu) {
    plan.target.slice = slice;
    return build_cpu_plan(std::move(plan));
  }
  if (slice == nullptr) {
    return usage_error("a TPU route needs a slice");
  }
  TPULAUNCH_CHECK(validate_tpu_options(options));
  TPULAUNCH_CHECK(resolve_lifecycle(plan, *slice));
  if (options.form == PlanForm::course && is_nested_script_id(script.id)) {
    return usage_error(fmt::format("'{}' is in a subfolder of the exercises folder; --course emits the course's own "
                                   "commands, which copy into ~/jax-tpu-lab/ only: leave --course out",
                                   script.id));
  }
  plan.local_run_dir = fmt::format("./tpu-runs/{}/{}/{}", plan.target.tpu, script.id, options.run_id);
  plan.remote_run_dir = std::string(k_lab) + "runs/" + options.run_id;
  TPULAUNCH_CHECK(set_results(plan, script.id));
  const bool full = options.form == PlanForm::full;
  plan.steps.push_back(prepare_step(plan));
  if (!script.files.empty() && !full) {
    return usage_error(fmt::format("'{}' imports course files ({} and more); --course emits the course's own commands, "
                                   "which copy the script alone: leave --course out",
                                   script.id, script.files.front().course_path));
  }
  if (full) {
    plan.staged = staged_files(plan, script.files);
    TPULAUNCH_CHECK(check_staged_names(plan));
    plan.steps.push_back(write_step(plan, run_guard_program(), plan.staged.front()));
    plan.verify = options.verify.value_or(verify_kind_of(plan.proves));
    if (plan.multi_host()) {
      plan.steps.push_back(preflight_step());
    }
    TPULAUNCH_CHECK(add_capacity_steps(plan));
    add_bootstrap(plan);
  }
  add_stage(plan);
  if (full) {
    add_runs(plan, {lab_path(staged_script(script.id).file)},
             plan.multi_host()
                 ? "put the script in place, check its digest and the TPU's holders, then run on every worker at once"
                 : "put the script in place, check its digest and the TPU's holders, then run on the TPU VM");
  } else {
    plan.steps.push_back(course_run_step(plan));
  }
  add_fetch_verify_teardown(plan, full);
  return plan;
}

Result<Plan> build_discovery_plan(const Slice& slice, const PlanOptions& options) {
  TPULAUNCH_CHECK(validate_tpu_options(options));
  TPULAUNCH_CHECK(validate_script_options(options, RouteKind::multi_host));
  Plan plan;
  plan.program = PlanProgram::discovery;
  plan.script = "discovery";
  plan.route = slice.multi_host() ? RouteKind::multi_host : RouteKind::single_host;
  plan.options = options;
  plan.options.form = PlanForm::full;
  plan.verify = VerifyKind::discovery;
  TPULAUNCH_CHECK(resolve_lifecycle(plan, slice));
  plan.local_run_dir = fmt::format("./tpu-runs/{}/discovery/{}", plan.target.tpu, options.run_id);
  plan.remote_run_dir = std::string(k_lab) + "runs/" + options.run_id;
  TPULAUNCH_CHECK(set_results(plan, plan.script));
  plan.steps.push_back(prepare_step(plan));
  plan.staged = staged_files(plan);
  plan.steps.push_back(write_step(plan, run_guard_program(), plan.staged.front()));
  plan.steps.push_back(write_step(plan, discovery_program(), plan.staged.back()));
  if (plan.multi_host()) {
    plan.steps.push_back(preflight_step());
  }
  TPULAUNCH_CHECK(add_capacity_steps(plan));
  add_bootstrap(plan);
  // The guard moves the program into the run folder, so it comes back with the receipts it wrote.
  add_stage(plan);
  add_runs(plan, {home_path(plan.staged.back().place)},
           "discovery receipt only (not training): every worker reports its topology");
  add_fetch_verify_teardown(plan, true);
  return plan;
}

} // namespace tpulaunch
