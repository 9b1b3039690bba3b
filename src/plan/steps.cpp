// The steps of the run itself: prepare, write, preflight, bootstrap, stage, run, fetch or collect,
// verify. Each is argv data (ShellLine); every gcloud call comes from src/gcloud/, aimed at the
// plan's Target.
#include <algorithm>

#include <fmt/format.h>

#include "steps.hpp"
#include "tpulaunch/matrix/exercises.hpp"
#include "tpulaunch/gcloud/gcloud.hpp"
#include "tpulaunch/receipts/run_folder.hpp"

namespace tpulaunch::planning {
namespace {

// Shell code used in remote command strings. Compile-time constants only (see shell.hpp).
constexpr Code k_then{"; "};
constexpr Code k_and{" && "};
constexpr Code k_not{"!"};
constexpr Code k_pipe{" | "};
constexpr Code k_subshell_open{"( "};
constexpr Code k_subshell_close{" )"};
// A local path as an argument: gcloud::local_path's "./" keeps a leading '-' from reading as an
// option to python on the CPU route too.
using gcloud::local_path;

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
  for (const EnvVar& var : plan.env) {
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

// The workers a call that reaches every host names: `all` on a multi-host slice, and none on one
// host (gcloud's default worker 0 is the only one).
std::optional<Workers> every_worker_flag(const Plan& plan) {
  return plan.multi_host() ? std::optional<Workers>(Workers::all()) : std::nullopt;
}

Step ssh_step(const Plan& plan, StepKind kind, std::string summary, const ShellLine& remote_command, int slice = 0) {
  Step step;
  step.kind = kind;
  step.where = StepWhere::remote;
  step.workers = every_worker(plan);
  step.slice = slice_of(plan, slice);
  step.summary = std::move(summary) + on_slice(plan, slice);
  step.line = gcloud::tpu_vm_ssh({plan.target.node(slice), plan.target.location(), worker_flag(every_worker_flag(plan)),
                                  remote_command, plan.target.connection});
  step.mark_check = mark_check(plan, slice);
  return step;
}

constexpr Code k_brace_open{"{0.."};
constexpr Code k_brace_close{"}"};

// {0..N-1}: bash's brace expansion of the indices below `count`.
Word brace_range(int count) {
  return Word(k_brace_open).append(std::to_string(count - 1)).append(k_brace_close);
}

// The local folders the plan writes into, which must exist before it does: each worker's download
// folder (gcloud needs it), the run folder alone with --results (the one download fills it), or the
// folder of a CPU receipt for a script in a subfolder ("advanced/sub_lesson-cpu.txt").
// Above k_fetch_lines_max hosts per slice the worker folders are one word, a brace expansion
// (./tpu-runs/<tpu>/<id>/<run-id>/worker-{0..1535}/), so the line does not grow with the slice.
std::vector<Word> local_folders(const Plan& plan) {
  std::vector<Word> folders;
  if (plan.route == RouteKind::cpu) {
    const auto slash = plan.cpu_receipt.rfind('/');
    if (slash != std::string::npos) {
      folders.emplace_back(plan.cpu_receipt.substr(0, slash + 1));
    }
  } else if (plan.results_run_url) {
    folders.emplace_back(plan.local_run_dir + "/");
  } else if (fetch_loops(plan)) {
    Word folder(plan.local_run_dir + "/");
    if (plan.target.multislice()) {
      folder.append(std::string(k_slice_folder_prefix)).append(brace_range(plan.target.nodes)).append("/");
    }
    folder.append(std::string(k_worker_folder_prefix)).append(brace_range(plan.target.hosts())).append("/");
    folders.push_back(std::move(folder));
  } else {
    for (int worker = 0; worker < plan.workers(); ++worker) {
      folders.emplace_back(
          fmt::format("{}/{}/", plan.local_run_dir, process_folder(worker, plan.target.hosts(), plan.target.nodes)));
    }
  }
  return folders;
}

} // namespace

std::optional<std::string> worker_flag(const std::optional<Workers>& workers) {
  return workers ? std::optional<std::string>(workers->text()) : std::nullopt;
}

Word remote(const Plan& plan, int slice, const Word& path) {
  return gcloud::on_node(plan.target.node(slice), path);
}

Workers every_worker(const Plan& plan) {
  return plan.multi_host() ? Workers::all() : Workers::one(0);
}

std::optional<ShellLine> mark_check(const Plan& plan, int slice) {
  if (plan.target.mark.empty()) {
    return std::nullopt;
  }
  return gcloud::tpu_vm_describe({plan.target.node(slice), plan.target.location(), std::string(gcloud::k_mark_format)});
}

std::optional<int> slice_of(const Plan& plan, int slice) {
  return plan.target.multislice() ? std::optional<int>(slice) : std::nullopt;
}

std::string on_slice(const Plan& plan, int slice) {
  return plan.target.multislice() ? fmt::format(" on slice {} ({})", slice, plan.target.node(slice)) : "";
}

Word lab_path(std::string_view rest) { return home_path(std::string(k_lab) + std::string(rest)); }

Word guard_path(const Plan& plan) { return home_path(plan.remote_staged_dir() + "/" + std::string(k_run_guard_file)); }

ShellLine guard_call(const Plan& plan) {
  ShellLine command;
  command.word("bash").word(guard_path(plan)).word("--guard-sha256").word(run_guard_program().sha256);
  command.word("--plan").word(plan.plan_sha256).word("--script").word(plan.script).word("--run-id").word(plan.options.run_id);
  if (!plan.target.mark.empty()) {
    command.word("--mark").word(plan.target.mark);
  }
  return command;
}

// Local: change to the plan's folder (so every relative path resolves as it did for the plan) and
// create the folders the plan writes into. One line, so that the text form pasted line by line
// does what the sh form does.
Step prepare_step(const Plan& plan) {
  Step step;
  step.kind = StepKind::prepare;
  const std::vector<Word> folders = local_folders(plan);
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
    step.failure_exit = FailureExit{
        fmt::format("could not start the run folder {}: it exists already (run id {} ran before, and a second run "
                    "never overwrites the first: make a new plan), or it cannot be made here",
                    plan.local_run_dir, plan.options.run_id),
        to_int(PipelineStatus::run_exists)};
  }
  if (!folders.empty()) {
    step.line.word("mkdir").word("-p");
    for (const Word& folder : folders) {
      step.line.word(folder);
    }
  }
  return step;
}

namespace {

// What `plan --resume` and `runs` read back from the plan record: where the run is, how its
// capacity was made, its checkpoint folder, the run it resumes and how ssh reaches its workers.
void add_record_values(ShellLine& line, const Plan& plan) {
  const Target& target = plan.target;
  line.word("--tpu").word(target.tpu).word("--zone").word(target.zone);
  if (!target.project.empty()) {
    line.word("--project").word(target.project);
  }
  if (target.capacity != Capacity::existing) {
    line.word("--capacity").word(std::string(to_string(target.capacity)));
  }
  if (target.provisioning != Provisioning::standard) {
    line.word("--provisioning").word(std::string(to_string(target.provisioning)));
  }
  if (!plan.checkpoint_dir.empty()) {
    line.word("--checkpoint-dir").word(plan.checkpoint_dir);
  }
  if (!plan.options.resumes.empty()) {
    line.word("--resumes").word(plan.options.resumes);
  }
  if (plan.options.connection != Connection::external) {
    line.word("--connection").word(std::string(gcloud::to_string(plan.options.connection)));
  }
}

} // namespace

// Local: tpulaunch writes the run's stage folder (its run guard, the script or the discovery
// program, the course files, each copied from where the plan read it and checked against the
// digest the plan pinned) and the run's plan record (plan.rec: whose run the folder holds, which
// verify and `runs` read). `tpulaunch guard` prints the same guard, and --guard-sha256 makes a
// tpulaunch with another guard refuse before any TPU time is spent.
Step write_step(const Plan& plan) {
  Step step;
  step.kind = StepKind::write;
  const std::size_t course_files = plan.staged.size() - 1;
  step.summary = fmt::format(
      "write the run's stage folder (tpulaunch's run guard, which tpulaunch guard prints, {}; each file checked against "
      "its pinned digest) and its plan record",
      plan.program == PlanProgram::discovery ? "and the discovery program"
      : course_files == 0                    ? "and the script"
                                             : fmt::format("the script and {} course file{}", course_files,
                                                           course_files == 1 ? "" : "s"));
  step.line = ShellLine{Word(plan.options.tpulaunch_program), "stage", Word(plan.local_run_dir)};
  step.line.word("--script").word(plan.script).word("--run-id").word(plan.options.run_id);
  step.line.word("--plan").word(plan.plan_sha256).word("--slice").word(plan.target.slice->name);
  if (plan.target.multislice()) {
    step.line.word("--slices").word(std::to_string(plan.target.nodes));
  }
  add_record_values(step.line, plan);
  step.line.word("--guard-sha256").word(run_guard_program().sha256);
  if (plan.program == PlanProgram::discovery) {
    step.line.word("--discovery");
  } else {
    for (const StagedFile& file : plan.staged) {
      // SHA256:PATH, one word that never starts with '-' whatever the course's folder names.
      step.line.word("--file").word(local_path(file.local)).word(file.sha256 + ":" + file.path);
    }
  }
  return step;
}

Step preflight_step() {
  Step step;
  step.kind = StepKind::preflight;
  step.summary = "check that an ssh key is loaded in the agent (gcloud needs one to reach several workers)";
  step.line = ShellLine{"ssh-add", "-l"};
  step.failure_exit = FailureExit{"no ssh key is loaded in the agent, and gcloud needs one to reach several workers; "
                                  "run: ssh-add ~/.ssh/google_compute_engine",
                                  to_int(ExitCode::failure)};
  return step;
}

// Through the run guard, which the stage step put in the run folder: it checks the TPU's mark
// first, then makes ~/jax-tpu-lab/.venv and installs jax[tpu] (a remote 255 becomes 254).
Step bootstrap_step(const Plan& plan, int slice) {
  ShellLine command = guard_call(plan);
  command.word("--bootstrap");
  Step step = ssh_step(plan, StepKind::bootstrap, "create ~/jax-tpu-lab/.venv and install jax[tpu] on every worker",
                       command, slice);
  step.check_preemption = plan.options.form == PlanForm::full; // a failed step on the TPU: preempted?
  return step;
}

Step stage_step(const Plan& plan, int slice) {
  Step step;
  step.kind = StepKind::stage;
  step.where = StepWhere::remote;
  step.workers = every_worker(plan);
  step.slice = slice_of(plan, slice);
  step.summary = plan.staged.empty()
                     ? fmt::format("copy the script to {}{}", plan.multi_host() ? "every worker" : "the TPU VM",
                                   on_slice(plan, slice))
                     : fmt::format("copy the stage folder into the run's own folder ~/{}/ on {}{}", plan.remote_run_dir,
                                   plan.multi_host() ? "every worker" : "the TPU VM", on_slice(plan, slice));
  gcloud::TpuVmScp copy{.sources = {},
                        .destination = {},
                        .recurse = false,
                        .at = plan.target.location(),
                        .worker = worker_flag(every_worker_flag(plan)),
                        .connection = plan.target.connection};
  // The course form copies into ~/jax-tpu-lab/, which a fresh TPU VM does not have. The full form
  // copies the stage folder's jax-tpu-lab/ into the home folder, which always exists (`NODE:`):
  // scp merges it into ~/jax-tpu-lab/ (made if missing), so its files land in the run's own folder,
  // ~/jax-tpu-lab/runs/<id>/<run-id>/staged-<plan id>/, and nowhere else.
  if (plan.options.form == PlanForm::course) {
    copy.sources.emplace_back(local_path(plan.path));
    copy.destination = remote(plan, slice, home_path(std::string(k_lab)));
  } else {
    copy.sources.emplace_back(local_path(plan.local_stage_dir()));
    copy.destination = remote(plan, slice, Word());
    copy.recurse = true;
    step.mark_check = mark_check(plan, slice);
    step.check_preemption = true; // a failed copy on the full form first asks whether the TPU was preempted
  }
  step.line = gcloud::tpu_vm_scp(copy);
  return step;
}

// As the course keeps a CPU receipt: set -o pipefail; python FILE | tee ID-cpu.txt. The status is
// the program's (pipefail), not tee's. In a subshell: pasted into a person's shell, the text form
// must not leave pipefail set there.
Step cpu_run_step(const Plan& plan) {
  Step run;
  run.kind = StepKind::run;
  run.summary = fmt::format("run on this machine's CPU, keeping the output in {}", plan.cpu_receipt);
  run.line.code(k_subshell_open).word("set").word("-o").word("pipefail").code(k_then);
  add_env(run.line, plan);
  run.line.word(local_python(plan)).word(local_path(plan.path));
  add_args(run.line, plan);
  // The output goes to <receipt>.partial, which becomes the receipt only when the program
  // succeeded: a failed run again never truncates the receipt of one that worked.
  const std::string partial = plan.cpu_receipt + ".partial";
  run.line.code(k_pipe).word("tee").word(partial).code(k_subshell_close).code(k_and);
  run.line.word("mv").word("-f").word(partial).word(plan.cpu_receipt);
  return run;
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
  Step step = ssh_step(plan, StepKind::run, plan.multi_host() ? "run on every worker at once" : "run on the TPU VM",
                       command, 0);
  step.on_failure = OnFailure::keep_status; // the log fetch still runs
  return step;
}

// The run step of the full form. One ssh call does everything remote, through the run guard
// (src/remote/run_guard/) in the run's stage folder: claim the run (or re-attach to it when gcloud
// runs the command again after a dropped connection), check every staged file against its digest,
// stop at once when the interpreter is missing, look for processes that hold the TPU, run the
// program in the stage folder's code/ with TPU_RUN_DIR exported, the --env values, a per-host log
// and --timeout, record the worker's outcome in its run folder, upload it with --results, and keep
// a 255 from looking like an ssh failure. `program` is the interpreter's arguments.
Step full_run_step(const Plan& plan, const std::vector<Word>& program, std::string summary, int slice) {
  const LifecycleOptions& life = plan.options.lifecycle;
  ShellLine command = guard_call(plan);
  for (const StagedFile& file : plan.staged) {
    command.word("--file").word(file.sha256).word(file.path);
  }
  command.word("--devices").word(std::string(to_string(plan.target.slice->devices)));
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
    // Each slice's workers upload below slice-<s>/ (the guard adds worker-<i>/, its index within
    // the slice), so the one collect call brings back the same folders the per-worker fetch makes.
    command.word("--upload").word(plan.target.multislice() ? *plan.results_run_url + "/" + slice_folder(slice)
                                                           : *plan.results_run_url);
  }
  if (plan.target.multislice()) {
    // The guard reads the MEGASCALE_* values from the worker's tpu-env, checks them against these
    // and exports them (docs/multislice.md §3).
    command.word("--slices").word(std::to_string(plan.target.nodes)).word("--slice-id").word(std::to_string(slice));
  }
  command.word("--env").word(Word("JAX_PLATFORMS=").append(plan.jax_platforms));
  if (!plan.checkpoint_dir.empty()) {
    command.word("--env").word(Word(std::string(k_checkpoint_env) + "=").append(plan.checkpoint_dir));
  }
  for (const EnvVar& var : plan.env) {
    command.word("--env").word(Word(var.name + "=").append(var.value));
  }
  command.word("--python").word(remote_python(plan)).word("--").words(program);
  add_args(command, plan);
  if (plan.timeout_seconds > 0) {
    summary += fmt::format(", for at most {}", life.timeout->text());
  }
  Step step = ssh_step(plan, StepKind::run, std::move(summary), command, slice);
  // A failed run must not stop retrieval: every worker's log is what explains the failure. With
  // --slices the runs start together, and the first to fail stops the others.
  step.group = plan.target.multislice() ? StepGroup::run : StepGroup::none;
  step.on_failure = plan.target.multislice() ? OnFailure::stop_the_others : OnFailure::keep_status;
  step.check_preemption = true;
  return step;
}

