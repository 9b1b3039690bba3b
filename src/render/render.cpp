#include "tpulaunch/render/render.hpp"

#include <algorithm>
#include <span>

#include <fmt/format.h>

#include "tpulaunch/embedded/fetch_bash.hpp"
#include "tpulaunch/embedded/worker_report_bash.hpp"
#include "tpulaunch/json/json_writer.hpp"
#include "tpulaunch/course/lesson.hpp"
#include "tpulaunch/receipts/run_folder.hpp"

namespace tpulaunch {
namespace {

std::string_view where_name(StepWhere where) { return where == StepWhere::local ? "local" : "remote"; }

std::string route_sentence(const Plan& plan) {
  if (plan.route == RouteKind::cpu) {
    return "cpu: runs on this machine's CPU; no TPU is used";
  }
  const Slice& s = *plan.target.slice;
  if (plan.route == RouteKind::multi_host) {
    return fmt::format("multi-host: {} has {} hosts x {} chips = {} chips; every worker runs the script (--worker=all), "
                       "{} local and {} global JAX devices each",
                       s.name, s.hosts, s.chips_per_host, s.global_chips(), s.local_device_count(), s.device_count());
  }
  return fmt::format("single-host: {} is 1 host x {} chips; the script runs on worker 0 with {} JAX devices", s.name,
                     s.chips_per_host, s.local_device_count());
}

// Indents every line of `text` by `prefix`.
std::string indent(std::string_view text, std::string_view prefix) {
  std::string out;
  std::size_t start = 0;
  while (start < text.size()) {
    const auto end = text.find('\n', start);
    const auto line = text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    out += prefix;
    out += line;
    out += '\n';
    if (end == std::string_view::npos) {
      break;
    }
    start = end + 1;
  }
  return out;
}

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
constexpr Code k_to_stderr{" >&2"};
constexpr Code k_if_not{"if ! "};
constexpr Code k_then_block{"; then\n  "};
constexpr Code k_exit_1_fi{"\n  exit 1\nfi"};
constexpr Code k_quiet{" >/dev/null 2>&1"};
constexpr Code k_verify_override{"if [[ -n ${TPULAUNCH:-} ]]; then\n  TPULAUNCH_PROGRAM=$TPULAUNCH\nfi\n"
                                  "readonly TPULAUNCH_PROGRAM"};
constexpr Code k_verify_check{
    "if ! command -v \"$TPULAUNCH_PROGRAM\" >/dev/null; then\n"
    "  echo \"tpulaunch: error: the plan runs $TPULAUNCH_PROGRAM (to write its run guard, to verify), which cannot be "
    "run here; set TPULAUNCH to the tpulaunch to use\" >&2\n"
    "  exit 1\n"
    "fi\n"
    "step \"tpulaunch's own steps will run $TPULAUNCH_PROGRAM (set TPULAUNCH to choose another)\""};
constexpr Code k_tpulaunch_program{"\"$TPULAUNCH_PROGRAM\" "};
constexpr Code k_left_running_start{"tpu_left_running() {\n  "};
constexpr Code k_left_running_end{"\n}"};
// From the first call that uses the TPU on, any failure (a step, a fetch, verify, set -e) ends
// with the message: a TPU that is still billing is never left silently.
constexpr Code k_left_running_trap{"trap '(($? == 0)) || tpu_left_running' EXIT"};
constexpr Code k_run_status_0{"run_status=0"};
constexpr Code k_or_run_status{" || run_status=$?"};
constexpr Code k_remote_code_note{
    "# shellcheck disable=SC2016 # the remote shell expands what is quoted here, not this one"};
constexpr Code k_quoted_text_note{"# shellcheck disable=SC2016 # a value here holds $ or a backquote: quoted, it is text"};
constexpr Code k_nested_quote_note{
    "# shellcheck disable=SC1003 # a value here holds a quote, quoted again for the remote shell"};
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

// --- capacity: create or queue, wait, release ------------------------------------------------------
// release: how to delete what holds quota; RELEASE is the same command as text, for messages.
constexpr Code k_release_open{"release_capacity() {\n  if ! "};
constexpr Code k_release_close{"; then\n"
                               "    echo \"tpulaunch: error: could not delete it; delete it by hand: $RELEASE\" >&2\n"
                               "    return 1\n"
                               "  fi\n"
                               "  trap - EXIT # nothing is left running\n"
                               "}"};
constexpr Code k_capacity_state_open{"capacity_state() { "};
constexpr Code k_function_close{"; }"};
// wait_for_capacity WANT 'DEAD ENDS' POLL DEADLINE WHAT: polls capacity_state. The statuses are
// PipelineStatus::capacity_failed (90) and capacity_deadline (91); render_test checks them.
constexpr Code k_wait_function{
    "wait_for_capacity() {\n"
    "  local want=$1 dead_ends=\" $2 \" poll=$3 limit=$4 what=$5 state status deadline\n"
    "  deadline=$((SECONDS + limit))\n"
    "  while :; do\n"
    "    status=0\n"
    "    state=$(capacity_state) || status=$?\n"
    "    if ((status != 0)); then\n"
    "      # One failed look (a network blip, an API error) is not a verdict: look again.\n"
    "      state=\"\"\n"
    "      step \"wait: could not read the state of $what (gcloud exited $status); it is kept, and looked at again\"\n"
    "    elif [[ $state == \"$want\" ]]; then\n"
    "      step \"wait: $what is $state\"\n"
    "      return 0\n"
    "    elif [[ -n $state && $dead_ends == *\" $state \"* ]]; then\n"
    "      echo \"tpulaunch: error: $what is $state, which never becomes $want; deleting it so that it stops holding "
    "quota\" >&2\n"
    "      release_capacity || true\n"
    "      exit 90\n"
    "    fi\n"
    "    if ((SECONDS >= deadline)); then\n"
    "      echo \"tpulaunch: error: $what is still ${state:-without a state} after ${limit}s (--ready-timeout); "
    "deleting it\" >&2\n"
    "      release_capacity || true\n"
    "      exit 91\n"
    "    fi\n"
    "    step \"wait: $what is ${state:-without a state yet}; next look in ${poll}s\"\n"
    "    sleep \"$poll\"\n"
    "  done\n"
    "}"};

// name-check: the describe call succeeds only when something of that name exists, which this plan
// did not create: it stops, naming the state, before it creates or touches anything.
constexpr Code k_name_check_open{"if state=$("};
constexpr Code k_name_check_then{" 2>/dev/null); then\n  "};
constexpr Code k_exit_name_taken_fi{"\n  exit 89\nfi"};
// prepare: a run folder that exists already is a run that happened before.
constexpr Code k_if_not_block{"if ! { "};
constexpr Code k_block_then{"; }; then\n  "};
constexpr Code k_exit_run_exists_fi{"\n  exit 93\nfi"};
// The text form's wait: a loop a person can paste, which looks again after a failed look and stops
// at a state that never leads to the one it waits for (the sh form then deletes it; here the
// release line, commented, says how).
constexpr Code k_text_wait_open{"until state=$("};
constexpr Code k_text_wait_test{") && [ \"$state\" = "};
constexpr Code k_text_wait_case{" ]; do case $state in "};
constexpr Code k_alternative{" | "};
constexpr Code k_text_wait_stop{") "};
constexpr Code k_text_wait_break{" >&2; break ;; esac; "};
constexpr Code k_text_wait_sleep{" >&2; sleep "};
constexpr Code k_text_wait_close{"; done"};
constexpr Code k_state_value{"\"$state\""};
constexpr Code k_state_or_unread{"\"${state:-not readable}\""};

// --- preemption: one state query after a failed step on a spot or preemptible TPU -------------
constexpr Code k_node_state_open{"node_state() { "};
// The exit status is PipelineStatus::preempted (92); render_test checks it.
constexpr Code k_preemption_functions{
    "preempted=\"\"\n"
    "preemption_checked=0\n"
    "# check_preempted: ask gcloud for the TPU's state, once; PREEMPTED or TERMINATED is noted.\n"
    "check_preempted() {\n"
    "  local state\n"
    "  if ((preemption_checked)); then\n"
    "    return 0\n"
    "  fi\n"
    "  preemption_checked=1\n"
    "  state=$(node_state) || return 0\n"
    "  case $state in\n"
    "    PREEMPTED | TERMINATED) preempted=$state ;;\n"
    "  esac\n"
    "}\n"
    "# stop_if_preempted: when it was, say so (it is not a failure of the program) and exit 92; with\n"
    "# --teardown, delete it first, as it still holds quota.\n"
    "stop_if_preempted() {\n"
    "  if [[ -z $preempted ]]; then\n"
    "    return 0\n"
    "  fi\n"
    "  echo \"tpulaunch: error: $TPU was $preempted during the pipeline: it was preempted, this is not a failure of the "
    "program; whatever could be fetched is in $RUN_DIR\" >&2\n"
    "  if ((TEARDOWN)); then\n"
    "    echo \"tpulaunch: deleting it (--teardown), as it still holds quota\" >&2\n"
    "    release_capacity || true\n"
    "  else\n"
    "    echo \"tpulaunch: it still holds quota until it is deleted: $RELEASE\" >&2\n"
    "  fi\n"
    "  exit 92\n"
    "}\n"
    "# failed_step STATUS: a step failed; report a preemption if that is what it was, else stop.\n"
    "failed_step() {\n"
    "  check_preempted\n"
    "  stop_if_preempted\n"
    "  exit \"$1\"\n"
    "}"};
constexpr Code k_or_failed_step{" || failed_step $?"};
constexpr Code k_check_preempted_if_run_failed{"if ((run_status != 0)); then\n  check_preempted\nfi"};
constexpr Code k_check_preempted_if_failed{
    "if ((${#fetch_failed[@]} > 0 || run_status != 0)); then\n  check_preempted\n  stop_if_preempted\nfi"};
constexpr Code k_fetch_exit{"if ((${#fetch_failed[@]} > 0)); then\n  exit 1\nfi"};

// --results: after the one download, every worker whose run folder did not arrive is named (its
// upload failed, and the worker said why in the run step's output); then, as after the fetches,
// the per-worker report and the run's own failure, and nothing after this (verify, teardown) runs
// unless all is well.
constexpr Code k_collect_status_0{"collect_status=0"};
constexpr Code k_or_collect_status{" || collect_status=$?"};
constexpr Code k_collect_missing{
    "missing=()\n"
    "for ((i = 0; i < WORKERS; i++)); do\n"
    "  if [[ ! -d \"$RUN_DIR/worker-$i/$RUN_ID\" ]]; then\n"
    "    missing+=(\"$i\")\n"
    "  fi\n"
    "done\n"
    "if ((collect_status != 0)); then\n"
    "  echo \"tpulaunch: error: the download from $RESULTS failed with status $collect_status\" >&2\n"
    "fi\n"
    "if ((${#missing[@]} > 0)); then\n"
    "  echo \"tpulaunch: error: no results from worker(s) ${missing[*]} of $WORKERS in $RESULTS\" >&2\n"
    "fi"};
constexpr Code k_check_preempted_if_collect_failed{
    "if ((collect_status != 0 || ${#missing[@]} > 0 || run_status != 0)); then\n  check_preempted\n  stop_if_preempted\nfi"};
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
constexpr Code k_set_tpulaunch_program{"TPULAUNCH_PROGRAM="};
constexpr Code k_set_teardown{"TEARDOWN="};
constexpr Code k_set_release{"RELEASE="};

// readonly NAME=value
ShellLine readonly_value(Code name_equals, std::string value) {
  return ShellLine{"readonly", Word(name_equals).append(std::move(value))};
}

// echo MESSAGE >&2, the message one quoted word.
ShellLine echo_error(std::string message) { return ShellLine{"echo", Word(std::move(message))}.code(k_to_stderr); }

// if ! CONDITION; then echo MESSAGE >&2; exit 1; fi (on four lines).
ShellLine stop_unless(const ShellLine& condition, std::string message) {
  return ShellLine()
      .code(k_if_not)
      .line(condition)
      .code(k_then_block)
      .line(echo_error(std::move(message)))
      .code(k_exit_1_fi);
}

// step 'NAME: SUMMARY': the progress line on stderr.
ShellLine step_banner(const Step& step) {
  return ShellLine{"step", Word(fmt::format("{}: {}", step.name(), step.summary))};
}

// Appends `line`, after the notes shellcheck (and a reader) need about the text it quotes: a
// --command= text that holds `$` for the remote shell; any other value that holds `$` or a
// backquote, which is text here; and a value that holds a backslash before a quote, which the
// one quoting function writes as '\'' again and again, correctly, at two levels.
struct QuotedText {
  bool remote_code = false;     // a --command= text holds $ or a backquote
  bool expansion = false;       // some other value does
  bool backslash_quote = false; // a value holds \' (a quote quoted at two levels does)

