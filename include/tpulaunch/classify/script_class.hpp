#pragma once
// The reviewed classes of a script. Anything else (no entry, unknown class, missing or changed file)
// is "review-required", which is not a class but the absence of a usable review.
#include <array>
#include <optional>
#include <string_view>

namespace tpulaunch {

enum class ScriptClass { cpu_only, single_host_compatible, multi_host_qualified };

struct ScriptClassInfo {
  ScriptClass value;
  std::string_view name;
  std::string_view meaning;
};

inline constexpr std::array<ScriptClassInfo, 3> k_script_classes{{
    {ScriptClass::cpu_only, "cpu-only", "selects CPU devices; runs only on the CPU route"},
    {ScriptClass::single_host_compatible, "single-host-compatible", "runs on one TPU host; never on a multi-host slice"},
    {ScriptClass::multi_host_qualified, "multi-host-qualified",
     "initializes every host, owns per-process data, checks its collective result"},
}};

inline constexpr std::string_view k_review_required = "review-required";

constexpr std::string_view to_string(ScriptClass value) {
  for (const auto& info : k_script_classes) {
    if (info.value == value) {
      return info.name;
    }
  }
  return k_review_required;
}

constexpr std::optional<ScriptClass> parse_script_class(std::string_view name) {
  for (const auto& info : k_script_classes) {
    if (info.name == name) {
      return info.value;
    }
  }
  return std::nullopt;
}

} // namespace tpulaunch
