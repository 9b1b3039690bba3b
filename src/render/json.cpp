// The JSON form of a plan, of a slice and of a refusal: documents of nlohmann's own types, which
// json_text (json_text.hpp) prints with nlohmann's dump(2).
#include "tpulaunch/render/render.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "render/render_parts.hpp"
#include "tpulaunch/matrix/lesson.hpp"

namespace tpulaunch {
namespace {

using Json = nlohmann::ordered_json;
using render_parts::condition_text;
using render_parts::plan_notes;

std::string_view where_name(StepWhere where) { return where == StepWhere::local ? "local" : "remote"; }

// An empty object with room for `members`: ordered_json's object is a vector, and growing it
// moves every member again (a plan's JSON is some 20 objects of up to 30 members).
Json object_with_room(std::size_t members) {
  Json j = Json::object();
  j.get_ref<Json::object_t&>().reserve(members);
  return j;
}

// The text, or null when it is empty.
Json string_or_null(std::string_view text) {
  return text.empty() ? Json(nullptr) : Json(text);
}

// The values of a TPU route: where it runs, the run, the capacity's lifecycle, the environment
// and what the stage step copies.
void add_tpu_values(Json& j, const Plan& plan) {
  j["form"] = plan.options.form == PlanForm::course ? "course" : "full";
  j["tpu"] = plan.target.tpu;
  j["zone"] = plan.target.zone;
  j["project"] = string_or_null(plan.target.project);
  j["run_id"] = plan.options.run_id;
  j["local_run_dir"] = plan.local_run_dir;
  if (plan.options.form == PlanForm::full) {
    j["plan_sha256"] = plan.plan_sha256;
    j["remote_run_dir"] = "~/" + plan.remote_run_dir;
    j["mark"] = string_or_null(plan.target.mark);
  }
  j["results"] = string_or_null(plan.results_run_url.value_or(""));
  j["checkpoint_dir"] = string_or_null(plan.checkpoint_dir);
  j["resumes"] = string_or_null(plan.options.resumes);
  j["connection"] = gcloud::to_string(plan.options.connection);
  j["verify"] = to_string(plan.verify);
  j["proves"] = string_or_null(plan.proves ? to_string(*plan.proves) : "");
  const LifecycleOptions& life = plan.options.lifecycle;
  Json lifecycle = object_with_room(16);
  lifecycle["capacity"] = to_string(plan.target.capacity);
  lifecycle["provisioning"] = to_string(plan.target.provisioning);
  lifecycle["runtime_version"] =
      string_or_null(plan.target.capacity == Capacity::existing ? "" : plan.target.runtime_version);
  lifecycle["queued_resource"] = string_or_null(plan.target.queued_resource);
  if (plan.target.multislice()) {
    // --slices: the nodes, slice s being node s; each gets the MEGASCALE_* values (docs/multislice.md).
    lifecycle["slices"] = plan.target.nodes;
    Json nodes = Json::array();
    for (int node = 0; node < plan.target.nodes; ++node) {
      nodes.push_back(plan.target.node(node));
    }
    lifecycle["nodes"] = std::move(nodes);
  }
  lifecycle["valid_until"] = string_or_null(life.valid_until ? life.valid_until->text() : "");
  lifecycle["timeout_seconds"] = plan.timeout_seconds > 0 ? Json(plan.timeout_seconds) : Json(nullptr);
  lifecycle["grace_seconds"] = plan.grace_seconds;
  lifecycle["kill_stale"] = life.kill_stale;
  lifecycle["tpu_devices"] = to_string(plan.target.slice->devices);
  lifecycle["preemption_check"] =
      std::any_of(plan.steps.begin(), plan.steps.end(), [](const Step& step) { return step.check_preemption; });
  j["lifecycle"] = std::move(lifecycle);
  j["jax_platforms"] = {{"value", plan.jax_platforms},
                        {"source", plan.jax_platforms_reviewed ? "reviewed" : "default"}};
  // What the stage folder holds below code/ (the write step copies each file there from `local`,
  // the stage step copies the folder to ~/<remote_run_dir>/staged-<plan id>/), and the digest the
  // write step and the run guard check.
  Json staged = Json::array();
  for (const StagedFile& file : plan.staged) {
    staged.push_back({{"local", string_or_null(file.local)}, {"path", file.path}, {"sha256", file.sha256}});
  }
  j["staged"] = std::move(staged);
}

// One step, the `index`th: what it is, when it runs, its command (as argv and as text), and the
// loop of a wait.
Json step_json(const Plan& plan, const Step& step, std::size_t index) {
  Json j = object_with_room(16);
  j["index"] = index;
  j["name"] = step.name();
  j["where"] = where_name(step.where);
  j["workers"] = string_or_null(step.workers ? step.workers->text() : "");
  if (step.slice) {
    j["slice"] = *step.slice;
  }
  j["concurrent_group"] = string_or_null(concurrent_group(step));
  j["summary"] = step.summary;
  j["when"] = to_string(step.when);
  if (step.when != StepWhen::always) {
    j["condition"] = condition_text(plan, step);
  }
  // A line of one program is its argv; a line with shell syntax (&&, |, ;) is no argv, and says so.
  // So is the line of a fetch written once for a slice's workers: it names the worker as "$w".
  const bool shell_syntax =
      step.each_worker || std::any_of(step.line.elements().begin(), step.line.elements().end(),
                                      [](const ShellLine::Element& e) { return std::holds_alternative<Code>(e); });
  std::string command = to_shell(step.line);
  if (shell_syntax) {
    j["argv"] = nullptr;
    j["shell"] = command;
  } else {
    j["argv"] = step.line.argv();
  }
  j["command"] = std::move(command);
  if (step.mark_check) {
    // The step runs only when this describe call prints the plan's mark (the TPU is the one it made).
    j["mark_check"] = {{"command", to_shell(*step.mark_check)}, {"expect", plan.target.mark}};
  }
  if (step.make_folder) {
    // The download folder no earlier step made: made first, then the command runs.
    j["make_folder"] = to_shell(ShellLine{*step.make_folder});
  }
  if (step.each_worker) {
    // One step for the slice's workers: the command runs once for each w, from 0 to `to`, each
    // independent of the others (a failure never stops the rest), at most max_parallel at once.
    j["each_worker"] = {{"variable", "w"}, {"from", 0}, {"to", *step.each_worker - 1}};
  }
  if (step.kind == StepKind::name_check) {
    j["expect"] = "absent"; // the describe call must fail: a state means the name is taken
  }
  if (step.poll) {
    // The line is the describe call to repeat: a failed look is looked at again, a state in
    // stop_on runs the release step, and so does the deadline.
    j["loop"] = {{"until", step.poll->until},
                 {"stop_on", step.poll->stop_on},
                 {"every_seconds", step.poll->every_seconds},
                 {"deadline_seconds", step.poll->deadline_seconds},
                 {"on_error", "look-again"},
                 {"on_stop", "release"}};
  }
  return j;
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

Json plan_json(const Plan& plan) {
  Json j = object_with_room(32);
  j["script"] = plan.script;
  j["path"] = string_or_null(plan.path);
  j["class"] = class_name(plan);
  j["sha256"] = string_or_null(plan.sha256);
  j["route"] = to_string(plan.route);
  j["slice"] = plan.target.slice == nullptr ? Json(nullptr) : slice_json(*plan.target.slice);
  j["multi_host"] = plan.multi_host();
  if (plan.route != RouteKind::cpu) {
    add_tpu_values(j, plan);
  } else {
    j["receipt"] = plan.cpu_receipt;
  }
  j["directory"] = string_or_null(plan.options.directory);
  j["python"] = string_or_null(plan.options.python);
  Json env = Json::object();
  for (const EnvVar& var : plan.env) {
    env[var.name] = var.value;
  }
  j["env"] = std::move(env);
  j["args"] = plan.options.args;
  Json steps = Json::array();
  steps.get_ref<Json::array_t&>().reserve(plan.steps.size());
  Json fetch_steps = Json::array();
  Json run_steps = Json::array();
  Json stop_steps = Json::array();
  const Step* fetch = nullptr;
  const Step* run = nullptr;
  for (std::size_t i = 0; i < plan.steps.size(); ++i) {
    const Step& step = plan.steps[i];
    steps.push_back(step_json(plan, step, i));
    // The groups, and what a failure in them does, are the steps' own (StepGroup, OnFailure).
    if (step.group == StepGroup::fetch) {
      fetch_steps.push_back(i);
      fetch = fetch == nullptr ? &step : fetch;
    } else if (step.group == StepGroup::run) {
      run_steps.push_back(i);
      run = run == nullptr ? &step : run;
    } else if (step.when == StepWhen::other_slice_failed) {
      stop_steps.push_back(i);
    }
  }
  j["steps"] = std::move(steps);
  Json concurrency = Json::array();
  if (run != nullptr) {
    concurrency.push_back({{"group", to_string(run->group)},
                           {"steps", std::move(run_steps)},
                           {"start", start_of(run->group)},
                           {"on_failure", to_string(run->on_failure)},
                           {"stop_steps", std::move(stop_steps)},
                           {"note", fmt::format("{}; {}", describe(run->group), describe(run->on_failure))}});
  }
  if (fetch != nullptr) {
    concurrency.push_back({{"group", to_string(fetch->group)},
                           {"steps", std::move(fetch_steps)},
                           {"max_parallel", plan.options.parallel},
                           {"note", fmt::format("{}; {}", describe(fetch->group), describe(fetch->on_failure))}});
  }
  j["concurrency"] = std::move(concurrency);
  j["notes"] = plan_notes(plan);
  if (plan.program == PlanProgram::discovery) {
    // What a discovery run is, and what each worker's receipt must report.
    j["receipt"] = "discovery";
    j["expected"] = {{"process_count", plan.target.processes()},
                     {"local_device_count", plan.target.slice->local_device_count()},
                     {"device_count", plan.target.devices()}};
  }
  return j;
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
    evidence.push_back({{"file", evidence_path(context.path, e)}, {"rule", to_string(e.rule)}, {"category", to_string(e.category)},
                        {"line", e.line}, {"column", e.column}, {"text", e.text}});
  }
  j["evidence"] = std::move(evidence);
  return j;
}

} // namespace tpulaunch