  QuotedText& operator|=(const QuotedText& other) {
    remote_code = remote_code || other.remote_code;
    expansion = expansion || other.expansion;
    backslash_quote = backslash_quote || other.backslash_quote;
    return *this;
  }
};

QuotedText quoted_text(const ShellLine& line) {
  QuotedText found;
  for (const auto& element : line.elements()) {
    const auto* word = std::get_if<Word>(&element);
    if (word == nullptr) {
      continue;
    }
    const bool command = !word->parts().empty() && word->parts().front().text == "--command=";
    for (const auto& part : word->parts()) {
      if (part.is_code) {
        continue;
      }
      const bool expansion = part.text.find_first_of("$`") != std::string::npos;
      found.remote_code = found.remote_code || (command && expansion);
      found.expansion = found.expansion || (!command && expansion);
      found.backslash_quote = found.backslash_quote || part.text.find("\\'") != std::string::npos;
    }
  }
  return found;
}

void add_notes(ShellScript& sh, const QuotedText& found) {
  if (found.remote_code) {
    sh.code(k_remote_code_note);
  }
  if (found.expansion) {
    sh.code(k_quoted_text_note);
  }
  if (found.backslash_quote) {
    sh.code(k_nested_quote_note);
  }
}

// Appends `line` (one command), after the notes shellcheck (and a reader) need about the text it
// quotes: a --command= text that holds `$` for the remote shell; another value that holds `$` or a
// backquote, which is text here; a value that holds a backslash before a quote, which is what the
// one quoting function writes when a quote is quoted at two levels.
void add_line(ShellScript& sh, ShellLine line) {
  add_notes(sh, quoted_text(line));
  sh.line(std::move(line));
}

// What a conditional step waits for, in words: the text form's label and the JSON form's
// "condition". Empty for a step that always runs.
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
    return fmt::format("only if a step fails on this {} TPU", to_string(plan.target.provisioning));
  case StepWhen::verify_succeeded: return "only after verify succeeded";
  }
  return "";
}

