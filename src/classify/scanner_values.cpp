// Platform values: where a backend, a platform list or an XLA flag is given, a string literal is
// decided at once, a bare name once the whole file's bindings are known (name_bindings.hpp), and
// anything else (an attribute, a call, a conditional, an f-string) fails closed as
// platform-unresolved evidence. Also the fail-closed rows for source the lexer cannot read.
#include <fmt/format.h>

#include "classify/name_bindings.hpp"
#include "classify/scanner.hpp"

namespace tpulaunch::scan {

void Scanner::check_value(ValueCheck check, Rule rule, std::span<const Token> tokens, std::size_t begin,
                          std::size_t end, const Pos& pos, bool unknown_is_evidence, std::string_view what) {
  if (check == ValueCheck::any) {
    add_evidence(rule, pos);
    return;
  }
  if (check == ValueCheck::force_host_flag) {
    // The flag name itself is the evidence, wherever it is in the expression (`os.environ.get(
    // "XLA_FLAGS", "") + " --xla_force..."`, an f-string); names in it are read later.
    for (std::size_t i = begin; i < end; ++i) {
      if (tokens[i].kind == TokenKind::string && tokens[i].body().find(k_force_host_flag) != std::string_view::npos) {
        add_evidence(rule, pos);
        return;
      }
    }
    for (const std::string_view name : bare_names(tokens, begin, end)) {
      m_pending.push_back(PendingValue{name, check, rule, unknown_is_evidence, std::string(what), pos, m_stmt});
    }
    return;
  }
  const ValueExpr value = read_value(tokens, begin, end);
  switch (value.shape) {
  case ValueExpr::Shape::literal:
    if (value_test(check, value.literal)) {
      add_evidence(rule, pos);
    }
    return;
  case ValueExpr::Shape::constant:
    return;
  case ValueExpr::Shape::name:
    m_pending.push_back(PendingValue{value.name, check, rule, unknown_is_evidence, std::string(what), pos, m_stmt});
    return;
  case ValueExpr::Shape::other:
    if (unknown_is_evidence) {
      add_evidence(Rule::platform_unresolved, pos,
                   fmt::format("{} is `{}`, not a string literal", what, source_text(tokens, begin, end)));
    }
    return;
  }
}

// os.environ.update(<mapping>) and os.environ |= <mapping>: a dict display or dict(...) call is
// read key by key; any other mapping (a name, `**cfg`, a call) may set JAX_PLATFORMS.
void Scanner::check_mapping(std::span<const Token> tokens, std::size_t begin, std::size_t end, const Pos& pos) {
  const auto unresolved = [&](std::size_t from, std::size_t to) {
    add_evidence(Rule::platform_unresolved, pos,
                 fmt::format("os.environ is updated from `{}`, not a literal mapping", source_text(tokens, from, to)));
  };
  if (end - begin >= 2 && is_op(tokens[begin], "{") && is_op(tokens[end - 1], "}")) {
    for (const Arg& entry : split_args(tokens, begin + 1, end - 1, ",").items) {
      const Args pair = split_args(tokens, entry.begin, entry.end, ":");
      if (pair.items.size() != 2 || !pair.items[0].keyword.empty()) {
        unresolved(entry.begin, entry.end); // `**other`, or a comprehension
        continue;
      }
      check_key(false, tokens, pair.items[0], pair.items[1], DeviceSeen{}, pos, "an os.environ mapping");
    }
    return;
  }
  if (end - begin >= 3 && is_name(tokens[begin], "dict") && is_op(tokens[begin + 1], "(") &&
      is_op(tokens[end - 1], ")")) {
    for (const Arg& arg : split_args(tokens, begin + 2, end - 1, ",").items) {
      if (arg.keyword.empty()) {
        check_mapping(tokens, arg.begin, arg.end, pos);
      } else if (const KeyRule* rule = find_env_key(arg.keyword)) {
        check_rule_value(*rule, tokens, arg.begin, arg.end, DeviceSeen{}, pos);
      }
    }
    return;
  }
  unresolved(begin, end);
}

// At a `=` inside brackets: `backend=` as an argument of a call starts a pending keyword value,
// decided when the `,` or `)` after it arrives. A `backend=` parameter is not an argument.
void Scanner::note_keyword_argument() {
  const Token& name = back(1);
  if (name.kind != TokenKind::name || name.text.size() != 7 || !equals(name.text, "backend") ||
      !(is_op1(back(2), '(') || is_op1(back(2), ',')) || m_bracket_overflow > 0 || m_brackets.empty()) {
    return;
  }
  Bracket& inner = m_brackets.back();
  // A parameter's default value (of a def, a class header or a lambda) is a definition, not a
  // selection: only a call that passes it selects anything.
  if (inner.open != '(' || inner.suppress_backend_kwarg || inner.lambda_params > 0 ||
      is_definition_keyword(before_bracket(inner.offset).word_before)) {
    return;
  }
  inner.kwarg_at = m_count;
  inner.kwarg_pos = pos_of(name);
  // Is the callee a JAX function? Only then is an unknown value evidence (`init_process_group(
  // backend=args.backend)` is not JAX). A callee out of sight counts as JAX: fail closed.
  const std::size_t opener = m_count - inner.open_count; // back(opener) is the `(`
  inner.kwarg_jax = true;
  if (opener + 2 < k_window && back(opener + 1).kind == TokenKind::name) {
    if (const std::size_t root = chain_root(opener + 1); root != 0) {
      resolve_chain(root, opener + 1);
      inner.kwarg_jax = m_qualified.starts_with("jax");
    }
  }
}

// At the `,` or `)` ending a pending `backend=` argument of the innermost call.
void Scanner::finish_backend_kwarg() {
  Bracket& inner = m_brackets.back();
  const std::size_t count = m_count - inner.kwarg_at - 1; // value tokens: back(count) .. back(1)
  inner.kwarg_at = 0;
  if (count == 0) {
    return;
  }
  if (count + 1 >= k_window) {
    if (inner.kwarg_jax) {
      add_evidence(Rule::platform_unresolved, inner.kwarg_pos, "the backend is a long expression, not a string literal");
    }
    return;
  }
  std::vector<Token> value;
  for (std::size_t i = count; i >= 1; --i) {
    value.push_back(back(i));
  }
  check_value(ValueCheck::is_cpu, Rule::backend_cpu_kwarg, value, 0, value.size(), inner.kwarg_pos, inner.kwarg_jax,
              "the backend");
}

// A source the lexer cannot read past some point: what follows may select anything.
void Scanner::add_lex_error(const LexError& error) {
  // The lexer counts a line end as \n, \r\n or \r; find the byte offset of the error's line.
  std::size_t offset = m_src.starts_with("\xEF\xBB\xBF") ? 3 : 0;
  for (std::uint32_t line = 1; line < error.line && offset < m_src.size(); ++offset) {
    if (m_src[offset] == '\n' || (m_src[offset] == '\r' && (offset + 1 >= m_src.size() || m_src[offset + 1] != '\n'))) {
      ++line;
    }
  }
  offset = std::min(m_src.size(), offset + (error.column > 0 ? error.column - 1 : 0));
  add_evidence(Rule::source_unreadable, Pos{error.line, error.column, offset}, error.message);
}

// The bare names passed as platform values or keys, decided now that every binding is known.
// Only files that have one pay for a second pass over their tokens.
void Scanner::resolve_pending() {
  if (m_pending.empty() && m_pending_keys.empty()) {
    return;
  }
  const std::vector<Token> tokens = tokenize(m_src);
  const NameBindings bindings(tokens);
  // A key first: its row says how to read its value, which may be a name too (a PendingValue).
  for (const PendingKey& pending : m_pending_keys) {
    const NameValue key = bindings.value_of(pending.name);
    if (!key.value) {
      add_evidence(Rule::platform_unresolved, pending.pos,
                   fmt::format("the key of {} is the name '{}', whose value is unknown: {}", pending.where,
                               pending.name, key.why_unknown));
      continue;
    }
    const KeyRule* rule = pending.config ? find_config_key(*key.value) : find_env_key(*key.value);
    if (rule != nullptr && (pending.plain || rule->check == ValueCheck::force_host_flag)) {
      check_rule_value(*rule, pending.value, 0, pending.value.size(), pending.seen, pending.pos);
    }
  }
  for (std::size_t i = 0; i < m_pending.size(); ++i) {
    const PendingValue& pending = m_pending[i];
    const NameValue value = bindings.value_of(pending.name);
    if (value.value) {
      if (value_test(pending.check, *value.value)) {
        add_evidence_at(pending.rule, pending.pos, pending.stmt, {});
      }
    } else if (pending.unknown_is_evidence) {
      add_evidence_at(Rule::platform_unresolved, pending.pos, pending.stmt,
                      fmt::format("{} is the name '{}', whose value is unknown: {}", pending.what, pending.name,
                                  value.why_unknown));
    }
  }
}

} // namespace tpulaunch::scan
