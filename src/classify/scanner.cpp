// The scanner's per-token path (inlined into PythonLexer::run), evidence rows, dotted chains,
// brackets and statement ends (assignments are in scanner_assign.cpp).
#include <algorithm>
#include <cstring>
#include <numeric>

#include <fmt/format.h>

#include "classify/call_args.hpp"
#include "classify/python_lexer_stream.hpp"
#include "classify/scanner.hpp"
#include "classify/token_match.hpp"
#include "tpulaunch/util/utf8.hpp"

namespace tpulaunch::scan {
namespace {

// True when `source` holds "initialize" anywhere. Found from its 'z', which is rare in Python
// source, so memchr passes over most of the file at vector speed (a search from the common 'i'
// stops every few bytes).
bool holds_initialize(std::string_view source) {
  constexpr std::string_view word = "initialize";
  constexpr std::size_t z = 8; // word[z] == 'z'
  std::size_t at = z;
  while (at + 1 < source.size()) {
    const void* found = std::memchr(source.data() + at, 'z', source.size() - at - 1);
    if (found == nullptr) {
      return false;
    }
    const auto pos = static_cast<std::size_t>(static_cast<const char*>(found) - source.data());
    if (source.substr(pos - z, word.size()) == word) {
      return true;
    }
    at = pos + 1;
  }
  return false;
}

} // namespace

Scanner::Scanner(std::string_view source, const ConstantLookup* lookup, std::uint32_t embed_depth)
    : m_src(source), m_lookup(lookup), m_embed_depth(embed_depth) {
  m_sentinel.kind = TokenKind::end;
  m_sentinel.text = source.substr(0, 0);
  m_window.fill(m_sentinel);
  // The callee part of the filter is the same for every file: computed once.
  static const std::bitset<4096> k_callee_filter = [] {
    std::bitset<4096> filter;
    for (const auto& matcher : k_call_matchers) {
      filter.set(filter_hash(matcher.callee.substr(matcher.callee.rfind('.') + 1)));
    }
    filter.set(filter_hash("default_backend"));
    return filter;
  }();
  m_filter = k_callee_filter;
  if (holds_initialize(source)) {
    m_blocks.emplace(source);
  }
}

void Scanner::add_evidence(Rule rule, const Pos& pos, std::string detail) {
  add_evidence_at(rule, pos, m_stmt, std::move(detail));
}

void Scanner::add_evidence_at(Rule rule, const Pos& pos, std::uint32_t stmt, std::string detail) {
  for (std::size_t i = m_evidence.size(); i > 0 && m_evidence[i - 1].line == pos.line; --i) {
    if (m_evidence[i - 1].rule == rule && m_evidence[i - 1].column == pos.column) {
      return; // one row per rule per position
    }
  }
  // The evidence text is the whole physical line of the match, trimmed.
  std::size_t begin = std::min(pos.offset, m_src.size());
  while (begin > 0 && m_src[begin - 1] != '\n' && m_src[begin - 1] != '\r') {
    --begin;
  }
  if (begin == 0 && m_src.starts_with("\xEF\xBB\xBF")) {
    begin = 3;
  }
  std::size_t end = std::min(pos.offset, m_src.size());
  while (end < m_src.size() && m_src[end] != '\n' && m_src[end] != '\r') {
    ++end;
  }
  std::string_view text = m_src.substr(begin, end - begin);
  const auto first = text.find_first_not_of(" \t\f\v");
  text = first == std::string_view::npos ? std::string_view() : text.substr(first);
  text = text.substr(0, text.find_last_not_of(" \t\f\v") + 1);
  std::string shown(text.substr(0, utf8_cut(text, k_max_evidence_text)));
  if (text.size() > k_max_evidence_text) {
    shown += "..."; // a minified or generated line: the start is enough to find it
  }

  const ClassifierRule& row = classifier_rule(rule);
  m_evidence.push_back(
      Evidence{rule, row.category, pos.line, pos.column, std::move(shown), row.implies, std::move(detail)});
  m_evidence_stmt.push_back(stmt);
  if (rule == Rule::backend_is_tpu) {
    m_backend_stmts.push_back(stmt);
  }
}

// A call whose arguments never end (or run past k_max_capture tokens): the scanner gives up on
// them rather than grow, and fails closed: what they would have selected is unknown.
void Scanner::stop_capturing() {
  const std::string detail = fmt::format("the arguments run past {} tokens, so the scanner stopped reading them",
                                         k_max_capture);
  for (auto& bracket : m_brackets) {
    if (bracket.capturing && k_call_matchers[bracket.matcher].check != ArgCheck::none &&
        k_call_matchers[bracket.matcher].check != ArgCheck::backend_probe) {
      add_evidence(Rule::platform_unresolved, bracket.root, detail);
    }
    bracket.capturing = false;
  }
  if (m_env.active) {
    add_evidence(Rule::platform_unresolved, m_env.root, detail);
  }
  m_env.active = false;
  if (m_assert.active) {
    add_evidence_at(Rule::result_check, m_assert.pos, m_assert.stmt, {}); // as if read to its end
    m_assert.active = false;
  }
  m_capturing = 0;
  m_capture.clear();
}

// back(last) is a name; returns the index of the first name of the dotted chain ending there,
// or 0 when the chain does not start at a plain name (an attribute of a call or subscript).
std::size_t Scanner::chain_root(std::size_t last) const {
  std::size_t i = last;
  while (i + 2 < k_window && is_op(back(i + 1), ".") && back(i + 2).kind == TokenKind::name) {
    i += 2;
  }
  if (i + 1 >= k_window || is_op(back(i + 1), ".")) {
    return 0;
  }
  return i;
}

const std::string* Scanner::alias_of(std::string_view local) const {
  for (auto it = m_aliases.rbegin(); it != m_aliases.rend(); ++it) {
    if (it->local == local) {
      return &it->qualified;
    }
  }
  return m_outer != nullptr ? m_outer->alias_of(local) : nullptr;
}

void Scanner::resolve_chain(std::size_t root, std::size_t last) {
  const std::string_view root_name = back(root).text;
  m_qualified.clear();
  if (const std::string* qualified = alias_of(root_name)) {
    m_qualified += *qualified;
  } else {
    // An unbound root stands for itself, so `jax.devices` matches even without a visible
    // `import jax` (star imports, exec'd snippets) while `foo.devices` never does.
    m_qualified += root_name;
  }
  for (std::size_t i = root; i > last; i -= 2) {
    m_qualified += '.';
    m_qualified += back(i - 2).text;
  }
}

void Scanner::on_chain_end(const Token& tok) {
  const Token& last = back(1);
  if (!maybe_interesting(last.text) || m_import.state != ImportState::none || is_op(tok, "=")) {
    return; // not a candidate, an import binding, or an assignment target / keyword argument
  }
  const std::size_t root = chain_root(1);
  if (root == 0) {
    return;
  }
  const Token& before = back(root + 1);
  if (before.kind == TokenKind::name && is_definition_keyword(before.text)) {
    return;
  }
  // A dotted chain ends in the name written last (an import renames only its first): one that no
  // callee ends in is done before its chain is built. One name may be bound to any callee.
  if (root != 1 && !equals(last.text, "default_backend") && matchers_named(last.text).empty()) {
    return;
  }
  resolve_chain(root, 1);
  const std::string_view qualified = m_qualified;
  const std::span<const std::uint8_t> candidates = matchers_named(last_name(qualified));
  const bool call = is_op(tok, "(");
  const Pos root_pos = pos_of(back(root));
  if (call && qualified == k_default_backend.callee) {
    if (m_compare.active && !m_compare.want_tpu_string) {
      add_evidence(Rule::backend_is_tpu, m_compare.start);
      m_compare.active = false;
    }
    return;
  }
  for (const std::size_t i : candidates) {
    const CallMatcher& matcher = k_call_matchers[i];
    if (matcher.callee != qualified) {
      continue;
    }
    if (!call && !matcher.reference) {
      // `partial(jax.devices, "cpu")`, `f = jax.config.update`: a selecting function (or one that
      // loads code) handed on as a value is called where the classifier cannot see with what.
      // Only a dotted use counts: a bare name may be a variable that shadows an imported one.
      if ((arg_selects(matcher) || loads_code(matcher)) && root != 1) {
        add_evidence(arg_selects(matcher) ? Rule::platform_unresolved : Rule::import_unresolved, root_pos,
                     fmt::format("{} is used as a value here, not called: what it is called with is only known at "
                                 "run time",
                                 matcher.callee));
      }
      continue;
    }
    if (matcher.check == ArgCheck::none) {
      const bool output = call && matcher.output_rule && in_output_call();
      add_evidence(output ? *matcher.output_rule : *matcher.rule, root_pos);
      if (matcher.says_condition && call) {
        note_condition(root);
      }
    } else if (call && m_next_call == k_no_matcher) {
      m_next_call = static_cast<std::uint16_t>(i);
      m_next_call_root = root_pos;
    }
  }
}

void Scanner::open_bracket(const Token& tok) {
  if (m_capturing > 0) {
    m_capture.push_back(tok);
  }
  const std::uint16_t matcher = tok.text[0] == '(' ? m_next_call : k_no_matcher;
  m_next_call = k_no_matcher;
  if (m_brackets.size() >= k_max_brackets || m_bracket_overflow > 0) {
    if (!m_reported_nesting) {
      // Nothing deeper is matched any more: fail closed.
      m_reported_nesting = true;
      add_evidence(Rule::source_unreadable, pos_of(tok), fmt::format("brackets nested deeper than {}", k_max_brackets));
    }
    ++m_bracket_overflow;
    return;
  }
  Bracket bracket;
  bracket.open = tok.text[0];
  bracket.open_count = m_count;
  bracket.offset = static_cast<std::size_t>(tok.text.data() - m_src.data());
  if (matcher != k_no_matcher) {
    bracket.matcher = matcher;
    bracket.capturing = true;
    bracket.capture_start = m_capture.size();
    bracket.root = m_next_call_root;
    bracket.suppress_backend_kwarg = k_call_matchers[matcher].check == ArgCheck::backend_cpu;
    ++m_capturing;
  }
  m_brackets.push_back(bracket);
}

void Scanner::close_bracket(const Token& tok) {
  if (m_bracket_overflow > 0) {
    --m_bracket_overflow;
  } else if (!m_brackets.empty()) {
    const Bracket bracket = m_brackets.back();
    m_brackets.pop_back();
    if (bracket.capturing) {
      --m_capturing;
      evaluate_call(bracket, m_capture.size());
    }
  }
  if (m_capturing > 0) {
    m_capture.push_back(tok);
  } else {
    m_capture.clear();
  }
}

void Scanner::end_statement(const Token& tok) {
  evaluate_env_assignment();
  if (m_assert.active) {
    evaluate_assert();
  }
  m_init_watch.active = false;
  if (!m_assign_target.empty() && m_assign_stmt == m_stmt) {
    note_backend_assignment();
  }
  if (!m_backend_stmts.empty() && m_backend_stmts.back() == m_stmt && tok.kind == TokenKind::newline &&
      is_op1(back(1), ':')) {
    m_guard_stmts.push_back(m_stmt);
  }
  ++m_stmt;
  m_assign_target = {};
}

// Per-token work, split by kind: PythonLexer::run calls these from the place where it recognized
// the kind, so after inlining there is no second dispatch on the kind here. Tests are on lengths
// and single bytes before any string comparison; rare work is in out-of-line helpers.
inline bool Scanner::prologue(const Token& tok, bool dot) {
  if (m_compare.active) {
    step_compare(tok);
  }
  const Token& prev = back(1);
  if (!dot && prev.kind == TokenKind::name && maybe_interesting(prev.text)) {
    on_chain_end(tok);
  }
  const bool importing = m_import.state != ImportState::none;
  if (importing) {
    step_import(tok);
  }
  return importing;
}

inline void Scanner::epilogue(const Token& tok, bool captured) {
  if (m_capturing > 0) {
    if (!captured) {
      m_capture.push_back(tok);
    }
    if (m_capture.size() > k_max_capture) {
      stop_capturing(); // a call that never closes: give up on its arguments rather than grow
    }
  }
  (void)tok; // the lexer built `tok` in slot(): committing it is just advancing the ring
  ++m_count;
}

inline bool Scanner::on_name(const Token& tok) {
  const bool importing = prologue(tok, false);
  const std::string_view text = tok.text;
  // Only in, from, raise, import and assert matter: one length test rejects most names.
  switch (text.size()) {
  case 2:
    if (m_init_watch.active && text[0] == 'i' && text[1] == 'f' && depth() == m_init_watch.depth) {
      set_expression_condition(m_init_watch.row, tok.line); // `initialize() if c else ...`
    } else if (text[0] == 'i' && text[1] == 'n') {
      if (is_name(back(2), "for") && back(1).kind == TokenKind::name && statement_start(back(3))) {
        // `for NAME in <devices>:` binds NAME to each device, as `NAME = <device>` would.
        m_assign_target = back(1).text;
        m_assign_stmt = m_stmt;
        m_assign_eq = m_count;
      }
      start_compare(tok);
    }
    break;
  case 4:
    if (!importing && equals(text, "from")) {
      step_import(tok);
    }
    break;
  case 5:
    if (equals(text, "raise") && !is_op1(back(1), '.')) {
      add_evidence(Rule::result_check, pos_of(tok));
    }
    break;
  case 6:
    if (!importing && equals(text, "import")) {
      step_import(tok);
    } else if (equals(text, "assert") && !is_op1(back(1), '.')) {
      start_assert(tok);
    } else if (text[0] == 'l' && equals(text, "lambda") && !m_brackets.empty() && m_bracket_overflow == 0) {
      ++m_brackets.back().lambda_params; // its parameters end at its `:`
    }
    break;
  default:
    break;
  }
  epilogue(tok, false);
  return true;
}

bool Scanner::on_literal(const Token& tok) {
  prologue(tok, false);
  if (tok.fstring) {
    on_fstring(tok); // its {fields} are code
  }
  epilogue(tok, false);
  return true;
}

bool Scanner::on_open(const Token& tok) {
  prologue(tok, false);
  open_bracket(tok);
  epilogue(tok, true);
  return true;
}

bool Scanner::on_close(const Token& tok) {
  prologue(tok, false);
  if (m_init_watch.active && depth() <= m_init_watch.depth) {
    m_init_watch.active = false; // the bracket around the call ends
  }
  if (!m_brackets.empty() && m_brackets.back().kwarg_at != 0 && m_bracket_overflow == 0) {
    finish_backend_kwarg();
  }
  close_bracket(tok);
  epilogue(tok, true);
  return true;
}

inline bool Scanner::on_op(const Token& tok) {
  const std::string_view text = tok.text;
  const bool dot = text.size() == 1 && text[0] == '.';
  prologue(tok, dot);
  bool captured = false;
  if (text.size() == 1) {
    switch (text[0]) {
    case ',':
      if (!m_brackets.empty() && m_brackets.back().kwarg_at != 0 && m_bracket_overflow == 0) {
        finish_backend_kwarg();
      }
      if (m_init_watch.active && depth() == m_init_watch.depth) {
        m_init_watch.active = false; // the next item is another expression
      }
      break;
    case '=':
      captured = on_assignment(tok);
      break;
    case ':':
      if (!m_brackets.empty() && m_bracket_overflow == 0) {
        if (m_brackets.back().lambda_params > 0) {
          --m_brackets.back().lambda_params;
        } else if (m_brackets.back().open == '{' && back(1).kind == TokenKind::string) {
          note_mapping_key(); // {"JAX_PLATFORMS": ...}
        }
      }
      break;
    case ';':
      if (depth() == 0) {
        end_statement(tok);
        captured = true;
      }
      break;
    default:
      break;
    }
  } else if (text.size() == 2 && text[1] == '=') {
    if (text[0] == '=' || text[0] == '!') {
      start_compare(tok);
    } else if (text[0] == '+' || text[0] == '|') {
      captured = on_assignment(tok);
    }
  }
  epilogue(tok, captured);
  return true;
}

bool Scanner::on_newline(const Token& tok) {
  prologue(tok, false);
  end_statement(tok);
  if (m_blocks && tok.kind == TokenKind::newline) {
    m_blocks->on_line_end(tok, is_op1(back(1), ':') ? pos_of(back(1)).offset : std::string_view::npos);
  }
  epilogue(tok, true);
  return true;
}

void Scanner::on_end(const Token& tok) { (void)on_newline(tok); }

void Scanner::finish(Classification& out) {
  drop_shadowed_builtins(); // before resolve_pending adds rows: the recorded ranges hold until then
  resolve_pending();
  // Rows were added when their match completed (a call at its `)`), so restore source order.
  std::vector<std::size_t> order(m_evidence.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [this](std::size_t a, std::size_t b) {
    const auto& x = m_evidence[a];
    const auto& y = m_evidence[b];
    return x.line != y.line ? x.line < y.line : x.column < y.column;
  });
  for (std::size_t index : order) {
    Evidence& row = m_evidence[index];
    if (!out.evidence.empty() && out.evidence.back().line == row.line && out.evidence.back().column == row.column &&
        out.evidence.back().rule == row.rule) {
      continue; // one row per rule per position (rows decided at the end may repeat one)
    }
    const std::uint32_t stmt = m_evidence_stmt[index];
    if (row.rule == Rule::result_check) {
      // `assert jax.default_backend() == "tpu"` and the raise under `if ... != "tpu":` check the
      // backend, not a result: they are backend-is-tpu evidence only.
      const bool same = std::find(m_backend_stmts.begin(), m_backend_stmts.end(), stmt) != m_backend_stmts.end();
      const bool guarded =
          stmt > 0 && std::find(m_guard_stmts.begin(), m_guard_stmts.end(), stmt - 1) != m_guard_stmts.end();
      if (same || guarded) {
        continue;
      }
    }
    out.evidence.push_back(std::move(row));
  }
}

Classification Scanner::run() {
  Classification out;
  PythonLexer lexer(m_src);
  // Streams every token straight into the callbacks above: no token buffer.
  while (!lexer.run(*this)) {
  }
  if (lexer.error()) {
    add_lex_error(*lexer.error());
  }
  finish(out);
  out.lex_error = lexer.error();
  out.imports = std::move(m_imports);
  out.loaded_files = std::move(m_loaded);
  return out;
}

} // namespace tpulaunch::scan