// The wait as one line a person can paste (text form): look until the state is the one waited for,
// again after a failed look, and stop at a state that never leads there.
ShellLine text_wait_line(const Plan& plan, const Step& step) {
  const Poll& poll = *step.poll;
  const bool queued = plan.target.queued();
  const std::string what = queued ? "queued resource " + plan.target.queued_resource : "TPU " + plan.target.tpu;
  ShellLine line = ShellLine().code(k_text_wait_open).line(step.line).code(k_text_wait_test).word(poll.until);
  line.code(k_text_wait_case);
  for (std::size_t i = 0; i < poll.stop_on.size(); ++i) {
    if (i > 0) {
      line.code(k_alternative);
    }
    line.word(poll.stop_on[i]);
  }
  line.code(k_text_wait_stop).word("echo").word(Word("tpulaunch: " + what + " is ").append(k_state_value).append(
      fmt::format(", which never becomes {}: delete it (the release line above)", poll.until)));
  line.code(k_text_wait_break).word("echo");
  line.word(Word("tpulaunch: " + what + " is ").append(k_state_or_unread).append(
      fmt::format("; next look in {}s", poll.every_seconds)));
  line.code(k_text_wait_sleep).word(std::to_string(poll.every_seconds)).code(k_text_wait_close);
  return line;
}

