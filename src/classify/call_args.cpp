#include "classify/call_args.hpp"

#include <algorithm>
#include <array>

#include "classify/token_match.hpp"
#include "tpulaunch/util/utf8.hpp"

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

bool value_test(ValueCheck check, std::string_view value) {
  switch (check) {
  case ValueCheck::is_cpu:
  case ValueCheck::device:
    return lower_trimmed(value) == "cpu";
  case ValueCheck::first_platform_cpu:
    return first_platform_is_cpu(value);
  case ValueCheck::force_host_flag:
    return value.find(k_force_host_flag) != std::string_view::npos;
  case ValueCheck::any:
    return true;
  }
  return false;
}

ValueExpr read_value(std::span<const Token> tokens, std::size_t begin, std::size_t end) {
  ValueExpr out;
  if (auto literal = literal_value(tokens, begin, end)) {
    out.shape = ValueExpr::Shape::literal;
    out.literal = std::move(*literal);
    return out;
  }
  if (end == begin + 1) {
    const Token& t = tokens[begin];
    if (t.kind == TokenKind::number || is_name(t, "None") || is_name(t, "True") || is_name(t, "False")) {
      out.shape = ValueExpr::Shape::constant;
    } else if (t.kind == TokenKind::name) {
      out.shape = ValueExpr::Shape::name;
      out.name = t.text;
    }
  }
  return out;
}

std::vector<std::string_view> bare_names(std::span<const Token> tokens, std::size_t begin, std::size_t end) {
  static constexpr std::array<std::string_view, 14> k_keywords{"and", "or", "not", "in",  "is",    "if",  "else",
                                                               "None", "True", "False", "for", "lambda", "await", "async"};
  std::vector<std::string_view> out;
  for (std::size_t i = begin; i < end; ++i) {
    const Token& t = tokens[i];
    if (t.kind != TokenKind::name ||
        std::find(k_keywords.begin(), k_keywords.end(), t.text) != k_keywords.end()) {
      continue;
    }
    const bool after_dot = i > begin && is_op(tokens[i - 1], ".");
    const bool before_access = i + 1 < end && (is_op(tokens[i + 1], ".") || is_op(tokens[i + 1], "(") ||
                                               is_op(tokens[i + 1], "["));
    if (!after_dot && !before_access) {
      out.push_back(t.text);
    }
  }
  return out;
}

std::string_view source_view(std::span<const Token> tokens, std::size_t begin, std::size_t end) {
  const char* first = tokens[begin].text.data();
  const char* last = tokens[end - 1].text.data() + tokens[end - 1].text.size();
  return {first, static_cast<std::size_t>(last - first)};
}

std::string source_text(std::span<const Token> tokens, std::size_t begin, std::size_t end, std::size_t max) {
  if (begin >= end) {
    return {};
  }
  const char* first = tokens[begin].text.data();
  const char* last = tokens[end - 1].text.data() + tokens[end - 1].text.size();
  std::string text;
  for (const char* c = first; c < last; ++c) {
    text += (*c == '\n' || *c == '\r' || *c == '\t') ? ' ' : *c;
  }
  if (text.size() > max) {
    text.resize(utf8_cut(text, max));
    text += "...";
  }
  return text;
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

const Arg* arg_at(const Args& args, std::size_t position, std::string_view keyword) {
  if (!keyword.empty()) {
    if (const Arg* arg = args.keyword(keyword)) {
      return arg;
    }
  }
  return args.positional(position);
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
