#include "classify/name_bindings.hpp"

#include <array>

#include <fmt/format.h>

#include "classify/token_match.hpp"

namespace tpulaunch::scan {
namespace {

constexpr std::size_t k_none = static_cast<std::size_t>(-1);

// Keywords that open a compound statement: its header (up to the `:`) may bind names, and a
// simple statement may follow the `:` on the same line.
constexpr std::array<std::string_view, 14> k_compound{"if",   "elif",  "else", "while", "for",   "try",   "except",
                                                      "finally", "with", "def",  "class", "async", "match", "case"};

// Simple statements that never assign with `=` at their top level.
constexpr std::array<std::string_view, 13> k_no_assignment{"return", "raise",  "assert", "pass",  "del",
                                                           "global", "nonlocal", "import", "from", "yield",
                                                           "await",  "break",  "continue"};

// Words that are never a bound name.
constexpr std::array<std::string_view, 14> k_not_names{"in",   "not",  "and",  "or",     "is",    "if",   "else",
                                                       "None", "True", "False", "lambda", "await", "for",  "as"};

template <std::size_t N> bool one_of(std::string_view word, const std::array<std::string_view, N>& words) {
  for (const auto w : words) {
    if (w == word) {
      return true;
    }
  }
  return false;
}

bool is_augmented_assignment(const Token& t) {
  static constexpr std::array<std::string_view, 13> k_ops{"+=", "-=", "*=",  "/=",  "//=", "%=", "**=",
                                                          ">>=", "<<=", "&=", "^=", "|=",  "@="};
  return t.kind == TokenKind::op && one_of(t.text, k_ops);
}

} // namespace

NameBindings::NameBindings(std::span<const Token> tokens) : m_tokens(tokens) {
  m_depth.resize(tokens.size(), 0);
  std::uint32_t depth = 0;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (is_closer(tokens[i]) && depth > 0) {
      --depth;
    }
    m_depth[i] = depth;
    if (is_opener(tokens[i])) {
      ++depth;
    }
  }
  std::size_t start = 0;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i].kind == TokenKind::newline || tokens[i].kind == TokenKind::end) {
      scan_line(start, i);
      start = i + 1;
    }
  }
}

// One logical line: simple statements separated by `;`, after at most one compound header.
void NameBindings::scan_line(std::size_t begin, std::size_t end) {
  std::size_t s = begin;
  while (s < end) {
    const Token& first = m_tokens[s];
    if (first.kind == TokenKind::name && one_of(first.text, k_compound)) {
      const std::size_t colon = header_colon(s, end);
      if (colon != k_none) {
        scan_generic(s, colon);
        scan_header(s, colon);
        s = colon + 1;
        continue;
      }
    }
    std::size_t stop = s;
    while (stop < end && !(m_depth[stop] == m_depth[begin] && is_op(m_tokens[stop], ";"))) {
      ++stop;
    }
    scan_generic(s, stop);
    scan_simple(s, stop);
    s = stop + 1;
  }
}

// The `:` that ends the compound header starting at `begin`, skipping those of lambdas.
std::size_t NameBindings::header_colon(std::size_t begin, std::size_t end) const {
  std::size_t lambdas = 0;
  for (std::size_t i = begin; i < end; ++i) {
    if (m_depth[i] != m_depth[begin]) {
      continue;
    }
    if (is_name(m_tokens[i], "lambda")) {
      ++lambdas;
    } else if (is_op(m_tokens[i], ":")) {
      if (lambdas == 0) {
        return i;
      }
      --lambdas;
    }
  }
  return k_none;
}

// def/class names and parameters, and match-case captures.
void NameBindings::scan_header(std::size_t begin, std::size_t end) {
  std::size_t s = begin;
  if (is_name(m_tokens[s], "async") && s + 1 < end) {
    ++s;
  }
  if (is_name(m_tokens[s], "case")) {
    bind_names(s + 1, end);
    return;
  }
  if (!(is_name(m_tokens[s], "def") || is_name(m_tokens[s], "class")) || s + 1 >= end) {
    return;
  }
  bind(s + 1);
  if (s + 2 >= end || !is_op(m_tokens[s + 2], "(")) {
    return;
  }
  const std::uint32_t inner = m_depth[s + 2] + 1;
  for (std::size_t i = s + 3; i < end && m_depth[i] >= inner; ++i) {
    const Token& prev = m_tokens[i - 1];
    const Token& next = m_tokens[i + 1];
    const bool after = is_op(prev, "(") || is_op(prev, ",") || is_op(prev, "*") || is_op(prev, "**");
    const bool before = is_op(next, ",") || is_op(next, "=") || is_op(next, ")") || is_op(next, ":");
    if (m_depth[i] == inner && m_tokens[i].kind == TokenKind::name && after && before) {
      bind(i);
    }
  }
}

