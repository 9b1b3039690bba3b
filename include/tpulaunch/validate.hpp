#pragma once
// Validation of every value a user supplies that can reach a command line. The rules are a table
// (`k_value_rules`), so docs and `--help` print the same text the checks enforce.
#include <array>
#include <string_view>

#include "tpulaunch/error.hpp"

namespace tpulaunch {

enum class ValueKind { tpu_name, zone, project, script_id, run_id, env_name, interpreter, results_url };

struct ValueRule {
  ValueKind kind;
  std::string_view flag;        // where the value comes from, for messages: "--tpu"
  std::string_view what;        // "TPU name"
  std::string_view description; // the rule in words, e.g. "lowercase RFC 1035: …"
  bool (*accepts)(std::string_view value);
};

const std::array<ValueRule, 8>& value_rules();

// Ok when `value` satisfies the rule for `kind`; otherwise a usage Error that quotes the value
// (escaped so that control characters stay visible) and states the rule.
Status validate_value(ValueKind kind, std::string_view value);

} // namespace tpulaunch