// One emitter per step kind. Each gets the steps of one group: a single step, or every step of a
// concurrent group (the fetches) at once.
using ShEmitter = void (*)(ShellScript& sh, const Plan& plan, std::span<const Step> steps);

void emit_preflight(ShellScript& sh, const Plan& /*plan*/, std::span<const Step> steps) {
  const Step& step = steps.front();
  sh.line(step_banner(step));
  sh.line(stop_unless(ShellLine().line(step.line).code(k_quiet),
                      "tpulaunch: error: no ssh key is loaded in the agent, and gcloud needs one to reach several "
                      "workers; run: ssh-add ~/.ssh/google_compute_engine"));
}

// A step that runs once, in order, and stops the script (set -e) when it fails; on a spot or
// preemptible TPU a failed remote step first asks whether the TPU was preempted.
void emit_plain(ShellScript& sh, const Plan& plan, std::span<const Step> steps) {
  const Step& step = steps.front();
  if (plan.route == RouteKind::cpu) {
    sh.line(step.line); // its notes are at the top of the script (render_sh)
    return;
  }
  sh.line(step_banner(step));
  const bool on_the_tpu = step.kind == StepKind::bootstrap || step.kind == StepKind::stage;
  add_line(sh, plan.preemptible() && on_the_tpu ? ShellLine(step.line).code(k_or_failed_step) : step.line);
}

void emit_name_check(ShellScript& sh, const Plan& plan, std::span<const Step> steps) {
  const Step& step = steps.front();
  const bool queued = plan.target.queued();
  sh.line(step_banner(step));
  const std::string name = plan.target.capacity_name();
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
                   .code(k_exit_name_taken_fi));
}

// prepare on a TPU route: a run folder that exists already stops the script before anything else.
void emit_prepare(ShellScript& sh, const Plan& plan, std::span<const Step> steps) {
  const Step& step = steps.front();
  if (plan.route == RouteKind::cpu) {
    sh.line(step.line);
    return;
  }
  sh.line(step_banner(step));
  add_line(sh, ShellLine()
                   .code(k_if_not_block)
                   .line(step.line)
                   .code(k_block_then)
                   .line(echo_error(fmt::format(
                       "tpulaunch: error: could not start the run folder {}: it exists already (run id {} ran before, "
                       "and a second run never overwrites the first: make a new plan), or it cannot be made here",
                       plan.local_run_dir, plan.options.run_id)))
                   .code(k_exit_run_exists_fi));
}

void emit_release(ShellScript& sh, const Plan& plan, std::span<const Step> steps) {
  const Step& step = steps.front();
  sh.comment(fmt::format("{} ({}): {}", step.name(), condition_text(plan, step), step.summary));
  sh.line(readonly_value(k_set_release, to_shell(step.line)));
  add_line(sh, ShellLine().code(k_release_open).line(step.line).code(k_release_close));
}

void emit_wait(ShellScript& sh, const Plan& plan, std::span<const Step> steps) {
  const Step& step = steps.front();
  const Poll& poll = *step.poll;
  sh.line(step_banner(step));
  add_line(sh, ShellLine().code(k_capacity_state_open).line(step.line).code(k_function_close));
  sh.code(k_wait_function);
  std::string dead_ends;
  for (const auto& state : poll.stop_on) {
    dead_ends += (dead_ends.empty() ? "" : " ") + state;
  }
  const bool queued = plan.target.queued();
  add_line(sh, ShellLine{"wait_for_capacity", Word(poll.until), Word(dead_ends), Word(std::to_string(poll.every_seconds)),
                    Word(std::to_string(poll.deadline_seconds)),
                    Word(queued ? "queued resource " + plan.target.queued_resource : "TPU VM " + plan.target.tpu)});
}