Step stop_step(const Plan& plan, int slice) {
  ShellLine command = guard_call(plan);
  command.word("--stop").word("another slice of the run failed first");
  Step step = ssh_step(plan, StepKind::stop,
                       "end the run here (a program that runs gets SIGTERM, then SIGKILL; one not started yet never "
                       "starts), so it does not wait for the failed slice until a timeout",
                       command, slice);
  step.when = StepWhen::other_slice_failed;
  step.mark_check.reset(); // the run step checked it, and the guard checks it again
  return step;
}

Step verify_step(const Plan& plan) {
  Step step;
  step.kind = StepKind::verify;
  step.summary = fmt::format("check the fetched {} of every worker", plan.verify == VerifyKind::logs ? "logs" : "receipts");
  step.line = ShellLine{Word(plan.options.tpulaunch_program), "verify", Word(plan.local_run_dir),
                        flag("--slice", plan.target.slice->name), flag("--kind", std::string(to_string(plan.verify)))};
  if (plan.target.multislice()) {
    step.line.word(flag("--slices", std::to_string(plan.target.nodes)));
  }
  // The catalog and matrix the plan used, so the slice and the script mean the same to verify.
  if (!plan.options.matrix_file.empty()) {
    step.line.word(flag("--matrix", plan.options.matrix_file));
  }
  if (!plan.options.catalog_file.empty()) {
    step.line.word(flag("--catalog", plan.options.catalog_file));
  }
  return step;
}

} // namespace tpulaunch::planning
