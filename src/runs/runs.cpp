#include "tpulaunch/runs/runs.hpp"

#include <algorithm>
#include <charconv>
#include <tuple>
#include <filesystem>

#include <fmt/format.h>

#include "tpulaunch/receipts/run_folder.hpp"
#include "tpulaunch/util/text_file.hpp"

namespace tpulaunch {
namespace {

namespace fs = std::filesystem;

// Records are a few hundred bytes; anything larger is not one.
constexpr std::size_t k_max_record_bytes = 64U * 1024U;

std::optional<Record> read_record_file(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    return std::nullopt;
  }
  auto text = read_text_file(path.string(), "record", k_max_record_bytes);
  if (!text) {
    return std::nullopt;
  }
  return parse_record(*text);
}

std::optional<int> number(const std::string& text) {
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) {
    return std::nullopt;
  }
  return value;
}

// Worker `process`'s record: <folder>/<run-id>/run-status.rec, where the fetch of the worker's run
// folder lands it (or <folder>/run-status.rec).
RunWorker read_worker(const fs::path& run, const PlanRecord& plan, int process, int hosts) {
  RunWorker worker;
  worker.folder = process_folder(process, hosts, plan.slices);
  std::optional<Record> record = read_record_file(run / worker.folder / plan.run_id / k_run_record);
  if (!record) {
    record = read_record_file(run / worker.folder / k_run_record);
  }
  if (record && !foreign_run_record(*record, plan)) {
    worker.fetched = true;
    worker.state = printable(record->value("state"));
    worker.summary = printable(record->value("summary"));
    worker.exit = number(record->value("exit"));
    worker.host = printable(record->value("host"));
  }
  return worker;
}

// The state the workers' records tell, when each came back: the first that is not a success, in
// worker order, as gcloud passes on the first non-zero status.
void state_from_workers(RunView& run) {
  for (const RunWorker& worker : run.workers) {
    if (worker.state == "succeeded") {
      continue;
    }
    const std::string status = worker.exit ? std::to_string(*worker.exit) : "?";
    if (worker.state == "timed-out") {
      run.state = RunState::timed_out;
      run.state_text = fmt::format("timed out ({})", worker.folder);
    } else if (worker.state == "interrupted") {
      run.state = RunState::interrupted;
      run.state_text = fmt::format("interrupted ({}: status {})", worker.folder, status);
    } else if (!worker.exit) {
      run.state = RunState::running;
      run.state_text = fmt::format("running when fetched ({}: {})", worker.folder, worker.state);
    } else {
      run.state = RunState::failed;
      run.state_text = fmt::format("failed with status {} ({}: {})", status, worker.folder, worker.summary);
    }
    return;
  }
  run.state = RunState::succeeded;
  run.state_text = "succeeded";
}

// What the run came to: a preemption the pipeline saw first (the workers' records, if any came
// back, tell only how the program was cut off); else the workers' records when every one came
// back; else what the pipeline recorded; else nothing is known here.
void decide_state(RunView& run) {
  const std::string outcome = run.pipeline ? run.pipeline->value("outcome") : "";
  const std::string exit = run.pipeline ? printable(run.pipeline->value("exit")) : "";
  if (outcome == "preempted") {
    run.state = RunState::preempted;
    run.state_text = "preempted: " + printable(run.pipeline->value("detail"));
    return;
  }
  if (run.expected_workers > 0 && run.fetched() == run.expected_workers) {
    state_from_workers(run);
    return;
  }
  const std::string partial =
      run.fetched() > 0 ? fmt::format(" ({} of {} workers' records here)", run.fetched(), run.expected_workers) : "";
  if (outcome == "succeeded") {
    run.state = RunState::succeeded;
    run.state_text = "succeeded" + partial;
  } else if (outcome == "timed-out") {
    run.state = RunState::timed_out;
    run.state_text = "timed out" + partial;
  } else if (outcome == "interrupted") {
    run.state = RunState::interrupted;
    run.state_text = fmt::format("interrupted (the pipeline got status {}; the program may run on)", exit);
  } else if (run.pipeline) {
    run.state = RunState::failed;
    run.state_text = fmt::format("failed with status {}{}", exit, partial);
  } else if (run.fetched() > 0) {
    state_from_workers(run);
    run.state_text += partial;
  } else {
    run.state = RunState::never_fetched;
    run.state_text = "never fetched (no worker's record here, and no pipeline record)";
  }
}