void emit_preemption_check(ShellScript& sh, const Plan& plan, std::span<const Step> steps) {
  const Step& step = steps.front();
  sh.comment(fmt::format("{} ({}): {}", step.name(), condition_text(plan, step), step.summary));
  add_line(sh, ShellLine().code(k_node_state_open).line(step.line).code(k_function_close));
  sh.code(k_preemption_functions);
}

void emit_run(ShellScript& sh, const Plan& plan, std::span<const Step> steps) {
  const Step& step = steps.front();
  if (plan.route == RouteKind::cpu) {
    sh.code(k_cpu_banner).line(step.line); // its notes are at the top of the script (render_sh)
    return;
  }
  sh.line(step_banner(step));
  // A failed run must not stop retrieval: every worker's log is what explains the failure.
  sh.code(k_run_status_0);
  add_line(sh, ShellLine(step.line).code(k_or_run_status));
  if (plan.preemptible()) {
    sh.code(k_check_preempted_if_run_failed);
  }
}

void emit_fetch(ShellScript& sh, const Plan& plan, std::span<const Step> steps) {
  sh.line(ShellLine{"step", Word(fmt::format("fetch: one download per worker (gcloud refuses several), {} at a time",
                                             plan.options.parallel))});
  sh.code(k_fetch_library);
  for (const Step& step : steps) {
    add_line(sh, ShellLine{"fetch_start", Word(step.workers->text())}.line(step.line));
  }
  sh.code(k_fetch_wait_all);
  sh.code(k_fetch_failed);
  if (plan.options.form == PlanForm::full) {
    sh.code(k_worker_report_library).code(k_report_workers);
  }
  if (plan.preemptible()) {
    sh.code(k_check_preempted_if_failed);
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

void emit_collect(ShellScript& sh, const Plan& plan, std::span<const Step> steps) {
  const Step& step = steps.front();
  sh.line(step_banner(step));
  sh.code(k_collect_status_0);
  add_line(sh, ShellLine(step.line).code(k_or_collect_status));
  sh.code(k_collect_missing);
  if (plan.options.form == PlanForm::full) {
    sh.code(k_worker_report_library).code(k_report_workers);
  }
  if (plan.preemptible()) {
    sh.code(k_check_preempted_if_collect_failed);
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

const Step* find_step(const Plan& plan, StepKind kind) {
  const auto it = std::find_if(plan.steps.begin(), plan.steps.end(), [kind](const Step& s) { return s.kind == kind; });
  return it == plan.steps.end() ? nullptr : &*it;
}

// What a person must know when a step fails after the TPU is in use and --teardown was asked:
// the TPU is still billing, and the exact command that deletes it.
std::string left_running_message(const Plan& plan, const Step& teardown) {
  return fmt::format("tpulaunch: warning: a step failed, so the TPU is left running: {} is still running (and billing). "
                     "Once you have looked at the results, delete it with: {}",
                     plan.target.tpu, to_shell(teardown.line));
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
  if (plan.results_run_url) {
    sh.line(readonly_value(k_set_results, *plan.results_run_url));
  } else {
    sh.line(readonly_value(k_set_parallel, std::to_string(plan.options.parallel)));
  }
  if (plan.preemptible()) {
    sh.line(readonly_value(k_set_teardown, plan.options.teardown ? "1" : "0"));
  }
  sh.blank().code(k_step_function).blank();
  const Step* own = find_step(plan, StepKind::write);
  if (own == nullptr) {
    own = find_step(plan, StepKind::verify);
  }
  if (own != nullptr) {
    // The tpulaunch that made the plan, unless $TPULAUNCH names another; checked before any TPU
    // time is spent, not after the run, and named on stderr.
    add_line(sh, ShellLine{Word(k_set_tpulaunch_program).append(own->line.argv().front())});
    sh.code(k_verify_override).code(k_verify_check).blank();
  }
  if (const Step* teardown = find_step(plan, StepKind::teardown)) {
    add_line(sh, ShellLine()
                     .code(k_left_running_start)
                     .line(echo_error(left_running_message(plan, *teardown)))
                     .code(k_left_running_end));
  }
}

// What a person must know that the commands do not say.
std::vector<std::string> plan_notes(const Plan& plan) {
  std::vector<std::string> notes;
  if (plan.route != RouteKind::cpu && plan.options.form == PlanForm::full) {
    notes.emplace_back("the run step calls tpulaunch's run guard, which the write step puts in the run folder and "
                       "the stage step copies: `tpulaunch guard` prints it (src/remote/run_guard.bash in tpulaunch's "
                       "source); it checks its own digest, the staged files' digests and the TPU's holders before "
                       "the program runs");
  }
  if (plan.route != RouteKind::cpu && plan.options.form == PlanForm::full && !plan.options.bootstrap) {
    const std::string python = plan.options.python.empty() ? "~/jax-tpu-lab/.venv/bin/python" : plan.options.python;
    notes.push_back(fmt::format("every worker needs the interpreter {} with jax[tpu]; a fresh TPU VM has only python3, so "
                                "without it the run stops at once with status {} (add --bootstrap to create "
                                "~/jax-tpu-lab/.venv, or choose another with --python PATH)",
                                python, k_remote_no_python));
  }
  if (plan.target.capacity != Capacity::existing && plan.options.bootstrap) {
    notes.emplace_back("a TPU this plan creates is a fresh VM with python3 only, so the plan bootstraps it "
                       "(~/jax-tpu-lab/.venv with jax[tpu]); --python PATH names another interpreter instead");
  }
  if (const Step* teardown = find_step(plan, StepKind::teardown)) {
    notes.push_back(fmt::format("if a command after the first gcloud call fails, the TPU {} is left running (and "
                                "billing); once you have looked at the results, delete it with: {}",
                                plan.target.tpu, to_shell(teardown->line)));
  }
  if (plan.route != RouteKind::cpu && std::any_of(plan.steps.begin(), plan.steps.end(), [](const Step& step) {
        return step.when != StepWhen::always;
      })) {
    notes.emplace_back("the commented steps run only on their condition: --format sh runs them when it holds; pasted, "
                       "these lines run one after another whatever the one before did, so nothing here deletes the "
                       "TPU");
  }
  return notes;
}

} // namespace

nlohmann::ordered_json slice_json(const Slice& s) {
  nlohmann::ordered_json j;
  j["name"] = s.name;
  j["generation"] = s.generation;
  j["hosts"] = s.hosts;
  j["chips_per_host"] = s.chips_per_host;
  j["devices_per_host"] = s.devices_per_host;
  j["hbm_gib_per_chip"] = s.hbm_gib_per_chip;
  j["runtime_version"] = s.runtime_version;
  j["topology"] = s.topology;
  j["global_chips"] = s.global_chips();
  j["total_hbm_gib"] = s.total_hbm_gib();
  j["multi_host"] = s.multi_host();
  j["local_device_count"] = s.local_device_count();
  j["device_count"] = s.device_count();
  return j;
}

std::string plan_json(const Plan& plan) {
  JsonWriter w(32U * 1024U);
  w.begin_object();
  w.key("script").string(plan.script);
  w.key("path").string_or_null(plan.path);
  w.key("class").string(class_name(plan));
  w.key("sha256").string_or_null(plan.sha256);
  w.key("route").string(to_string(plan.route));
  w.key("slice");
  if (plan.target.slice == nullptr) {
    w.null();
  } else {
    w.value(slice_json(*plan.target.slice));
  }
  w.key("multi_host").boolean(plan.multi_host());
  if (plan.route != RouteKind::cpu) {
    w.key("form").string(plan.options.form == PlanForm::course ? "course" : "full");
    w.key("tpu").string(plan.target.tpu);
    w.key("zone").string(plan.target.zone);
    w.key("project").string_or_null(plan.target.project);
    w.key("run_id").string(plan.options.run_id);
    w.key("local_run_dir").string(plan.local_run_dir);
    w.key("results").string_or_null(plan.results_run_url.value_or(""));
    w.key("verify").string(to_string(plan.verify));
    const LifecycleOptions& life = plan.options.lifecycle;
    w.key("lifecycle").begin_object();
    w.key("capacity").string(to_string(plan.target.capacity));
    w.key("provisioning").string(to_string(plan.target.provisioning));
    w.key("runtime_version").string_or_null(plan.target.capacity == Capacity::existing ? "" : plan.target.runtime_version);
    w.key("queued_resource").string_or_null(plan.target.queued_resource);
    w.key("valid_until").string_or_null(life.valid_until);
    w.key("timeout_seconds");
    if (plan.timeout_seconds > 0) {
      w.integer(plan.timeout_seconds);
    } else {
      w.null();
    }
    w.key("grace_seconds").integer(plan.grace_seconds);
    w.key("kill_stale").boolean(life.kill_stale);
    w.key("tpu_devices").string(to_string(plan.target.slice->devices));
    w.key("preemption_check").boolean(plan.preemptible());
    w.end_object();
    w.key("jax_platforms").begin_object();
    w.key("value").string(plan.jax_platforms);
    w.key("source").string(plan.jax_platforms_reviewed ? "reviewed" : "default");
    w.end_object();
    // What the stage step copies, where each lands, and the digest the run guard checks: the
    // run guard first (run where it lands), then what it moves into place.
    w.key("staged").begin_array();
    for (const StagedFile& file : plan.staged) {
      w.begin_object();
      w.key("local").string(file.local);
      w.key("worker").string("~/" + file.home_name);
      w.key("place").string_or_null(file.place.empty() ? "" : "~/" + file.place);
      w.key("sha256").string(file.sha256);
      w.end_object();
    }
    w.end_array();
  } else {
    w.key("receipt").string(plan.cpu_receipt);
  }
  w.key("directory").string_or_null(plan.options.directory);
  w.key("python").string_or_null(plan.options.python);
  w.key("env").begin_object();
  for (const EnvVar& var : plan.options.env) {
    w.key(var.name).string(var.value);
  }
  w.end_object();
  w.key("args").begin_array();
  for (const std::string& arg : plan.options.args) {
    w.string(arg);
  }
  w.end_array();
  w.key("steps").begin_array();
  std::vector<std::size_t> fetch_steps;
  for (std::size_t i = 0; i < plan.steps.size(); ++i) {
    const Step& step = plan.steps[i];
    w.begin_object();
    w.key("index").integer(i);
    w.key("name").string(step.name());
    w.key("where").string(where_name(step.where));
    w.key("workers").string_or_null(step.workers ? step.workers->text() : "");
    w.key("concurrent_group").string_or_null(concurrent_group(step.kind));
    w.key("summary").string(step.summary);
    w.key("when").string(to_string(step.when));
    if (step.when != StepWhen::always) {
      w.key("condition").string(condition_text(plan, step));
    }
    // A line of one program is its argv; a line with shell syntax (&&, |, ;) is no argv, and says so.
    const bool shell_syntax = std::any_of(step.line.elements().begin(), step.line.elements().end(),
                                          [](const ShellLine::Element& e) { return std::holds_alternative<Code>(e); });
    w.key("argv");
    if (shell_syntax) {
      w.null();
      w.key("shell").string(to_shell(step.line));
    } else {
      w.begin_array();
      for (const auto& element : step.line.elements()) {
        // ShellLine::argv(), one word at a time: a one-part word's text is that part.
        const auto& word = std::get<Word>(element);
        w.string(word.parts().size() == 1 ? word.parts().front().text : word.text());
      }
      w.end_array();
    }
    w.key("command").string(to_shell(step.line));
    if (step.kind == StepKind::name_check) {
      w.key("expect").string("absent"); // the describe call must fail: a state means the name is taken
    }
    if (step.poll) {
      // The line is the describe call to repeat: a failed look is looked at again, a state in
      // stop_on runs the release step, and so does the deadline.
      w.key("loop").begin_object();
      w.key("until").string(step.poll->until);
      w.key("stop_on").begin_array();
      for (const std::string& state : step.poll->stop_on) {
        w.string(state);
      }
      w.end_array();
      w.key("every_seconds").integer(step.poll->every_seconds);
      w.key("deadline_seconds").integer(step.poll->deadline_seconds);
      w.key("on_error").string("look-again");
      w.key("on_stop").string("release");
      w.end_object();
    }
    w.end_object();
    if (step.kind == StepKind::fetch) {
      fetch_steps.push_back(i);
    }
  }
  w.end_array();
  w.key("concurrency").begin_array();
  if (!fetch_steps.empty()) {
    w.begin_object();
    w.key("group").string(concurrent_group(StepKind::fetch));
    w.key("steps").begin_array();
    for (const std::size_t index : fetch_steps) {
      w.integer(index);
    }
    w.end_array();
    w.key("max_parallel").integer(plan.options.parallel);
    w.key("note").string("each worker's fetch is independent; a failure never stops the others");
    w.end_object();
  }
  w.end_array();
  w.key("notes").begin_array();
  for (const std::string& note : plan_notes(plan)) {
    w.string(note);
  }
  w.end_array();
  if (plan.program == PlanProgram::discovery) {
    // What a discovery run is, and what each worker's receipt must report.
    w.key("receipt").string("discovery");
    w.key("expected").begin_object();
    w.key("process_count").integer(plan.target.processes());
    w.key("local_device_count").integer(plan.target.slice->local_device_count());
    w.key("device_count").integer(plan.target.devices());
    w.end_object();
  }
  w.end_object();
  return std::move(w).take();
}

std::string render_text(const Plan& plan) {
  std::string out;
  out += fmt::format("script: {} ({})\n", plan.script, plan.path.empty() ? "built in" : plan.path);
  out += fmt::format("class:  {}\n", class_name(plan));
  out += fmt::format("route:  {}\n", route_sentence(plan));
  if (plan.route != RouteKind::cpu) {
    out += fmt::format("run id: {}  ->  {}/{}/\n", plan.options.run_id, plan.local_run_dir, worker_folder_pattern());
    out += fmt::format("env:    JAX_PLATFORMS={} ({}){}\n", plan.jax_platforms,
                       plan.jax_platforms_reviewed ? "the script's reviewed value" : "tpulaunch's default on a TPU route",
                       plan.options.form == PlanForm::full
                           ? fmt::format(", TPU_RUN_DIR=~/{}/artifacts (where the program keeps its receipts)",
                                         plan.remote_run_dir)
                           : "");
    if (plan.results_run_url) {
      out += fmt::format("results: each worker uploads to {}/{}/, one download brings them all back\n",
                         *plan.results_run_url, worker_folder_pattern());
    }
  } else {
    out += fmt::format("output: {} (the CPU receipt)\n", plan.cpu_receipt);
  }
  out += "\ncommands:\n";
  // Pasted, each line runs whatever the one before did: a step that runs only on a condition is
  // shown commented, labelled with it, and the wait is a loop.
  ShellScript commands;
  for (const Step& step : plan.steps) {
    if (step.when != StepWhen::always) {
      commands.comment(fmt::format("{} ({}): {}", step.name(), condition_text(plan, step), step.summary));
      commands.comment("  " + to_shell(step.line));
      continue;
    }
    commands.comment(fmt::format("{}: {}", step.name(), step.summary));
    commands.line(step.poll ? text_wait_line(plan, step) : step.line);
  }
  out += indent(to_shell(commands), "  ");
  const auto notes = plan_notes(plan);
  if (!notes.empty()) {
    out += "\nnotes:\n";
    for (const auto& note : notes) {
      out += fmt::format("  - {}\n", note);
    }
  }
  return out;
}

std::string render_sh(const Plan& plan) {
  ShellScript sh;
  sh.code(k_shebang);
  if (plan.route == RouteKind::cpu) {
    // `set -o pipefail; python … | tee …` is two commands, and a note covers one: the CPU
    // script's few lines get theirs for the whole file, which a note before the first command does.
    QuotedText found;
    for (const Step& step : plan.steps) {
      found |= quoted_text(step.line);
    }
    add_notes(sh, found);
  }
  sh.comment(fmt::format("Generated by tpulaunch {}: {} ({}) on the {} route.", TPULAUNCH_VERSION, plan.script,
                         class_name(plan), to_string(plan.route)));
  sh.code(k_regenerate).code(k_strict).blank();
  sh.line(readonly_value(k_set_script, plan.script));
  if (plan.route == RouteKind::cpu) {
    sh.blank();
    for (const Step& step : plan.steps) {
      sh_emitter(step.kind)(sh, plan, std::span<const Step>(&step, 1));
    }
    return to_shell(sh);
  }
  emit_tpu_prelude(sh, plan);
  // Steps in order; consecutive steps of one concurrent group go to their emitter together.
  bool trap_set = false;
  for (std::size_t i = 0; i < plan.steps.size();) {
    std::size_t end = i + 1;
    if (!concurrent_group(plan.steps[i].kind).empty()) {
      while (end < plan.steps.size() && plan.steps[end].kind == plan.steps[i].kind) {
        ++end;
      }
    }
    sh.blank();
    // The TPU is the plan's to report as left running from the first call that uses it, or from
    // the moment its create (or queue) call succeeded: never for a name the plan did not create.
    const bool after_capacity =
        i > 0 && (plan.steps[i - 1].kind == StepKind::create || plan.steps[i - 1].kind == StepKind::queue);
    if (!trap_set && plan.options.teardown && (plan.steps[i].where == StepWhere::remote || after_capacity)) {
      sh.code(k_left_running_trap);
      trap_set = true;
    }
    sh_emitter(plan.steps[i].kind)(sh, plan, std::span<const Step>(plan.steps).subspan(i, end - i));
    i = end;
  }
  sh.blank().code(k_done);
  return to_shell(sh);
}

std::string render_refusal_text(const RefusalContext& context, const Refusal& refusal) {
  std::string out = fmt::format("tpulaunch: refused: {}: {}\n", refusal.rule, refusal.reason);
  for (const Evidence& e : refusal.evidence) {
    // A row found in a course file the script imports is at that file's line, not the script's.
    out += fmt::format("  {}:{}:{}: {} [{}]: {}\n", evidence_path(context.path, e), e.line, e.column,
                       to_string(e.category), e.rule, e.text);
  }
  return out;
}

nlohmann::ordered_json refusal_json(const RefusalContext& context, const Refusal& refusal) {
  nlohmann::ordered_json j;
  j["refused"] = true;
  j["script"] = context.script;
  j["path"] = context.path.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(context.path);
  j["class"] = context.script_class;
  j["slice"] = context.slice.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(context.slice);
  j["rule"] = refusal.rule;
  j["reason"] = refusal.reason;
  nlohmann::ordered_json evidence = nlohmann::ordered_json::array();
  for (const Evidence& e : refusal.evidence) {
    evidence.push_back({{"file", evidence_path(context.path, e)}, {"rule", e.rule}, {"category", to_string(e.category)},
                        {"line", e.line}, {"column", e.column}, {"text", e.text}});
  }
  j["evidence"] = std::move(evidence);
  return j;
}

} // namespace tpulaunch
