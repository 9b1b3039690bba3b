// The argument checks of a matched call: evaluate_call() dispatches on the matcher's ArgCheck to
// one function per kind, each of which adds the evidence its arguments show.
#include <algorithm>

#include "scanner.hpp"

namespace tpulaunch::scan {

void Scanner::evaluate_call(const Bracket& bracket, std::size_t end) {
  const CallMatcher& matcher = k_call_matchers[bracket.matcher];
  const std::span<const Token> tokens(m_capture);
  switch (matcher.check) {
  case ArgCheck::none:
  case ArgCheck::backend_probe:
    return;
  case ArgCheck::backend_cpu:
    check_backend_cpu(bracket, tokens, split_args(tokens, bracket.capture_start, end, ","));
    return;
  case ArgCheck::cpu_device:
    check_cpu_device(bracket, tokens, end);
    return;
  case ArgCheck::config_key:
  case ArgCheck::env_pair:
    check_key_value(bracket, tokens, split_args(tokens, bracket.capture_start, end, ","));
    return;
  case ArgCheck::env_mapping:
    check_env_mapping(bracket, tokens, split_args(tokens, bracket.capture_start, end, ","));
    return;
  }
}

// jax.devices("cpu"), jax.local_devices(backend="cpu"): a positional argument or backend= is "cpu".
void Scanner::check_backend_cpu(const Bracket& bracket, std::span<const Token> tokens, const Args& args) {
  const CallMatcher& matcher = k_call_matchers[bracket.matcher];
  const bool cpu = std::any_of(args.items.begin(), args.items.end(), [&](const Arg& arg) {
    if (!arg.keyword.empty() && arg.keyword != "backend") {
      return false;
    }
    const auto value = literal_value(tokens, arg.begin, arg.end);
    return value && lower_trimmed(*value) == "cpu";
  });
  if (cpu) {
    add_evidence(matcher.rule, bracket.root);
    on_cpu_device_evidence();
  }
}

// jax.default_device(<CPU device>): a CPU device expression inside the call (seen while it was
// captured) or a name assigned from one.
void Scanner::check_cpu_device(const Bracket& bracket, std::span<const Token> tokens, std::size_t end) {
  bool cpu = bracket.saw_cpu_device;
  for (std::size_t i = bracket.capture_start; i < end && !cpu; ++i) {
    const Token& t = tokens[i];
    cpu = t.kind == TokenKind::name && (i == bracket.capture_start || !is_op(tokens[i - 1], ".")) &&
          std::find(m_cpu_names.begin(), m_cpu_names.end(), t.text) != m_cpu_names.end();
  }
  if (cpu) {
    add_evidence(k_call_matchers[bracket.matcher].rule, bracket.root);
  }
}

// jax.config.update(name, value), os.environ.setdefault(name, value), os.putenv(name, value):
// the name is looked up in the matcher's key table, whose row says how to read the value.
void Scanner::check_key_value(const Bracket& bracket, std::span<const Token> tokens, const Args& args) {
  const bool config = k_call_matchers[bracket.matcher].check == ArgCheck::config_key;
  const Arg* name = args.positional(0);
  const Arg* value = args.positional(1);
  if (name == nullptr || value == nullptr) {
    return;
  }
  const auto key = literal_value(tokens, name->begin, name->end);
  if (!key) {
    return;
  }
  const KeyRule* rule = config ? find_config_key(*key) : find_env_key(*key);
  if (rule != nullptr && value_matches(rule->check, tokens, value->begin, value->end)) {
    add_evidence(rule->rule, bracket.root);
  }
}

// os.environ.update(NAME=value, ...) or os.environ.update({"NAME": value, ...}).
void Scanner::check_env_mapping(const Bracket& bracket, std::span<const Token> tokens, const Args& args) {
  for (const Arg& arg : args.items) {
    if (!arg.keyword.empty()) {
      const KeyRule* rule = find_env_key(arg.keyword);
      if (rule != nullptr && value_matches(rule->check, tokens, arg.begin, arg.end)) {
        add_evidence(rule->rule, bracket.root);
      }
      continue;
    }
    if (arg.end - arg.begin < 2 || !is_op(tokens[arg.begin], "{") || !is_op(tokens[arg.end - 1], "}")) {
      continue;
    }
    const Args entries = split_args(tokens, arg.begin + 1, arg.end - 1, ",");
    for (const Arg& entry : entries.items) {
      const Args pair = split_args(tokens, entry.begin, entry.end, ":");
      if (pair.items.size() != 2 || !pair.items[0].keyword.empty()) {
        continue;
      }
      const auto key = literal_value(tokens, pair.items[0].begin, pair.items[0].end);
      const KeyRule* rule = key ? find_env_key(*key) : nullptr;
      if (rule != nullptr && value_matches(rule->check, tokens, pair.items[1].begin, pair.items[1].end)) {
        add_evidence(rule->rule, bracket.root);
      }
    }
  }
}

} // namespace tpulaunch::scan
