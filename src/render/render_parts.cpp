#include "render/render_parts.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "tpulaunch/gcloud/gcloud.hpp"

namespace tpulaunch::render_parts {

std::string condition_text(const Plan& plan, const Step& step) {
  const bool queued = plan.target.queued();
  switch (step.when) {
  case StepWhen::always: return "";
  case StepWhen::capacity_unusable: {
    std::string text;
    if (plan.target.capacity != Capacity::existing) {
      text = fmt::format("only if {} never becomes {} (a state it never leaves, or --ready-timeout)",
                         queued ? "queued resource " + plan.target.queued_resource : "TPU " + plan.target.tpu,
                         queued ? "ACTIVE" : "READY");
    }
    if (plan.preemptible() && plan.options.teardown) {
      text += text.empty() ? "only after a preemption (--teardown)" : ", or after a preemption (--teardown)";
    }
    return text.empty() ? "only when you choose to delete it" : text;
  }
  case StepWhen::step_failed:
    return plan.preemptible() ? fmt::format("only if a step fails on this {} TPU", to_string(plan.target.provisioning))
                              : "only if a step on the TPU fails";
  case StepWhen::verify_succeeded: return "only after verify succeeded";
  case StepWhen::other_slice_failed: return "only if another slice's run fails first";
  case StepWhen::not_collected:
    return "only for each worker w whose folder did not arrive from the results bucket";
  }
  return "";
}

namespace {
constexpr Code k_test_open{"test \"$("};
constexpr Code k_test_equals{")\" = "};
constexpr Code k_and{" && "};
// for ((w = 0; w < N; w++)); do BODY; done: a step written once for a slice's workers.
constexpr Code k_for_each_open{"for ((w = 0; w < "};
constexpr Code k_for_each_do{"; w++)); do "};
constexpr Code k_for_each_done{"; done"};
constexpr Code k_for_each_do_line{"; w++)); do\n  "};
constexpr Code k_for_each_done_line{"\ndone"};
// Above this many workers a plan without --results says what per-worker retrieval costs
// (docs/performance.md: through the real gcloud, 16 downloads took 19.5 s on 2 cores, and the
// cost grows by a gcloud process per worker; one bucket download costs one at any size).
constexpr int k_results_advised_workers = 16;
// The local CPU a real gcloud ssh or scp call spends before ssh starts (docs/performance.md).
constexpr double k_gcloud_cpu_seconds_per_call = 2.4;
} // namespace

ShellLine pasted_line(const Plan& plan, const Step& step) {
  const ShellLine body =
      step.make_folder ? ShellLine{"mkdir", "-p", *step.make_folder}.code(k_and).line(step.line) : step.line;
  const ShellLine line = step.each_worker ? each_worker_loop(step, body) : body;
  if (!step.mark_check) {
    return line;
  }
  return ShellLine()
      .code(k_test_open)
      .line(*step.mark_check)
      .code(k_test_equals)
      .word(plan.target.mark)
      .code(k_and)
      .line(line);
}

ShellLine each_worker_loop(const Step& step, const ShellLine& body, bool on_lines) {
  return ShellLine()
      .code(k_for_each_open)
      .word(std::to_string(step.each_worker.value_or(1)))
      .code(on_lines ? k_for_each_do_line : k_for_each_do)
      .line(body)
      .code(on_lines ? k_for_each_done_line : k_for_each_done);
}

const Step* find_step(const Plan& plan, StepKind kind) {
  const auto it = std::find_if(plan.steps.begin(), plan.steps.end(), [kind](const Step& s) { return s.kind == kind; });
  return it == plan.steps.end() ? nullptr : &*it;
}

namespace {

// The notes on what runs and how: the guard, the checkpoint folder, a conditional initialize(),
// the interpreter.
void add_program_notes(const Plan& plan, std::vector<std::string>& notes) {
  if (plan.route != RouteKind::cpu && plan.options.form == PlanForm::full) {
    notes.emplace_back("the run step calls tpulaunch's run guard, which the write step puts in the run folder and "
                       "the stage step copies: `tpulaunch guard` prints it (src/remote/run_guard/ in tpulaunch's "
                       "source); it checks its own digest, the staged files' digests and the TPU's holders before "
                       "the program runs");
  }
  if (!plan.checkpoint_dir.empty()) {
    notes.push_back(fmt::format("the program gets {}={} (--checkpoint-dir, kept by plan --resume): restoring from it, "
                                "and writing to it, is the script's business; tpulaunch never reads it",
                                k_checkpoint_env, plan.checkpoint_dir));
  }
  if (const auto& condition = plan.initialize_condition) {
    notes.push_back(fmt::format(
        "'{}' calls jax.distributed.initialize() at {}line {} only under a condition ({}); its review accepted that: "
        "\"{}\". tpulaunch sets none of the values that condition reads: pass them with --env where the script needs "
        "them (--timeout bounds a run whose hosts never all join)",
        plan.script, condition->file.empty() ? "" : condition->file + " ", condition->line, condition->condition,
        condition->reason));
  }
  if (plan.route != RouteKind::cpu && plan.options.form == PlanForm::full && !plan.bootstrap) {
    const std::string python = plan.options.python.empty() ? "~/jax-tpu-lab/.venv/bin/python" : plan.options.python;
    notes.push_back(fmt::format("every worker needs the interpreter {} with jax[tpu]; a fresh TPU VM has only python3, so "
                                "without it the run stops at once with status {} (add --bootstrap to create "
                                "~/jax-tpu-lab/.venv, or choose another with --python PATH)",
                                python, k_remote_no_python));
  }
  if (plan.target.capacity != Capacity::existing && plan.bootstrap) {
    notes.emplace_back("a TPU this plan creates is a fresh VM with python3 only, so the plan bootstraps it "
                       "(~/jax-tpu-lab/.venv with jax[tpu]); --python PATH names another interpreter instead");
  }
}

// The notes on where it runs: the connection, capacity the plan makes, retrieval, Multislice,
// conditional steps.
void add_capacity_notes(const Plan& plan, std::vector<std::string>& notes) {
  if (const std::string_view note = gcloud::connection_note(plan.target.connection); !note.empty()) {
    notes.emplace_back(note);
  }
  if (plan.target.internal_ips && plan.target.connection == Connection::external) {
    notes.emplace_back("--internal-ips: the workers get no external addresses, and gcloud then connects to their "
                       "internal ones (it falls back to them when a worker has no external address), so the machine "
                       "running this plan needs a route into the TPU's VPC network and tcp:22 open to it, as for "
                       "--internal-ip; from outside the network, add --tunnel-through-iap");
  }
  if (plan.target.internal_ips && plan.bootstrap) {
    notes.emplace_back("--internal-ips with --bootstrap: pip installs jax[tpu] from PyPI, which workers without "
                       "external addresses reach only through Cloud NAT (or a proxy) on the TPU's network; without "
                       "one the bootstrap step fails");
  }
  const Step* release = find_step(plan, StepKind::release);
  const std::string what =
      plan.target.queued() ? "queued resource " + plan.target.queued_resource : "TPU " + plan.target.tpu;
  if (release != nullptr && plan.options.teardown) {
    notes.push_back(fmt::format("if a command after the first gcloud call fails, the {} is left running (and billing); "
                                "once you have looked at the results, delete it with: {}",
                                what, to_shell(release->line)));
  } else if (release != nullptr && plan.target.capacity != Capacity::existing) {
    notes.push_back(fmt::format("this plan makes {} and does not delete it (no --teardown): it keeps running (and "
                                "billing) after the plan ends, whatever the plan's outcome; delete it with: {}",
                                what, to_shell(release->line)));
  }
  if (!plan.target.mark.empty()) {
    notes.push_back(fmt::format("the create call marks the TPU as this plan's (metadata {}={}), and every later step "
                                "that touches it checks the mark first: pasted after a create that failed on a name "
                                "someone else holds, those lines do nothing",
                                gcloud::k_mark_key, plan.target.mark));
  }
  if (plan.route != RouteKind::cpu && !plan.results_run_url && plan.workers() > k_results_advised_workers) {
    // docs/performance.md, "retrieval at any scale": the figures behind the bound.
    notes.push_back(fmt::format(
        "no --results: the {0} workers' results come back in {0} gcloud calls, one per worker (gcloud refuses a "
        "download from several workers at once), {1} at a time; each real gcloud call costs this machine about "
        "{2:.1f} s of CPU, about {3} CPU minutes in all. With --results gs://BUCKET/PREFIX each worker uploads its "
        "own folder and one call brings them all back (docs/performance.md)",
        plan.workers(), plan.options.parallel, k_gcloud_cpu_seconds_per_call,
        static_cast<int>(plan.workers() * k_gcloud_cpu_seconds_per_call / 60.0 + 0.5)));
  }
  if (plan.target.multislice()) {
    notes.push_back(fmt::format(
        "--slices {0}: the plan provides one program over {0} slices: each worker's run guard reads "
        "MEGASCALE_COORDINATOR_ADDRESS (slice 0 worker 0), MEGASCALE_NUM_SLICES and MEGASCALE_SLICE_ID from its "
        "tpu-env, checks them against the plan and exports them, so jax.distributed.initialize() makes {1} processes "
        "of one job with process id = worker + slice x {2}; a mesh over the slices (e.g. "
        "mesh_utils.create_hybrid_device_mesh) is the script's business",
        plan.target.nodes, plan.target.processes(), plan.target.hosts()));
    notes.emplace_back("the run lines of all slices must run at the same time (each waits in initialization for the "
                       "others): --format sh starts them together; pasted, start each in its own terminal");
  }
  if (plan.route != RouteKind::cpu && std::any_of(plan.steps.begin(), plan.steps.end(), [](const Step& step) {
        return step.when != StepWhen::always;
      })) {
    notes.emplace_back("the commented steps run only on their condition: --format sh runs them when it holds; pasted, "
                       "these lines run one after another whatever the one before did, so nothing here deletes the "
                       "TPU");
  }
}

} // namespace

std::vector<std::string> plan_notes(const Plan& plan) {
  std::vector<std::string> notes;
  add_program_notes(plan, notes);
  add_capacity_notes(plan, notes);
  return notes;
}

} // namespace tpulaunch::render_parts
