#include "tpulaunch/matrix/overrides.hpp"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

namespace tpulaunch {
namespace {

bool records(const MatrixEntry* entry, OverrideOf of, std::string_view rule, std::uint32_t line, std::string_view file) {
  return entry != nullptr && std::any_of(entry->overrides.begin(), entry->overrides.end(), [&](const EvidenceOverride& o) {
           return o.of == of && o.rule == rule && o.line == line && o.file == file;
         });
}

} // namespace

EvidenceOverride missing_marker_override(std::string_view marker, std::string reason) {
  return EvidenceOverride{std::string(marker), 0, std::move(reason), "", OverrideOf::missing_marker};
}

std::string describe_override(const EvidenceOverride& override_item) {
  if (override_item.of == OverrideOf::missing_marker) {
    return fmt::format("no {} evidence anywhere in the source ({})", override_item.rule, override_rule_text(override_item));
  }
  return fmt::format("{} at {}line {}", override_item.rule, override_item.file.empty() ? "" : override_item.file + " ",
                     override_item.line);
}

bool is_overridden(const Evidence& evidence, const MatrixEntry* entry) {
  return records(entry, OverrideOf::evidence, to_string(evidence.rule), evidence.line, evidence.file);
}

std::vector<Evidence> unoverridden(const std::vector<const Evidence*>& evidence, const MatrixEntry* entry) {
  std::vector<Evidence> out;
  for (const Evidence* item : evidence) {
    if (!is_overridden(*item, entry)) {
      out.push_back(*item);
    }
  }
  return out;
}

bool marker_overridden(const MultiHostMarker& marker, const MatrixEntry* entry) {
  return marker.not_overridable.empty() && records(entry, OverrideOf::missing_marker, marker.name, 0, "");
}

std::vector<const MultiHostMarker*> unmet_markers(const Classification& classification, const MatrixEntry* entry) {
  const auto missing = missing_multi_host_markers(classification);
  std::vector<const MultiHostMarker*> out;
  for (const auto& marker : multi_host_markers()) {
    if (std::find(missing.begin(), missing.end(), marker.name) != missing.end() && !marker_overridden(marker, entry)) {
      out.push_back(&marker);
    }
  }
  return out;
}

const Evidence* conditional_initialize(const Classification& classification) {
  const Evidence* first = nullptr;
  for (const Evidence& e : classification.evidence) {
    if (e.rule != Rule::distributed_initialize) {
      continue;
    }
    if (e.detail.empty()) {
      return nullptr; // one call that always runs: every host joins
    }
    first = first == nullptr ? &e : first;
  }
  return first;
}

const Evidence* unaccepted_condition(const Classification& classification, const MatrixEntry* entry) {
  const Evidence* call = conditional_initialize(classification);
  if (call == nullptr) {
    return nullptr;
  }
  const bool accepted = entry != nullptr && entry->initialize_condition &&
                        entry->initialize_condition->line == call->line &&
                        entry->initialize_condition->file == call->file;
  return accepted ? nullptr : call;
}

} // namespace tpulaunch
