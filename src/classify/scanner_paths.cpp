// The path a load names (runpy.run_path(PATH), exec(open(PATH).read()), ...), read from its
// tokens: a string literal (relative to the working folder), or a literal joined to this file's
// folder (`os.path.join(os.path.dirname(__file__), "x.py")`, `Path(__file__).parent / "x.py"`,
// `Path(__file__).with_name("x.py")`). Anything else is no path the classifier can follow.
#include <algorithm>

#include "classify/scanner.hpp"

namespace tpulaunch::scan {
namespace {

// Callees that make a path of one path-like argument without changing which file it names.
constexpr std::array<std::string_view, 9> k_path_wrappers{"pathlib.Path", "pathlib.PurePath", "pathlib.PosixPath",
                                                          "Path",         "PurePath",         "str",
                                                          "os.fspath",    "os.path.abspath",  "os.path.normpath"};
constexpr std::array<std::string_view, 2> k_file_wrappers{"os.path.realpath", "os.path.expanduser"};

// The index of the bracket matching the opener at `open`, before `end`; `end` when none.
std::size_t closer_of(std::span<const Token> tokens, std::size_t open, std::size_t end) {
  std::size_t level = 0;
  for (std::size_t i = open; i < end; ++i) {
    if (is_opener(tokens[i])) {
      ++level;
    } else if (is_closer(tokens[i]) && --level == 0) {
      return i;
    }
  }
  return end;
}

// [begin, end) without parentheses around the whole of it.
void strip_parentheses(std::span<const Token> tokens, std::size_t& begin, std::size_t& end) {
  while (end - begin >= 2 && is_op(tokens[begin], "(") && closer_of(tokens, begin, end) == end - 1) {
    ++begin;
    --end;
  }
}

// `<object>.name(args)` ending at `end`: where the object ends, the method's name and its arguments.
struct MethodCall {
  std::size_t object_end = 0;
  std::string_view name;
  std::size_t args_begin = 0;
  std::size_t args_end = 0;
};

std::optional<MethodCall> method_call(std::span<const Token> tokens, std::size_t begin, std::size_t end) {
  if (end - begin < 4 || !is_op(tokens[end - 1], ")")) {
    return std::nullopt;
  }
  std::size_t level = 0;
  std::size_t open = end - 1;
  for (;; --open) {
    if (is_closer(tokens[open])) {
      ++level;
    } else if (is_opener(tokens[open]) && --level == 0) {
      break;
    }
    if (open == begin) {
      return std::nullopt;
    }
  }
  if (open < begin + 3 || tokens[open - 1].kind != TokenKind::name || !is_op(tokens[open - 2], ".")) {
    return std::nullopt;
  }
  return MethodCall{open - 2, tokens[open - 1].text, open + 1, end - 1};
}

// "a" + "/" + "b", for the parts of a joined path.
void join_to(std::string& path, std::string_view part) {
  if (!path.empty() && !path.ends_with('/')) {
    path += '/';
  }
  path += part;
}

} // namespace

std::optional<Scanner::CallParts> Scanner::call_parts(std::span<const Token> tokens, std::size_t begin,
                                                      std::size_t end) const {
  std::size_t open = begin;
  while (open < end && (tokens[open].kind == TokenKind::name || is_op(tokens[open], "."))) {
    ++open;
  }
  if (open == begin || open >= end || !is_op(tokens[open], "(") || closer_of(tokens, open, end) != end - 1) {
    return std::nullopt;
  }
  auto callee = qualify(tokens, begin, open);
  if (!callee) {
    return std::nullopt;
  }
  return CallParts{std::move(*callee), open + 1, end - 1};
}

// This file's own path: `__file__`, or a wrapper of it (os.path.abspath(__file__),
// Path(__file__).resolve(), ...).
bool Scanner::file_expression(std::span<const Token> tokens, std::size_t begin, std::size_t end) const {
  strip_parentheses(tokens, begin, end);
  if (end == begin + 1) {
    return is_name(tokens[begin], "__file__");
  }
  if (const auto call = call_parts(tokens, begin, end);
      call && (listed_in(call->callee, k_path_wrappers) || listed_in(call->callee, k_file_wrappers))) {
    const Args args = split_args(tokens, call->args_begin, call->args_end, ",");
    return args.items.size() == 1 && args.items[0].keyword.empty() &&
           file_expression(tokens, args.items[0].begin, args.items[0].end);
  }
  if (const auto method = method_call(tokens, begin, end);
      method && (method->name == "resolve" || method->name == "absolute") && method->args_begin == method->args_end) {
    return file_expression(tokens, begin, method->object_end);
  }
  return false;
}

// The folder this file is in: os.path.dirname(<file>), <file path>.parent, or a wrapper of one.
bool Scanner::folder_expression(std::span<const Token> tokens, std::size_t begin, std::size_t end) const {
  strip_parentheses(tokens, begin, end);
  if (end - begin >= 3 && is_name(tokens[end - 1], "parent") && is_op(tokens[end - 2], ".")) {
    return file_expression(tokens, begin, end - 2);
  }
  if (const auto call = call_parts(tokens, begin, end)) {
    const Args args = split_args(tokens, call->args_begin, call->args_end, ",");
    if (args.items.size() != 1 || !args.items[0].keyword.empty()) {
      return false;
    }
    if (call->callee == "os.path.dirname") {
      return file_expression(tokens, args.items[0].begin, args.items[0].end);
    }
    return (listed_in(call->callee, k_path_wrappers) || listed_in(call->callee, k_file_wrappers)) &&
           folder_expression(tokens, args.items[0].begin, args.items[0].end);
  }
  if (const auto method = method_call(tokens, begin, end);
      method && (method->name == "resolve" || method->name == "absolute") && method->args_begin == method->args_end) {
    return folder_expression(tokens, begin, method->object_end);
  }
  return false;
}

// Long (about 85 lines) because it is one case per way of writing a path, each a few lines: a
// literal, `/` joins, os.path.join, a wrapper such as Path(...), and the joinpath/with_name methods.
std::optional<Scanner::PathLiteral> Scanner::path_expression(std::span<const Token> tokens, std::size_t begin,
                                                             std::size_t end) const {
  strip_parentheses(tokens, begin, end);
  if (begin >= end) {
    return std::nullopt;
  }
  if (auto literal = literal_value(tokens, begin, end)) {
    return PathLiteral{std::move(*literal), false};
  }
  // The rest, joined: every part of `parts` a string literal.
  const auto join_literals =
      [&](PathLiteral base,
          const std::vector<std::pair<std::size_t, std::size_t>>& parts) -> std::optional<PathLiteral> {
    for (const auto& [from, to] : parts) {
      const auto part = literal_value(tokens, from, to);
      if (!part) {
        return std::nullopt;
      }
      join_to(base.path, *part);
    }
    return base;
  };
  // A base (this file's folder, or a path) and literal parts: `base / "a" / "b"`, join(base, "a").
  const auto joined = [&](std::size_t base_begin, std::size_t base_end,
                          const std::vector<std::pair<std::size_t, std::size_t>>& parts) -> std::optional<PathLiteral> {
    if (folder_expression(tokens, base_begin, base_end)) {
      return join_literals(PathLiteral{"", true}, parts);
    }
    if (auto base = path_expression(tokens, base_begin, base_end)) {
      return join_literals(std::move(*base), parts);
    }
    return std::nullopt;
  };
  std::vector<std::pair<std::size_t, std::size_t>> slashes;
  std::size_t level = 0;
  std::size_t start = begin;
  for (std::size_t i = begin; i < end; ++i) {
    if (is_opener(tokens[i])) {
      ++level;
    } else if (is_closer(tokens[i]) && level > 0) {
      --level;
    } else if (level == 0 && is_op(tokens[i], "/")) {
      slashes.emplace_back(start, i);
      start = i + 1;
    }
  }
  if (!slashes.empty()) {
    slashes.emplace_back(start, end);
    const auto base = slashes.front();
    slashes.erase(slashes.begin());
    return joined(base.first, base.second, slashes);
  }
  if (const auto call = call_parts(tokens, begin, end)) {
    const Args args = split_args(tokens, call->args_begin, call->args_end, ",");
    std::vector<std::pair<std::size_t, std::size_t>> rest;
    for (std::size_t i = 1; i < args.items.size(); ++i) {
      if (!args.items[i].keyword.empty()) {
        return std::nullopt;
      }
      rest.emplace_back(args.items[i].begin, args.items[i].end);
    }
    const bool join = call->callee == "os.path.join" ||
                      (rest.empty() ? listed_in(call->callee, k_path_wrappers)
                                    : call->callee.ends_with("Path") && listed_in(call->callee, k_path_wrappers));
    if (!join || args.items.empty() || !args.items[0].keyword.empty()) {
      return std::nullopt;
    }
    return joined(args.items[0].begin, args.items[0].end, rest);
  }
  if (const auto method = method_call(tokens, begin, end)) {
    const Args args = split_args(tokens, method->args_begin, method->args_end, ",");
    std::vector<std::pair<std::size_t, std::size_t>> parts;
    for (const Arg& arg : args.items) {
      if (!arg.keyword.empty()) {
        return std::nullopt;
      }
      parts.emplace_back(arg.begin, arg.end);
    }
    if (method->name == "joinpath") {
      return joined(begin, method->object_end, parts);
    }
    if (method->name == "with_name" && parts.size() == 1 && file_expression(tokens, begin, method->object_end)) {
      return join_literals(PathLiteral{"", true}, parts);
    }
    if ((method->name == "resolve" || method->name == "absolute") && parts.empty()) {
      return path_expression(tokens, begin, method->object_end);
    }
  }
  return std::nullopt;
}

} // namespace tpulaunch::scan
