// The GKE plan's forms: text for a person, an sh script that runs the steps as their conditions
// and groups say, JSON, and the manifest as YAML. Steps are printed from what the plan states
// (StepWhen, StepGroup, OnFailure, FailureExit); nothing here decides behaviour of its own.
#include <fmt/format.h>

#include "gke/steps.hpp"
#include "tpulaunch/embedded/fetch_bash.hpp"
#include "tpulaunch/embedded/gke_log_bash.hpp"
#include "tpulaunch/gke/plan.hpp"
#include "tpulaunch/util/exit_code.hpp"

namespace tpulaunch::gke {
namespace {

using Json = nlohmann::ordered_json;

// The pod log fetch: the TPU-VM route's pool of downloads (src/remote/fetch.bash, `wait -n`),
// and gke_log, which reads one pod's log (src/remote/gke_log.bash).
constexpr Code k_set_parallel{"PARALLEL="};
constexpr Code k_fetch_library = Code{embedded::fetch_bash}.without_final_newline();
constexpr Code k_log_library = Code{embedded::gke_log_bash}.without_final_newline();
constexpr Code k_fetch_wait_all{"fetch_wait_all"};

std::string class_text(const GkePlan& plan) {
  return plan.script_class ? std::string(to_string(*plan.script_class)) : std::string("review-required");
}

std::vector<std::string> header(const GkePlan& plan) {
  return {
      fmt::format("{} ({}), class {}, route {} on GKE", plan.script, plan.path, class_text(plan),
                  to_string(plan.route)),
      fmt::format("slice {} x {}: {} pod(s) of {} chip(s) per slice, {} devices in all", plan.topology.slice->name,
                  plan.topology.slices, plan.pods_per_slice(), plan.topology.chips_per_host(Backend::gke),
                  plan.topology.devices()),
      fmt::format("cluster {} ({}), namespace {}, image {}", plan.placement.cluster, plan.placement.location,
                  plan.placement.name_space, plan.placement.image),
      fmt::format("JobSet {}, ConfigMap {}, plan {}", plan.jobset, plan.config_map, plan.plan_sha256),
      fmt::format("run folder {}, results {}", plan.local_run_dir, plan.results_run_url),
  };
}

// The text form shows what the write and verify steps do, not their (long) embedded text.
std::string text_command(const GkePlan& plan, const Step& step) {
  if (step.kind == StepKind::write) {
    return fmt::format("# writes {} (a v1 List of the ConfigMap and the JobSet): --manifest FILE writes the same "
                       "document, --format yaml shows it",
                       manifest_file(plan));
  }
  if (step.kind == StepKind::verify) {
    return fmt::format("# tpulaunch's GKE verify (src/remote/gke_verify.bash, whole in the sh form) over {}",
                       plan.local_run_dir);
  }
  return to_shell(step.line);
}

// A step that stops the script when it fails: `|| gke_fail MESSAGE STATUS`, as the step states
// them (Step::failure_exit).
ShellLine or_fail(const Step& step) {
  const FailureExit& exit = step.failure_exit.value();
  ShellLine line = step.line;
  line.code(Code(" || gke_fail ")).word(Word(exit.message)).word(Word(std::to_string(exit.status)));
  return line;
}

} // namespace

std::string render_gke_text(const GkePlan& plan) {
  std::string out;
  for (const std::string& line : header(plan)) {
    out += line + "\n";
  }
  out += "\n";
  int number = 0;
  std::string_view open_group;
  for (const Step& step : plan.steps) {
    ++number;
    const std::string_view group = concurrent_group(step);
    if (!group.empty() && group != open_group) {
      out += fmt::format("# the {} steps below may run together\n", group);
    }
    open_group = group;
    out += fmt::format("# {}. {}: {}", number, to_string(step.kind), step.summary);
    out += step.when == StepWhen::always ? "\n" : fmt::format(" (only when {})\n", to_string(step.when));
    const std::string command = text_command(plan, step);
    out += step.when == StepWhen::always || command.starts_with('#') ? command + "\n" : "# " + command + "\n";
  }
  return out;
}

// Long (about 45 lines) because it is the script's whole skeleton, step by step, in order.
std::string render_gke_sh(const GkePlan& plan) {
  ShellScript script;
  script.code(Code("#!/bin/bash"));
  // The manifests are literal JSON in single quotes ($ in them is text), and `A && B || gke_fail`
  // stops the script when either fails, as meant.
  script.comment("shellcheck disable=SC2016,SC2015");
  script.comment("tpulaunch plan, GKE backend (docs/gke.md). Review it, then run it with bash.");
  for (const std::string& line : header(plan)) {
    script.comment(line);
  }
  script.code(Code("set -uo pipefail"));
  script.code(Code("gke_fail() { echo \"tpulaunch: error: $1\" >&2; exit \"$2\"; }"));
  if (!plan.options.directory.empty()) {
    script.line(ShellLine{"cd", Word(plan.options.directory)}.code(Code(" || exit 1")));
  }
  int number = 0;
  bool fetching = false;
  for (const Step& step : plan.steps) {
    ++number;
    script.comment(
        fmt::format("{}. {}: {}{}", number, to_string(step.kind), step.summary,
                    step.when == StepWhen::always ? "" : fmt::format(" (only when {})", to_string(step.when))));
    if (step.group == StepGroup::fetch) {
      // Every pod's log, --parallel at once, through the TPU-VM route's download pool
      // (src/remote/fetch.bash); a log that cannot be read is named after the last one ends,
      // and verify counts it (it finds no log).
      if (!fetching) {
        script.line(ShellLine().code(k_set_parallel).word(std::to_string(plan.options.parallel)));
        script.code(k_fetch_library).code(k_log_library);
        fetching = true;
      }
      const int process = step.slice.value_or(0) * plan.pods_per_slice() + (step.workers ? step.workers->index() : 0);
      script.line(ShellLine{"fetch_start", Word(std::to_string(process))}.line(step.line));
      continue;
    }
    if (fetching) {
      script.code(k_fetch_wait_all);
      script.line(ShellLine{"gke_log_report", Word(std::to_string(plan.pods_per_slice()))});
      fetching = false;
    }
    // verify_succeeded: the steps before it stopped the script unless verify succeeded.
    script.line(or_fail(step));
  }
  script.line(ShellLine{
      "echo", Word(fmt::format("tpulaunch: the run of {} on {} is verified{}", plan.script, plan.placement.cluster,
                               plan.options.teardown ? " and its JobSet deleted" : ""))});
  return to_shell(script);
}

Json gke_plan_json(const GkePlan& plan) {
  Json j = Json::object();
  j["backend"] = "gke";
  j["script"] = plan.script;
  j["path"] = plan.path;
  j["class"] = class_text(plan);
  j["sha256"] = plan.sha256;
  j["route"] = to_string(plan.route);
  j["slice"] = plan.topology.slice->name;
  j["slices"] = plan.topology.slices;
  j["pods_per_slice"] = plan.pods_per_slice();
  j["chips_per_pod"] = plan.topology.chips_per_host(Backend::gke);
  j["devices"] = plan.topology.devices();
  j["cluster"] = plan.placement.cluster;
  j["location"] = plan.placement.location;
  j["project"] = plan.placement.project.empty() ? Json(nullptr) : Json(plan.placement.project);
  j["namespace"] = plan.placement.name_space;
  j["image"] = plan.placement.image;
  j["jobset"] = plan.jobset;
  j["config_map"] = plan.config_map;
  j["run_id"] = plan.options.run_id;
  j["plan_sha256"] = plan.plan_sha256;
  j["local_run_dir"] = plan.local_run_dir;
  j["results"] = plan.results_run_url;
  j["wait_seconds"] = plan.wait_seconds;
  j["jax_platforms"] = plan.jax_platforms;
  Json staged = Json::array();
  for (const StagedFile& file : plan.staged) {
    staged.push_back({{"local", file.local}, {"path", file.path}, {"sha256", file.sha256}});
  }
  j["staged"] = std::move(staged);
  Json steps = Json::array();
  for (const Step& step : plan.steps) {
    Json s = Json::object();
    s["name"] = to_string(step.kind);
    s["summary"] = step.summary;
    s["when"] = to_string(step.when);
    const std::string_view group = concurrent_group(step);
    s["group"] = group.empty() ? Json(nullptr) : Json(group);
    s["slice"] = step.slice ? Json(*step.slice) : Json(nullptr);
    s["worker"] = step.workers ? Json(step.workers->index()) : Json(nullptr);
    s["command"] = to_shell(step.line);
    steps.push_back(std::move(s));
  }
  j["steps"] = std::move(steps);
  return j;
}

namespace {
// YAML's block style for a JSON value; every string and key in JSON's double-quoted form, which
// YAML reads the same (its escapes are a superset of JSON's).
void yaml(const Json& value, int indent, std::string& out) {
  const std::string pad(static_cast<std::size_t>(indent), ' ');
  if (value.is_object()) {
    for (const auto& [key, item] : value.items()) {
      out += pad + Json(key).dump() + ":";
      if ((item.is_object() || item.is_array()) && !item.empty()) {
        out += "\n";
        yaml(item, indent + 2, out);
      } else {
        out += " " + (item.is_object() ? std::string("{}") : item.is_array() ? std::string("[]") : item.dump()) + "\n";
      }
    }
    return;
  }
  for (const Json& item : value) {
    if ((item.is_object() || item.is_array()) && !item.empty()) {
      std::string inner;
      yaml(item, indent + 2, inner);
      out += pad + "- " + inner.substr(static_cast<std::size_t>(indent) + 2);
    } else {
      out += pad + "- " +
             (item.is_object()  ? std::string("{}")
              : item.is_array() ? std::string("[]")
                                : item.dump()) +
             "\n";
    }
  }
}
} // namespace

std::string manifest_yaml(const Json& manifest) {
  std::string out;
  if (manifest.contains("items")) {
    for (const Json& item : manifest["items"]) {
      out += "---\n";
      yaml(item, 0, out);
    }
    return out;
  }
  yaml(manifest, 0, out);
  return out;
}

} // namespace tpulaunch::gke