// Forms that bind anywhere in a statement: walrus, for targets (also in comprehensions), `as`,
// lambda parameters, and the names of import, global, nonlocal and del statements.
void NameBindings::scan_generic(std::size_t begin, std::size_t end) {
  if (begin < end && is_name(m_tokens[begin], "from")) {
    scan_from_import(begin, end);
    return;
  }
  if (begin < end && is_name(m_tokens[begin], "import")) {
    for (std::size_t i = begin + 1; i < end; ++i) {
      m_star_import = m_star_import || is_op(m_tokens[i], "*");
    }
    bind_names(begin + 1, end);
    return;
  }
  if (begin < end && (is_name(m_tokens[begin], "global") || is_name(m_tokens[begin], "nonlocal"))) {
    bind_names(begin + 1, end);
    return;
  }
  if (begin < end && is_name(m_tokens[begin], "del")) {
    bind_targets(begin + 1, end);
    return;
  }
  for (std::size_t i = begin; i < end; ++i) {
    const Token& t = m_tokens[i];
    if (is_op(t, ":=") && i > begin && m_tokens[i - 1].kind == TokenKind::name) {
      bind(i - 1);
    } else if (is_name(t, "for")) {
      std::size_t j = i + 1;
      while (j < end && !(m_depth[j] == m_depth[i] && is_name(m_tokens[j], "in"))) {
        ++j;
      }
      bind_targets(i + 1, j);
    } else if (is_name(t, "as") && i + 1 < end) {
      bind_names(i + 1, is_op(m_tokens[i + 1], "(") ? matching_closer(i + 1, end) : i + 2);
    } else if (is_name(t, "lambda")) {
      for (std::size_t j = i + 1; j < end && !(m_depth[j] == m_depth[i] && is_op(m_tokens[j], ":")); ++j) {
        const Token& prev = m_tokens[j - 1];
        const bool after = is_name(prev, "lambda") || is_op(prev, ",") || is_op(prev, "*") || is_op(prev, "**");
        if (m_tokens[j].kind == TokenKind::name && after) {
          bind(j);
        }
      }
    }
  }
}

// `from [.]M import a, b as c` (or `*`): each name it binds remembers the import, for a value
// another file of the course knows.
void NameBindings::scan_from_import(std::size_t begin, std::size_t end) {
  ImportedModule module;
  module.line = m_tokens[begin].line;
  std::size_t i = begin + 1;
  for (; i < end && (is_op(m_tokens[i], ".") || is_op(m_tokens[i], "...")); ++i) {
    module.level += static_cast<std::uint32_t>(m_tokens[i].text.size());
  }
  for (; i < end && !is_name(m_tokens[i], "import"); ++i) {
    module.module += m_tokens[i].text; // names and dots
  }
  for (++i; i < end; ++i) {
    const Token& t = m_tokens[i];
    if (is_op(t, "*")) {
      m_star_import = true;
    } else if (t.kind == TokenKind::name && !is_name(t, "as")) {
      std::size_t local = i;
      if (i + 2 < end && is_name(m_tokens[i + 1], "as") && m_tokens[i + 2].kind == TokenKind::name) {
        local = i + 2;
      }
      ImportedModule imported = module;
      imported.names.emplace_back(t.text);
      m_from.push_back(std::move(imported));
      bind(local, 0, 0, static_cast<std::int32_t>(m_from.size() - 1));
      i = local;
    }
  }
}

// `NAME = value`, `NAME: T = value`, tuple and chained targets, augmented assignment.
void NameBindings::scan_simple(std::size_t begin, std::size_t end) {
  if (begin >= end || (m_tokens[begin].kind == TokenKind::name && one_of(m_tokens[begin].text, k_no_assignment))) {
    return;
  }
  const std::uint32_t top = m_depth[begin];
  std::vector<std::size_t> equals;
  bool lambda_params = false;
  for (std::size_t i = begin; i < end; ++i) {
    if (m_depth[i] != top) {
      continue;
    }
    const Token& t = m_tokens[i];
    if (is_name(t, "lambda")) {
      lambda_params = true;
    } else if (lambda_params && is_op(t, ":")) {
      lambda_params = false;
    } else if (is_augmented_assignment(t)) {
      bind_targets(begin, i);
      return;
    } else if (is_op(t, "=") && !lambda_params) {
      equals.push_back(i);
    }
  }
  if (m_tokens[begin].kind == TokenKind::name && begin + 1 < end && is_op(m_tokens[begin + 1], ":")) {
    if (!equals.empty()) {
      bind(begin, equals.front() + 1, end); // NAME: T = value
    }
    return; // a bare annotation binds nothing
  }
  if (equals.size() == 1 && equals.front() == begin + 1 && m_tokens[begin].kind == TokenKind::name) {
    bind(begin, begin + 2, end);
    return;
  }
  std::size_t from = begin;
  for (const std::size_t eq : equals) {
    bind_targets(from, eq);
    from = eq + 1;
  }
}

std::size_t NameBindings::matching_closer(std::size_t opener, std::size_t end) const {
  std::size_t i = opener + 1;
  while (i < end && m_depth[i] > m_depth[opener]) {
    ++i;
  }
  return i;
}

