// The sh form of a plan: a complete bash script, run as it is.
#include "tpulaunch/render/render.hpp"

#include <span>

#include <fmt/format.h>

#include "render/render_parts.hpp"
#include "render/sh_notes.hpp"
#include "render/sh_parts.hpp"
#include "tpulaunch/embedded/collect_check_bash.hpp"
#include "tpulaunch/embedded/fetch_bash.hpp"
#include "tpulaunch/embedded/slices_bash.hpp"
#include "tpulaunch/embedded/tpulaunch_program_bash.hpp"
#include "tpulaunch/embedded/worker_report_bash.hpp"
#include "tpulaunch/receipts/run_folder.hpp"
#include "tpulaunch/util/exit_code.hpp"

namespace tpulaunch {
namespace {

using render_parts::condition_text;
using render_parts::find_step;
using sh_notes::add_line;
using namespace sh_parts;
using sh_notes::add_notes;
using sh_notes::quoted_text;
using sh_notes::QuotedText;

// --- the sh script ------------------------------------------------------------------------------
// Every line below is a ShellLine, a Comment or a Code constant, rendered by to_shell: a value of
// the plan reaches the script only as a literal word (quoted by shell_quote) or inside a Comment.

constexpr Code k_shebang{"#!/usr/bin/env bash"};
constexpr Code k_regenerate{"# Regenerate it with tpulaunch plan rather than editing it: the commands below were checked\n"
                            "# against the execution matrix, the catalog and the script's reviewed digest."};
constexpr Code k_strict{"set -euo pipefail"};
constexpr Code k_step_function{"step() { echo \"tpulaunch: [$SCRIPT on $TPU ($SLICE, $ZONE), run $RUN_ID] $*\" >&2; }"};
constexpr Code k_cpu_banner{"echo \"tpulaunch: run $SCRIPT on the CPU\" >&2"};
constexpr Code k_done{"step \"done: results in $RUN_DIR\""};
constexpr Code k_if_not{"if ! "};
constexpr Code k_then_block{"; then\n  "};
constexpr Code k_quiet{" >/dev/null 2>&1"};
// The tpulaunch that made the plan (@program@), unless $TPULAUNCH names another; checked before
// any TPU time is spent, and named on stderr (src/remote/tpulaunch_program.bash).
constexpr Code k_tpulaunch_program_check = Code{embedded::tpulaunch_program_bash}.without_final_newline();
constexpr Code k_tpulaunch_program{"\"$TPULAUNCH_PROGRAM\" "};
constexpr Code k_run_status_0{"run_status=0"};
constexpr Code k_or_run_status{" || run_status=$?"};
// The fetch library (src/remote/fetch.bash), for bounded parallel downloads: each fetch runs in
// the background, and once PARALLEL are in flight the script waits for one to end. With bash
// 4.3+ that is whichever ends first (`wait -n`), so one slow worker (gcloud retries a failed scp
// up to 10 times, 5 s apart) holds one slot rather than the whole queue; older bash waits for the
// oldest. A download that has ended is found with `kill -0` and its status read with `wait PID`,
// which bash keeps for every ended child; `wait -n -p VAR ID...` would need bash 5.1 and (5.2)
// names the wrong job once any ID given has been reaped. Every worker's status is kept, and
// `set -e` never stops the other workers' retrieval.
constexpr Code k_fetch_library = Code{embedded::fetch_bash}.without_final_newline();
constexpr Code k_fetch_wait_all{"fetch_wait_all"};
// "$((w + OFFSET))": the JAX process of worker $w of a slice after the first.
constexpr Code k_process_open{"\"$((w + "};
constexpr Code k_process_close{"))\""};
constexpr Code k_fetch_failed{"if ((${#fetch_failed[@]} > 0)); then\n"
                              "  echo \"tpulaunch: error: could not fetch worker(s) ${!fetch_failed[*]} of $WORKERS\" >&2\n"
                              "fi"};
constexpr Code k_run_failed{"if ((run_status != 0)); then\n"
                            "  echo \"tpulaunch: error: the run failed with status $run_status; every worker's results "
                            "that could be fetched are in $RUN_DIR\" >&2\n"
                            "  exit \"$run_status\"\n"
                            "fi"};
// The per-worker report (src/remote/worker_report.bash): never started, still running when
// killed, failed with status S, succeeded; from each worker's run record.
constexpr Code k_worker_report_library = Code{embedded::worker_report_bash}.without_final_newline();
constexpr Code k_report_workers{"report_workers"};
// --slices: the runs started together, their waits, the first failure stopping the rest (stop_slice,
// filled with the stop steps), the report by slice (src/remote/slices.bash).
constexpr Code k_slices_library = Code{embedded::slices_bash}.without_final_newline();
constexpr Code k_in_background{" &\nrun_pids+=(\"$!\")"};
constexpr Code k_wait_slices{"wait_slices"};

// prepare: a run folder that exists already is a run that happened before.
constexpr Code k_if_not_block{"if ! { "};
constexpr Code k_block_then{"; }; then\n  "};

constexpr Code k_or_failed_step{" || failed_step $?"};
constexpr Code k_check_preempted_if_run_failed{"if ((run_status != 0)); then\n  check_preempted\nfi"};
constexpr Code k_check_preempted_if_failed{
    "if ((${#fetch_failed[@]} > 0 || run_status != 0)); then\n  check_preempted\nfi"};
constexpr Code k_stop_if_preempted{"stop_if_preempted"};
constexpr Code k_fetch_exit{"if ((${#fetch_failed[@]} > 0)); then\n  exit 1\nfi"};

// --results: after the one download, every worker whose run folder did not arrive is named (its
// upload failed, and the worker said why in the run step's output); then, as after the fetches,
// the per-worker report and the run's own failure, and nothing after this (verify, teardown) runs
// unless all is well.
constexpr Code k_collect_status_0{"collect_status=0"};
constexpr Code k_or_collect_status{" || collect_status=$?"};
// The fallback loop over the processes that did not arrive: w is the worker within its slice.
constexpr Code k_fallback_for{"\n  for p in \"${missing[@]}\"; do\n    "};
constexpr Code k_fallback_worker{"w=$p\n    "};
constexpr Code k_fallback_worker_of_slice{"w=$((p % HOSTS))\n    case $((p / HOSTS)) in"};
constexpr Code k_fallback_branch{"\n      "};
constexpr Code k_fallback_and{" && "};
constexpr Code k_fallback_process{"\"$p\""};
constexpr Code k_fallback_done{"\n  done"};
constexpr Code k_fallback_esac_done{"\n    esac\n  done"};
// Names the workers whose run folder did not arrive (src/remote/collect_check.bash), after
// fetching them from the workers.
constexpr Code k_collect_check = Code{embedded::collect_check_bash}.without_final_newline();
constexpr Code k_check_preempted_if_collect_failed{
    "if ((collect_status != 0 || ${#missing[@]} > 0 || run_status != 0)); then\n  check_preempted\nfi"};
constexpr Code k_collect_exit{"if ((collect_status != 0 || ${#missing[@]} > 0)); then\n  exit 1\nfi"};
static_assert(k_worker_folder_prefix == "worker-", "the collect check spells the worker folders as run_folder.hpp does");

// `NAME=` prefixes of the sh script's readonly values: named constants rather than Code{...}
// temporaries in the calls, which crash clang 14 while it generates code for render_sh.
constexpr Code k_set_slice{"SLICE="};
constexpr Code k_set_tpu{"TPU="};
constexpr Code k_set_zone{"ZONE="};
constexpr Code k_set_run_id{"RUN_ID="};
constexpr Code k_set_run_dir{"RUN_DIR="};
constexpr Code k_set_workers{"WORKERS="};
constexpr Code k_set_parallel{"PARALLEL="};
constexpr Code k_set_results{"RESULTS="};
constexpr Code k_set_script{"SCRIPT="};
constexpr Code k_set_teardown{"TEARDOWN="};
constexpr Code k_set_slices{"SLICES="};
constexpr Code k_set_hosts{"HOSTS="};
constexpr Code k_set_mark{"MARK="};
constexpr Code k_set_remote_run_dir{"REMOTE_RUN_DIR="};

// The message and status of a stop the step states (Step::failure_exit).
ShellLine failure_echo(const FailureExit& exit) {
  return echo_error("tpulaunch: error: " + exit.message);
}
ShellLine failure_status(const FailureExit& exit) {
  return ShellLine{Word(std::to_string(exit.status))};
}

// if ! CONDITION; then echo MESSAGE >&2; exit STATUS; fi (on four lines).
ShellLine stop_unless(const ShellLine& condition, const FailureExit& exit) {
  return ShellLine()
      .code(k_if_not)
      .line(condition)
      .code(k_then_block)
      .line(failure_echo(exit))
      .code(k_exit_open)
      .line(failure_status(exit))
      .code(k_fi);
}

// require_mark NODE before a step that needs the plan's mark (Step::mark_check).
void add_mark_check(ShellScript& sh, const Plan& plan, const Step& step) {
  if (step.mark_check) {
    sh.line(ShellLine{"require_mark", Word(plan.target.node(step.slice.value_or(0)))});
  }
}

void emit_preflight(ShellScript& sh, const Plan& /*plan*/, std::span<const Step> steps) {
  const Step& step = steps.front();
  sh.line(step_banner(step));
  sh.line(stop_unless(ShellLine().line(step.line).code(k_quiet), step.failure_exit.value()));
}

// A step that runs once, in order, and stops the script (set -e) when it fails; a step that says
// so (Step::check_preemption) first asks whether the TPU was preempted.
void emit_plain(ShellScript& sh, const Plan& plan, std::span<const Step> steps) {
  const Step& step = steps.front();
  if (plan.route == RouteKind::cpu) {
    sh.line(step.line); // its notes are at the top of the script (render_sh)
    return;
  }
  sh.line(step_banner(step));
  add_mark_check(sh, plan, step);
  add_line(sh, step.check_preemption ? ShellLine(step.line).code(k_or_failed_step) : step.line);
}

// prepare on a TPU route: a run folder that exists already stops the script before anything else,
// with the message and status the step states.
void emit_prepare(ShellScript& sh, const Plan& plan, std::span<const Step> steps) {
  const Step& step = steps.front();
  if (plan.route == RouteKind::cpu) {
    sh.line(step.line);
    return;
  }
  sh.line(step_banner(step));
  if (!step.failure_exit) {
    add_line(sh, step.line);
    return;
  }
  add_line(sh, ShellLine()
                   .code(k_if_not_block)
                   .line(step.line)
                   .code(k_block_then)
                   .line(failure_echo(*step.failure_exit))
                   .code(k_exit_open)
                   .line(failure_status(*step.failure_exit))
                   .code(k_fi));
}

void emit_run(ShellScript& sh, const Plan& plan, std::span<const Step> steps) {
  const Step& step = steps.front();
  if (plan.route == RouteKind::cpu) {
    sh.code(k_cpu_banner).line(step.line); // its notes are at the top of the script (render_sh)
    return;
  }
  // The runs of several slices start together and the first failure stops the others
  // (stop_the_others); a single run keeps its status for after the retrieval (keep_status).
  if (step.on_failure == OnFailure::stop_the_others) {
    sh.line(ShellLine{
        "step", Word(fmt::format("run: start the run on all {} slices together ({} ... {}), and wait for "
                                 "each",
                                 plan.target.nodes, plan.target.node(0), plan.target.node(plan.target.nodes - 1)))});
    sh.code(k_run_status_0);
    for (const Step& slice : steps) {
      add_mark_check(sh, plan, slice);
    }
    for (const Step& slice : steps) {
      add_line(sh, ShellLine(slice.line).code(k_in_background));
    }
    sh.code(k_wait_slices);
  } else if (step.on_failure == OnFailure::keep_status) {
    sh.line(step_banner(step));
    add_mark_check(sh, plan, step);
    sh.code(k_run_status_0);
    add_line(sh, ShellLine(step.line).code(k_or_run_status));
  } else {
    sh.line(step_banner(step));
    add_mark_check(sh, plan, step);
    add_line(sh, step.line);
  }
  if (step.check_preemption) {
    sh.code(k_check_preempted_if_run_failed);
  }
}

// --slices: the stop steps, one per slice, become stop_slice (a case on the slice) in the slices
// library (src/remote/slices.bash), which the runs that follow use: the first slice to fail stops
// the others.
void emit_stop(ShellScript& sh, const Plan& plan, std::span<const Step> steps) {
  ShellLine branches = ShellLine().code(k_case_on_node);
  for (const Step& step : steps) {
    sh.comment(fmt::format("{} ({}): {}", step.name(), condition_text(plan, step), step.summary));
    branches.code(k_case_branch_start)
        .word(std::to_string(step.slice.value_or(0)))
        .code(k_case_pattern_end)
        .line(step.line)
        .code(k_case_branch_end);
  }
  branches.code(k_case_end);
  add_line(sh, fill_holes(k_slices_library, {{"stop", branches}}));
}

void emit_fetch(ShellScript& sh, const Plan& plan, std::span<const Step> steps) {
  if (steps.front().when == StepWhen::not_collected) {
    return; // the collect step's fallback, which emit_collect writes into its check
  }
  sh.line(ShellLine{"step", Word(fmt::format("fetch: one download per worker (gcloud refuses several), {} at a time",
                                             plan.options.parallel))});
  sh.code(k_fetch_library);
  for (const Step& step : steps) {
    // Labelled by JAX process (worker + slice x hosts), so that with --slices a failed download
    // names one process of the run's $WORKERS, never a worker index two slices share.
    const int offset = step.slice.value_or(0) * plan.target.hosts();
    if (step.each_worker) {
      // A slice's workers in one loop: the script does not grow by a line per worker.
      const Word process = offset == 0 ? Word(k_each_worker)
                                       : Word(k_process_open).append(std::to_string(offset)).append(k_process_close);
      add_line(sh, render_parts::each_worker_loop(step, ShellLine{"fetch_start", process}.line(step.line), true));
      continue;
    }
    const int process = step.workers->index() + offset;
    add_line(sh, ShellLine{"fetch_start", Word(std::to_string(process))}.line(step.line));
  }
  sh.code(k_fetch_wait_all);
  sh.code(k_fetch_failed);
  // After a failure, one look at the TPU's state first (when the steps say so): the report then
  // names a worker lost to a preemption as such, and the script stops with 92, not as a failed program.
  if (steps.front().check_preemption) {
    sh.code(k_check_preempted_if_failed).code(k_worker_report_library).code(k_report_workers).code(k_stop_if_preempted);
  }
  sh.code(k_run_failed);
  sh.code(k_fetch_exit);
}

// The write and verify steps run the tpulaunch the prelude chose: the plan's (the binary that
// made it), or $TPULAUNCH.
void emit_tpulaunch(ShellScript& sh, const Plan& /*plan*/, std::span<const Step> steps) {
  const Step& step = steps.front();
  sh.line(step_banner(step));
  ShellLine line = ShellLine().code(k_tpulaunch_program);
  const auto& elements = step.line.elements();
  for (auto it = std::next(elements.begin()); it != elements.end(); ++it) {
    line.element(*it);
  }
  add_line(sh, std::move(line));
}

// The fallback of --results: the per-worker fetch (the plan's not-collected steps, one per slice)
// of each process in `missing`, its folder made first when the step says so (Step::make_folder).
ShellLine collect_fallback(const Plan& plan) {
  ShellLine fallback = ShellLine().code(k_fetch_library).code(k_fallback_for);
  const bool slices = plan.target.multislice();
  fallback.code(slices ? k_fallback_worker_of_slice : k_fallback_worker);
  for (const Step& step : plan.steps) {
    if (step.when != StepWhen::not_collected) {
      continue;
    }
    const int slice = step.slice.value_or(0);
    if (slices) {
      fallback.code(k_fallback_branch).word(std::to_string(slice)).code(k_case_pattern_end);
    }
    if (step.make_folder) {
      fallback.line(ShellLine{"mkdir", "-p", *step.make_folder}).code(k_fallback_and);
    }
    fallback.line(ShellLine{"fetch_start", Word(k_fallback_process)}.line(step.line));
    if (slices) {
      fallback.code(k_case_branch_end);
    }
  }
  return fallback.code(slices ? k_fallback_esac_done : k_fallback_done);
}

void emit_collect(ShellScript& sh, const Plan& plan, std::span<const Step> steps) {
  const Step& step = steps.front();
  sh.line(step_banner(step));
  sh.code(k_collect_status_0);
  add_line(sh, ShellLine(step.line).code(k_or_collect_status));
  add_line(sh, fill_holes(k_collect_check, {{"fallback", collect_fallback(plan)}}));
  if (step.check_preemption) {
    sh.code(k_check_preempted_if_collect_failed)
        .code(k_worker_report_library)
        .code(k_report_workers)
        .code(k_stop_if_preempted);
  }
  sh.code(k_run_failed).code(k_collect_exit);
}

ShEmitter sh_emitter(StepKind kind) {
  switch (kind) {
  case StepKind::preflight: return emit_preflight;
  case StepKind::run: return emit_run;
  case StepKind::fetch: return emit_fetch;
  case StepKind::write:
  case StepKind::verify: return emit_tpulaunch;
  case StepKind::collect: return emit_collect;
  case StepKind::release: return emit_release;
  case StepKind::wait: return emit_wait;
  case StepKind::preemption_check: return emit_preemption_check;
  case StepKind::stop: return emit_stop;
  case StepKind::name_check: return emit_name_check;
  case StepKind::prepare: return emit_prepare;
  case StepKind::create:
  case StepKind::queue:
  case StepKind::bootstrap:
  case StepKind::stage:
  case StepKind::teardown: return emit_plain;
  }
  return emit_plain;
}

// The values a reader (and the step function) needs, the verify program's presence, and the
// local folders the downloads land in.
void emit_tpu_prelude(ShellScript& sh, const Plan& plan) {
  sh.line(readonly_value(k_set_slice, plan.target.slice->name));
  sh.line(readonly_value(k_set_tpu, plan.target.tpu));
  sh.line(readonly_value(k_set_zone, plan.target.zone));
  sh.line(readonly_value(k_set_run_id, plan.options.run_id));
  sh.line(readonly_value(k_set_run_dir, plan.local_run_dir));
  sh.line(readonly_value(k_set_workers, std::to_string(plan.workers())));
  if (plan.options.form == PlanForm::full) {
    sh.line(readonly_value(k_set_remote_run_dir, plan.remote_run_dir));
  }
  if (plan.target.multislice()) {
    sh.line(readonly_value(k_set_slices, std::to_string(plan.target.nodes)));
    sh.line(readonly_value(k_set_hosts, std::to_string(plan.target.hosts())));
  }
  if (plan.results_run_url) {
    sh.line(readonly_value(k_set_results, *plan.results_run_url));
  }
  // With --results too: a worker that did not arrive from the bucket is fetched from the worker.
  sh.line(readonly_value(k_set_parallel, std::to_string(plan.options.parallel)));
  if (plan.options.form == PlanForm::full) {
    sh.line(readonly_value(k_set_teardown, plan.options.teardown ? "1" : "0"));
  }
  if (!plan.target.mark.empty()) {
    sh.line(readonly_value(k_set_mark, plan.target.mark));
  }
  sh.blank().code(k_step_function).blank();
  const Step* own = find_step(plan, StepKind::write);
  if (own == nullptr) {
    own = find_step(plan, StepKind::verify);
  }
  if (own != nullptr) {
    add_line(sh, fill_holes(k_tpulaunch_program_check, {{"program", ShellLine{own->line.argv().front()}}}));
    sh.blank();
  }
  add_capacity_functions(sh, plan);
}

// Whether `next` goes to `first`'s emitter with it: the steps of one group (they run together),
// or the same conditional step of several slices (a preemption check, a stop: one function,
// defined once, reaches every node).
bool emitted_together(const Step& first, const Step& next) {
  if (first.group != StepGroup::none) {
    return next.group == first.group;
  }
  return first.when != StepWhen::always && next.kind == first.kind && next.when == first.when;
}

} // namespace

std::string render_sh(const Plan& plan) {
  ShellScript sh;
  sh.code(k_shebang);
  if (plan.route == RouteKind::cpu) {
    // `( set -o pipefail; python … | tee … ) && mv …` is several commands, and a note covers one:
    // the CPU script's few lines get theirs for the whole file, which a note before the first
    // command does.
    QuotedText found;
    for (const Step& step : plan.steps) {
      found |= quoted_text(step.line);
    }
    add_notes(sh, found);
  }
  sh.comment(fmt::format("Generated by tpulaunch {}: {} ({}) on the {} route.", TPULAUNCH_VERSION, plan.script,
                         class_name(plan), to_string(plan.route)));
  sh.code(k_regenerate);
  sh_notes::add_plan_notes(sh, render_parts::plan_notes(plan));
  sh.code(k_strict).blank();
  sh.line(readonly_value(k_set_script, plan.script));
  if (plan.route == RouteKind::cpu) {
    sh.blank();
    for (const Step& step : plan.steps) {
      sh_emitter(step.kind)(sh, plan, std::span<const Step>(&step, 1));
    }
    return to_shell(sh);
  }
  emit_tpu_prelude(sh, plan);
  // Steps in order; consecutive steps that go together (emitted_together) go to their emitter together.
  bool trap_set = false;
  for (std::size_t i = 0; i < plan.steps.size();) {
    std::size_t end = i + 1;
    while (end < plan.steps.size() && emitted_together(plan.steps[i], plan.steps[end])) {
      ++end;
    }
    sh.blank();
    // The TPU is the plan's to report as left running from the first call that uses it, or from
    // the moment the call that made it succeeded (Step::makes_capacity): never for a name the plan
    // did not create.
    const bool after_capacity = i > 0 && plan.steps[i - 1].makes_capacity;
    if (!trap_set && (plan.steps[i].where == StepWhere::remote || after_capacity)) {
      add_exit_trap(sh, plan);
      trap_set = true;
    }
    sh_emitter(plan.steps[i].kind)(sh, plan, std::span<const Step>(plan.steps).subspan(i, end - i));
    i = end;
  }
  sh.blank().code(k_done);
  return to_shell(sh);
}

} // namespace tpulaunch
