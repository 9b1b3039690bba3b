#include "tpulaunch/plan.hpp"

#include <array>
#include <chrono>
#include <ctime>

#include <fmt/format.h>

#include "tpulaunch/validate.hpp"

namespace tpulaunch {
namespace {

// Shell code used in remote command strings. Compile-time constants only (see shell.hpp).
constexpr Code k_then{"; "};
constexpr Code k_and{" && "};
constexpr Code k_or_exit{" || exit 1"};
constexpr Code k_pipe{" | "};
constexpr Code k_merge_stderr{" 2>&1"};
constexpr Code k_digest_fail{" || { echo \"tpulaunch: staged script on $(hostname) does not match the reviewed "
                             "sha256\" >&2; exit 97; }"};
constexpr Code k_map_255{"; status=$?; if [ \"$status\" -eq 255 ]; then status=254; fi; exit \"$status\""};
static_assert(k_remote_digest_mismatch == 97 && k_remote_mapped_255 == 254, "keep the remote codes in step with the code above");

constexpr std::string_view k_lab = "jax-tpu-lab/"; // the course's folder in each worker's home

// The discovery program: prints the topology and writes discovery-<i>.json into $TPU_RUN_DIR.
constexpr std::string_view k_discovery_program =
    "import json, os, socket, jax; jax.distributed.initialize(); "
    "r = dict(kind='discovery', process_index=jax.process_index(), process_count=jax.process_count(), "
    "device_count=jax.device_count(), local_device_count=jax.local_device_count(), "
    "backend=jax.default_backend(), hostname=socket.gethostname()); print(json.dumps(r)); "
    "p = os.path.join(os.environ['TPU_RUN_DIR'], 'discovery-%d.json' % r['process_index']); "
    "open(p + '.tmp', 'w').write(json.dumps(r)); os.replace(p + '.tmp', p)";

// A local path as an argument: gcloud reads a word starting with '-' as an option, and one with a
// ':' before any '/' as a file on a remote host ([[USER@]INSTANCE:]SRC), so such paths get "./".
// The usual "public/exercises/x.py" stays as the course writes it.
std::string local_path(const std::string& path) {
  const auto colon = path.find(':');
  const bool reads_as_remote = colon != std::string::npos && path.substr(0, colon).find('/') == std::string::npos;
  if (!path.starts_with('/') && !path.starts_with("./") && (path.starts_with('-') || reads_as_remote)) {
    return "./" + path;
  }
  return path;
}

Word lab_path(std::string_view rest) { return home_path(std::string(k_lab) + std::string(rest)); }

// gcloud compute tpus tpu-vm <verb> ...
ShellLine gcloud(std::string_view verb) {
  return ShellLine{"gcloud", "compute", "tpus", "tpu-vm", std::string(verb)};
}

Word flag(std::string_view name, std::string value) { return Word(std::string(name) + "=").append(std::move(value)); }

void add_common_flags(ShellLine& line, const Plan& plan, std::string_view workers) {
  line.word(flag("--zone", plan.options.zone));
  if (!workers.empty()) {
    line.word(flag("--worker", std::string(workers)));
  }
  if (!plan.options.project.empty()) {
    line.word(flag("--project", plan.options.project));
  }
}

Word remote(const Plan& plan, const Word& path) { return Word(plan.options.tpu + ":").append(path); }

std::string all_workers(const Plan& plan) { return plan.multi_host() ? "all" : ""; }

Step ssh_step(const Plan& plan, std::string name, std::string summary, const ShellLine& remote_command) {
  Step step;
  step.name = std::move(name);
  step.where = StepWhere::remote;
  step.workers = plan.multi_host() ? "all" : "0";
  step.summary = std::move(summary);
  step.line = gcloud("ssh");
  step.line.word(plan.options.tpu);
  add_common_flags(step.line, plan, all_workers(plan));
  // The remote command is rendered to text here; that text is then one literal argument for the
  // local shell, quoted again by the same function (design-notes §1).
  step.line.word(flag("--command", to_shell(remote_command)));
  return step;
}

Step preflight_step() {
  Step step;
  step.name = "preflight";
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
  return ssh_step(plan, "bootstrap", "create ~/jax-tpu-lab/.venv and install jax[tpu] on every worker", command);
}

Step stage_step(const Plan& plan) {
  Step step;
  step.name = "stage";
  step.where = StepWhere::remote;
  step.workers = plan.multi_host() ? "all" : "0";
  step.summary = plan.multi_host() ? "copy the script to every worker" : "copy the script to the TPU VM";
  step.line = gcloud("scp");
  step.line.word(local_path(plan.path)).word(remote(plan, home_path(std::string(k_lab))));
  add_common_flags(step.line, plan, all_workers(plan));
  return step;
}

Step course_run_step(const Plan& plan) {
  const std::string py = plan.script + ".py";
  ShellLine command;
  command.word("set").word("-o").word("pipefail").code(k_then);
  command.word("JAX_PLATFORMS=tpu").word(lab_path(".venv/bin/python")).word(lab_path(py));
  command.code(k_pipe).word("tee").word(lab_path(plan.script + "-tpu.txt"));
  return ssh_step(plan, "run", plan.multi_host() ? "run on every worker at once" : "run on the TPU VM", command);
}

// The run step of the full form. One ssh call does everything remote: create the run folder,
// check the staged file against the reviewed digest (refusing to run on a mismatch), run with
// TPU_RUN_DIR exported and a per-host log, and keep a 255 from looking like an ssh failure.
Step full_run_step(const Plan& plan, const Word& program_words_start, const std::vector<Word>& program_args,
                   bool check_digest, std::string summary) {
  const std::string run = plan.remote_run_dir + "/";
  ShellLine command;
  command.word("set").word("-o").word("pipefail").code(k_then);
  if (check_digest) {
    command.word("printf").word("%s  %s\\n").word(plan.sha256).word(lab_path(plan.script + ".py"));
    command.code(k_pipe).word("sha256sum").word("--check").word("--status").code(k_digest_fail).code(k_then);
  }
  command.word("mkdir").word("-p").word(home_path(run + "artifacts")).code(k_or_exit).code(k_then);
  command.word(Word("TPU_RUN_DIR=").append(home_path(run + "artifacts"))).word("JAX_PLATFORMS=tpu");
  command.word(program_words_start).words(program_args).code(k_merge_stderr);
  command.code(k_pipe).word("tee").word(home_path(run + plan.script + "-tpu-").append(k_hostname).append(".txt"));
  command.code(k_map_255);
  return ssh_step(plan, "run", std::move(summary), command);
}

Step fetch_step(const Plan& plan, int worker, bool full) {
  Step step;
  step.name = "fetch";
  step.where = StepWhere::remote;
  step.workers = std::to_string(worker);
  step.worker = worker;
  step.group = "fetch";
  step.summary = fmt::format("bring back worker {}'s {}", worker, full ? "log and artifacts" : "log");
  step.line = gcloud("scp");
  if (full) {
    step.line.word("--recurse");
    step.line.word(remote(plan, home_path(plan.remote_run_dir)));
  } else {
    step.line.word(remote(plan, lab_path(plan.script + "-tpu.txt")));
  }
  step.line.word(fmt::format("{}/worker-{}/", plan.local_run_dir, worker));
  step.line.word(flag("--zone", plan.options.zone)).word(flag("--worker", std::to_string(worker)));
  if (!plan.options.project.empty()) {
    step.line.word(flag("--project", plan.options.project));
  }
  return step;
}

Step verify_step(const Plan& plan) {
  Step step;
  step.name = "verify";
  step.summary = fmt::format("check the fetched {} of every worker", plan.verify == VerifyKind::logs ? "logs" : "receipts");
  step.line = ShellLine{Word(plan.options.tpulaunch), "verify", Word(plan.local_run_dir), flag("--slice", plan.slice->name),
                        flag("--kind", std::string(to_string(plan.verify)))};
  return step;
}

Step teardown_step(const Plan& plan) {
  Step step;
  step.name = "teardown";
  step.where = StepWhere::remote;
  step.summary = "delete the TPU VM, only after every worker's results are back and verified";
  step.line = gcloud("delete");
  step.line.word(plan.options.tpu).word(flag("--zone", plan.options.zone)).word("--quiet");
  if (!plan.options.project.empty()) {
    step.line.word(flag("--project", plan.options.project));
  }
  return step;
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

void add_fetch_verify_teardown(Plan& plan, bool full) {
  for (int worker = 0; worker < plan.workers(); ++worker) {
    plan.steps.push_back(fetch_step(plan, worker, full));
  }
  if (full && plan.verify != VerifyKind::none) {
    plan.steps.push_back(verify_step(plan));
  }
  if (plan.options.teardown) {
    plan.steps.push_back(teardown_step(plan));
  }
}

} // namespace

std::string_view to_string(VerifyKind kind) {
  switch (kind) {
  case VerifyKind::training: return "training";
  case VerifyKind::discovery: return "discovery";
  case VerifyKind::logs: return "logs";
  case VerifyKind::none: return "none";
  }
  return "none";
}

std::optional<VerifyKind> parse_verify_kind(std::string_view name) {
  for (const auto kind : {VerifyKind::training, VerifyKind::discovery, VerifyKind::logs, VerifyKind::none}) {
    if (to_string(kind) == name) {
      return kind;
    }
  }
  return std::nullopt;
}

std::string default_run_id() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  return fmt::format("{:04}{:02}{:02}T{:02}{:02}{:02}Z", utc.tm_year + 1900, utc.tm_mon + 1, utc.tm_mday, utc.tm_hour,
                     utc.tm_min, utc.tm_sec);
}

Result<Plan> build_plan(const ScriptStatus& script, RouteKind route, const Slice* slice, const PlanOptions& options) {
  Plan plan;
  plan.script = script.id;
  plan.path = script.path;
  plan.script_class = script.entry != nullptr ? script.entry->class_name : std::string(k_review_required);
  plan.sha256 = script.actual_sha256;
  plan.route = route;
  plan.slice = slice;
  plan.options = options;

  if (route == RouteKind::cpu) {
    Step run;
    run.name = "run";
    run.summary = "run on this machine's CPU";
    run.line = ShellLine{"python", Word(local_path(script.path))};
    plan.steps.push_back(std::move(run));
    return plan;
  }
  if (slice == nullptr) {
    return usage_error("a TPU route needs a slice");
  }
  TPULAUNCH_CHECK(validate_tpu_options(options));
  plan.local_run_dir = fmt::format("./tpu-runs/{}/{}/{}", options.tpu, script.id, options.run_id);
  plan.remote_run_dir = std::string(k_lab) + "runs/" + options.run_id;
  const bool full = options.form == PlanForm::full;
  if (full) {
    const bool qualified = script.entry != nullptr && script.entry->script_class == ScriptClass::multi_host_qualified;
    plan.verify = options.verify.value_or(qualified ? VerifyKind::training : VerifyKind::logs);
    if (plan.multi_host()) {
      plan.steps.push_back(preflight_step());
    }
    if (options.bootstrap) {
      plan.steps.push_back(bootstrap_step(plan));
    }
  }
  plan.steps.push_back(stage_step(plan));
  if (full) {
    plan.steps.push_back(full_run_step(plan, lab_path(".venv/bin/python"), {lab_path(script.id + ".py")}, true,
                                       plan.multi_host() ? "check the staged digest and run on every worker at once"
                                                         : "check the staged digest and run on the TPU VM"));
  } else {
    plan.steps.push_back(course_run_step(plan));
  }
  add_fetch_verify_teardown(plan, full);
  return plan;
}

Result<Plan> build_discovery_plan(const Slice& slice, const PlanOptions& options) {
  TPULAUNCH_CHECK(validate_tpu_options(options));
  Plan plan;
  plan.script = "discovery";
  plan.script_class = "discovery";
  plan.route = slice.multi_host() ? RouteKind::multi_host : RouteKind::single_host;
  plan.slice = &slice;
  plan.options = options;
  plan.options.form = PlanForm::full;
  plan.verify = VerifyKind::discovery;
  plan.local_run_dir = fmt::format("./tpu-runs/{}/discovery/{}", options.tpu, options.run_id);
  plan.remote_run_dir = std::string(k_lab) + "runs/" + options.run_id;
  if (plan.multi_host()) {
    plan.steps.push_back(preflight_step());
  }
  if (options.bootstrap) {
    plan.steps.push_back(bootstrap_step(plan));
  }
  plan.steps.push_back(full_run_step(plan, lab_path(".venv/bin/python"), {"-c", std::string(k_discovery_program)}, false,
                                     "discovery receipt only (not training): every worker reports its topology"));
  add_fetch_verify_teardown(plan, true);
  return plan;
}

} // namespace tpulaunch
