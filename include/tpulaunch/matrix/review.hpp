#pragma once
// Recording a review: the policy that turns a reviewer's decision plus the script's evidence into
// a matrix entry, or refuses it. A review over contradicting evidence needs an explicit override
// reason, which is recorded next to exactly the evidence it covers.
#include <optional>
#include <string>

#include "tpulaunch/classify/classifier.hpp"
#include "tpulaunch/util/error.hpp"
#include "tpulaunch/matrix/matrix.hpp"

namespace tpulaunch {

struct ReviewRequest {
  std::string id;
  ScriptClass script_class = ScriptClass::cpu_only;
  std::string reviewed_by;
  std::string note;
  std::string override_reason; // empty: no override
  std::string jax_platforms;   // empty: TPU routes set JAX_PLATFORMS=tpu, tpulaunch's default
  std::string reviewed_at;     // UTC, ISO 8601 (the CLI passes the current time)
  std::optional<Proves> proves; // what its runs prove (`--proves`); nullopt: nothing declared
  // Why a jax.distributed.initialize() under a condition holds on every host (`--initialize-condition`);
  // empty: not accepted.
  std::string initialize_condition;
  std::vector<MatrixFile> files; // the course files reviewed with it (reviewed_files of its lesson)
};

// The entry to record for `request`, given the file's `source` and its classification (with its
// course files' evidence when it has any: classify the lesson, not the file alone). Refused (exit 3) when a TPU class
// is recorded over cpu-selection evidence, or multi-host-qualified without every multi-host marker,
// unless `override_reason` is set; refused even then when a marker that cannot be overridden
// (jax.distributed.initialize()) is missing, since plan would refuse the route anyway. Refused too
// when multi-host-qualified is recorded over an initialize() that runs only under a condition,
// unless `initialize_condition` says why it holds on every host. A bad reviewer name or note, or
// `proves` on a cpu-only script, is a usage Error.
Result<MatrixEntry> make_review_entry(const ReviewRequest& request, std::string_view source,
                                      const Classification& classification);

// Puts `entry` into `matrix` in place of any earlier review of the same id. Only the fields this
// version does not know are kept from the earlier entry; its reviewer's reason and note are not.
void record_review(Matrix& matrix, MatrixEntry entry);

// The current UTC time as 2026-12-02T10:00:00Z.
std::string utc_now_iso8601();

} // namespace tpulaunch
