#pragma once
// The runs kept on this machine (`tpulaunch runs`): every local run folder below ./tpu-runs/ with a
// plan record (run/records.hpp), the records its workers' run guards wrote that the fetch brought
// back, and the record the sh pipeline writes when it ends (pipeline.rec: its exit status and what
// it saw: a preemption, a timeout, an interruption). Read as untrusted text; nothing here asks a
// TPU. The calls that do (status, attach, clean) are built by runs/calls.hpp.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "tpulaunch/catalog/catalog.hpp"
#include "tpulaunch/run/records.hpp"
#include "tpulaunch/util/error.hpp"

namespace tpulaunch {

// The file the sh pipeline's exit trap writes in the local run folder (src/remote/left_running_trap.bash).
inline constexpr std::string_view k_pipeline_record_file = "pipeline.rec";
inline constexpr std::string_view k_pipeline_record_kind = "tpulaunch-pipeline 1";

// What a run came to, as this machine knows it.
enum class RunState { succeeded, failed, preempted, interrupted, timed_out, running, never_fetched };
std::string_view to_string(RunState state); // "succeeded", ..., "timed-out", "never-fetched"

// One worker's fetched run record.
struct RunWorker {
  std::string folder;      // "worker-3", or "slice-1/worker-0" with several slices
  bool fetched = false;    // its run record came back
  std::string state;       // the record's state ("" when not fetched)
  std::string summary;     // its one-sentence outcome
  std::optional<int> exit; // its recorded exit status
  std::string host;
};

struct RunView {
  std::string folder; // the local run folder, as found below the root
  std::string tpu;    // the folder's first part below the root
  PlanRecord plan;
  int expected_workers = 0; // hosts x slices from the catalog; 0 when the slice is not in it
  std::vector<RunWorker> workers;
  std::optional<Record> pipeline; // pipeline.rec, when the sh pipeline wrote one
  RunState state = RunState::never_fetched;
  std::string state_text;              // "failed with status 3", "preempted: lab-pod was PREEMPTED", ...
  std::vector<std::string> resumed_by; // the runs (ids) whose plan records say they resume this one

  [[nodiscard]] int fetched() const;
};

// Every run folder below `root` (<root>/<tpu>/<script>/<run-id>/ with a plan.rec; a script id may
// have several parts), in the order they were written (then by folder). A folder whose plan record
// is malformed is skipped with a line in `warnings`. A missing root is an empty list.
std::vector<RunView> list_runs(const std::string& root, const Catalog& catalog, std::vector<std::string>& warnings);

// The run `name` names: a run folder (a path with a '/', holding plan.rec), or a run id that
// exactly one run below `root` has (several: a usage Error listing their folders; none: a config
// Error).
Result<RunView> find_run(const std::string& root, std::string_view name, const Catalog& catalog);

// `runs list`: one line a run (run id, script, slice, TPU, plan id, when written, state), the
// chains of resumed runs named; and the same as JSON.
std::string render_runs_list_text(const std::vector<RunView>& runs);
nlohmann::ordered_json runs_list_json(const std::vector<RunView>& runs);
// `runs show`: the run's values and one line a worker; and the same as JSON.
std::string render_run_show_text(const RunView& run);
nlohmann::ordered_json run_show_json(const RunView& run);

} // namespace tpulaunch
