#include "tpulaunch/values/validate.hpp"

#include <string>
#include <utility>

#include <fmt/format.h>

#include "tpulaunch/values/results_url.hpp"

namespace tpulaunch {
namespace {

bool is_lower(char c) { return c >= 'a' && c <= 'z'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alnum(char c) { return is_lower(c) || is_digit(c) || (c >= 'A' && c <= 'Z'); }

// ^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$ — the Compute Engine rule that ctpu enforced for TPU names.
bool accepts_tpu_name(std::string_view v) {
  if (v.empty() || v.size() > 63 || !is_lower(v.front()) || v.back() == '-') {
    return false;
  }
  for (const char c : v) {
    if (!is_lower(c) && !is_digit(c) && c != '-') {
      return false;
    }
  }
  return true;
}

// ^[a-z]+-[a-z]+[0-9]+-[a-z]$, e.g. us-central1-a, europe-west4-b.
bool accepts_zone(std::string_view v) {
  std::size_t i = 0;
  auto run = [&](auto predicate) {
    const std::size_t start = i;
    while (i < v.size() && predicate(v[i])) {
      ++i;
    }
    return i > start;
  };
  auto literal = [&](char c) {
    if (i < v.size() && v[i] == c) {
      ++i;
      return true;
    }
    return false;
  };
  return run(is_lower) && literal('-') && run(is_lower) && run(is_digit) && literal('-') && i + 1 == v.size() &&
         is_lower(v[i]);
}

// Project IDs: 6–30 characters, a lowercase letter first, lowercase letters, digits and hyphens,
// no trailing hyphen; optionally behind a legacy "domain:" prefix (example.com:my-project).
bool accepts_project(std::string_view v) {
  if (const auto colon = v.rfind(':'); colon != std::string_view::npos) {
    const auto domain = v.substr(0, colon);
    if (domain.empty() || !is_lower(domain.front()) || domain.back() == '.' || domain.back() == '-') {
      return false;
    }
    for (const char c : domain) {
      if (!is_lower(c) && !is_digit(c) && c != '-' && c != '.') {
        return false;
      }
    }
    v = v.substr(colon + 1);
  }
  if (v.size() < 6 || v.size() > 30 || !is_lower(v.front()) || v.back() == '-') {
    return false;
  }
  for (const char c : v) {
    if (!is_lower(c) && !is_digit(c) && c != '-') {
      return false;
    }
  }
  return true;
}

// Letters, digits, '_', '-', '.', 1–100 characters, not starting with '.' or '-': a file stem that
// is one safe word everywhere (no separators, no options, no hidden files).
bool accepts_id(std::string_view v, std::size_t max_length) {
  if (v.empty() || v.size() > max_length || v.front() == '.' || v.front() == '-') {
    return false;
  }
  for (const char c : v) {
    if (!is_alnum(c) && c != '_' && c != '-' && c != '.') {
      return false;
    }
  }
  return v.find("..") == std::string_view::npos;
}

// A shell variable name: a letter or '_' first, then letters, digits and '_'.
bool accepts_env_name(std::string_view v) {
  if (v.empty() || v.size() > 128 || is_digit(v.front())) {
    return false;
  }
  for (const char c : v) {
    if (!is_alnum(c) && c != '_') {
      return false;
    }
  }
  return true;
}

// A command name or path for an interpreter: any text a file name can hold, on one line, that is
// not an option. It is quoted like every value; only a leading "~/" means the home folder.
bool accepts_interpreter(std::string_view v) {
  if (v.empty() || v.size() > 4096 || v.front() == '-') {
    return false;
  }
  for (const char c : v) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) {
      return false;
    }
  }
  // It names a file: its last part is not empty, "." or ".." (a folder would pass `command -v`).
  const std::string_view last = v.substr(v.rfind('/') + 1);
  return !last.empty() && last != "." && last != ".." && v != "~";
}

// One or more '/'-separated parts, each an id: the path of a script below the exercises folder
// without ".py" (`advanced/sub_lesson`). No part is empty, "..", hidden or an option.
bool accepts_script_id(std::string_view v) {
  if (v.empty() || v.size() > 100) {
    return false;
  }
  std::size_t start = 0;
  while (true) {
    const auto slash = v.find('/', start);
    if (!accepts_id(v.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start), 100)) {
      return false;
    }
    if (slash == std::string_view::npos) {
      return true;
    }
    start = slash + 1;
  }
}
bool accepts_run_id(std::string_view v) { return accepts_id(v, 64); }
bool accepts_results_url(std::string_view v) { return parse_results_url(v).ok(); }

