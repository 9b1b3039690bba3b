#pragma once
// The override rule, one for review, plan and check: a reviewer's `--override REASON` is recorded
// next to exactly the evidence it accepts, and plan and check honour exactly what review records.
// A piece of CPU-selection evidence is covered by an override of its rule, line and file (the
// course file it was found in, as Evidence::file names it; none for the script's own); a missing
// multi-host marker by a "missing:<marker>" override, unless the marker's row says an override
// cannot stand in for it (`MultiHostMarker::not_overridable`): then review refuses to record one
// and plan and check ignore one written by hand. A jax.distributed.initialize() that runs only
// under a condition is accepted the same way, by `--initialize-condition REASON` next to that call.
#include <string>
#include <string_view>
#include <vector>

#include "tpulaunch/classify/classifier.hpp"
#include "tpulaunch/matrix/matrix.hpp"

namespace tpulaunch {

// The override of missing `marker` ("initialize"), for `reason`.
EvidenceOverride missing_marker_override(std::string_view marker, std::string reason);

// What an override accepts, in words, for messages: "devices-cpu at line 3" for evidence on a line;
// "no per-process data evidence anywhere in the source (missing:per-process data)" for a missing
// marker, which has no line.
std::string describe_override(const EvidenceOverride& override_item);

// True when `entry` (may be null) records an override for exactly this evidence (rule, line, file).
bool is_overridden(const Evidence& evidence, const MatrixEntry* entry);

// The rows of `evidence` that `entry` does not override, in order.
std::vector<Evidence> unoverridden(const std::vector<const Evidence*>& evidence, const MatrixEntry* entry);

// True when `entry` records an override for missing `marker` and the marker may be overridden.
bool marker_overridden(const MultiHostMarker& marker, const MatrixEntry* entry);

// The multi-host markers `classification` lacks that `entry` does not validly override, in
// table order.
std::vector<const MultiHostMarker*> unmet_markers(const Classification& classification, const MatrixEntry* entry);

// The jax.distributed.initialize() row of `classification` when every call of it runs only under a
// condition (its detail names the condition), or nullptr: no call, or one that always runs.
const Evidence* conditional_initialize(const Classification& classification);

// The conditional initialize of `classification` that `entry` (may be null) has not accepted
// (review --initialize-condition records the call's line and file), or nullptr. Review refuses a
// multi-host-qualified entry, plan and check a multi-host route, while there is one.
const Evidence* unaccepted_condition(const Classification& classification, const MatrixEntry* entry);

} // namespace tpulaunch
