// The JSON form of a plan (json_writer.hpp's layout), of a slice and of a refusal.
#include "tpulaunch/render/render.hpp"

#include <algorithm>

#include "render/render_parts.hpp"
#include "tpulaunch/matrix/lesson.hpp"
#include "tpulaunch/json/json_writer.hpp"

namespace tpulaunch {
namespace {

using render_parts::condition_text;
using render_parts::plan_notes;

std::string_view where_name(StepWhere where) { return where == StepWhere::local ? "local" : "remote"; }

// The values of a TPU route: where it runs, the run, the capacity's lifecycle, the environment
// and what the stage step copies.
void write_tpu_values(JsonWriter& w, const Plan& plan) {
  w.key("form").string(plan.options.form == PlanForm::course ? "course" : "full");
  w.key("tpu").string(plan.target.tpu);
  w.key("zone").string(plan.target.zone);
  w.key("project").string_or_null(plan.target.project);
  w.key("run_id").string(plan.options.run_id);
  w.key("local_run_dir").string(plan.local_run_dir);
  w.key("results").string_or_null(plan.results_run_url.value_or(""));
  w.key("verify").string(to_string(plan.verify));
  w.key("proves").string_or_null(plan.proves ? to_string(*plan.proves) : "");
  const LifecycleOptions& life = plan.options.lifecycle;
  w.key("lifecycle").begin_object();
  w.key("capacity").string(to_string(plan.target.capacity));
  w.key("provisioning").string(to_string(plan.target.provisioning));
  w.key("runtime_version").string_or_null(plan.target.capacity == Capacity::existing ? "" : plan.target.runtime_version);
  w.key("queued_resource").string_or_null(plan.target.queued_resource);
  if (plan.target.multislice()) {
    // --slices: the nodes, slice s being node s; each gets the MEGASCALE_* values (docs/multislice.md).
    w.key("slices").integer(plan.target.nodes);
    w.key("nodes").begin_array();
    for (int node = 0; node < plan.target.nodes; ++node) {
      w.string(plan.target.node(node));
    }
    w.end_array();
  }
  w.key("valid_until").string_or_null(life.valid_until ? life.valid_until->text() : "");
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
}

// One step, the `index`th: what it is, when it runs, its command (as argv and as text), and the
// loop of a wait.
void write_step(JsonWriter& w, const Plan& plan, const Step& step, std::size_t index) {
  w.begin_object();
  w.key("index").integer(index);
  w.key("name").string(step.name());
  w.key("where").string(where_name(step.where));
  w.key("workers").string_or_null(step.workers ? step.workers->text() : "");
  if (step.slice) {
    w.key("slice").integer(*step.slice);
  }
  w.key("concurrent_group").string_or_null(concurrent_group(step));
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
    write_tpu_values(w, plan);
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
    write_step(w, plan, step, i);
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
