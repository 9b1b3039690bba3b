// The scanner's assignments: `NAME = ...` at statement level (to learn which names hold CPU
// devices or other devices), os.environ["KEY"] = value, os.environ[KEY] = value (a key held in a
// name) and os.environ |= mapping, and the check of the captured value at the statement's end.
#include <algorithm>
#include <span>

#include <fmt/format.h>

#include "classify/scanner.hpp"
#include "classify/token_match.hpp"

namespace tpulaunch::scan {

// A CPU device expression makes the enclosing calls' arguments CPU devices (default_device) and
// the name assigned on this statement a CPU device name.
void Scanner::on_cpu_device_evidence() {
  for (auto& bracket : m_brackets) {
    if (bracket.capturing) {
      bracket.saw_cpu_device = true;
    }
  }
  if (!m_assign_target.empty() && m_assign_stmt == m_stmt &&
      std::find(m_cpu_names.begin(), m_cpu_names.end(), m_assign_target) == m_cpu_names.end()) {
    m_cpu_names.push_back(m_assign_target);
  }
}

// A device listed by jax.devices() or jax.local_devices() that is not known to be a CPU one: the
// enclosing calls' device arguments, and the name assigned on this statement, hold devices, which
// are no platform names.
void Scanner::on_device_listed() {
  for (auto& bracket : m_brackets) {
    if (bracket.capturing) {
      bracket.saw_device = true;
    }
  }
  if (!m_assign_target.empty() && m_assign_stmt == m_stmt &&
      std::find(m_device_names.begin(), m_device_names.end(), m_assign_target) == m_device_names.end()) {
    m_device_names.push_back(m_assign_target);
  }
}

// `=`, `+=` or `|=`. Inside brackets, a possible `backend=` argument. At statement level:
// os.environ["KEY"] = value, os.environ |= mapping, or `name = ...` (to learn names that hold
// CPU devices). Returns true when it starts capturing the assigned value.
bool Scanner::on_assignment(const Token& tok) {
  if (depth() != 0) {
    note_keyword_argument();
    return false;
  }
  const bool plain = tok.text == "=";
  if (tok.text == "|=") {
    return on_environ_update();
  }
  if (plain && back(1).kind == TokenKind::name && statement_start(back(2))) {
    m_assign_target = back(1).text;
    m_assign_stmt = m_stmt;
    m_assign_eq = m_count;
    return false;
  }
  if (m_env.active) {
    return false;
  }
  if (!is_op(back(1), "]")) {
    if (plain) {
      note_unpacked_subscript();
    }
    return false;
  }
  return on_subscript_assignment(plain);
}

// `env["JAX_PLATFORMS"], other = ...` or `os.environ["JAX_PLATFORMS"]: str = ...`: an environment
// key set in a target the scanner does not pair with its value fails closed. Runs only at an `=`
// whose target is not one name, and reads back to the statement's start.
void Scanner::note_unpacked_subscript() {
  for (std::size_t k = 1; k + 3 < k_window; ++k) {
    const Token& t = back(k);
    if (t.kind == TokenKind::newline || t.kind == TokenKind::end || is_op1(t, ';')) {
      return;
    }
    if (is_op1(t, ']') && back(k + 1).kind == TokenKind::string && is_op1(back(k + 2), '[') &&
        is_literal_string(back(k + 1)) && find_env_key(string_value(back(k + 1))) != nullptr) {
      add_evidence(Rule::platform_unresolved, pos_of(back(k + 2)),
                   fmt::format("{} is set in a target of several names (or an annotated one), whose value the "
                               "classifier does not pair with it",
                               string_value(back(k + 1))));
      return;
    }
  }
}

// `NAME |= ...` at statement level: os.environ |= <mapping> captures the mapping.
bool Scanner::on_environ_update() {
  const std::size_t root = back(1).kind == TokenKind::name ? chain_root(1) : 0;
  if (root == 0 || m_env.active) {
    return false;
  }
  resolve_chain(root, 1);
  if (m_qualified != "os.environ") {
    return false;
  }
  m_env.active = true;
  m_env.key = nullptr;
  m_env.key_name = {};
  m_env.capture_start = m_capture.size();
  m_env.root = pos_of(back(root));
  ++m_capturing;
  return true;
}

// `...[KEY] =` or `+=` (back(1) is the `]`) at statement level: os.environ[KEY] = <value>
// captures the value when KEY is a key of the table or a name, and is platform-unresolved
// evidence when KEY is only known at run time.
bool Scanner::on_subscript_assignment(bool plain) {
  // back(j) is the `[` that the `]` before the `=` closes; the key is back(j - 1) .. back(2).
  std::size_t j = 2;
  for (std::size_t level = 0; j + 2 < k_window; ++j) {
    const Token& t = back(j);
    if (t.kind == TokenKind::newline || t.kind == TokenKind::end) {
      return false; // not in this statement (or not in sight)
    }
    if (is_closer(t)) {
      ++level;
    } else if (is_opener(t)) {
      if (level == 0) {
        break;
      }
      --level;
    }
  }
  if (j == 2 || j + 2 >= k_window || !is_op(back(j), "[") || back(j + 1).kind != TokenKind::name) {
    return false;
  }
  const std::size_t root = chain_root(j + 1);
  if (root == 0) {
    return false;
  }
  // A key of the environment table set in any mapping (`env = dict(os.environ); env["JAX_PLATFORMS"]
  // = "cpu"`) may be the environment of a program the script starts: it counts as os.environ's.
  // Only a string key is read this way, so most subscript assignments (`out[i] = x`) stop at once.
  const bool string_key = back(2).kind == TokenKind::string;
  // Only `…environ[` or a one-name alias (`from os import environ as env`) can be os.environ.
  bool environ = false;
  if (back(j + 1).text == "environ" || root == j + 1) {
    resolve_chain(root, j + 1);
    environ = m_qualified == "os.environ";
  }
  if (!environ && !string_key) {
    return false;
  }
  bool literal = true;
  std::string key;
  for (std::size_t i = j - 1; i >= 2 && literal; --i) {
    literal = is_literal_string(back(i));
    if (literal) {
      key += string_value(back(i));
    }
  }
  const Pos at = pos_of(back(root));
  const KeyRule* rule = nullptr;
  if (literal) {
    rule = find_env_key(key);
    // `+=` appends, so only a flag search (XLA_FLAGS) makes sense for it.
    if (rule == nullptr || (!plain && rule->check != ValueCheck::force_host_flag)) {
      return false;
    }
  } else if (!environ) {
    return false;
  } else if (j != 3 || back(2).kind != TokenKind::name) {
    // Not a literal, not one name: the key is only known at run time.
    const char* first = back(j - 1).text.data();
    const Token& last = back(2);
    std::string text(first, static_cast<std::size_t>(last.text.data() + last.text.size() - first));
    add_evidence(Rule::platform_unresolved, at,
                 fmt::format("the key of os.environ[...] is `{}`, not a string literal",
                             text.size() > 60 ? text.substr(0, 60) + "..." : text));
    return false;
  }
  m_env.active = true;
  m_env.key = rule;
  m_env.key_name = literal ? std::string_view() : back(2).text;
  m_env.plain = plain;
  m_env.capture_start = m_capture.size();
  m_env.root = at;
  ++m_capturing;
  return true;
}

void Scanner::evaluate_env_assignment() {
  if (!m_env.active) {
    return;
  }
  m_env.active = false;
  --m_capturing;
  const std::span<const Token> tokens(m_capture);
  if (!m_env.key_name.empty()) {
    m_pending_keys.push_back(PendingKey{
        m_env.key_name, false, m_env.plain,
        std::vector<Token>(tokens.begin() + static_cast<std::ptrdiff_t>(m_env.capture_start), tokens.end()),
        DeviceSeen{}, "os.environ[...]", m_env.root});
  } else if (m_env.key == nullptr) {
    check_mapping(tokens, m_env.capture_start, tokens.size(), m_env.root);
  } else {
    check_rule_value(*m_env.key, tokens, m_env.capture_start, tokens.size(), DeviceSeen{}, m_env.root);
  }
  if (m_capturing == 0) {
    m_capture.clear();
  }
}

} // namespace tpulaunch::scan
