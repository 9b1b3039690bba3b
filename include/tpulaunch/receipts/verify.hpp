#pragma once
// verify: checks what a run's fetch brought back (./tpu-runs/<tpu>/<id>/<run-id>/worker-<i>/)
// against the catalog. Topology discovery is not training: a discovery receipt never counts as a
// training receipt, nor the other way round. Receipts are untrusted input: anything wrong in
// them (a missing field, a wrong type, bad JSON, a huge file) is a finding, never a crash.
#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tpulaunch/catalog/catalog.hpp"
#include "tpulaunch/run/records.hpp"
#include "tpulaunch/target/target.hpp"
#include "tpulaunch/util/error.hpp"

namespace tpulaunch {

// What verify checks: a training run's receipts, a discovery run's, or only one log per host.
// `none` is for plan only (no verify step).
enum class VerifyKind { training, discovery, logs, none };
// Every verify kind, in the order --help lists them; `none` last.
inline constexpr std::array<VerifyKind, 4> k_verify_kinds{VerifyKind::training, VerifyKind::discovery, VerifyKind::logs,
                                                         VerifyKind::none};
std::string_view to_string(VerifyKind kind);
std::optional<VerifyKind> parse_verify_kind(std::string_view name);

struct VerifyOptions {
  VerifyKind kind = VerifyKind::training;
  // Accept backend "standin" (tests/gcloud-standin) and say so in every report; the real default
  // refuses anything but "tpu" as "not a TPU result".
  bool allow_standin = false;
  // Whose run the folder holds (its plan record): every worker's run record must name the same
  // script, run id, plan digest and start token. verify_run reads it from the folder's plan.rec;
  // nullopt in verify_fetched: the records are not compared with one.
  std::optional<PlanRecord> plan{};
};

// The two shapes of training receipt verify accepts (docs/lifecycle.md, "Receipts").
// `course`: the lesson's multihost_collective.py (worker-<i>.json with process_index,
// process_count, local_devices, global_devices, owned_input, global_mean_gradient,
// updated_theta, backend; checkpoint.json with theta and global_devices).
// `detailed`: this project's richer form, marked "kind": "training" (owned_inputs, params_after,
// check; checkpoint.json with kind, written_by, process_count, params).
enum class ReceiptForm { course, detailed };
std::string_view to_string(ReceiptForm form);

struct VerifyFinding {
  int worker = -1;   // -1: the run as a whole
  std::string field; // receipt field or file, e.g. "process_count", "checkpoint.json"
  std::string message;
};

struct VerifyReport {
  std::string folder;
  std::string slice;
  VerifyKind kind = VerifyKind::training;
  std::optional<ReceiptForm> form; // the training receipts' form, once one was read
  int workers = 0;
  int receipts_checked = 0;
  int logs_found = 0;
  bool standin = false; // some receipt came from the stand-in backend: not a TPU result
  std::vector<VerifyFinding> findings;
  [[nodiscard]] bool ok() const { return findings.empty(); }
};

// One file of a worker's artifacts folder, as read: its text, or why it could not be read.
struct FetchedFile {
  std::string name; // e.g. "worker-2.json"
  std::string text;
  std::string error; // non-empty: the file could not be read (too large, not a file, …)
};

// What one worker's fetch brought back.
struct FetchedWorker {
  bool present = false; // its folder exists
  std::string folder;   // for messages
  int logs = 0;         // stdout logs (*.txt) beside artifacts/
  std::vector<std::string> log_names; // their file names
  std::vector<FetchedFile> artifacts; // the receipts and checkpoint in artifacts/
  // The worker's run record (run-status.rec, written by the run guard), when one came back: a
  // worker that recorded anything but success never verifies, whatever its receipts say.
  std::optional<FetchedFile> status_record;
};

// The checks themselves, on files already read (the seam the unit tests and the fuzz target use).
// `workers[i]` is worker i; there should be one per process of `target` (target.processes(): one
// per host of every node), and `target.slice` must be set. Entries past the last process are
// folders the run cannot have (a worker-4/ on a slice of 4 hosts; `folder` names it): each one
// present is a finding. A worker without a run record (status_record) is a finding of its own,
// and its log and receipts are not checked.
VerifyReport verify_fetched(const std::vector<FetchedWorker>& workers, const Target& target, const VerifyOptions& options);

// Reads `folder` (./tpu-runs/<tpu>/<id>/<run-id>) and checks it for `target`: its plan record
// (plan.rec, whose run it is: missing or malformed is a finding) and worker-<i>/ for every
// process and no other worker or slice folder, each holding what the kind requires, directly or in
// the one folder the fetch brought back (worker-<i>/<run-id>/, whatever the run folder is called
// now: a copied run folder verifies).
// Problems in the receipts are findings; only a missing or unreadable folder is an Error (config).
Result<VerifyReport> verify_run(const std::string& folder, const Target& target, const VerifyOptions& options);

} // namespace tpulaunch
