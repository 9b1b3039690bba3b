// Weak multi-host evidence: a process index that is only printed, an assert that only checks
// array metadata, and a jax.distributed.initialize() that runs only under a condition.
#include <algorithm>

#include <fmt/format.h>

#include "scanner.hpp"
#include "statement_condition.hpp"

namespace tpulaunch::scan {

// True when the nearest call around the current token prints or logs its arguments
// (k_output_calls). Brackets that do not call (a list, a subscript, `if (`, a tuple) are looked
// through: `print([jax.process_index()])` prints, `print(f(jax.process_index()))` computes.
bool Scanner::in_output_call() const {
  if (m_bracket_overflow > 0) {
    return false;
  }
  for (auto it = m_brackets.rbegin(); it != m_brackets.rend(); ++it) {
    if (it->open != '(' || (it->callee_name.empty() && !it->call_of_result) ||
        (!it->callee_attribute && listed_in(it->callee_name, k_grouping_keywords))) {
      continue;
    }
    return std::any_of(k_output_calls.begin(), k_output_calls.end(), [&](const OutputCall& call) {
      return call.name == it->callee_name && call.attribute == it->callee_attribute;
    });
  }
  return false;
}

// At `assert`: its tokens are kept to the end of the statement, where evaluate_assert() decides.
void Scanner::start_assert(const Token& tok) {
  if (m_assert.active) {
    return;
  }
  m_assert = AssertStatement{true, m_capture.size(), pos_of(tok), m_stmt};
  ++m_capturing;
}

// At the end of an assert statement: its test (up to a top-level `,` and the message) is split
// at top-level `and`/`or`; when every part reads .shape, .ndim, .dtype or .size, the assert
// checks metadata (shape-assert), else a result (result-check).
void Scanner::evaluate_assert() {
  if (!m_assert.active) {
    return;
  }
  m_assert.active = false;
  --m_capturing;
  const std::span<const Token> tokens(m_capture);
  const Args parts = split_args(tokens, m_assert.capture_start + 1, tokens.size(), ",");
  bool metadata = !parts.items.empty();
  if (metadata) {
    const Arg& test = parts.items.front();
    std::size_t depth = 0;
    bool part_reads_metadata = false;
    for (std::size_t i = test.begin; i <= test.end && metadata; ++i) {
      const bool boundary = i == test.end || (depth == 0 && (is_name(tokens[i], "and") || is_name(tokens[i], "or")));
      if (boundary) {
        metadata = part_reads_metadata;
        part_reads_metadata = false;
        continue;
      }
      const Token& t = tokens[i];
      if (is_opener(t)) {
        ++depth;
      } else if (is_closer(t) && depth > 0) {
        --depth;
      } else if (t.kind == TokenKind::name && i > test.begin && is_op1(tokens[i - 1], '.') &&
                 listed_in(t.text, k_metadata_attributes)) {
        part_reads_metadata = true;
      }
    }
  }
  add_evidence_at(metadata ? "shape-assert" : "result-check", m_assert.pos, m_assert.stmt, {});
  if (m_capturing == 0) {
    m_capture.clear();
  }
}

// The whole file's tokens: lexed a second time, once, for files that need them (a value held in a
// name, a jax.distributed.initialize()).
const std::vector<Token>& Scanner::all_tokens() {
  if (!m_all_tokens) {
    m_all_tokens = tokenize(m_src);
  }
  return *m_all_tokens;
}

// Each jax.distributed.initialize() row says when it runs only under a condition.
void Scanner::note_conditions() {
  for (Evidence& row : m_evidence) {
    if (row.rule != "distributed-initialize") {
      continue;
    }
    const std::vector<Token>& tokens = all_tokens();
    const auto at = std::lower_bound(tokens.begin(), tokens.end(), row, [](const Token& t, const Evidence& e) {
      return t.line != e.line ? t.line < e.line : t.column < e.column;
    });
    if (at == tokens.end() || at->line != row.line || at->column != row.column) {
      continue;
    }
    const auto condition = condition_of(tokens, static_cast<std::size_t>(at - tokens.begin()));
    if (!condition) {
      continue;
    }
    row.detail = condition->keyword.empty()
                     ? fmt::format("conditional: it is an operand of a conditional expression (if/else, and, or) at "
                                   "line {}, so a host may never call it",
                                   condition->line)
                     : fmt::format("conditional: it runs only inside `{}` (line {}), so a host where that does not "
                                   "hold never joins",
                                   condition->header, condition->line);
  }
}

} // namespace tpulaunch::scan
