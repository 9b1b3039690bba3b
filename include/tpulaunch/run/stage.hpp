#pragma once
// A run's stage folder, which a plan's write step fills on the user's machine and its stage step
// copies, in one scp call, into the run's own folder on every worker:
//   <run folder>/stage/jax-tpu-lab/runs/<script>/<run-id>/staged-<plan id>/
//       tpulaunch-run-guard.sh    the run guard (tpulaunch guard prints it)
//       start                     the start token of this write (new each time)
//       code/<course path>...     the script and its course files, in the course's own layout
// Its jax-tpu-lab/ mirrors the worker's home, so the copy lands in that run's folder and nowhere
// else; the plan record (plan.rec) goes beside stage/.
#include <string>
#include <vector>

#include "tpulaunch/run/records.hpp"
#include "tpulaunch/util/error.hpp"

namespace tpulaunch {

// One file to stage: read from `local`, placed at code/`path`, which must hash to `sha256`.
struct StageFile {
  std::string local;
  std::string path;
  std::string sha256;
};

struct StageRequest {
  std::string run_dir;  // the local run folder (./tpu-runs/<tpu>/<id>/<run-id>)
  PlanRecord plan;      // whose run it is; its start token and time are made here
  std::string guard_sha256; // the run guard the plan pinned: this tpulaunch's must be it
  bool discovery = false;   // stage tpulaunch's discovery program as code/discover.py
  std::vector<StageFile> files;
};

// Writes the stage folder and the plan record, each file atomically; a stage folder written before
// for the same plan is written again (with a new start token). A run guard or discovery program
// other than the one pinned, or a file whose content is not its pinned digest (it changed since the
// plan), is a refusal (exit 3) naming it; an unreadable file a config Error; bad values a usage
// Error; a failed write a failure.
Result<PlanRecord> write_stage(const StageRequest& request);

// The folder below the local run folder that write_stage fills for `plan`, and that the stage step
// copies: "stage/jax-tpu-lab/runs/<script>/<run-id>/staged-<plan id>".
std::string staged_folder(const PlanRecord& plan);

} // namespace tpulaunch
