// The text and JSON forms of `tpulaunch runs list` and `runs show`.
#include <algorithm>
#include <ctime>

#include <fmt/chrono.h>
#include <fmt/format.h>

#include "tpulaunch/runs/runs.hpp"

namespace tpulaunch {
namespace {

std::string when(long long written) {
  const auto time = static_cast<std::time_t>(written);
  return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", fmt::gmtime(time));
}

std::string run_id_cell(const RunView& run) {
  std::string cell = run.plan.run_id;
  if (!run.plan.resumes.empty()) {
    cell += " (resumes " + run.plan.resumes + ")";
  }
  return cell;
}

nlohmann::ordered_json run_json(const RunView& run) {
  nlohmann::ordered_json json{{"folder", run.folder},
                              {"tpu", run.tpu},
                              {"script", run.plan.script},
                              {"run_id", run.plan.run_id},
                              {"slice", run.plan.slice},
                              {"slices", run.plan.slices},
                              {"plan_sha256", run.plan.plan_sha256},
                              {"plan_id", run.plan.plan_sha256.substr(0, 16)},
                              {"written", when(run.plan.written)},
                              {"state", to_string(run.state)},
                              {"state_text", run.state_text},
                              {"workers", run.expected_workers},
                              {"workers_fetched", run.fetched()}};
  json["zone"] = run.plan.zone;
  json["capacity"] = run.plan.capacity.empty() ? "existing" : run.plan.capacity;
  json["provisioning"] = run.plan.provisioning.empty() ? "standard" : run.plan.provisioning;
  json["checkpoint_dir"] = run.plan.checkpoint_dir;
  json["resumes"] = run.plan.resumes.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(run.plan.resumes);
  json["resumed_by"] = run.resumed_by;
  return json;
}

} // namespace

std::string render_runs_list_text(const std::vector<RunView>& runs) {
  if (runs.empty()) {
    return "no runs here (a plan's write step makes ./tpu-runs/<tpu>/<script>/<run-id>/)\n";
  }
  std::size_t id = 6;
  std::size_t script = 6;
  std::size_t slice = 5;
  std::size_t tpu = 3;
  for (const RunView& run : runs) {
    id = std::max(id, run_id_cell(run).size());
    script = std::max(script, run.plan.script.size());
    slice = std::max(slice, run.plan.slice.size() + (run.plan.slices > 1 ? 4 : 0));
    tpu = std::max(tpu, run.tpu.size());
  }
  std::string out = fmt::format("{:<{}}  {:<{}}  {:<{}}  {:<{}}  {:<16}  {:<20}  {}\n", "run id", id, "script", script,
                                "slice", slice, "tpu", tpu, "plan", "written (UTC)", "state");
  for (const RunView& run : runs) {
    const std::string slice_cell =
        run.plan.slices > 1 ? fmt::format("{}x{}", run.plan.slices, run.plan.slice) : run.plan.slice;
    out += fmt::format("{:<{}}  {:<{}}  {:<{}}  {:<{}}  {:<16}  {:<20}  {}\n", run_id_cell(run), id, run.plan.script,
                       script, slice_cell, slice, run.tpu, tpu, run.plan.plan_sha256.substr(0, 16),
                       when(run.plan.written), run.state_text);
  }
  return out;
}

nlohmann::ordered_json runs_list_json(const std::vector<RunView>& runs) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const RunView& run : runs) {
    list.push_back(run_json(run));
  }
  return {{"runs", list}};
}

std::string render_run_show_text(const RunView& run) {
  std::string out = fmt::format("run:        {}/{} in {}\n", run.plan.script, run.plan.run_id, run.folder);
  out += fmt::format("tpu:        {} ({}{}), zone {}, capacity {}{}\n", run.tpu.empty() ? "?" : run.tpu,
                     run.plan.slices > 1 ? fmt::format("{} x ", run.plan.slices) : "", run.plan.slice,
                     run.plan.zone.empty() ? "not recorded" : run.plan.zone,
                     run.plan.capacity.empty() ? "existing" : run.plan.capacity,
                     run.plan.provisioning.empty() ? "" : ", " + run.plan.provisioning);
  out += fmt::format("plan:       {} (id {}), written {}\n", run.plan.plan_sha256, run.plan.plan_sha256.substr(0, 16),
                     when(run.plan.written));
  if (!run.plan.checkpoint_dir.empty()) {
    out += fmt::format("checkpoint: {}\n", run.plan.checkpoint_dir);
  }
  if (!run.plan.resumes.empty()) {
    out += fmt::format("resumes:    {}\n", run.plan.resumes);
  }
  if (!run.resumed_by.empty()) {
    out += fmt::format("resumed by: {}\n", fmt::join(run.resumed_by, ", "));
  }
  out += fmt::format("state:      {}\n", run.state_text);
  if (run.pipeline) {
    out += fmt::format("pipeline:   ended with status {} ({})\n", printable(run.pipeline->value("exit")),
                       printable(run.pipeline->value("outcome")));
  }
  out += fmt::format("workers:    {} of {} records here\n", run.fetched(), run.expected_workers);
  for (const RunWorker& worker : run.workers) {
    out += worker.fetched ? fmt::format("  {:<10} {}: {}{}\n", worker.folder, worker.state, worker.summary,
                                        worker.host.empty() ? "" : " (" + worker.host + ")")
                          : fmt::format("  {:<10} no record here\n", worker.folder);
  }
  return out;
}

nlohmann::ordered_json run_show_json(const RunView& run) {
  nlohmann::ordered_json json = run_json(run);
  if (run.pipeline) {
    json["pipeline"] = {{"exit", run.pipeline->value("exit")},
                        {"outcome", run.pipeline->value("outcome")},
                        {"detail", run.pipeline->value("detail")}};
  }
  nlohmann::ordered_json workers = nlohmann::ordered_json::array();
  for (const RunWorker& worker : run.workers) {
    nlohmann::ordered_json item{{"folder", worker.folder}, {"fetched", worker.fetched}};
    if (worker.fetched) {
      item["state"] = worker.state;
      item["summary"] = worker.summary;
      item["exit"] = worker.exit ? nlohmann::ordered_json(*worker.exit) : nlohmann::ordered_json();
      item["host"] = worker.host;
    }
    workers.push_back(std::move(item));
  }
  json["worker_records"] = workers;
  return json;
}

} // namespace tpulaunch
