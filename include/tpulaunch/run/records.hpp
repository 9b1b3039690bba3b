#pragma once
// The records a run keeps, as KEY=VALUE lines (one per line, the value to the end of it): the plan
// record a plan's write step puts in the local run folder (plan.rec: whose run the folder holds),
// and the run record each worker's run guard writes in its run folder (run-status.rec: the run
// key, the plan's digest, the start token, the worker's index and outcome), which the fetch brings
// back. Both are read as untrusted text: a line without '=' is skipped, the first value of a key
// counts.
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tpulaunch/util/error.hpp"

namespace tpulaunch {

inline constexpr std::string_view k_plan_record_file = "plan.rec";
inline constexpr std::string_view k_run_record_file = "run-status.rec";
// The record= line each starts with.
inline constexpr std::string_view k_plan_record_kind = "tpulaunch-plan 1";
inline constexpr std::string_view k_run_record_kind = "tpulaunch-run-status 2";

// KEY=VALUE lines, in order.
struct Record {
  std::vector<std::pair<std::string, std::string>> fields;
  // The first value of `key`; nullopt when the record has none.
  [[nodiscard]] std::optional<std::string> get(std::string_view key) const;
  // The value of `key`, or "" when it has none.
  [[nodiscard]] std::string value(std::string_view key) const { return get(key).value_or(""); }
};
Record parse_record(std::string_view text);
std::string format_record(const Record& record);

// Whose run a local run folder holds: what the plan's write step recorded. `start` is the start
// token it put in the stage folder, new each time the write step runs (a pasted plan pasted again
// writes a new one), which each worker's run guard records when it starts the run.
struct PlanRecord {
  std::string script;
  std::string run_id;
  std::string plan_sha256;
  std::string slice;
  int slices = 1;
  std::string start;
  long long written = 0; // Unix seconds
  // Where the plan ran and what `plan --resume` and `runs` need again; each is written only when
  // set, and a record without it (an older tpulaunch's) reads as "".
  std::string tpu{}; // the TPU (node) name; with several slices, the prefix of their names
  std::string zone{};
  std::string project{};
  std::string capacity{};       // "create" or "queued" when the plan made its capacity; "": an existing TPU
  std::string provisioning{};   // "spot", "preemptible", ...; "": standard
  std::string checkpoint_dir{}; // --checkpoint-dir
  std::string resumes{};        // the run id this run resumes (plan --resume)
  std::string connection{};     // "internal-ip" or "tunnel-through-iap" (gcloud::to_string); "": external
  std::string script_sha256{};  // the staged script's digest ("" for the discovery program)
};
Record to_record(const PlanRecord& plan);
// A plan record from its text; a config Error naming `origin` when it is not one (another
// record kind, a missing or malformed field).
Result<PlanRecord> parse_plan_record(std::string_view text, std::string_view origin);

// Why a worker's run record is not of the run `plan` recorded (another script, run id or plan, or
// an earlier start of this plan), as a sentence; nullopt when it is this run's.
std::optional<std::string> foreign_run_record(const Record& record, const PlanRecord& plan);

} // namespace tpulaunch
