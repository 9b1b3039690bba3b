// Backend comparisons: `jax.default_backend() == "tpu"`, `<x>.platform != "tpu"`, a name holding
// either, and the reverse order.
#include <algorithm>
#include <numeric>

#include "classify/call_args.hpp"
#include "classify/scanner.hpp"
#include "classify/token_match.hpp"

namespace tpulaunch::scan {

// At the end of `NAME = <value>` (back(1) is the value's last token): NAME holds the backend when
// the value is exactly a jax.default_backend() call or ends in `.platform`; any other value
// rebinds NAME, so the last assignment wins.
void Scanner::note_backend_assignment() {
  const std::size_t eq = m_count - m_assign_eq; // back(eq) is the `=`
  bool backend = false;
  if (eq >= 4 && eq < k_window) {
    if (is_op1(back(1), ')') && is_op1(back(2), '(') && back(3).kind == TokenKind::name) {
      const std::size_t root = chain_root(3);
      if (root + 1 == eq) {
        resolve_chain(root, 3);
        backend = m_qualified == k_default_backend.callee;
      }
    } else {
      backend = is_name(back(1), "platform") && is_op1(back(2), '.');
    }
  }
  const auto it = std::find(m_backend_names.begin(), m_backend_names.end(), m_assign_target);
  if (backend && it == m_backend_names.end()) {
    m_backend_names.push_back(m_assign_target);
  } else if (!backend && it != m_backend_names.end()) {
    m_backend_names.erase(it);
  }
}

// Where the primary expression ending at back(last) starts: walks back over `.name`, calls and
// subscripts (`jax.devices()[0].platform` starts at `jax`).
Pos Scanner::primary_start(std::size_t last) const {
  std::size_t cur = last;
  const auto opener_of = [this](std::size_t closer) -> std::size_t {
    std::size_t level = 0;
    for (std::size_t j = closer; j < k_window && j <= m_count; ++j) {
      if (is_closer(back(j))) {
        ++level;
      } else if (is_opener(back(j)) && --level == 0) {
        return j;
      }
    }
    return 0;
  };
  while (cur + 2 < k_window) {
    const Token& prev = back(cur + 1);
    if (is_op(prev, ".")) {
      const Token& before = back(cur + 2);
      if (before.kind == TokenKind::name) {
        cur += 2;
        continue;
      }
      const std::size_t opener = is_closer(before) ? opener_of(cur + 2) : 0;
      if (opener == 0) {
        break;
      }
      cur = opener;
      continue;
    }
    if (is_opener(back(cur)) && prev.kind == TokenKind::name) {
      cur += 1;
      continue;
    }
    if (is_opener(back(cur)) && is_closer(prev)) {
      const std::size_t opener = opener_of(cur + 1);
      if (opener == 0) {
        break;
      }
      cur = opener;
      continue;
    }
    break;
  }
  return pos_of(back(cur));
}

// At `==`, `!=`, `in`: is the left operand jax.default_backend(), `<x>.platform`, a name holding
// one of those (see note_backend_assignment) or "tpu"?
void Scanner::start_compare(const Token& tok) {
  m_compare.active = false;
  const std::size_t k = (is_name(tok, "in") && is_name(back(1), "not")) ? 1 : 0;
  const Token& left = back(1 + k);
  Compare cmp;
  if (is_op(left, ")") && is_op(back(2 + k), "(") && back(3 + k).kind == TokenKind::name) {
    const std::size_t root = chain_root(3 + k);
    if (root == 0) {
      return;
    }
    resolve_chain(root, 3 + k);
    if (m_qualified != k_default_backend.callee) {
      return;
    }
    cmp.want_tpu_string = true;
    cmp.start = pos_of(back(root));
  } else if (is_name(left, "platform") && is_op(back(2 + k), ".")) {
    cmp.want_tpu_string = true;
    cmp.start = primary_start(1 + k);
  } else if (left.kind == TokenKind::name && !is_op1(back(2 + k), '.') && is_backend_name(left.text)) {
    cmp.want_tpu_string = true;
    cmp.start = pos_of(left);
  } else if (is_literal_string(left) && lower_trimmed(string_value(left)) == "tpu") {
    cmp.want_tpu_string = false;
    cmp.start = pos_of(left);
  } else {
    return;
  }
  cmp.active = true;
  cmp.base_depth = depth();
  cmp.op_count = m_count;
  cmp.budget = 32;
  m_compare = cmp;
}

void Scanner::step_compare(const Token& tok) {
  auto& cmp = m_compare;
  // `"tpu" == backend`: the right operand is exactly a name holding the backend (decided one
  // token later, so `backend.upper()` or `backend[0]` is not it).
  if (!cmp.want_tpu_string && m_count == cmp.op_count + 2 && back(1).kind == TokenKind::name &&
      !is_opener(tok) && !is_op1(tok, '.') && is_backend_name(back(1).text)) {
    add_evidence(Rule::backend_is_tpu, cmp.start);
    cmp.active = false;
    return;
  }
  if (--cmp.budget == 0 || tok.kind == TokenKind::newline || tok.kind == TokenKind::end) {
    cmp.active = false;
    return;
  }
  if (cmp.want_tpu_string) {
    const bool tpu = is_literal_string(tok) && lower_trimmed(string_value(tok)) == "tpu";
    if (!cmp.in_collection) {
      if (tpu) {
        add_evidence(Rule::backend_is_tpu, cmp.start);
        cmp.active = false;
      } else if (is_opener(tok)) {
        cmp.in_collection = true; // `in ("tpu", "gpu")`
        cmp.collection_depth = 1;
      } else if (!is_name(tok, "not")) {
        cmp.active = false;
      }
      return;
    }
    if (is_opener(tok)) {
      ++cmp.collection_depth;
    } else if (is_closer(tok) && --cmp.collection_depth == 0) {
      cmp.active = false;
    } else if (tpu) {
      add_evidence(Rule::backend_is_tpu, cmp.start);
      cmp.active = false;
    }
    return;
  }
  // "tpu" on the left: look for `.platform` or jax.default_backend() in the right operand.
  if (is_name(tok, "platform") && is_op(back(1), ".")) {
    add_evidence(Rule::backend_is_tpu, cmp.start);
    cmp.active = false;
    return;
  }
  const bool at_base = depth() == cmp.base_depth;
  if ((is_closer(tok) && at_base) ||
      (at_base && (is_op(tok, ",") || is_op(tok, ";") || is_op(tok, ":") || is_op(tok, "==") || is_op(tok, "!="))) ||
      is_name(tok, "and") || is_name(tok, "or") || is_name(tok, "if") || is_name(tok, "else")) {
    cmp.active = false;
  }
}

} // namespace tpulaunch::scan
