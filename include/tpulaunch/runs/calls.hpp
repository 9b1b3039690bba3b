#pragma once
// The calls `tpulaunch runs status|attach|clean RUN` make, as a plan a person reads before it runs:
// one `gcloud compute tpus tpu-vm ssh --worker=all` call a node, into the run guard the run's write
// step staged in its folder on every worker (src/remote/run_guard/, its status, attach and clean
// modes), and for clean the local folder's removal. Argv data (ShellLine) until to_shell renders it.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tpulaunch/gcloud/gcloud.hpp"
#include "tpulaunch/runs/runs.hpp"
#include "tpulaunch/shell/shell.hpp"

namespace tpulaunch {

enum class RunsCall { status, attach, clean };
std::string_view to_string(RunsCall call);

struct RunsCallOptions {
  std::string zone;    // "": the plan record's
  std::string project; // "": the plan record's
  // --internal-ip / --tunnel-through-iap; nullopt: the plan record's (the run's own plan's).
  std::optional<gcloud::Connection> connection;
  bool remove_local = false; // clean --yes: the local folder goes too, without asking
};

struct RunsPlan {
  RunsCall call = RunsCall::status;
  std::string run;               // script/run-id
  std::string folder;            // the local run folder
  std::string summary;           // what the calls do, for a person
  std::vector<ShellLine> remote; // one ssh call a node
  bool remove_local = false;
  std::vector<std::string> notes;
};

// The plan; a usage Error when the run's zone is neither recorded nor given, or its TPU unknown.
Result<RunsPlan> runs_plan(const RunView& run, RunsCall call, const RunsCallOptions& options);

std::string render_runs_text(const RunsPlan& plan);
std::string render_runs_sh(const RunsPlan& plan);
nlohmann::ordered_json runs_plan_json(const RunsPlan& plan);

} // namespace tpulaunch