void NameBindings::bind(std::size_t index, std::size_t value_begin, std::size_t value_end, std::int32_t from) {
  const Token& t = m_tokens[index];
  if (t.kind != TokenKind::name) {
    return;
  }
  m_bindings[t.text].push_back(Binding{t.line, value_begin, value_end, from});
}

bool NameBindings::may_bind(std::string_view name) const {
  return m_star_import || m_bindings.contains(name) || m_bindings.contains("__getattr__");
}

void NameBindings::bind_names(std::size_t begin, std::size_t end) {
  for (std::size_t i = begin; i < end; ++i) {
    const Token& t = m_tokens[i];
    if (t.kind == TokenKind::name && !one_of(t.text, k_not_names) && (i == 0 || !is_op(m_tokens[i - 1], "."))) {
      bind(i);
    }
  }
}

// Assignment, for and del targets: a bare name binds (also inside a tuple or list target), but a
// name that is the base of an attribute, a subscript or a call (`os.environ[KEY]`, `self.x`,
// `d[k]`) is read, and so is every name inside a subscript.
void NameBindings::bind_targets(std::size_t begin, std::size_t end) {
  for (std::size_t i = begin; i < end; ++i) {
    const Token& t = m_tokens[i];
    if (is_op(t, "[") || is_op(t, "(")) {
      const Token* prev = i > begin ? &m_tokens[i - 1] : nullptr;
      if (prev != nullptr && ((prev->kind == TokenKind::name && !one_of(prev->text, k_not_names)) || is_closer(*prev))) {
        i = matching_closer(i, end); // a subscript or a call: what is inside is read
      }
      continue;
    }
    if (t.kind != TokenKind::name || one_of(t.text, k_not_names) || (i > begin && is_op(m_tokens[i - 1], "."))) {
      continue;
    }
    if (i + 1 < end && (is_op(m_tokens[i + 1], ".") || is_op(m_tokens[i + 1], "[") || is_op(m_tokens[i + 1], "("))) {
      continue; // the base of an attribute, a subscript or a call
    }
    bind(i);
  }
}

NameValue NameBindings::value_of(std::string_view name) const { return resolve(name, 0); }

NameValue NameBindings::resolve(std::string_view name, int depth) const {
  if (m_star_import) {
    return {std::nullopt, fmt::format("a star import may bind '{}'", name)};
  }
  const auto it = m_bindings.find(name);
  if (it == m_bindings.end()) {
    return {std::nullopt, fmt::format("'{}' is not assigned in this file", name)};
  }
  const auto& bindings = it->second;
  if (bindings.size() > 1) {
    std::string lines;
    for (std::size_t i = 0; i < bindings.size() && i < 5; ++i) {
      lines += fmt::format("{}{}", i == 0 ? "" : ", ", bindings[i].line);
    }
    return {std::nullopt, fmt::format("'{}' is bound {} times (lines {}{})", name, bindings.size(), lines,
                                      bindings.size() > 5 ? ", ..." : "")};
  }
  const Binding& b = bindings.front();
  if (b.from >= 0) {
    const ImportedModule& from = m_from[static_cast<std::size_t>(b.from)];
    NameValue imported{
        std::nullopt,
        fmt::format("'{}' is imported from {}{} at line {}", name, std::string(from.level, '.'), from.module, b.line),
        b.line, from};
    return imported;
  }
  if (b.value_begin == b.value_end) {
    return {std::nullopt, fmt::format("'{}' is bound at line {} by a parameter, a loop, an import or the like", name,
                                      b.line)};
  }
  if (b.value_end - b.value_begin == 1 && m_tokens[b.value_begin].kind == TokenKind::name && depth < 8) {
    NameValue inner = resolve(m_tokens[b.value_begin].text, depth + 1);
    if (!inner.value) {
      inner.why_unknown = fmt::format("'{}' = '{}' at line {}, and {}", name, m_tokens[b.value_begin].text, b.line,
                                      inner.why_unknown);
    }
    inner.line = b.line;
    return inner;
  }
  std::string value;
  for (std::size_t i = b.value_begin; i < b.value_end; ++i) {
    if (!is_literal_string(m_tokens[i])) {
      return {std::nullopt, fmt::format("'{}' is assigned at line {} a value that is not a string literal", name, b.line)};
    }
    value += string_value(m_tokens[i]);
  }
  return {std::move(value), {}, b.line};
}

} // namespace tpulaunch::scan

namespace tpulaunch {

ModuleConstant module_constant(std::string_view source, std::string_view name) {
  const std::vector<Token> tokens = tokenize(source);
  const scan::NameValue value = scan::NameBindings(tokens).value_of(name);
  return ModuleConstant{value.value, value.line, value.why_unknown, value.from};
}

bool module_may_bind(std::string_view source, std::string_view name) {
  const std::vector<Token> tokens = tokenize(source);
  return scan::NameBindings(tokens).may_bind(name);
}

} // namespace tpulaunch
