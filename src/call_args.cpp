#include "call_args.hpp"

#include "token_match.hpp"

namespace tpulaunch::scan {
namespace {

template <std::size_t N> const KeyRule* find_key(const std::array<KeyRule, N>& table, std::string_view key) {
  for (const auto& row : table) {
    if (row.key == key) {
      return &row;
    }
  }
  return nullptr;
}

} // namespace

std::string lower_trimmed(std::string_view value) {
  const auto first = value.find_first_not_of(" \t\r\n\f\v");
  if (first == std::string_view::npos) {
    return {};
  }
  const auto last = value.find_last_not_of(" \t\r\n\f\v");
  std::string out(value.substr(first, last - first + 1));
  for (auto& c : out) {
    if (c >= 'A' && c <= 'Z') {
      c = static_cast<char>(c - 'A' + 'a');
    }
  }
  return out;
}

bool first_platform_is_cpu(std::string_view value) { return lower_trimmed(value.substr(0, value.find(','))) == "cpu"; }

std::optional<std::string> literal_value(std::span<const Token> tokens, std::size_t begin, std::size_t end) {
  if (begin >= end) {
    return std::nullopt;
  }
  std::string out;
  for (std::size_t i = begin; i < end; ++i) {
    if (!is_literal_string(tokens[i])) {
      return std::nullopt;
    }
    out += string_value(tokens[i]);
  }
  return out;
}

bool value_matches(ValueCheck check, std::span<const Token> tokens, std::size_t begin, std::size_t end) {
  switch (check) {
  case ValueCheck::first_platform_cpu: {
    const auto value = literal_value(tokens, begin, end);
    return value && first_platform_is_cpu(*value);
  }
  case ValueCheck::force_host_flag:
    // Any string in the expression: `os.environ.get("XLA_FLAGS", "") + " --xla_force..."` and
    // f-strings count, because the flag name itself is the evidence.
    for (std::size_t i = begin; i < end; ++i) {
      if (tokens[i].kind == TokenKind::string && tokens[i].body().find(k_force_host_flag) != std::string_view::npos) {
        return true;
      }
    }
    return false;
  case ValueCheck::any:
    return true;
  }
  return false;
}

const KeyRule* find_env_key(std::string_view key) { return find_key(k_env_keys, key); }
const KeyRule* find_config_key(std::string_view key) { return find_key(k_config_keys, key); }

const Arg* Args::positional(std::size_t index) const {
  for (const auto& item : items) {
    if (item.keyword.empty()) {
      if (index == 0) {
        return &item;
      }
      --index;
    }
  }
  return nullptr;
}

const Arg* Args::keyword(std::string_view name) const {
  for (const auto& item : items) {
    if (item.keyword == name) {
      return &item;
    }
  }
  return nullptr;
}

Args split_args(std::span<const Token> tokens, std::size_t begin, std::size_t end, std::string_view separator) {
  Args args;
  const auto push = [&](std::size_t from, std::size_t to) {
    if (from >= to) {
      return;
    }
    Arg arg;
    if (to - from >= 2 && tokens[from].kind == TokenKind::name && is_op(tokens[from + 1], "=")) {
      arg.keyword = tokens[from].text;
      from += 2;
    }
    arg.begin = from;
    arg.end = to;
    args.items.push_back(arg);
  };
  std::size_t depth = 0;
  std::size_t start = begin;
  for (std::size_t i = begin; i < end; ++i) {
    const Token& t = tokens[i];
    if (is_opener(t)) {
      ++depth;
    } else if (is_closer(t)) {
      depth = depth > 0 ? depth - 1 : 0;
    } else if (depth == 0 && is_op(t, separator)) {
      push(start, i);
      start = i + 1;
    }
  }
  push(start, end);
  return args;
}

} // namespace tpulaunch::scan
