#include "tpulaunch/plan/plan.hpp"

#include <algorithm>
#include <chrono>
#include <ctime>

#include <fmt/chrono.h>
#include <fmt/format.h>

#include "tpulaunch/course/exercises.hpp"
#include "tpulaunch/gcloud/gcloud.hpp"
#include "tpulaunch/remote/remote_program.hpp"
#include "tpulaunch/plan/results_url.hpp"
#include "tpulaunch/receipts/run_folder.hpp"
#include "tpulaunch/plan/validate.hpp"

namespace tpulaunch {
namespace {

// Shell code used in remote command strings. Compile-time constants only (see shell.hpp).
constexpr Code k_then{"; "};
constexpr Code k_and{" && "};
constexpr Code k_not{"!"};
constexpr Code k_pipe{" | "};
constexpr Code k_merge_stderr{" 2>&1"};
constexpr Code k_map_255{"; status=$?; if [ \"$status\" -eq 255 ]; then status=254; fi; exit \"$status\""};
static_assert(k_remote_mapped_255 == 254, "keep the remote code in step with the code above");
constexpr std::string_view k_lab = "jax-tpu-lab/"; // the course's folder in each worker's home

constexpr std::string_view k_discovery_file = "discover.py"; // its name in the run folder, where the guard puts it

// A local path as an argument: gcloud::local_path's "./" keeps a leading '-' from reading as an
// option to python on the CPU route too.
using gcloud::local_path;

Word lab_path(std::string_view rest) { return home_path(std::string(k_lab) + std::string(rest)); }

// The interpreter on each worker: --python (a leading ~/ is the worker's home), or the venv's.
Word remote_python(const Plan& plan) {
  const std::string& python = plan.options.python;
  if (python.empty()) {
    return lab_path(".venv/bin/python");
  }
  return python.starts_with("~/") ? home_path(python.substr(2)) : Word(python);
}

// The interpreter on this machine: --python, python3, or the course's own `python`.
Word local_python(const Plan& plan) {
  if (!plan.options.python.empty()) {
    return Word(plan.options.python);
  }
  return plan.options.form == PlanForm::course ? Word("python") : Word("python3");
}

// KEY=VALUE words for --env (before the interpreter), each value one quoted literal.
void add_env(ShellLine& line, const Plan& plan) {
  for (const EnvVar& var : plan.options.env) {
    line.word(Word(var.name + "=").append(var.value));
  }
}

// The script's own arguments (after its path).
void add_args(ShellLine& line, const Plan& plan) {
  for (const std::string& arg : plan.options.args) {
    line.word(Word(arg));
  }
}

// tpulaunch's own flags (verify's --slice=, --kind=...).
Word flag(std::string_view name, std::string value) { return Word(std::string(name) + "=").append(std::move(value)); }

// Where every gcloud call of the plan goes.
gcloud::Location location(const Plan& plan) { return {plan.options.zone, plan.options.project}; }

// The --worker= value a call names, when it names one.
std::optional<std::string> worker_flag(const std::optional<Workers>& workers) {
  return workers ? std::optional<std::string>(workers->text()) : std::nullopt;
}

Word remote(const Plan& plan, const Word& path) { return gcloud::on_node(plan.options.tpu, path); }

// The workers a call that reaches every host names: `all` on a multi-host slice, and none on one
// host (gcloud's default worker 0 is the only one).
std::optional<Workers> every_worker_flag(const Plan& plan) {
  return plan.multi_host() ? std::optional<Workers>(Workers::all()) : std::nullopt;
}

// What a call that reaches every host reaches, for the plan's readers: all workers, or worker 0.
Workers every_worker(const Plan& plan) { return plan.multi_host() ? Workers::all() : Workers::one(0); }

Step ssh_step(const Plan& plan, StepKind kind, std::string summary, const ShellLine& remote_command) {
  Step step;
  step.kind = kind;
  step.where = StepWhere::remote;
  step.workers = every_worker(plan);
  step.summary = std::move(summary);
  step.line = gcloud::tpu_vm_ssh(
      {plan.options.tpu, location(plan), worker_flag(every_worker_flag(plan)), remote_command, gcloud::Connection::external});
  return step;
}

// The local folders the plan writes into, which must exist before it does: each worker's download
// folder (gcloud needs it), the run folder alone with --results (the one download fills it), or the
// folder of a CPU receipt for a script in a subfolder ("advanced/sub_lesson-cpu.txt").
std::vector<std::string> local_folders(const Plan& plan) {
  std::vector<std::string> folders;
  if (plan.route == RouteKind::cpu) {
    const auto slash = plan.cpu_receipt.rfind('/');
    if (slash != std::string::npos) {
      folders.push_back(plan.cpu_receipt.substr(0, slash + 1));
    }
  } else if (plan.results_run_url) {
    folders.push_back(plan.local_run_dir + "/");
  } else {
    for (int worker = 0; worker < plan.workers(); ++worker) {
      folders.push_back(fmt::format("{}/{}/", plan.local_run_dir, worker_folder(worker)));
    }
  }
  return folders;
}

// Local: change to the plan's folder (so every relative path resolves as it did for the plan) and
// create the folders the plan writes into. One line, so that the text form pasted line by line
// does what the sh form does.
Step prepare_step(const Plan& plan) {
  Step step;
  step.kind = StepKind::prepare;
  const std::vector<std::string> folders = local_folders(plan);
  step.summary = folders.empty()                ? "work in the folder the plan was made in"
                 : plan.route == RouteKind::cpu ? "work in the folder the plan was made in; create the folder the "
                                                  "CPU receipt goes in"
                                                : "work in the folder the plan was made in; check that this run's "
                                                  "folder is new (a second run never overwrites the first); create "
                                                  "the folders the downloads land in";
  if (!plan.options.directory.empty()) {
    step.line.word("cd").word(plan.options.directory);
    if (!folders.empty()) {
      step.line.code(k_and);
    }
  }
  if (plan.route != RouteKind::cpu) {
    // A run id names one run: a second run of the same plan (a saved script run again, a pasted
    // plan pasted twice) stops here instead of mixing its results with the first's.
    step.line.word("test").word(Word(k_not)).word("-e").word(plan.local_run_dir).code(k_and);
  }
  if (!folders.empty()) {
    step.line.word("mkdir").word("-p");
    for (const std::string& folder : folders) {
      step.line.word(folder);
    }
  }
  return step;
}

// Local: tpulaunch writes its own programs (the run guard, the discovery program) into the run
// folder, where the stage step copies them from; `tpulaunch guard` prints the same bytes, and
// --sha256 makes a tpulaunch with another guard refuse before any TPU time is spent.
Step write_step(const Plan& plan, const RemoteProgram& program, const StagedFile& file) {
  Step step;
  step.kind = StepKind::write;
  step.summary = fmt::format("write tpulaunch's {} ({} lines, which tpulaunch guard{} prints) for the stage step to copy",
                             program.what, std::count(program.text.begin(), program.text.end(), '\n'),
                             &program == &discovery_program() ? " --discovery" : "");
  step.line = ShellLine{Word(plan.options.tpulaunch_program), "guard"};
  if (&program == &discovery_program()) {
    step.line.word("--discovery");
  }
  step.line.word("--write").word(file.local).word("--sha256").word(file.sha256);
  return step;
}

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

Step preflight_step() {
  Step step;
  step.kind = StepKind::preflight;
  step.summary = "check that an ssh key is loaded in the agent (gcloud needs one to reach several workers)";
  step.line = ShellLine{"ssh-add", "-l"};
  return step;
}

Step bootstrap_step(const Plan& plan) {
  ShellLine command;
  command.word("mkdir").word("-p").word(home_path(std::string(k_lab)));
  command.code(k_and).word("python3").word("-m").word("venv").word(lab_path(".venv"));
  command.code(k_and).word(lab_path(".venv/bin/python")).word("-m").word("pip").word("install").word("--quiet")
      .word("--upgrade").word("jax[tpu]");
  // gcloud reads a remote 255 as its ssh failing and runs the whole command again, up to 10 times.
  command.code(k_map_255);
  return ssh_step(plan, StepKind::bootstrap, "create ~/jax-tpu-lab/.venv and install jax[tpu] on every worker",
                  command);
}

Step stage_step(const Plan& plan) {
  Step step;
  step.kind = StepKind::stage;
  step.where = StepWhere::remote;
  step.workers = every_worker(plan);
  const std::string_view what = plan.staged.empty()                    ? "the script"
                                : plan.program == PlanProgram::discovery ? "the run guard and the discovery program"
                                : plan.staged.size() > 2                 ? "the run guard, the script and its course files"
                                                                         : "the run guard and the script";
  step.summary = fmt::format("copy {} to {}", what, plan.multi_host() ? "every worker" : "the TPU VM");
  gcloud::TpuVmScp copy{.sources = {},
                        .destination = {},
                        .recurse = false,
                        .at = location(plan),
                        .worker = worker_flag(every_worker_flag(plan)),
                        .connection = gcloud::Connection::external};
  // The course form copies into ~/jax-tpu-lab/, which a fresh TPU VM does not have. The full form
  // copies into the home folder, which always exists (`NAME:`), and the run call moves the files
  // into place: no failed copy, no retries, and no extra gcloud call.
  if (plan.options.form == PlanForm::course) {
    copy.sources.emplace_back(local_path(plan.path));
    copy.destination = remote(plan, home_path(std::string(k_lab)));
  } else {
    for (const StagedFile& file : plan.staged) {
      copy.sources.emplace_back(local_path(file.local));
    }
    copy.destination = remote(plan, Word());
  }
  step.line = gcloud::tpu_vm_scp(copy);
  return step;
}

Step course_run_step(const Plan& plan) {
  const std::string py = plan.script + ".py";
  ShellLine command;
  command.word("set").word("-o").word("pipefail").code(k_then);
  command.word(Word("JAX_PLATFORMS=").append(plan.jax_platforms));
  add_env(command, plan);
  command.word(lab_path(".venv/bin/python")).word(lab_path(py));
  add_args(command, plan);
  command.code(k_pipe).word("tee").word(lab_path(plan.script + "-tpu.txt"));
  return ssh_step(plan, StepKind::run, plan.multi_host() ? "run on every worker at once" : "run on the TPU VM",
                  command);
}

// The run step of the full form. One ssh call does everything remote, through the run guard
// (src/remote/run_guard.bash): create the run folder (so every worker's fetch finds it, whatever
// happens next), put the staged script in place and check it against the reviewed digest, stop at
// once when the interpreter is missing, look for processes that hold the TPU, run with
// TPU_RUN_DIR exported, the --env values, a per-host log and --timeout, record the worker's
// outcome in its run folder, upload it with --results, and keep a 255 from looking like an ssh
// failure. The guard is the file the stage step copied (plan.staged's first), called by its name
// and checking its own digest first; `program` is the interpreter's arguments.
Step full_run_step(const Plan& plan, const std::vector<Word>& program, std::string summary) {
  const std::string run = plan.remote_run_dir + "/";
  const LifecycleOptions& life = plan.options.lifecycle;
  const StagedFile& guard = plan.staged.front();
  ShellLine command;
  command.word("bash").word(home_path(guard.home_name)).word("--guard-sha256").word(guard.sha256);
  command.word("--run-dir").word(home_path(plan.remote_run_dir));
  // A script in a subfolder (id "advanced/sub_lesson") is copied to ~/sub_lesson.py and moved to
  // ~/jax-tpu-lab/advanced/sub_lesson.py; its log is sub_lesson-tpu-<host>.txt in the run folder.
  const StagedScript staged = staged_script(plan.script);
  command.word("--log").word(home_path(run + staged.name + "-tpu-").append(k_hostname).append(".txt"));
  for (auto file = std::next(plan.staged.begin()); file != plan.staged.end(); ++file) {
    command.word("--stage").word(home_path(file->home_name)).word(home_path(file->place)).word(file->sha256);
  }
  command.word("--devices").word(std::string(to_string(plan.slice->devices)));
  if (plan.timeout_seconds > 0) {
    command.word("--timeout").word(std::to_string(plan.timeout_seconds));
  }
  if (plan.timeout_seconds > 0 || life.kill_stale) {
    command.word("--grace").word(std::to_string(plan.grace_seconds));
  }
  if (life.kill_stale) {
    command.word("--kill-stale");
  }
  if (plan.results_run_url) {
    command.word("--upload").word(*plan.results_run_url);
  }
  command.word("--env").word(Word("JAX_PLATFORMS=").append(plan.jax_platforms));
  for (const EnvVar& var : plan.options.env) {
    command.word("--env").word(Word(var.name + "=").append(var.value));
  }
  command.word("--python").word(remote_python(plan)).word("--").words(program);
  add_args(command, plan);
  if (plan.timeout_seconds > 0) {
    summary += fmt::format(", for at most {}", life.timeout);
  }
  return ssh_step(plan, StepKind::run, std::move(summary), command);
}

Step fetch_step(const Plan& plan, int worker, bool full) {
  Step step;
  step.kind = StepKind::fetch;
  step.where = StepWhere::remote;
  step.workers = Workers::one(worker);
  step.summary = fmt::format("bring back worker {}'s {}", worker, full ? "log and artifacts" : "log");
  step.line = gcloud::tpu_vm_scp(
      {.sources = {full ? remote(plan, home_path(plan.remote_run_dir)) : remote(plan, lab_path(plan.script + "-tpu.txt"))},
       .destination = Word(local_path(fmt::format("{}/{}/", plan.local_run_dir, worker_folder(worker)))),
       .recurse = full,
       .at = location(plan),
       .worker = worker_flag(step.workers),
       .connection = gcloud::Connection::external});
  return step;
}

// --results: one local call brings every worker's folder back. The source's last part (the run
// id) is kept because the destination, the run folder's parent, exists: every worker lands in
// ./tpu-runs/<tpu>/<id>/<run-id>/worker-<i>/<run-id>/, where verify reads it.
Step collect_step(const Plan& plan) {
  Step step;
  step.kind = StepKind::collect;
  step.where = StepWhere::remote;
  step.workers = every_worker(plan);
  step.summary = "bring every worker's folder back from the results bucket, in one call";
  step.line = gcloud::storage_cp({*plan.results_run_url, run_folder_parent(plan), true});
  return step;
}

Step verify_step(const Plan& plan) {
  Step step;
  step.kind = StepKind::verify;
  step.summary = fmt::format("check the fetched {} of every worker", plan.verify == VerifyKind::logs ? "logs" : "receipts");
  step.line = ShellLine{Word(plan.options.tpulaunch_program), "verify", Word(plan.local_run_dir),
                        flag("--slice", plan.slice->name), flag("--kind", std::string(to_string(plan.verify)))};
  // The catalog and matrix the plan used, so the slice and the script mean the same to verify.
  if (!plan.options.matrix_file.empty()) {
    step.line.word(flag("--matrix", plan.options.matrix_file));
  }
  if (!plan.options.catalog_file.empty()) {
    step.line.word(flag("--catalog", plan.options.catalog_file));
  }
  return step;
}

// The command that deletes what holds quota: the queued resource with its node (--force), or
// the node.
ShellLine delete_line(const Plan& plan) {
  if (plan.options.lifecycle.capacity == Capacity::queued) {
    return gcloud::queued_delete({plan.queued_resource, location(plan)});
  }
  return gcloud::tpu_vm_delete({plan.options.tpu, location(plan)});
}

std::string_view deleted_what(const Plan& plan) {
  return plan.options.lifecycle.capacity == Capacity::queued ? "the queued resource and its TPU VM" : "the TPU VM";
}

Step teardown_step(const Plan& plan) {
  Step step;
  step.kind = StepKind::teardown;
  step.where = StepWhere::local;
  step.when = StepWhen::verify_succeeded;
  step.summary = fmt::format("delete {}", deleted_what(plan));
  step.line = delete_line(plan);
  return step;
}

// tpu-vm create ... --async: gcloud's own wait has no deadline, so the wait step polls instead.
Step create_step(const Plan& plan) {
  Step step;
  step.kind = StepKind::create;
  step.where = StepWhere::local; // a call to the TPU API from this machine, not to a worker
  step.summary = fmt::format("create the TPU VM ({}{}) and return at once; the wait step polls its state",
                             plan.slice->name,
                             plan.options.lifecycle.provisioning == Provisioning::standard
                                 ? ""
                                 : ", " + std::string(to_string(plan.options.lifecycle.provisioning)));
  step.line = gcloud::tpu_vm_create({plan.options.tpu, location(plan), plan.slice->name, plan.runtime_version,
                                     plan.options.lifecycle.provisioning, true});
  return step;
}

Step queue_step(const Plan& plan) {
  const LifecycleOptions& life = plan.options.lifecycle;
  Step step;
  step.kind = StepKind::queue;
  step.where = StepWhere::local; // a call to the TPU API from this machine, not to a worker
  step.summary = fmt::format("ask for {} as queued resource {}, node {}{}", plan.slice->name, plan.queued_resource,
                             plan.options.tpu,
                             life.valid_until.empty() ? "" : ", waiting at most " + life.valid_until + " for capacity");
  step.line = gcloud::queued_create({plan.queued_resource, plan.options.tpu, location(plan), plan.slice->name,
                                     plan.runtime_version, life.provisioning, life.valid_until});
  return step;
}

// The TPU's state.
ShellLine node_state_line(const Plan& plan) {
  return gcloud::tpu_vm_describe({plan.options.tpu, location(plan), "value(state)"});
}

// The one state query of what the plan asks for: the queued resource's state (--queued), or the
// TPU's. The name check and the wait both ask it.
ShellLine capacity_state_line(const Plan& plan) {
  if (plan.options.lifecycle.capacity == Capacity::queued) {
    return gcloud::queued_describe({plan.queued_resource, location(plan), "value(state.state)"});
  }
  return node_state_line(plan);
}

// Before creating: what the plan is about to create must not exist yet. A TPU (or queued resource)
// of that name is not this plan's, so the plan refuses it, naming its state, rather than run on it
// or, later, delete it. The line is the describe call; the sh script refuses when it succeeds.
Step name_check_step(const Plan& plan) {
  const bool queued = plan.options.lifecycle.capacity == Capacity::queued;
  Step step;
  step.kind = StepKind::name_check;
  step.where = StepWhere::local;
  step.summary = fmt::format("check that no {} named {} exists yet (this plan creates it): a state printed here means "
                             "one does, and the plan stops (exit {})",
                             queued ? "queued resource" : "TPU", queued ? plan.queued_resource : plan.options.tpu,
                             to_int(PipelineStatus::name_taken));
  step.line = capacity_state_line(plan);
  return step;
}

Step release_step(const Plan& plan) {
  Step step;
  step.kind = StepKind::release;
  step.where = StepWhere::local;
  step.when = StepWhen::capacity_unusable;
  step.summary = fmt::format("delete {} (it holds quota)", deleted_what(plan));
  step.line = delete_line(plan);
  return step;
}

// Node states a new node never leaves for READY; queued-resource states that never lead to ACTIVE.
const std::vector<std::string> k_node_dead_ends{"PREEMPTED", "TERMINATED", "STOPPED", "STOPPING", "DELETING", "HIDDEN"};
const std::vector<std::string> k_queued_dead_ends{"FAILED", "SUSPENDED", "SUSPENDING", "DELETING"};

Step wait_step(const Plan& plan, int poll_seconds, int deadline_seconds) {
  const bool queued = plan.options.lifecycle.capacity == Capacity::queued;
  Step step;
  step.kind = StepKind::wait;
  step.where = StepWhere::local;
  step.poll = Poll{queued ? "ACTIVE" : "READY", queued ? k_queued_dead_ends : k_node_dead_ends, poll_seconds,
                   deadline_seconds};
  std::string stops;
  for (const auto& state : step.poll->stop_on) {
    stops += (stops.empty() ? "" : "/") + state;
  }
  step.summary = fmt::format("every {}s until {} is {}, for at most {}s; {}: delete it and stop (exit {})", poll_seconds,
                             queued ? plan.queued_resource : plan.options.tpu, step.poll->until, deadline_seconds, stops,
                             to_int(PipelineStatus::capacity_failed));
  step.line = capacity_state_line(plan);
  return step;
}

Step preemption_check_step(const Plan& plan) {
  Step step;
  step.kind = StepKind::preemption_check;
  step.where = StepWhere::local;
  step.when = StepWhen::step_failed;
  step.summary = fmt::format("ask for the {} TPU's state once: PREEMPTED or TERMINATED is reported as such (exit {})",
                             to_string(plan.options.lifecycle.provisioning), to_int(PipelineStatus::preempted));
  step.line = node_state_line(plan);
  return step;
}

// A duration the value rules accepted, in seconds.
Result<int> seconds_of(ValueKind kind, const std::string& value) {
  TPULAUNCH_CHECK(validate_value(kind, value));
  return static_cast<int>(*duration_seconds(value));
}

// Checks the lifecycle options against each other and fills the plan's derived values.
Status resolve_lifecycle(Plan& plan) {
  const LifecycleOptions& life = plan.options.lifecycle;
  const bool creates = life.capacity != Capacity::existing;
  auto needs = [](bool ok, std::string_view message) -> Status {
    if (!ok) {
      return usage_error(std::string(message));
    }
    return Ok{};
  };
  if (plan.options.form == PlanForm::course) {
    TPULAUNCH_CHECK(needs(!creates && life.provisioning == Provisioning::standard && life.timeout.empty() &&
                              !life.kill_stale,
                          "--course emits the course's own commands only; --create, --queued, --spot, --timeout and "
                          "--kill-stale need the full form"));
  }
  TPULAUNCH_CHECK(needs(life.provisioning != Provisioning::preemptible || life.capacity != Capacity::queued,
                        "--preemptible is a tpu-vm create flag; a queued resource takes --spot"));
  TPULAUNCH_CHECK(needs(life.provisioning != Provisioning::guaranteed || life.capacity == Capacity::queued,
                        "--guaranteed is a queued-resources flag: it needs --queued"));
  TPULAUNCH_CHECK(needs(life.provisioning != Provisioning::reserved || creates,
                        "--reserved asks for reserved capacity: it needs --create or --queued"));
  TPULAUNCH_CHECK(needs(life.capacity == Capacity::queued || (life.queued_resource.empty() && life.valid_until.empty()),
                        "--queued-resource and --valid-until-duration need --queued"));
  TPULAUNCH_CHECK(needs(creates || (life.runtime_version.empty() && life.ready_timeout.empty() && life.poll.empty()),
                        "--runtime-version, --ready-timeout and --poll need --create or --queued"));
  // A TPU the plan creates is a fresh VM, with python3 only: without an interpreter the run could
  // only fail (status 96) while the TPU bills. So the plan bootstraps it, unless --python names one.
  if (creates && plan.options.python.empty()) {
    plan.options.bootstrap = true;
  }
  plan.runtime_version = life.runtime_version.empty() ? plan.slice->runtime_version : life.runtime_version;
  TPULAUNCH_CHECK(validate_value(ValueKind::runtime_version, plan.runtime_version));
  if (life.capacity == Capacity::queued) {
    plan.queued_resource = life.queued_resource.empty() ? plan.options.tpu + "-qr" : life.queued_resource;
    TPULAUNCH_CHECK(validate_value(ValueKind::queued_resource, plan.queued_resource));
    if (!life.valid_until.empty()) {
      TPULAUNCH_CHECK(validate_value(ValueKind::valid_until, life.valid_until));
    }
  }
  if (!life.timeout.empty()) {
    TPULAUNCH_TRY(plan.timeout_seconds, seconds_of(ValueKind::timeout, life.timeout));
  }
  TPULAUNCH_TRY(plan.grace_seconds, seconds_of(ValueKind::grace, life.grace));
  return Ok{};
}

// The steps before staging that get the TPU and say how to give it back.
Status add_capacity_steps(Plan& plan) {
  const LifecycleOptions& life = plan.options.lifecycle;
  const bool queued = life.capacity == Capacity::queued;
  if (life.capacity != Capacity::existing) {
    TPULAUNCH_TRY(const int poll, seconds_of(ValueKind::poll, life.poll.empty() ? (queued ? "60s" : "15s") : life.poll));
    TPULAUNCH_TRY(const int deadline, seconds_of(ValueKind::ready_timeout, life.ready_timeout.empty()
                                                                               ? (queued ? "12h" : "30m")
                                                                               : life.ready_timeout));
    plan.steps.push_back(name_check_step(plan));
    plan.steps.push_back(queued ? queue_step(plan) : create_step(plan));
    plan.steps.push_back(release_step(plan));
    plan.steps.push_back(wait_step(plan, poll, deadline));
  } else if (plan.preemptible()) {
    plan.steps.push_back(release_step(plan));
  }
  if (plan.preemptible()) {
    plan.steps.push_back(preemption_check_step(plan));
  }
  return Ok{};
}

// The values every route takes: the interpreter and the --env names (a TPU route sets
// TPU_RUN_DIR and JAX_PLATFORMS itself, and an --env must not quietly move the run off the TPU:
// --env JAX_PLATFORMS is taken only when it repeats the script's reviewed value, `reviewed`).
Status validate_script_options(const PlanOptions& options, RouteKind route, std::string_view script = {},
                               std::string_view reviewed = {}) {
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
    if (var.name == "JAX_PLATFORMS") {
      return usage_error(fmt::format(
          "--env JAX_PLATFORMS={}: a TPU route sets JAX_PLATFORMS={} itself; another value needs a review that records "
          "it: tpulaunch review {} --class CLASS --by NAME --jax-platforms tpu,cpu",
          printable(var.value), reviewed.empty() ? "tpu" : reviewed, script.empty() ? "SCRIPT" : script));
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
  if (options.parallel < 1 || options.parallel > 1024) {
    return usage_error(fmt::format("--parallel must be between 1 and 1024, not {}", options.parallel));
  }
  return Ok{};
}

// --results gs://BUCKET[/PREFIX]: the bucket URL the run folder goes to, mirroring the local one
// (<tpu>/<id>/<run-id>). Each part is a validated name: no separator, wildcard or '#'.
Status set_results(Plan& plan, std::string_view id) {
  if (plan.options.results.empty()) {
    return Ok{};
  }
  if (plan.options.form == PlanForm::course) {
    return usage_error("--course emits the course's own commands only; --results needs the full form");
  }
  TPULAUNCH_TRY(const ResultsUrl url, parse_results_url(plan.options.results));
  plan.results_run_url = url.join({plan.options.tpu, id, plan.options.run_id});
  return Ok{};
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

std::string_view to_string(Capacity capacity) {
  switch (capacity) {
  case Capacity::existing: return "existing";
  case Capacity::create: return "create";
  case Capacity::queued: return "queued";
  }
  return "existing";
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
  plan.slice = slice;
  plan.options = options;
  if (route != RouteKind::cpu && script.entry != nullptr && !script.entry->jax_platforms.empty()) {
    plan.jax_platforms = script.entry->jax_platforms;
    plan.jax_platforms_reviewed = true;
  }
  TPULAUNCH_CHECK(validate_script_options(options, route, script.id,
                                          plan.jax_platforms_reviewed ? plan.jax_platforms : std::string_view()));
  // The reviewed value given again with --env is the one the route sets already.
  std::erase_if(plan.options.env, [&](const EnvVar& var) { return route != RouteKind::cpu && var.name == "JAX_PLATFORMS"; });

  if (route == RouteKind::cpu) {
    const LifecycleOptions& life = options.lifecycle;
    if (life.capacity != Capacity::existing || life.provisioning != Provisioning::standard || !life.timeout.empty() ||
        life.kill_stale) {
      return usage_error("the CPU route uses no TPU: --create, --queued, --spot, --timeout and --kill-stale need --slice");
    }
    // As the course keeps a CPU receipt: set -o pipefail; python FILE | tee ID-cpu.txt. The status
    // is the program's (pipefail), not tee's.
    plan.cpu_receipt = script.id + "-cpu.txt";
    if (!options.directory.empty() || is_nested_script_id(script.id)) {
      plan.steps.push_back(prepare_step(plan));
    }
    Step run;
    run.kind = StepKind::run;
    run.summary = fmt::format("run on this machine's CPU, keeping the output in {}", plan.cpu_receipt);
    run.line.word("set").word("-o").word("pipefail").code(k_then);
    add_env(run.line, plan);
    run.line.word(local_python(plan)).word(local_path(script.path));
    add_args(run.line, plan);
    // The output goes to <receipt>.partial, which becomes the receipt only when the program
    // succeeded: a failed run again never truncates the receipt of one that worked.
    const std::string partial = plan.cpu_receipt + ".partial";
    run.line.code(k_pipe).word("tee").word(partial).code(k_and).word("mv").word("-f").word(partial).word(plan.cpu_receipt);
    plan.steps.push_back(std::move(run));
    return plan;
  }
  if (slice == nullptr) {
    return usage_error("a TPU route needs a slice");
  }
  TPULAUNCH_CHECK(validate_tpu_options(options));
  TPULAUNCH_CHECK(resolve_lifecycle(plan));
  if (options.form == PlanForm::course && is_nested_script_id(script.id)) {
    return usage_error(fmt::format("'{}' is in a subfolder of the exercises folder; --course emits the course's own "
                                   "commands, which copy into ~/jax-tpu-lab/ only: leave --course out",
                                   script.id));
  }
  plan.local_run_dir = fmt::format("./tpu-runs/{}/{}/{}", options.tpu, script.id, options.run_id);
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
    // gcloud scp copies every source into the home folder by its name: two files of one name
    // would land on each other.
    for (std::size_t i = 1; i < plan.staged.size(); ++i) {
      for (std::size_t j = 0; j < i; ++j) {
        if (plan.staged[i].home_name == plan.staged[j].home_name) {
          return usage_error(fmt::format("'{}' stages {} and {}, which share the name {}: one scp call lands every "
                                         "file in the worker's home folder by its name; rename one of them",
                                         script.id, plan.staged[j].local, plan.staged[i].local, plan.staged[i].home_name));
        }
      }
    }
    plan.steps.push_back(write_step(plan, run_guard_program(), plan.staged.front()));
    const bool qualified = script.entry != nullptr && script.entry->script_class == ScriptClass::multi_host_qualified;
    plan.verify = options.verify.value_or(qualified ? VerifyKind::training : VerifyKind::logs);
    if (plan.multi_host()) {
      plan.steps.push_back(preflight_step());
    }
    TPULAUNCH_CHECK(add_capacity_steps(plan));
    if (plan.options.bootstrap) {
      plan.steps.push_back(bootstrap_step(plan));
    }
  }
  plan.steps.push_back(stage_step(plan));
  if (full) {
    plan.steps.push_back(full_run_step(
        plan, {lab_path(staged_script(script.id).file)},
        plan.multi_host()
            ? "put the script in place, check its digest and the TPU's holders, then run on every worker at once"
            : "put the script in place, check its digest and the TPU's holders, then run on the TPU VM"));
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
  plan.slice = &slice;
  plan.options = options;
  plan.options.form = PlanForm::full;
  plan.verify = VerifyKind::discovery;
  TPULAUNCH_CHECK(resolve_lifecycle(plan));
  plan.local_run_dir = fmt::format("./tpu-runs/{}/discovery/{}", options.tpu, options.run_id);
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
  if (plan.options.bootstrap) {
    plan.steps.push_back(bootstrap_step(plan));
  }
  // The guard moves the program into the run folder, so it comes back with the receipts it wrote.
  plan.steps.push_back(stage_step(plan));
  plan.steps.push_back(full_run_step(plan, {home_path(plan.staged.back().place)},
                                     "discovery receipt only (not training): every worker reports its topology"));
  add_fetch_verify_teardown(plan, true);
  return plan;
}

} // namespace tpulaunch
