#include "tpulaunch/render.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace tpulaunch {
namespace {

std::string_view where_name(StepWhere where) { return where == StepWhere::local ? "local" : "remote"; }

std::string route_sentence(const Plan& plan) {
  if (plan.route == RouteKind::cpu) {
    return "cpu: runs on this machine's CPU; no TPU is used";
  }
  const Slice& s = *plan.slice;
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

// The sh helpers for bounded parallel fetches (design-notes §4): each fetch runs in the
// background; once PARALLEL are in flight we wait for one to end. With bash 4.3+ that is
// whichever ends first, so one slow worker (gcloud retries a failed scp up to 10 times, 5 s
// apart) holds one slot rather than the whole queue; older bash waits for the oldest. A
// download that has ended is found with `kill -0` and its status read with `wait PID`, which
// bash keeps for every ended child; `wait -n -p VAR ID...` would need bash 5.1 and (5.2) names the
// wrong job once any ID given has been reaped. Every worker's status is kept, and `set -e` never
// stops the other workers' retrieval.
constexpr std::string_view k_sh_fetch_helpers = R"(fetch_pids=()
fetch_workers=()
fetch_failed=() # worker -> exit status of its failed download
fetch_any_done=0
if ((BASH_VERSINFO[0] * 100 + BASH_VERSINFO[1] >= 403)); then
  fetch_any_done=1 # `wait -n`: wake when any download ends
fi
# fetch_wait_one: wait until one download in flight ends; note its worker if it failed.
fetch_wait_one() {
  local i pid status take_oldest=$((!fetch_any_done))
  while :; do
    for i in "${!fetch_pids[@]}"; do
      pid=${fetch_pids[i]}
      if ((take_oldest)) || ! kill -0 "$pid" 2>/dev/null; then
        status=0
        wait "$pid" || status=$?
        if ((status != 0)); then
          fetch_failed[fetch_workers[i]]=$status
        fi
        unset 'fetch_pids[i]' 'fetch_workers[i]'
        fetch_pids=("${fetch_pids[@]}")
        fetch_workers=("${fetch_workers[@]}")
        return 0
      fi
    done
    # Sleep until some download ends. 127: none is left running, so take the oldest.
    wait -n 2>/dev/null || (($? != 127)) || take_oldest=1
  done
}
# fetch_start WORKER COMMAND...: start one worker's fetch, keeping at most PARALLEL in flight.
fetch_start() {
  local worker=$1
  shift
  while ((${#fetch_pids[@]} >= PARALLEL)); do
    fetch_wait_one
  done
  "$@" &
  fetch_pids+=("$!")
  fetch_workers+=("$worker")
}
fetch_wait_all() {
  while ((${#fetch_pids[@]} > 0)); do
    fetch_wait_one
  done
}
)";

// Before a command whose --command= text holds `$` for the remote shell: tells shellcheck (and a
// reader) that this shell is not meant to expand it.
std::string remote_code_note(const Step& step) {
  const auto argv = step.line.argv();
  const bool remote_code = std::any_of(argv.begin(), argv.end(), [](const std::string& arg) {
    return arg.starts_with("--command=") && arg.find('$') != std::string::npos;
  });
  return remote_code ? "# shellcheck disable=SC2016 # the remote shell expands what is quoted here, not this one\n" : "";
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

nlohmann::ordered_json plan_json(const Plan& plan) {
  nlohmann::ordered_json j;
  j["script"] = plan.script;
  j["path"] = plan.path.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(plan.path);
  j["class"] = plan.script_class;
  j["sha256"] = plan.sha256.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(plan.sha256);
  j["route"] = to_string(plan.route);
  j["slice"] = plan.slice == nullptr ? nlohmann::ordered_json(nullptr) : slice_json(*plan.slice);
  j["multi_host"] = plan.multi_host();
  if (plan.route != RouteKind::cpu) {
    j["form"] = plan.options.form == PlanForm::course ? "course" : "full";
    j["tpu"] = plan.options.tpu;
    j["zone"] = plan.options.zone;
    j["project"] = plan.options.project.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(plan.options.project);
    j["run_id"] = plan.options.run_id;
    j["local_run_dir"] = plan.local_run_dir;
    j["verify"] = to_string(plan.verify);
  }
  nlohmann::ordered_json steps = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < plan.steps.size(); ++i) {
    const Step& step = plan.steps[i];
    nlohmann::ordered_json s;
    s["index"] = i;
    s["name"] = step.name;
    s["where"] = where_name(step.where);
    s["workers"] = step.workers.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(step.workers);
    s["concurrent_group"] = step.group.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(step.group);
    s["summary"] = step.summary;
    s["argv"] = step.line.argv();
    s["command"] = to_shell(step.line);
    steps.push_back(std::move(s));
  }
  j["steps"] = std::move(steps);
  nlohmann::ordered_json groups = nlohmann::ordered_json::array();
  std::vector<std::size_t> fetch_steps;
  for (std::size_t i = 0; i < plan.steps.size(); ++i) {
    if (plan.steps[i].group == "fetch") {
      fetch_steps.push_back(i);
    }
  }
  if (!fetch_steps.empty()) {
    groups.push_back({{"group", "fetch"}, {"steps", fetch_steps}, {"max_parallel", plan.options.parallel},
                      {"note", "each worker's fetch is independent; a failure never stops the others"}});
  }
  j["concurrency"] = std::move(groups);
  return j;
}

std::string render_text(const Plan& plan) {
  std::string out;
  out += fmt::format("script: {} ({})\n", plan.script, plan.path.empty() ? "built in" : plan.path);
  out += fmt::format("class:  {}\n", plan.script_class);
  out += fmt::format("route:  {}\n", route_sentence(plan));
  if (plan.route != RouteKind::cpu) {
    out += fmt::format("run id: {}  ->  {}/worker-<i>/\n", plan.options.run_id, plan.local_run_dir);
  }
  out += "\ncommands:\n";
  for (const Step& step : plan.steps) {
    out += fmt::format("  # {}: {}\n", step.name, step.summary);
    out += indent(to_shell(step.line), "  ");
  }
  return out;
}

std::string render_sh(const Plan& plan) {
  std::string out;
  out += "#!/usr/bin/env bash\n";
  out += fmt::format("# Generated by tpulaunch {}: {} ({}) on the {} route.\n", TPULAUNCH_VERSION, plan.script,
                     plan.script_class, to_string(plan.route));
  out += "# Regenerate it with tpulaunch plan rather than editing it: the commands below were checked\n";
  out += "# against the execution matrix, the catalog and the script's reviewed digest.\n";
  out += "set -euo pipefail\n\n";
  auto value = [&out](std::string_view name, const std::string& v) {
    out += fmt::format("readonly {}={}\n", name, shell_quote(v));
  };
  value("SCRIPT", plan.script);
  if (plan.route == RouteKind::cpu) {
    out += "\necho \"tpulaunch: run $SCRIPT on the CPU\" >&2\n";
    out += to_shell(plan.steps.front().line) + "\n";
    return out;
  }
  value("SLICE", plan.slice->name);
  value("TPU", plan.options.tpu);
  value("ZONE", plan.options.zone);
  value("RUN_ID", plan.options.run_id);
  value("RUN_DIR", plan.local_run_dir);
  out += fmt::format("readonly WORKERS={}\n", plan.workers());
  out += fmt::format("readonly PARALLEL={}\n\n", plan.options.parallel);
  out += "step() { echo \"tpulaunch: [$SCRIPT on $TPU ($SLICE, $ZONE), run $RUN_ID] $*\" >&2; }\n\n";

  const bool verifies = std::any_of(plan.steps.begin(), plan.steps.end(), [](const Step& s) { return s.name == "verify"; });
  if (verifies) {
    // Fail before any TPU time is spent, not after the run, when verify could not be called.
    out += fmt::format("if ! command -v {} >/dev/null; then\n", shell_quote(plan.options.tpulaunch));
    out += fmt::format("  echo {} >&2\n  exit 1\nfi\n\n",
                       shell_quote(fmt::format("tpulaunch: error: {} is not on PATH, and the verify step needs it",
                                               plan.options.tpulaunch)));
  }
  // Local folders first: gcloud needs each download's folder to exist.
  out += "mkdir -p";
  for (int worker = 0; worker < plan.workers(); ++worker) {
    out += " \\\n  " + shell_quote(fmt::format("{}/worker-{}/", plan.local_run_dir, worker));
  }
  out += "\n";

  bool fetch_started = false;
  bool fetch_done = false;
  auto finish_fetch = [&] {
    if (!fetch_started || fetch_done) {
      return;
    }
    fetch_done = true;
    const std::string left = plan.options.teardown ? "; the TPU is left running" : "";
    out += "fetch_wait_all\n";
    out += "if ((${#fetch_failed[@]} > 0)); then\n";
    out += fmt::format("  echo \"tpulaunch: error: could not fetch worker(s) ${{!fetch_failed[*]}} of $WORKERS{}\" >&2\n", left);
    out += "fi\n";
    out += "if ((run_status != 0)); then\n";
    out += fmt::format("  echo \"tpulaunch: error: the run failed with status $run_status; every worker's results that "
                       "could be fetched are in $RUN_DIR{}\" >&2\n", left);
    out += "  exit \"$run_status\"\n";
    out += "fi\n";
    out += "if ((${#fetch_failed[@]} > 0)); then\n  exit 1\nfi\n";
  };
  for (const Step& step : plan.steps) {
    if (step.name != "fetch") {
      finish_fetch();
    }
    if (step.name != "fetch" || !fetch_started) {
      out += "\n";
    }
    if (step.name == "preflight") {
      out += fmt::format("step {}\n", shell_quote(step.name + ": " + step.summary));
      out += fmt::format("if ! {} >/dev/null 2>&1; then\n", to_shell(step.line));
      out += "  echo 'tpulaunch: error: no ssh key is loaded in the agent, and gcloud needs one to reach several "
             "workers; run: ssh-add ~/.ssh/google_compute_engine' >&2\n";
      out += "  exit 1\nfi\n";
    } else if (step.name == "run") {
      out += fmt::format("step {}\n", shell_quote(step.name + ": " + step.summary));
      // A failed run must not stop retrieval: every worker's log is what explains the failure.
      out += "run_status=0\n";
      out += remote_code_note(step);
      out += to_shell(step.line) + " || run_status=$?\n";
    } else if (step.name == "fetch") {
      if (!fetch_started) {
        fetch_started = true;
        out += fmt::format("step {}\n", shell_quote(fmt::format(
                                            "fetch: one download per worker (gcloud refuses several), {} at a time",
                                            plan.options.parallel)));
        out += k_sh_fetch_helpers;
      }
      out += fmt::format("fetch_start {} {}\n", *step.worker, to_shell(step.line));
    } else {
      out += fmt::format("step {}\n", shell_quote(step.name + ": " + step.summary));
      out += remote_code_note(step);
      out += to_shell(step.line) + "\n";
    }
  }
  finish_fetch();
  out += "\nstep \"done: results in $RUN_DIR\"\n";
  return out;
}

std::string render_refusal_text(const RefusalContext& context, const Refusal& refusal) {
  std::string out = fmt::format("tpulaunch: refused: {}: {}\n", refusal.rule, refusal.reason);
  for (const Evidence& e : refusal.evidence) {
    out += fmt::format("  {}:{}:{}: {} [{}]: {}\n", context.path, e.line, e.column, to_string(e.category), e.rule, e.text);
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
    evidence.push_back({{"rule", e.rule}, {"category", to_string(e.category)}, {"line", e.line}, {"column", e.column},
                        {"text", e.text}});
  }
  j["evidence"] = std::move(evidence);
  return j;
}

} // namespace tpulaunch