// The run folder `dir` (holding plan.rec) read; an Error for a malformed plan record.
Result<RunView> read_run(const fs::path& dir, const fs::path& root, const Catalog& catalog) {
  const fs::path plan_file = dir / k_plan_record_file;
  TPULAUNCH_TRY(const std::string text, read_text_file(plan_file.string(), "plan record", k_max_record_bytes));
  RunView run;
  TPULAUNCH_TRY(run.plan, parse_plan_record(text, plan_file.string()));
  run.folder = dir.string();
  // An older plan record has no tpu: the folder's first part below the root names it.
  const fs::path relative = dir.lexically_relative(root);
  run.tpu = !run.plan.tpu.empty()                           ? run.plan.tpu
            : relative.empty() || *relative.begin() == ".." ? ""
                                                            : relative.begin()->string();
  const Slice* slice = catalog.find(run.plan.slice);
  const int hosts = slice != nullptr ? slice->hosts : 0;
  run.expected_workers = hosts * run.plan.slices;
  for (int process = 0; process < run.expected_workers; ++process) {
    run.workers.push_back(read_worker(dir, run.plan, process, hosts));
  }
  run.pipeline = read_record_file(dir / k_pipeline_record_file);
  if (run.pipeline && run.pipeline->value("record") != k_pipeline_record_kind) {
    run.pipeline.reset();
  }
  decide_state(run);
  return run;
}

// Every folder below `root` that holds a plan record; none below a run folder is looked into.
std::vector<fs::path> run_folders(const fs::path& root) {
  std::vector<fs::path> found;
  std::error_code ec;
  fs::recursive_directory_iterator it(root, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_directory(ec) || it->is_symlink(ec)) {
      it.disable_recursion_pending();
      continue;
    }
    if (fs::exists(it->path() / k_plan_record_file, ec)) {
      found.push_back(it->path());
      it.disable_recursion_pending();
    }
  }
  return found;
}

} // namespace

std::string_view to_string(RunState state) {
  switch (state) {
  case RunState::succeeded:
    return "succeeded";
  case RunState::failed:
    return "failed";
  case RunState::preempted:
    return "preempted";
  case RunState::interrupted:
    return "interrupted";
  case RunState::timed_out:
    return "timed-out";
  case RunState::running:
    return "running";
  case RunState::never_fetched:
    return "never-fetched";
  }
  return "never-fetched";
}

int RunView::fetched() const {
  return static_cast<int>(std::count_if(workers.begin(), workers.end(), [](const RunWorker& w) { return w.fetched; }));
}

std::vector<RunView> list_runs(const std::string& root, const Catalog& catalog, std::vector<std::string>& warnings) {
  std::vector<RunView> runs;
  for (const fs::path& dir : run_folders(root)) {
    auto run = read_run(dir, root, catalog);
    if (run) {
      runs.push_back(std::move(run).value());
    } else {
      warnings.push_back(run.error().message);
    }
  }
  std::sort(runs.begin(), runs.end(), [](const RunView& a, const RunView& b) {
    return std::tie(a.plan.written, a.folder) < std::tie(b.plan.written, b.folder);
  });
  for (RunView& run : runs) {
    for (const RunView& other : runs) {
      if (other.plan.resumes == run.plan.run_id && other.plan.script == run.plan.script && other.tpu == run.tpu) {
        run.resumed_by.push_back(other.plan.run_id);
      }
    }
  }
  return runs;
}

Result<RunView> find_run(const std::string& root, std::string_view name, const Catalog& catalog) {
  if (name.find('/') != std::string_view::npos) {
    const fs::path dir(name);
    std::error_code ec;
    if (!fs::exists(dir / k_plan_record_file, ec)) {
      return config_error(fmt::format("{}: not a run folder (no {} in it)", printable(name), k_plan_record_file));
    }
    return read_run(dir, root, catalog);
  }
  std::vector<fs::path> matches;
  for (const fs::path& dir : run_folders(root)) {
    if (dir.filename() == name) {
      matches.push_back(dir);
    }
  }
  if (matches.empty()) {
    return config_error(
        fmt::format("no run '{}' below {} (tpulaunch runs list shows the runs kept here)", printable(name), root));
  }
  if (matches.size() > 1) {
    std::sort(matches.begin(), matches.end());
    return usage_error(fmt::format("run id '{}' names {} runs ({} and {}): give its folder instead", printable(name),
                                   matches.size(), matches[0].string(), matches[1].string()));
  }
  TPULAUNCH_TRY(RunView run, read_run(matches.front(), root, catalog));
  std::vector<std::string> warnings;
  for (const RunView& other : list_runs(root, catalog, warnings)) {
    if (other.plan.resumes == run.plan.run_id && other.plan.script == run.plan.script && other.tpu == run.tpu) {
      run.resumed_by.push_back(other.plan.run_id);
    }
  }
  return run;
}

} // namespace tpulaunch
