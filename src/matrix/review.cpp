#include "tpulaunch/matrix/review.hpp"

#include <algorithm>
#include <chrono>
#include <ctime>

#include <fmt/chrono.h>
#include <fmt/format.h>

#include "tpulaunch/matrix/overrides.hpp"
#include "tpulaunch/util/sha256.hpp"
#include "tpulaunch/values/validate.hpp"

namespace tpulaunch {
namespace {

constexpr std::size_t k_max_text = 2000;

Status check_free_text(std::string_view flag, std::string_view value, bool required) {
  if (required && value.empty()) {
    return usage_error(fmt::format("{} must not be empty", flag));
  }
  if (value.size() > k_max_text) {
    return usage_error(fmt::format("{} is longer than {} characters", flag, k_max_text));
  }
  for (const char c : value) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      return usage_error(fmt::format("{} '{}' holds a control character", flag, printable(value)));
    }
  }
  return Ok{};
}

std::string lines_of(const std::vector<const Evidence*>& evidence) {
  std::string out;
  for (const Evidence* e : evidence) {
    out += fmt::format("{}{} ({})", out.empty() ? "" : ", ", evidence_place(*e), to_string(e->rule));
  }
  return out;
}

// The request's own values, before any evidence is looked at: the id, one-line texts, and the
// values that only a TPU class may record.
Status check_request(const ReviewRequest& request) {
  TPULAUNCH_CHECK(validate_value(ValueKind::script_id, request.id));
  TPULAUNCH_CHECK(check_free_text("--by", request.reviewed_by, true));
  TPULAUNCH_CHECK(check_free_text("--note", request.note, false));
  TPULAUNCH_CHECK(check_free_text("--override", request.override_reason, false));
  TPULAUNCH_CHECK(check_free_text("--initialize-condition", request.initialize_condition, false));
  if (request.proves && request.script_class == ScriptClass::cpu_only) {
    return usage_error(
        fmt::format("--proves {}: a cpu-only script runs on the CPU route only, where nothing is verified",
                    to_string(*request.proves)));
  }
  if (!request.jax_platforms.empty()) {
    TPULAUNCH_CHECK(validate_value(ValueKind::jax_platforms, request.jax_platforms));
    if (request.script_class == ScriptClass::cpu_only) {
      return usage_error("--jax-platforms: a cpu-only script never runs on a TPU route, where JAX_PLATFORMS is set");
    }
  }
  return Ok{};
}

// A multi-host-qualified review over an initialize() that runs only under a condition: nothing
// tpulaunch does makes that condition hold on every host, so the reviewer says what does, and the
// entry records it next to the call (plan repeats it in its notes).
Status accept_condition(const ReviewRequest& request, const Classification& classification, MatrixEntry& entry) {
  const Evidence* call = conditional_initialize(classification);
  if (call == nullptr) {
    return Ok{};
  }
  if (request.initialize_condition.empty()) {
    return refused_error(fmt::format("'{}' calls jax.distributed.initialize() at {} only under a condition ({}); "
                                     "recording multi-host-qualified needs --initialize-condition REASON, saying what "
                                     "makes it hold on every host (tpulaunch sets none of the values it reads)",
                                     request.id, evidence_place(*call), call->detail));
  }
  entry.initialize_condition = InitializeCondition{call->line, call->file, call->detail, request.initialize_condition};
  return Ok{};
}

} // namespace

void record_review(Matrix& matrix, MatrixEntry entry) {
  if (const MatrixEntry* old = matrix.find(entry.id)) {
    // Fields this version does not know stay, in their order; everything the review decides
    // (class, digest, reviewer, time, reason, note, overrides, evidence) is the new review's.
    entry.extra = old->extra;
  }
  const std::string id = entry.id;
  matrix.scripts[id] = std::move(entry);
}

std::string utc_now_iso8601() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", fmt::gmtime(now));
}

Result<MatrixEntry> make_review_entry(const ReviewRequest& request, std::string_view source,
                                      const Classification& classification) {
  TPULAUNCH_CHECK(check_request(request));
  MatrixEntry entry;
  entry.id = request.id;
  entry.script_class = request.script_class;
  entry.class_name = std::string(to_string(request.script_class));
  entry.sha256 = sha256_hex(source);
  entry.files = request.files;
  entry.reviewed_by = request.reviewed_by;
  entry.reviewed_at = request.reviewed_at;
  entry.note = request.note;
  entry.jax_platforms = request.jax_platforms;
  entry.proves = request.proves;
  entry.evidence = nlohmann::json::array();
  for (const Evidence& e : classification.evidence) {
    // One string per finding keeps the matrix diff of a review to one line per finding.
    entry.evidence.push_back(fmt::format("{} {} at {}{}", to_string(e.category), to_string(e.rule), evidence_place(e),
                                         e.counts() ? "" : fmt::format(" (in {}(), never called)", e.uncalled)));
  }

  const bool overriding = !request.override_reason.empty();
  if (request.script_class != ScriptClass::cpu_only) {
    const auto cpu = classification.of_category(Category::cpu_selection);
    if (!cpu.empty() && !overriding) {
      return refused_error(fmt::format("'{}' selects CPU devices ({}); recording {} over that evidence needs --override "
                                 "REASON",
                                 request.id, lines_of(cpu), entry.class_name));
    }
    for (const Evidence* e : cpu) {
      entry.overrides.push_back(EvidenceOverride{std::string(to_string(e->rule)), e->line, request.override_reason, e->file});
    }
  }
  if (request.script_class == ScriptClass::multi_host_qualified) {
    const auto missing = missing_multi_host_markers(classification);
    // What plan would never honour, review never records (the one override rule, overrides.hpp).
    for (const auto& marker : multi_host_markers()) {
      if (!marker.not_overridable.empty() && std::find(missing.begin(), missing.end(), marker.name) != missing.end()) {
        return refused_error(fmt::format("'{}' lacks the multi-host markers {}, and an override cannot stand in for {}: {}",
                                         request.id, fmt::join(missing, ", "), marker.name, marker.not_overridable));
      }
    }
    if (!missing.empty() && !overriding) {
      return refused_error(fmt::format("'{}' lacks the multi-host markers {}; recording multi-host-qualified needs "
                                 "--override REASON",
                                 request.id, fmt::join(missing, ", ")));
    }
    for (const auto marker : missing) {
      entry.overrides.push_back(missing_marker_override(marker, request.override_reason));
    }
    TPULAUNCH_CHECK(accept_condition(request, classification, entry));
  }
  if (!request.initialize_condition.empty() && !entry.initialize_condition) {
    return usage_error(
        fmt::format("--initialize-condition given, but {}",
                    request.script_class != ScriptClass::multi_host_qualified
                        ? fmt::format("only a multi-host-qualified review runs '{}' on several hosts", request.id)
                        : fmt::format("every jax.distributed.initialize() in '{}' runs unconditionally", request.id)));
  }
  if (overriding && entry.overrides.empty()) {
    return usage_error(fmt::format("--override given, but nothing in '{}' contradicts {}", request.id, entry.class_name));
  }
  return entry;
}

} // namespace tpulaunch
