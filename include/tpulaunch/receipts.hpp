#pragma once
// Receipts: what a run leaves in each worker's fetched folder, and `verify`, which checks them
// against the catalog. Topology discovery is not training: a discovery receipt never counts as a
// training receipt, nor the other way round.
#include <string>
#include <vector>

#include "tpulaunch/catalog.hpp"
#include "tpulaunch/error.hpp"
#include "tpulaunch/plan.hpp"

namespace tpulaunch {

struct VerifyOptions {
  VerifyKind kind = VerifyKind::training;
  // Accept backend "standin" (tests/gcloud-standin) and say so in every report; the real default
  // refuses anything but "tpu" as "not a TPU result".
  bool allow_standin = false;
};

struct VerifyFinding {
  int worker = -1;   // -1: the run as a whole
  std::string field; // receipt field or file, e.g. "process_count", "checkpoint.json"
  std::string message;
};

struct VerifyReport {
  std::string folder;
  std::string slice;
  VerifyKind kind = VerifyKind::training;
  int workers = 0;
  int receipts_checked = 0;
  int logs_found = 0;
  bool standin = false; // some receipt came from the stand-in backend: not a TPU result
  std::vector<VerifyFinding> findings;
  [[nodiscard]] bool ok() const { return findings.empty(); }
};

// Checks `folder` (./tpu-runs/<tpu>/<id>/<run-id>) for `slice`: worker-<i>/ for every host,
// each holding what the kind requires. Problems in the receipts are findings; only a missing or
// unreadable folder is an Error (config).
Result<VerifyReport> verify_run(const std::string& folder, const Slice& slice, const VerifyOptions& options);

} // namespace tpulaunch
