#pragma once
// Where `--results gs://BUCKET/PREFIX` sends every worker's run folder: a Cloud Storage bucket
// and an optional prefix, checked against Cloud Storage's naming rules before any command is
// built, so a bad value is a usage error here and never a failed upload on every worker.
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "tpulaunch/util/error.hpp"

namespace tpulaunch {

struct ResultsUrl {
  std::string bucket; // follows the bucket naming rules
  std::string prefix; // "" or non-empty parts joined by '/', with no '/' at either end

  // "gs://BUCKET" or "gs://BUCKET/PREFIX", without a final '/'.
  [[nodiscard]] std::string text() const;
  // text() followed by "/" and each of `parts` (each itself a safe path part).
  [[nodiscard]] std::string join(std::initializer_list<std::string_view> parts) const;
};

// The URL `value` names, or a usage Error that quotes it (printable()) and says which rule it
// breaks. A final '/' is accepted and dropped ("gs://b/runs/" is "gs://b/runs").
Result<ResultsUrl> parse_results_url(std::string_view value);

// The rule a bucket name breaks (Cloud Storage's bucket naming rules), or nullopt.
std::optional<std::string_view> bucket_name_problem(std::string_view bucket);

// The rule an object-name prefix breaks (no wildcards, no '#', printable ASCII, no empty,
// '.' or '..' parts, at most k_results_prefix_max bytes), or nullopt.
std::optional<std::string_view> results_prefix_problem(std::string_view prefix);

// Room left for <tpu>/<script>/<run-id>/worker-<i>/<run-id>/<files> under Cloud Storage's limit
// of 1024 bytes for an object name.
inline constexpr std::size_t k_results_prefix_max = 512;

} // namespace tpulaunch
