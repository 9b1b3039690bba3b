// Weak multi-host evidence: a process index that is only printed, an assert that only checks
// array metadata, and a jax.distributed.initialize() that runs only under a condition.
#include <algorithm>

#include <fmt/format.h>

#include "classify/scanner.hpp"

namespace tpulaunch::scan {

// True when the nearest call around the current token prints or logs its arguments
// (k_output_calls). Brackets that do not call (a list, a subscript, `if (`, a tuple) are looked
// through: `print([jax.process_index()])` prints, `print(f(jax.process_index()))` computes.
bool Scanner::in_output_call() const {
  if (m_bracket_overflow > 0) {
    return false;
  }
  for (auto it = m_brackets.rbegin(); it != m_brackets.rend(); ++it) {
    if (it->open != '(') {
      continue;
    }
    const BeforeBracket before = before_bracket(it->offset);
    if ((before.name.empty() && !before.after_closer) ||
        (!before.attribute && listed_in(before.name, k_grouping_keywords))) {
      continue;
    }
    return std::any_of(k_output_calls.begin(), k_output_calls.end(), [&](const OutputCall& call) {
      return call.name == before.name && call.attribute == before.attribute;
    });
  }
  return false;
}

Scanner::BeforeBracket Scanner::before_bracket(std::size_t offset) const {
  const auto ident = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           static_cast<unsigned char>(c) >= 0x80;
  };
  const auto skip_blanks = [this](std::size_t i) {
    while (i > 0 && (m_src[i - 1] == ' ' || m_src[i - 1] == '\t' || m_src[i - 1] == '\f')) {
      --i;
    }
    return i;
  };
  const auto word_ending = [&](std::size_t end) {
    std::size_t begin = end;
    while (begin > 0 && ident(m_src[begin - 1])) {
      --begin;
    }
    return m_src.substr(begin, end - begin);
  };
  BeforeBracket out;
  const std::size_t end = skip_blanks(std::min(offset, m_src.size()));
  out.name = word_ending(end);
  if (out.name.empty()) {
    out.after_closer = end > 0 && (m_src[end - 1] == ')' || m_src[end - 1] == ']');
    return out;
  }
  const std::size_t before = skip_blanks(end - out.name.size());
  out.attribute = before > 0 && m_src[before - 1] == '.';
  out.word_before = out.attribute ? std::string_view() : word_ending(before);
  return out;
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
  m_assert.active = false;
  --m_capturing;
  // One pass over the test, which ends at the end of the statement or at a top-level `,` (the
  // message follows): each part between top-level `and`/`or` must read a metadata attribute.
  const std::span<const Token> tokens(m_capture);
  std::size_t depth = 0;
  bool metadata = true;
  bool part_reads_metadata = false;
  bool empty = true;
  for (std::size_t i = m_assert.capture_start + 1; i <= tokens.size() && metadata; ++i) {
    const bool end = i == tokens.size() || (depth == 0 && is_op1(tokens[i], ','));
    if (end || (depth == 0 && (is_name(tokens[i], "and") || is_name(tokens[i], "or")))) {
      metadata = part_reads_metadata;
      part_reads_metadata = false;
      if (end) {
        break;
      }
      continue;
    }
    const Token& t = tokens[i];
    empty = false;
    if (is_opener(t)) {
      ++depth;
    } else if (is_closer(t) && depth > 0) {
      --depth;
    } else if (t.kind == TokenKind::name && is_op1(tokens[i - 1], '.') && listed_in(t.text, k_metadata_attributes)) {
      part_reads_metadata = true;
    }
  }
  metadata = metadata && !empty;
  add_evidence_at(metadata ? Rule::shape_assert : Rule::result_check, m_assert.pos, m_assert.stmt, {});
  if (m_capturing == 0) {
    m_capture.clear();
  }
}

void Scanner::set_expression_condition(std::size_t row, std::uint32_t line) {
  m_evidence[row].detail = fmt::format(
      "conditional: it is an operand of a conditional expression (if/else, and, or) at line {}, so a host may never "
      "call it",
      line);
  m_init_watch.active = false;
}

// A jax.distributed.initialize() row (the last row added; back(root) is the call's first name)
// says the innermost condition it runs under: an `and`/`or`/`else` before it in its expression,
// the one-line `if c:` its statement follows, or the conditional block its line is in (an `if`
// after it in its expression is found by the watch on_name keeps).
void Scanner::note_condition(std::size_t root) {
  if (!m_blocks || m_evidence.empty() || m_evidence.back().rule != Rule::distributed_initialize) {
    return;
  }
  const std::size_t row = m_evidence.size() - 1;
  std::optional<Condition> condition;
  std::size_t level = 0;
  for (std::size_t i = root + 1; i < k_window; ++i) {
    const Token& t = back(i);
    if (t.kind == TokenKind::newline || t.kind == TokenKind::end) {
      break;
    }
    if (is_closer(t)) {
      ++level;
      continue;
    }
    if (is_opener(t)) {
      if (level == 0) {
        break;
      }
      --level;
      continue;
    }
    if (level != 0) {
      continue;
    }
    if (is_name(t, "and") || is_name(t, "or") || is_name(t, "else")) {
      set_expression_condition(row, back(root).line);
      return;
    }
    if (is_op1(t, ':')) {
      condition = conditional_header(m_src, m_blocks->line_offset(), pos_of(t).offset, m_blocks->line());
      break;
    }
    if (is_op1(t, ',') || is_op1(t, '=') || is_op(t, ":=") || is_op1(t, ';')) {
      break;
    }
  }
  if (!condition) {
    condition = m_blocks->condition();
  }
  if (condition) {
    m_evidence[row].detail = fmt::format("conditional: it runs only inside `{}` (line {}), so a host where that does "
                                         "not hold never joins",
                                         condition->header, condition->line);
  }
  m_init_watch = InitializeWatch{true, row, depth()};
}

} // namespace tpulaunch::scan
