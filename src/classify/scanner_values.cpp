// Platform values: where a backend, a platform list or an XLA flag is given, a string literal is
// decided at once, a bare name once the whole file's bindings are known (name_bindings.hpp), and
// anything else (an attribute, a call, a conditional, an f-string) fails closed as
// platform-unresolved evidence. Also the fail-closed rows for source the lexer cannot read, the
// file's bindings (made once, when first asked for) and the exec/eval/__import__ calls a function
// of the file's own shadows.
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
    if (auto attribute = module_attribute(tokens, begin, end)) {
      // `cfg.PLATFORM` of an imported course module: asked of the lesson reader in finish().
      m_pending.push_back(PendingValue{source_view(tokens, begin, end), check, rule, unknown_is_evidence,
                                       std::string(what), pos, m_stmt, std::move(attribute)});
      return;
    }
    if (unknown_is_evidence) {
      add_evidence(Rule::platform_unresolved, pos,
                   fmt::format("{} is `{}`, not a string literal", what, source_text(tokens, begin, end)));
    }
    return;
  }
}

// `mod.NAME` (or `pkg.mod.NAME`) where `mod` is bound by an import of this file: the module and
// the name, when a lookup can answer for it; nullopt for anything else (`args.platform`).
std::optional<ImportedModule> Scanner::module_attribute(std::span<const Token> tokens, std::size_t begin,
                                                        std::size_t end) const {
  if (m_lookup == nullptr || end - begin < 3 || tokens[begin].kind != TokenKind::name ||
      alias_of(tokens[begin].text) == nullptr) {
    return std::nullopt;
  }
  auto qualified = qualify(tokens, begin, end);
  if (!qualified) {
    return std::nullopt;
  }
  const auto level = static_cast<std::uint32_t>(std::min(qualified->find_first_not_of('.'), qualified->size()));
  const auto dot = qualified->rfind('.');
  if (dot == std::string::npos || dot < level) {
    return std::nullopt;
  }
  ImportedModule module;
  module.level = level;
  module.module = qualified->substr(level, dot > level ? dot - level : 0);
  module.names.push_back(qualified->substr(dot + 1));
  module.line = tokens[begin].line;
  return module;
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

namespace {

// An environment key of the table, spelled as a keyword or a string (a few byte tests first: this
// runs at every keyword argument and every string key of a dict display).
const KeyRule* env_key_named(std::string_view text) {
  if ((text.size() != 9 && text.size() != 13 && text.size() != 17 && text.size() != 18) ||
      (text[0] != 'J' && text[0] != 'X')) {
    return nullptr;
  }
  return find_env_key(text);
}

} // namespace

// True when a call or assignment that reads a whole mapping (os.environ.update(...), os.environ
// |= ...) is being captured: it reports the mapping's keys itself.
bool Scanner::in_environ_mapping() const {
  return (m_env.active && m_env.key == nullptr && m_env.key_name.empty()) ||
         std::any_of(m_brackets.begin(), m_brackets.end(), [](const Bracket& bracket) {
           return bracket.capturing && k_call_matchers[bracket.matcher].check == ArgCheck::env_mapping;
         });
}

// At a `:` in a dict display after a string: `{"JAX_PLATFORMS": value}` hands a platform to whatever
// takes the mapping (a started program's env=, os.environ.update); the value is read at the `,`
// or `}` after it, as a `backend=` argument's is.
void Scanner::note_mapping_key() {
  const Token& key = back(1);
  Bracket& inner = m_brackets.back();
  if (!(is_op1(back(2), '{') || is_op1(back(2), ',')) || key.fstring) {
    return;
  }
  const KeyRule* rule = env_key_named(key.body());
  if (rule == nullptr || string_value(key) != rule->key || in_environ_mapping()) {
    return;
  }
  inner.kwarg_at = m_count;
  inner.kwarg_pos = pos_of(key);
  inner.kwarg_key = rule;
}

// At a `=` inside brackets: `backend=` as an argument of a call starts a pending keyword value,
// decided when the `,` or `)` after it arrives, and so does an environment key
// (`dict(os.environ, JAX_PLATFORMS="cpu")`). A parameter's default is not an argument.
void Scanner::note_keyword_argument() {
  const Token& name = back(1);
  if (name.kind != TokenKind::name || !(is_op1(back(2), '(') || is_op1(back(2), ',')) || m_bracket_overflow > 0 ||
      m_brackets.empty()) {
    return;
  }
  const bool backend = name.text.size() == 7 && equals(name.text, "backend");
  const KeyRule* env_key = backend ? nullptr : env_key_named(name.text);
  if (!backend && env_key == nullptr) {
    return;
  }
  Bracket& inner = m_brackets.back();
  // A parameter's default value (of a def, a class header or a lambda) is a definition, not a
  // selection: only a call that passes it selects anything.
  if (inner.open != '(' || (backend && inner.suppress_backend_kwarg) || inner.lambda_params > 0 ||
      is_definition_keyword(before_bracket(inner.offset).word_before) || (env_key != nullptr && in_environ_mapping())) {
    return;
  }
  inner.kwarg_at = m_count;
  inner.kwarg_pos = pos_of(name);
  inner.kwarg_key = env_key;
  if (env_key != nullptr) {
    return;
  }
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
  const KeyRule* key = inner.kwarg_key;
  inner.kwarg_at = 0;
  inner.kwarg_key = nullptr;
  if (count == 0) {
    return;
  }
  if (count + 1 >= k_window) {
    if (key != nullptr || inner.kwarg_jax) {
      add_evidence(Rule::platform_unresolved, inner.kwarg_pos,
                   fmt::format("{} is a long expression, not a string literal",
                               key != nullptr ? fmt::format("the value of {}", key->key) : std::string("the backend")));
    }
    return;
  }
  std::vector<Token> value;
  for (std::size_t i = count; i >= 1; --i) {
    value.push_back(back(i));
  }
  if (key != nullptr) {
    check_rule_value(*key, value, 0, value.size(), DeviceSeen{}, inner.kwarg_pos);
    return;
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

namespace {

// `'cpu'` for a value in a note.
std::string quoted(std::string_view value) {
  return fmt::format("'{}'", value);
}

} // namespace

// The value of a name another file of the course binds (`from common.cfg import PLATFORM`, or
// `cfg.PLATFORM`), asked of the lookup: `shown` names it in the notes. With a value, `note` says
// where it comes from; without, why_unknown says why not.
NameValue Scanner::imported_value(const ImportedModule& from, std::string_view shown, NameValue known,
                                  std::string& note) const {
  const std::string module = std::string(from.level, '.') + from.module;
  if (m_lookup == nullptr) {
    return known;
  }
  const auto constant = (*m_lookup)(from, from.names.empty() ? std::string_view() : from.names.front());
  if (!constant) {
    known.why_unknown += fmt::format(" (the module {} is no file of the course)", module);
    return known;
  }
  if (!constant->value) {
    known.why_unknown =
        fmt::format("'{}' comes from {} ({}), where {}", shown, module, constant->where, constant->why_unknown);
    return known;
  }
  known.value = constant->value;
  note = fmt::format("'{}' is {}, bound in {} ({})", shown, quoted(*constant->value), module, constant->where);
  return known;
}

const NameBindings& Scanner::file_bindings() {
  if (!m_bindings) {
    m_all_tokens = tokenize(m_src);
    m_bindings.emplace(m_all_tokens);
  }
  return *m_bindings;
}

// A builtin's rows go when the file binds its name: it calls a function of its own.
void Scanner::drop_shadowed_builtins() {
  if (m_builtin_calls.empty()) {
    return;
  }
  const NameBindings& bindings = file_bindings();
  std::vector<bool> dropped(m_evidence.size(), false);
  for (const BuiltinCall& call : m_builtin_calls) {
    if (bindings.binds(call.name)) {
      std::fill(dropped.begin() + static_cast<std::ptrdiff_t>(call.first_row),
                dropped.begin() + static_cast<std::ptrdiff_t>(call.end_row), true);
    }
  }
  std::size_t kept = 0;
  for (std::size_t i = 0; i < m_evidence.size(); ++i) {
    if (dropped[i]) {
      continue;
    }
    if (kept != i) {
      m_evidence[kept] = std::move(m_evidence[i]);
      m_evidence_stmt[kept] = m_evidence_stmt[i];
    }
    ++kept;
  }
  m_evidence.resize(kept);
  m_evidence_stmt.resize(kept);
}

// The bare names passed as platform values or keys, decided now that every binding is known.
// Only files that have one pay for a second pass over their tokens.
void Scanner::resolve_pending() {
  if (m_pending.empty() && m_pending_keys.empty()) {
    return;
  }
  const NameBindings& bindings = file_bindings();
  // A name bound by `from M import NAME` is asked of the lookup.
  const auto value_of = [&](std::string_view name, std::string& note) {
    NameValue value = bindings.value_of(name);
    if (value.value || !value.from) {
      return value;
    }
    const ImportedModule from = *value.from; // `value` is moved into the call
    return imported_value(from, name, std::move(value), note);
  };
  // A key first: its row says how to read its value, which may be a name too (a PendingValue).
  for (const PendingKey& pending : m_pending_keys) {
    std::string note;
    const NameValue key = value_of(pending.name, note);
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
    std::string note;
    NameValue value;
    if (pending.attribute) {
      value.why_unknown = "not a string literal";
      value = imported_value(*pending.attribute, pending.name, value, note);
    } else {
      value = value_of(pending.name, note);
    }
    if (value.value) {
      if (value_test(pending.check, *value.value)) {
        add_evidence_at(pending.rule, pending.pos, pending.stmt, std::move(note));
      }
    } else if (pending.attribute && pending.unknown_is_evidence) {
      add_evidence_at(Rule::platform_unresolved, pending.pos, pending.stmt,
                      fmt::format("{} is `{}`, {}", pending.what, pending.name, value.why_unknown));
    } else if (pending.unknown_is_evidence) {
      add_evidence_at(Rule::platform_unresolved, pending.pos, pending.stmt,
                      fmt::format("{} is the name '{}', whose value is unknown: {}", pending.what, pending.name,
                                  value.why_unknown));
    }
  }
}

} // namespace tpulaunch::scan