// Runtime versions as Google names them (tpu-ubuntu2204-base, v2-alpha-tpuv5-lite,
// tpu-vm-tf-2.16.1-pjrt): a lowercase letter first, then lowercase letters, digits, '.', '_'
// and '-', at most 63, ending in a letter or digit, no "..".
bool accepts_runtime_version(std::string_view v) {
  if (v.empty() || v.size() > 63 || !is_lower(v.front()) || !(is_lower(v.back()) || is_digit(v.back()))) {
    return false;
  }
  for (const char c : v) {
    if (!is_lower(c) && !is_digit(c) && c != '-' && c != '.' && c != '_') {
      return false;
    }
  }
  return v.find("..") == std::string_view::npos;
}

// The longest duration any of these values may take: a month is far beyond a course's runs and
// a queued resource's useful wait, and keeps every product of seconds far from overflow.
constexpr std::int64_t k_max_duration_seconds = 30LL * 24 * 3600;

bool accepts_duration(std::string_view v) { return duration_seconds(v).has_value(); }

// "tpu" or "tpu,cpu" (either order), each platform once: a TPU route's JAX may fall back to the
// CPU for what the TPU lacks, never leave the TPU out.
bool accepts_jax_platforms(std::string_view v) {
  return v == "tpu" || v == "tpu,cpu" || v == "cpu,tpu";
}

const std::array<ValueRule, 16> k_value_rules{{
    {ValueKind::tpu_name, "--tpu", "TPU name",
     "lowercase RFC 1035: a letter first, then letters, digits and hyphens, 1-63 characters, no trailing hyphen",
     accepts_tpu_name},
    {ValueKind::zone, "--zone", "zone", "<region>-<letter>, e.g. us-central1-a", accepts_zone},
    {ValueKind::project, "--project", "project ID",
     "6-30 characters: a lowercase letter first, then lowercase letters, digits and hyphens, no trailing hyphen",
     accepts_project},
    {ValueKind::script_id, "<script>", "script ID",
     "letters, digits, '_', '-' and '.', at most 100 characters, no leading '.' or '-'; '/' separates the "
     "folders of a script in a subfolder of the exercises folder, each part following the same rule",
     accepts_script_id},
    {ValueKind::run_id, "--run-id", "run ID",
     "letters, digits, '_', '-' and '.', at most 64 characters, no leading '.' or '-'", accepts_run_id},
    {ValueKind::env_name, "--env", "environment variable name",
     "a shell variable name: a letter or '_' first, then letters, digits and '_', at most 128 characters", accepts_env_name},
    {ValueKind::interpreter, "--python", "interpreter",
     "a command name or path to a file on one line, not starting with '-' and not ending in '/', '.' or '..'; a leading ~/ is the home folder where it runs",
     accepts_interpreter},
    {ValueKind::results_url, "--results", "results URL",
     "gs://BUCKET or gs://BUCKET/PREFIX; the bucket: 3-63 lowercase letters, digits, '-', '_' and '.' (up to 222 "
     "with dots, 63 between them), a letter or digit at each end, not an IP address, no \"goog\" prefix, no "
     "\"google\"; the prefix: printable ASCII, at most 512 bytes, no wildcard (* ? [ ]), no '#', no empty, '.' or "
     "'..' part",
     accepts_results_url},
    {ValueKind::queued_resource, "--queued-resource", "queued resource ID",
     "lowercase RFC 1035, as a TPU name: a letter first, then letters, digits and hyphens, 1-63 characters, no "
     "trailing hyphen",
     accepts_tpu_name},
    {ValueKind::runtime_version, "--runtime-version", "runtime version",
     "a lowercase letter first, then lowercase letters, digits, '.', '_' and '-', at most 63 characters, ending in a "
     "letter or digit, e.g. v2-alpha-tpuv5-lite",
     accepts_runtime_version},
    {ValueKind::timeout, "--timeout", "timeout",
     "a duration: whole numbers with units d, h, m, s, largest first, each at most once (30m, 2h, 1d, 1h30m), "
     "from 1s to 30d",
     accepts_duration},
    {ValueKind::grace, "--grace", "grace period", "a duration, as for --timeout (10s, 1m)", accepts_duration},
    {ValueKind::valid_until, "--valid-until-duration", "queueing duration", "a duration, as for --timeout (6h, 1d)",
     accepts_duration},
    {ValueKind::ready_timeout, "--ready-timeout", "wait for capacity", "a duration, as for --timeout (30m, 12h)",
     accepts_duration},
    {ValueKind::poll, "--poll", "poll interval", "a duration, as for --timeout (15s, 1m)", accepts_duration},
    {ValueKind::jax_platforms, "--jax-platforms", "JAX platform list",
     "tpu, tpu,cpu or cpu,tpu: the platforms JAX may use on a TPU route, the TPU always among them",
     accepts_jax_platforms},
}};

} // namespace

