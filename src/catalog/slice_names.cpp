#include "tpulaunch/catalog/slice_names.hpp"

#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "tpulaunch/util/spelling.hpp"

namespace tpulaunch {
namespace {

// Sources: the accelerator types gcloud takes (cloud.google.com/tpu/docs/v5e, /v6e, /v5p), the
// generation names in the same pages (v5e, "Trillium"), and GKE's node-selector values
// (cloud.google.com/kubernetes-engine/docs/concepts/plan-tpus: tpu-v5-lite-podslice, ...).
constexpr std::array<GenerationAlias, 14> k_aliases{{
    {"v5litepod", "v5litepod"},
    {"v5lite", "v5litepod"},
    {"v5e", "v5litepod"},
    {"v5lite-pod", "v5litepod"},
    {"tpu-v5-lite-podslice", "v5litepod"},
    {"tpu-v5-lite-device", "v5litepod"},
    {"v6e", "v6e"},
    {"trillium", "v6e"},
    {"tpu-v6e-slice", "v6e"},
    {"v5p", "v5p"},
    {"tpu-v5p-slice", "v5p"},
    {"v4", "v4"},
    {"tpu-v4-podslice", "v4"},
    {"v3", "v3"},
}};

std::string lower(std::string_view text) {
  std::string out(text);
  for (auto& c : out) {
    if (c >= 'A' && c <= 'Z') {
      c = static_cast<char>(c - 'A' + 'a');
    }
  }
  return out;
}

} // namespace

std::span<const GenerationAlias> generation_aliases() { return k_aliases; }

std::string canonical_slice_name(std::string_view typed) {
  std::string name = lower(typed);
  const auto dash = name.rfind('-');
  if (dash == std::string::npos) {
    return name;
  }
  const std::string_view prefix = std::string_view(name).substr(0, dash);
  for (const auto& alias : k_aliases) {
    if (alias.alias == prefix) {
      return std::string(alias.prefix) + name.substr(dash);
    }
  }
  return name;
}

std::string suggestion_key(std::string_view typed) {
  // Spaces, '_' and '.' are the separators people slip in for '-': "v5e 16", "v5e_16".
  std::string name;
  for (const char c : lower(typed)) {
    const bool separator = c == ' ' || c == '\t' || c == '_' || c == '.' || c == '-';
    if (!separator) {
      name += c;
    } else if (!name.empty() && name.back() != '-') {
      name += '-';
    }
  }
  while (!name.empty() && name.back() == '-') {
    name.pop_back();
  }
  // No separator at all ("v5e16", "trillium8"): a known prefix followed by digits only.
  if (name.find('-') == std::string::npos) {
    for (const auto& alias : k_aliases) {
      const std::string_view rest = std::string_view(name).substr(std::min(name.size(), alias.alias.size()));
      if (name.starts_with(alias.alias) && !rest.empty() &&
          rest.find_first_not_of("0123456789") == std::string_view::npos) {
        name = std::string(alias.alias) + "-" + std::string(rest);
        break;
      }
    }
  }
  return canonical_slice_name(name);
}

Result<const Slice*> find_slice(const Catalog& catalog, std::string_view typed) {
  const std::string name = canonical_slice_name(typed);
  if (const Slice* slice = catalog.find(name)) {
    return slice;
  }
  // The suggestion is searched for under the name the user most likely meant: separators and
  // generation names made canonical first, so "v5e 16" suggests v5litepod-16, not the v5p-16 its
  // letters are nearer to.
  const std::string key = suggestion_key(typed);
  std::string best;
  if (catalog.find(key) != nullptr) {
    best = key;
  } else {
    // A likely typo within the same generation (the same prefix) first: "v5p-12" is nearer
    // v5p-16 than any v5litepod.
    std::vector<std::string> same_generation;
    std::vector<std::string> all;
    const std::string prefix = key.substr(0, key.rfind('-') + 1);
    for (const auto& slice : catalog.slices()) {
      all.push_back(slice.name);
      if (!prefix.empty() && slice.name.starts_with(prefix)) {
        same_generation.push_back(slice.name);
      }
    }
    best = closest_match(key, same_generation);
    if (best.empty()) {
      best = closest_match(key, all);
    }
  }
  return usage_error(fmt::format("unknown slice '{}'{}; 'tpulaunch slices' lists them", printable(typed),
                                 best.empty() ? std::string() : did_you_mean(std::vector<std::string>{best})));
}

} // namespace tpulaunch
