#include "tpulaunch/runs/calls.hpp"

#include <fmt/format.h>

#include "tpulaunch/remote/remote_program.hpp"

namespace tpulaunch {
namespace {

// if the user answers y on a terminal: rm -rf -- FOLDER.
constexpr Code k_ask_open{"if [[ -t 0 ]] && read -r -p 'tpulaunch: remove the local run folder too? [y/N] ' answer && "
                          "[[ $answer == [yY]* ]]; then\n  "};
constexpr Code k_fi{"\nfi"};
// Named constants, never Code{...} inside a call: clang 14 crashes generating a consteval
// constructor's temporary in an argument (the fuzz build, scripts/fuzz.sh, uses clang).
constexpr Code k_shebang{"#!/usr/bin/env bash"};
constexpr Code k_strict{"set -euo pipefail"};
constexpr Code k_or{" || "};

std::string_view summary_of(RunsCall call) {
  switch (call) {
  case RunsCall::status:
    return "read every worker's run record (one line a worker: its state and outcome)";
  case RunsCall::attach:
    return "follow worker 0's log (its last lines, then as it is written) and wait on every worker for the run's "
           "end; the status is the run's";
  case RunsCall::clean:
    return "remove the run's folder on every worker (each worker's run guard refuses, with 87, while the run runs "
           "there) and name files an older tpulaunch left in ~";
  }
  return "";
}

// bash ~/jax-tpu-lab/runs/S/R/staged-ID/tpulaunch-run-guard.sh --guard-sha256 HEX --plan P --script S --run-id R --MODE
// For clean, `test ! -e GUARD || ` first: a worker whose folder an earlier clean removed has
// nothing left to do.
ShellLine guard_call(const PlanRecord& plan, RunsCall call) {
  const RemoteProgram& guard = run_guard_program();
  const Word path = home_path(fmt::format("jax-tpu-lab/runs/{}/{}/staged-{}/{}", plan.script, plan.run_id,
                                          plan.plan_sha256.substr(0, 16), k_run_guard_file));
  ShellLine command;
  if (call == RunsCall::clean) {
    command.word("test").word("!").word("-e").word(path).code(k_or);
  }
  command.word("bash").word(path);
  command.word("--guard-sha256").word(guard.sha256).word("--plan").word(plan.plan_sha256);
  command.word("--script").word(plan.script).word("--run-id").word(plan.run_id);
  if (!plan.capacity.empty()) {
    // A TPU the plan created carries its mark (the plan id): the guard touches nothing on a VM
    // without it (88), as every step of the plan itself does.
    command.word("--mark").word(plan.plan_sha256.substr(0, 16));
  }
  command.word(fmt::format("--{}", to_string(call)));
  return command;
}

ShellLine local_removal(const RunsPlan& plan) {
  return ShellLine{"rm", "-rf", "--", Word(plan.folder)};
}

} // namespace

std::string_view to_string(RunsCall call) {
  switch (call) {
  case RunsCall::status:
    return "status";
  case RunsCall::attach:
    return "attach";
  case RunsCall::clean:
    return "clean";
  }
  return "status";
}

Result<RunsPlan> runs_plan(const RunView& run, RunsCall call, const RunsCallOptions& options) {
  const gcloud::Location at{options.zone.empty() ? run.plan.zone : options.zone,
                            options.project.empty() ? run.plan.project : options.project};
  if (at.zone.empty()) {
    return usage_error(
        fmt::format("run {}/{}: its plan record names no zone (an older tpulaunch wrote it): give --zone",
                    run.plan.script, run.plan.run_id));
  }
  if (run.tpu.empty()) {
    return usage_error(fmt::format("run {}/{}: its plan record names no TPU: give the folder below ./tpu-runs/<tpu>/",
                                   run.plan.script, run.plan.run_id));
  }
  RunsPlan plan;
  plan.call = call;
  plan.run = run.plan.script + "/" + run.plan.run_id;
  plan.folder = run.folder;
  plan.summary = std::string(summary_of(call));
  const gcloud::Connection connection =
      options.connection.value_or(gcloud::connection_from(run.plan.connection).value_or(gcloud::Connection::external));
  for (int node = 0; node < run.plan.slices; ++node) {
    const std::string name = run.plan.slices > 1 ? fmt::format("{}-{}", run.tpu, node) : run.tpu;
    plan.remote.push_back(gcloud::tpu_vm_ssh({name, at, "all", guard_call(run.plan, call), connection}));
  }
  plan.remove_local = call == RunsCall::clean && options.remove_local;
  plan.notes.emplace_back(fmt::format(
      "the call runs the run guard the run's write step staged on every worker (plan {}); one staged by another "
      "tpulaunch version refuses with 97 (its digest is not this tpulaunch's guard)",
      run.plan.plan_sha256.substr(0, 16)));
  if (!run.plan.capacity.empty()) {
    plan.notes.emplace_back(fmt::format("the run's plan created its TPU: the guard first checks that the VM carries "
                                        "that plan's mark (metadata tpulaunch_run={}) and touches nothing on a VM "
                                        "without it (88)",
                                        run.plan.plan_sha256.substr(0, 16)));
  }
  if (call == RunsCall::clean) {
    plan.notes.emplace_back(plan.remove_local
                                ? fmt::format("the local run folder {} is removed too (--yes)", run.folder)
                                : fmt::format("the local run folder {} goes only when you answer y on a "
                                              "terminal (--yes: without asking)",
                                              run.folder));
  }
  return plan;
}

std::string render_runs_text(const RunsPlan& plan) {
  std::string out = fmt::format("run:    {} ({})\ndoes:   {}\n\ncommands:\n", plan.run, plan.folder, plan.summary);
  for (const ShellLine& line : plan.remote) {
    out += fmt::format("  # {}: on every worker\n  {}\n", to_string(plan.call), to_shell(line));
  }
  if (plan.call == RunsCall::clean) {
    if (plan.remove_local) {
      out += fmt::format("  # clean: the local run folder\n  {}\n", to_shell(local_removal(plan)));
    } else {
      out += fmt::format("  # clean (only if you want the local run folder gone too):\n  # {}\n",
                         to_shell(local_removal(plan)));
    }
  }
  out += "\nnotes:\n";
  for (const std::string& note : plan.notes) {
    out += fmt::format("  - {}\n", note);
  }
  return out;
}

std::string render_runs_sh(const RunsPlan& plan) {
  ShellScript sh;
  sh.code(k_shebang);
  sh.comment(fmt::format("Generated by tpulaunch {}: runs {} {}.", TPULAUNCH_VERSION, to_string(plan.call), plan.run));
  sh.comment(plan.summary);
  for (const std::string& note : plan.notes) {
    sh.comment("- " + note);
  }
  sh.code(k_strict);
  for (const ShellLine& line : plan.remote) {
    sh.line(line);
  }
  if (plan.call == RunsCall::clean) {
    sh.line(plan.remove_local ? local_removal(plan)
                              : ShellLine().code(k_ask_open).line(local_removal(plan)).code(k_fi));
  }
  return to_shell(sh);
}

nlohmann::ordered_json runs_plan_json(const RunsPlan& plan) {
  nlohmann::ordered_json steps = nlohmann::ordered_json::array();
  for (const ShellLine& line : plan.remote) {
    steps.push_back({{"name", to_string(plan.call)},
                     {"where", "remote"},
                     {"workers", "all"},
                     {"argv", line.argv()},
                     {"command", to_shell(line)}});
  }
  if (plan.call == RunsCall::clean) {
    const ShellLine line = local_removal(plan);
    steps.push_back({{"name", "remove-local"},
                     {"where", "local"},
                     {"when", plan.remove_local ? "always" : "confirmed"},
                     {"argv", line.argv()},
                     {"command", to_shell(line)}});
  }
  return {{"call", to_string(plan.call)}, {"run", plan.run}, {"folder", plan.folder},
          {"summary", plan.summary},      {"steps", steps},  {"notes", plan.notes}};
}

} // namespace tpulaunch
