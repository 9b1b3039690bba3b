#pragma once
// Validation of every value a user supplies that can reach a command line. The rules are a table
// (`k_value_rules`), so docs and `--help` print the same text the checks enforce.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "tpulaunch/util/error.hpp"

namespace tpulaunch {

enum class ValueKind {
  tpu_name,
  zone,
  project,
  script_id,
  run_id,
  env_name,        // --env KEY=VALUE: the KEY
  interpreter,     // --python
  results_url,     // --results
  queued_resource, // --queued-resource: the queued resource's ID
  runtime_version, // --runtime-version: the TPU software version to create the node with
  timeout,         // --timeout: how long the program may run on each worker
  grace,           // --grace: from SIGTERM to SIGKILL
  valid_until,     // --valid-until-duration: how long a queued resource may wait for capacity
  ready_timeout,   // --ready-timeout: how long the script waits for READY / ACTIVE
  poll,            // --poll: how often it asks
  jax_platforms,   // review --jax-platforms: JAX_PLATFORMS for a TPU route, in place of "tpu"
};

struct ValueRule {
  ValueKind kind;
  std::string_view flag;        // where the value comes from, for messages: "--tpu"
  std::string_view what;        // "TPU name"
  std::string_view description; // the rule in words, e.g. "lowercase RFC 1035: …"
  bool (*accepts)(std::string_view value);
};

const std::array<ValueRule, 16>& value_rules();

// The rule for `kind`: for a value read from a file (the catalog's runtime version), whose error
// names the file and position rather than a flag.
const ValueRule& value_rule(ValueKind kind);

// Ok when `value` satisfies the rule for `kind`; otherwise a usage Error that quotes the value
// (escaped so that control characters stay visible) and states the rule.
Status validate_value(ValueKind kind, std::string_view value);

// The seconds in a duration that the duration rule accepts ("30m", "2h", "1d", "1h30m"), or
// nullopt when `value` breaks the rule (see value_rules()).
std::optional<std::int64_t> duration_seconds(std::string_view value);

// A duration as the user wrote it ("1h30m", shown and passed on as written) and its seconds. Only
// `parse` makes one, after the rule for `kind` accepted the text, so a plan never holds an
// unchecked duration and nothing checks one twice.
class Duration {
public:
  static Result<Duration> parse(ValueKind kind, std::string_view text);
  [[nodiscard]] const std::string& text() const { return m_text; }
  [[nodiscard]] std::int64_t seconds() const { return m_seconds; }

private:
  Duration(std::string text, std::int64_t seconds) : m_text(std::move(text)), m_seconds(seconds) {}
  std::string m_text;
  std::int64_t m_seconds;
};

} // namespace tpulaunch
