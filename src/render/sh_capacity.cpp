// The sh form's parts for the TPU's life: the name check, the release, the wait for capacity, the
// preemption check, the mark check, and what the script says about a TPU it leaves running.
#include <fmt/format.h>

#include "render/render_parts.hpp"
#include "render/sh_notes.hpp"
#include "render/sh_parts.hpp"
#include "tpulaunch/embedded/left_running_bash.hpp"
#include "tpulaunch/embedded/left_running_trap_bash.hpp"
#include "tpulaunch/embedded/mark_check_bash.hpp"
#include "tpulaunch/embedded/preemption_bash.hpp"
#include "tpulaunch/embedded/release_capacity_bash.hpp"
#include "tpulaunch/embedded/wait_for_capacity_bash.hpp"

namespace tpulaunch::sh_parts {
namespace {

using render_parts::condition_text;
using render_parts::find_step;
using render_parts::k_state_or_unread;
using sh_notes::add_line;

// tpu_left_running: prints @message@ (src/remote/left_running.bash). From the first call that
// uses the TPU on, the exit trap (src/remote/left_running_trap.bash) names an interruption and
// calls it: on every way out for capacity the plan made and does not delete, on any failure (a
// step, a fetch, verify, set -e) with --teardown. A TPU that is still billing is never left silently.
constexpr Code k_left_running_function = Code{embedded::left_running_bash}.without_final_newline();
constexpr Code k_left_running_trap = Code{embedded::left_running_trap_bash}.without_final_newline();
constexpr Code k_no_op{":"};
constexpr Code k_left_running_always{"tpu_left_running"};
constexpr Code k_left_running_on_failure{"(($1 == 0)) || tpu_left_running"};
// require_mark NODE (src/remote/mark_check.bash): before every step that touches capacity the plan
// created, the TPU must carry the plan's mark, else the script stops with @not_ours@.
constexpr Code k_mark_check_function = Code{embedded::mark_check_bash}.without_final_newline();

// --- capacity: create or queue, wait, release ------------------------------------------------------
// release_capacity: runs @release@, the command that deletes what holds quota
// (src/remote/release_capacity.bash); RELEASE is the same command as text, for messages.
constexpr Code k_release_function = Code{embedded::release_capacity_bash}.without_final_newline();
// capacity_state runs @describe@; wait_for_capacity WANT 'DEAD ENDS' POLL DEADLINE WHAT polls it
// (src/remote/wait_for_capacity.bash), and stops with @capacity_failed@ or @capacity_deadline@.
constexpr Code k_wait_functions = Code{embedded::wait_for_capacity_bash}.without_final_newline();

// name-check: the describe call succeeds only when something of that name exists, which this plan
// did not create: it stops, naming the state, before it creates or touches anything.
constexpr Code k_name_check_open{"if state=$("};
constexpr Code k_name_check_then{" 2>/dev/null); then\n  "};
constexpr Code k_set_release{"RELEASE="};

// --- preemption: one state query a node after a failed step on a spot or preemptible TPU -------
// node_state NODE runs @describe@'s branch for NODE; check_preempted asks each of @nodes@;
// stop_if_preempted (which stops with @preempted@) and failed_step use it (src/remote/preemption.bash).
constexpr Code k_preemption_functions = Code{embedded::preemption_bash}.without_final_newline();

// What a person must know when the plan leaves the TPU running: that it is still billing, and the
// exact command that deletes it (the release step's). With --teardown that happens only after a
// failure; for capacity the plan made without --teardown, on every way out.
std::string left_running_message(const Plan& plan, const Step& release) {
  const std::string what =
      plan.target.queued() ? "queued resource " + plan.target.queued_resource : "TPU " + plan.target.tpu;
  if (release.left_running == LeftRunning::on_failure) {
    return fmt::format("tpulaunch: warning: a step failed, so the TPU is left running: {} is still running (and "
                       "billing). Once you have looked at the results, delete it with: {}",
                       what, to_shell(release.line));
  }
  return fmt::format("tpulaunch: warning: {} is still running (and billing): this plan made it and was not told to "
                     "delete it (--teardown). Once you are done with it, delete it with: {}",
                     what, to_shell(release.line));
}

// What the exit trap does about a TPU left running (left_running_trap.bash's @left_running@), as
// the release step states it (Step::left_running).
ShellLine left_running_call(const Plan& plan) {
  const Step* release = find_step(plan, StepKind::release);
  switch (release == nullptr ? LeftRunning::never : release->left_running) {
  case LeftRunning::on_failure:
    return ShellLine().code(k_left_running_on_failure);
  case LeftRunning::always:
    return ShellLine().code(k_left_running_always);
  case LeftRunning::never:
    break;
  }
  return ShellLine().code(k_no_op);
}

// require_mark, with one describe call per node (a case on the node's name), each the mark check of
// the first step that reaches that node.
void add_mark_functions(ShellScript& sh, const Plan& plan) {
  ShellLine branches = ShellLine().code(k_case_on_node);
  std::vector<bool> seen(static_cast<std::size_t>(plan.target.nodes), false);
  for (const Step& step : plan.steps) {
    const int node = step.slice.value_or(0);
    if (!step.mark_check || seen[static_cast<std::size_t>(node)]) {
      continue;
    }
    seen[static_cast<std::size_t>(node)] = true;
    branches.code(k_case_branch_start).word(plan.target.node(node)).code(k_case_pattern_end).line(*step.mark_check).code(
        k_case_branch_end);
  }
  branches.code(k_case_end);
  add_line(sh, fill_holes(k_mark_check_function,
                          {{"describe", branches}, {"not_ours", status_word(PipelineStatus::not_ours)}}));
}

} // namespace

// A status of the script's own stops, as the one word that fills its hole.
ShellLine status_word(PipelineStatus status) { return ShellLine{Word(std::to_string(to_int(status)))}; }

// readonly NAME=value
ShellLine readonly_value(Code name_equals, std::string value) {
  return ShellLine{"readonly", Word(name_equals).append(std::move(value))};
}

// echo MESSAGE >&2, the message one quoted word.
ShellLine echo_error(std::string message) { return ShellLine{"echo", Word(std::move(message))}.code(k_to_stderr); }

// step 'NAME: SUMMARY': the progress line on stderr.
ShellLine step_banner(const Step& step) {
  return ShellLine{"step", Word(fmt::format("{}: {}", step.name(), step.summary))};
}

void emit_name_check(ShellScript& sh, const Plan& plan, std::span<const Step> steps) {
  const Step& step = steps.front();
  const bool queued = plan.target.queued();
  sh.line(step_banner(step));
  const std::string name = queued ? plan.target.queued_resource : plan.target.tpu;
  add_line(sh, ShellLine()
                   .code(k_name_check_open)
                   .line(step.line)
                   .code(k_name_check_then)
                   .line(ShellLine{"echo", Word(fmt::format("tpulaunch: error: a {} named {} exists already (state ",
                                                            queued ? "queued resource" : "TPU", name))
                                               .append(k_state_or_unread)
                                               .append(fmt::format("), and this plan creates it: nothing was created "
                                                                   "or touched; choose another {}, or use that one "
                                                                   "without {}",
                                                                   queued ? "--queued-resource" : "--tpu",
                                                                   queued ? "--queued" : "--create"))}
                             .code(k_to_stderr))
                   .code(k_exit_open)
                   .line(status_word(PipelineStatus::name_taken))
                   .code(k_fi));
}

void emit_release(ShellScript& sh, const Plan& plan, std::span<const Step> steps) {
  const Step& step = steps.front();
  sh.comment(fmt::format("{} ({}): {}", step.name(), condition_text(plan, step), step.summary));
  sh.line(readonly_value(k_set_release, to_shell(step.line)));
  add_line(sh, fill_holes(k_release_function, {{"release", step.line}}));
}

void emit_wait(ShellScript& sh, const Plan& plan, std::span<const Step> steps) {
  const Step& step = steps.front();
  const Poll& poll = *step.poll;
  sh.line(step_banner(step));
  add_line(sh, fill_holes(k_wait_functions, {{"describe", step.line},
                                             {"capacity_failed", status_word(PipelineStatus::capacity_failed)},
                                             {"capacity_deadline", status_word(PipelineStatus::capacity_deadline)}}));
  std::string dead_ends;
  for (const auto& state : poll.stop_on) {
    dead_ends += (dead_ends.empty() ? "" : " ") + state;
  }
  const bool queued = plan.target.queued();
  add_line(sh, ShellLine{"wait_for_capacity", Word(poll.until), Word(dead_ends), Word(std::to_string(poll.every_seconds)),
                    Word(std::to_string(poll.deadline_seconds)),
                    Word(queued ? "queued resource " + plan.target.queued_resource : "TPU VM " + plan.target.tpu)});
}

// The preemption check of each node (one on one slice), as one set of functions: node_state is a
// case with a branch per node, `NODE) describe-line ;;`, and check_preempted asks them in order.
void emit_preemption_check(ShellScript& sh, const Plan& plan, std::span<const Step> steps) {
  ShellLine branches = ShellLine().code(k_case_on_node);
  ShellLine nodes;
  for (const Step& step : steps) {
    sh.comment(fmt::format("{} ({}): {}", step.name(), condition_text(plan, step), step.summary));
    const Word node = plan.target.node(step.slice.value_or(0));
    branches.code(k_case_branch_start).word(node).code(k_case_pattern_end).line(step.line).code(k_case_branch_end);
    nodes.word(node);
  }
  branches.code(k_case_end);
  add_line(sh, fill_holes(k_preemption_functions, {{"describe", branches},
                                                   {"nodes", nodes},
                                                   {"preempted", status_word(PipelineStatus::preempted)}}));
}

void add_capacity_functions(ShellScript& sh, const Plan& plan) {
  const Step* release = find_step(plan, StepKind::release);
  if (release != nullptr && release->left_running != LeftRunning::never) {
    add_line(sh, fill_holes(k_left_running_function, {{"message", ShellLine{left_running_message(plan, *release)}}}));
  }
  if (!plan.target.mark.empty()) {
    add_mark_functions(sh, plan);
  }
}

void add_exit_trap(ShellScript& sh, const Plan& plan) {
  add_line(sh, fill_holes(k_left_running_trap, {{"left_running", left_running_call(plan)}}));
}

} // namespace tpulaunch::sh_parts
