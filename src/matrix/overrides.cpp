#include "tpulaunch/matrix/overrides.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace tpulaunch {
namespace {

// Spelled once: review writes it, plan and check read it.
constexpr std::string_view k_missing_prefix = "missing:";

bool records(const MatrixEntry* entry, std::string_view rule, std::uint32_t line, std::string_view file) {
  return entry != nullptr && std::any_of(entry->overrides.begin(), entry->overrides.end(), [&](const EvidenceOverride& o) {
           return o.rule == rule && o.line == line && o.file == file;
         });
}

} // namespace

std::string missing_marker_rule(std::string_view marker) { return std::string(k_missing_prefix) + std::string(marker); }

std::string describe_override(const EvidenceOverride& override_item) {
  const std::string_view rule = override_item.rule;
  if (rule.starts_with(k_missing_prefix)) {
    return fmt::format("no {} evidence anywhere in the source ({})", rule.substr(k_missing_prefix.size()), rule);
  }
  return fmt::format("{} at {}line {}", rule, override_item.file.empty() ? "" : override_item.file + " ", override_item.line);
}

bool is_overridden(const Evidence& evidence, const MatrixEntry* entry) {
  return records(entry, to_string(evidence.rule), evidence.line, evidence.file);
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
  return marker.not_overridable.empty() && records(entry, missing_marker_rule(marker.name), 0, "");
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

} // namespace tpulaunch
