// The text form of a plan (for a person, who may paste its commands) and of a refusal.
#include "tpulaunch/render/render.hpp"

#include <algorithm>
#include <variant>

#include <fmt/format.h>

#include "render/render_parts.hpp"
#include "tpulaunch/gcloud/gcloud.hpp"
#include "tpulaunch/matrix/lesson.hpp"
#include "tpulaunch/receipts/run_folder.hpp"

namespace tpulaunch {
namespace {

using render_parts::condition_text;
using render_parts::k_state_or_unread;
using render_parts::pasted_line;
using render_parts::plan_notes;

std::string route_sentence(const Plan& plan) {
  if (plan.route == RouteKind::cpu) {
    return "cpu: runs on this machine's CPU; no TPU is used";
  }
  const Slice& s = *plan.target.slice;
  const auto count = [](long long n, std::string_view noun, std::string_view plural = {}) {
    return counted(static_cast<std::size_t>(n), noun, plural);
  };
  if (plan.target.multislice()) {
    return fmt::format("multislice: {} of {} ({} x {} each), nodes {} ... {}; every worker of every slice runs the "
                       "script, {} with {} local and {} global JAX devices each",
                       count(plan.target.nodes, "slice"), s.name, count(s.hosts, "host"),
                       count(s.chips_per_host, "chip"), plan.target.node(0), plan.target.node(plan.target.nodes - 1),
                       count(plan.target.processes(), "JAX process", "JAX processes"), s.local_device_count(),
                       plan.target.devices());
  }
  if (plan.route == RouteKind::multi_host) {
    return fmt::format("multi-host: {} has {} x {} = {}; every worker runs the script (--worker=all), {} local and {} "
                       "global JAX devices each",
                       s.name, count(s.hosts, "host"), count(s.chips_per_host, "chip"), count(s.global_chips(), "chip"),
                       s.local_device_count(), s.device_count());
  }
  return fmt::format("single-host: {} is 1 host x {}; the script runs on worker 0 with {}", s.name,
                     count(s.chips_per_host, "chip"), count(s.local_device_count(), "JAX device"));
}

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

// The name check as a line a person can paste: quiet when the name is free, one line on stderr
// when it is taken. A paste goes on to the next line whatever this one says; what keeps a taken
// name safe is the mark every later line checks (pasted_line).
constexpr Code k_text_name_check_open{"if state=$("};
constexpr Code k_text_name_check_then{" 2>/dev/null); then echo "};
constexpr Code k_text_name_check_close{" >&2; fi"};

ShellLine text_name_check_line(const Plan& plan, const Step& step) {
  const bool queued = plan.target.queued();
  return ShellLine()
      .code(k_text_name_check_open)
      .line(step.line)
      .code(k_text_name_check_then)
      .word(Word(fmt::format("tpulaunch: error: a {} named {} exists already (state ", queued ? "queued resource" : "TPU",
                             plan.target.capacity_name()))
                .append(k_state_or_unread)
                .append(fmt::format("), and this plan creates it: the create line below fails, and every line after "
                                    "it checks the TPU's mark (metadata {}={}), so nothing here touches that one",
                                    gcloud::k_mark_key, plan.target.mark)))
      .code(k_text_name_check_close);
}

// What the verify step checks, and why that kind: what the script's review declares it proves.
std::string verify_sentence(const Plan& plan) {
  const std::string_view kind = to_string(plan.verify);
  if (plan.program == PlanProgram::discovery) {
    return "discovery receipts (not training)";
  }
  const std::string declared = plan.proves ? fmt::format("its review declares it proves {}", to_string(*plan.proves))
                                           : std::string("its review declares nothing it proves");
  if (plan.options.verify) {
    return fmt::format("{} (--verify; {})", kind, declared);
  }
  if (plan.proves) {
    return fmt::format("{}, as {}", kind, declared);
  }
  return fmt::format("logs and every worker's recorded status 0; {} (review --proves), so no training claim is "
                     "checked",
                     declared);
}

// The user's --env values, as the script gets them (each quoted as the commands quote it; a value
// with a control byte, a newline say, shown escaped so the header stays one line).
std::string user_env(const Plan& plan) {
  std::string out;
  for (const EnvVar& var : plan.env) {
    const std::string quoted = shell_quote(var.value);
    const bool control = std::any_of(quoted.begin(), quoted.end(),
                                     [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
    out += fmt::format("{}{}={}", out.empty() ? "" : " ", var.name, control ? printable(quoted) : quoted);
  }
  return out;
}

} // namespace

std::string render_text(const Plan& plan) {
  std::string out;
  out += fmt::format("script: {} ({})\n", plan.script, plan.path.empty() ? "built in" : plan.path);
  out += fmt::format("class:  {}\n", class_name(plan));
  out += fmt::format("route:  {}\n", route_sentence(plan));
  if (plan.route != RouteKind::cpu) {
    out += fmt::format("run id: {}  ->  {}/{}{}/\n", plan.options.run_id, plan.local_run_dir,
                       plan.target.multislice() ? std::string(k_slice_folder_prefix) + "<s>/" : "",
                       worker_folder_pattern());
    out += fmt::format("env:    JAX_PLATFORMS={} ({}){}\n", plan.jax_platforms,
                       plan.jax_platforms_reviewed ? "the script's reviewed value" : "tpulaunch's default on a TPU route",
                       plan.options.form == PlanForm::full
                           ? fmt::format(", TPU_RUN_DIR=~/{}/artifacts (where the program keeps its receipts)",
                                         plan.remote_run_dir)
                           : "");
    if (!plan.env.empty()) {
      out += fmt::format("        {} (--env)\n", user_env(plan));
    }
    if (plan.verify != VerifyKind::none || plan.options.verify) {
      out += fmt::format("verify: {}\n", verify_sentence(plan));
    }
    if (plan.results_run_url) {
      out += fmt::format("results: each worker uploads to {}/{}/, one download brings them all back\n",
                         *plan.results_run_url, worker_folder_pattern());
    }
  } else {
    out += fmt::format("output: {} (the CPU receipt)\n", plan.cpu_receipt);
    if (!plan.env.empty()) {
      out += fmt::format("env:    {} (--env)\n", user_env(plan));
    }
  }
  out += "\ncommands:\n";
  // Pasted, each line runs whatever the one before did: a step that runs only on a condition is
  // shown commented, labelled with it, and the wait is a loop.
  ShellScript commands;
  for (const Step& step : plan.steps) {
    if (step.when != StepWhen::always) {
      commands.comment(fmt::format("{} ({}): {}", step.name(), condition_text(plan, step), step.summary));
      commands.comment("  " + to_shell(pasted_line(plan, step)));
      continue;
    }
    commands.comment(fmt::format("{}: {}", step.name(), step.summary));
    if (step.poll) {
      commands.line(text_wait_line(plan, step));
    } else if (step.kind == StepKind::name_check) {
      commands.line(text_name_check_line(plan, step));
    } else {
      commands.line(pasted_line(plan, step));
    }
  }
  // Each command and comment is indented by two spaces where it starts, and nowhere else: a quoted
  // value that holds a newline goes on, on the next line, exactly as the sh form has it, so a
  // paste runs the very bytes sh runs (indenting every line put two spaces into the value).
  for (const ShellScript::Element& element : commands.elements()) {
    out += "  ";
    out += std::visit([](const auto& part) { return to_shell(part); }, element);
    out += '\n';
  }
  const auto notes = plan_notes(plan);
  if (!notes.empty()) {
    out += "\nnotes:\n";
    for (const auto& note : notes) {
      out += fmt::format("  - {}\n", note);
    }
  }
  return out;
}

std::string render_refusal_text(const RefusalContext& context, const Refusal& refusal) {
  std::string out = fmt::format("tpulaunch: refused: {}: {}\n", refusal.rule, refusal.reason);
  for (const Evidence& e : refusal.evidence) {
    // A row found in a course file the script imports is at that file's line, not the script's.
    out += fmt::format("  {}:{}:{}: {} [{}]: {}\n", evidence_path(context.path, e), e.line, e.column,
                       to_string(e.category), to_string(e.rule), e.text);
  }
  return out;
}

} // namespace tpulaunch