const std::array<ValueRule, 16>& value_rules() { return k_value_rules; }

const ValueRule& value_rule(ValueKind kind) {
  for (const auto& rule : k_value_rules) {
    if (rule.kind == kind) {
      return rule;
    }
  }
  return k_value_rules.front(); // every kind has a row (validate_test checks it)
}

std::optional<std::int64_t> duration_seconds(std::string_view value) {
  // Units in the order they must appear: "1h30m", never "30m1h" or "1h1h".
  constexpr std::array<std::pair<char, std::int64_t>, 4> k_units{{{'d', 86400}, {'h', 3600}, {'m', 60}, {'s', 1}}};
  std::size_t next_unit = 0;
  std::int64_t total = 0;
  std::size_t i = 0;
  if (value.empty()) {
    return std::nullopt;
  }
  while (i < value.size()) {
    const std::size_t start = i;
    std::int64_t number = 0;
    while (i < value.size() && is_digit(value[i])) {
      number = number * 10 + (value[i] - '0');
      if (number > k_max_duration_seconds) {
        return std::nullopt;
      }
      ++i;
    }
    // A number without leading zeros, then its unit.
    if (i == start || (value[start] == '0' && i - start > 1) || i == value.size()) {
      return std::nullopt;
    }
    const char unit = value[i++];
    while (next_unit < k_units.size() && k_units[next_unit].first != unit) {
      ++next_unit;
    }
    if (next_unit == k_units.size()) {
      return std::nullopt;
    }
    total += number * k_units[next_unit].second;
    ++next_unit;
    if (total > k_max_duration_seconds) {
      return std::nullopt;
    }
  }
  if (total < 1) {
    return std::nullopt;
  }
  return total;
}

Result<Duration> Duration::parse(ValueKind kind, std::string_view text) {
  TPULAUNCH_CHECK(validate_value(kind, text));
  return Duration(std::string(text), *duration_seconds(text));
}

Status validate_value(ValueKind kind, std::string_view value) {
  for (const auto& rule : k_value_rules) {
    if (rule.kind == kind) {
      if (rule.accepts(value)) {
        return Ok{};
      }
      return usage_error(fmt::format("invalid {} '{}' for {}: {}", rule.what, printable(value), rule.flag, rule.description));
    }
  }
  return usage_error("unknown value kind");
}

} // namespace tpulaunch
