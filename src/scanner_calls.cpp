// The argument checks of a matched call: evaluate_call() dispatches on the matcher's ArgCheck to
// one function per kind, each of which adds the evidence its arguments show.
#include <algorithm>

#include <fmt/format.h>

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

// jax.devices("cpu"), jax.local_devices(backend="cpu"), get_backend(platform="cpu"): the
// backend parameter (or, as before, any positional string) is "cpu". An unknown backend value is
// platform-unresolved evidence.
void Scanner::check_backend_cpu(const Bracket& bracket, std::span<const Token> tokens, const Args& args) {
  const CallMatcher& matcher = k_call_matchers[bracket.matcher];
  const bool cpu = std::any_of(args.items.begin(), args.items.end(), [&](const Arg& arg) {
    if (!arg.keyword.empty() && arg.keyword != matcher.keywords[0]) {
      return false;
    }
    const auto value = literal_value(tokens, arg.begin, arg.end);
    return value && lower_trimmed(*value) == "cpu";
  });
  if (cpu) {
    add_evidence(matcher.rule, bracket.root);
    on_cpu_device_evidence();
    return;
  }
  if (const Arg* backend = arg_at(args, matcher.position, matcher.keywords[0])) {
    check_value(ValueCheck::is_cpu, matcher.rule, tokens, backend->begin, backend->end, bracket.root, true,
                fmt::format("the {} of {}()", matcher.keywords[0], matcher.callee));
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

// jax.config.update(name, val), os.environ.setdefault(key, default), os.putenv(name, value):
// the key is looked up in the matcher's key table, whose row says how to read the value.
void Scanner::check_key_value(const Bracket& bracket, std::span<const Token> tokens, const Args& args) {
  const CallMatcher& matcher = k_call_matchers[bracket.matcher];
  const Arg* name = arg_at(args, matcher.position, matcher.keywords[0]);
  const Arg* value = arg_at(args, matcher.position + 1U, matcher.keywords[1]);
  if (name == nullptr || value == nullptr) {
    return;
  }
  const auto key = literal_value(tokens, name->begin, name->end);
  if (!key) {
    return;
  }
  const KeyRule* rule = matcher.check == ArgCheck::config_key ? find_config_key(*key) : find_env_key(*key);
  if (rule != nullptr) {
    check_value(rule->check, rule->rule, tokens, value->begin, value->end, bracket.root, true,
                fmt::format("the value of {}", rule->key));
  }
}

// os.environ.update(NAME=value, ...) or os.environ.update(<mapping>).
void Scanner::check_env_mapping(const Bracket& bracket, std::span<const Token> tokens, const Args& args) {
  for (const Arg& arg : args.items) {
    if (arg.keyword.empty()) {
      check_mapping(tokens, arg.begin, arg.end, bracket.root);
    } else if (const KeyRule* rule = find_env_key(arg.keyword)) {
      check_value(rule->check, rule->rule, tokens, arg.begin, arg.end, bracket.root, true,
                  fmt::format("the value of {}", rule->key));
    }
  }
}

} // namespace tpulaunch::scan
