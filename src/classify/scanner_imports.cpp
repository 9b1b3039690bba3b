// Import statements: a small state machine over the token stream that fills the alias table
// resolve_chain() reads.
#include <algorithm>
#include <numeric>

#include "classify/call_args.hpp"
#include "classify/scanner.hpp"
#include "classify/token_match.hpp"

namespace tpulaunch::scan {

void Scanner::bind(std::string_view local, std::string qualified) {
  if (local.empty()) {
    return;
  }
  // A one-name chain resolves to the alias target, so only aliases of a callee itself (`from jax
  // import devices as d`) can end a matching chain; longer chains end in a callee's last name.
  const auto candidates = matchers_named(last_name(qualified));
  const bool callee = qualified == k_default_backend.callee ||
                      std::any_of(candidates.begin(), candidates.end(),
                                  [&qualified](std::size_t i) { return k_call_matchers[i].callee == qualified; });
  if (callee) {
    add_filter(local);
  }
  for (auto& alias : m_aliases) {
    if (alias.local == local) {
      alias.qualified = std::move(qualified);
      return;
    }
  }
  m_aliases.push_back(Alias{local, std::move(qualified)});
}

// Records the module the import statement names so far (its parts, with `level` leading dots),
// for the lesson reader; `from` names are added to it as they come.
void Scanner::note_import(std::uint32_t level) {
  if (m_imports.empty()) {
    m_imports.reserve(16); // a lesson's usual imports, in one allocation
  }
  ImportedModule module;
  module.level = level;
  module.line = m_import.line;
  for (std::size_t i = 0; i < m_import.part_count; ++i) {
    module.module += i == 0 ? "" : ".";
    module.module += m_import.parts[i];
  }
  m_imports.push_back(std::move(module));
}

// `import a.b.c` binds `a` to "a"; `import a.b.c as x` binds `x` to "a.b.c".
void Scanner::bind_import() {
  if (m_import.part_count > 0) {
    note_import(0);
    bind(m_import.parts[0], std::string(m_import.parts[0]));
  }
  m_import.part_count = 0;
}

// Import statements are a small state machine over the token stream; they populate the alias
// table that resolve_chain() reads. Relative imports bind names to ".module.name", which matches
// no rule but still shadows an earlier binding of the same name. Long (about 110 lines) because it
// is the whole state machine, one switch case per state: read together, the transitions show the
// grammar of `import` and `from ... import`.
void Scanner::step_import(const Token& tok) {
  auto& im = m_import;
  const auto dotted = [&im](std::string_view name) {
    std::string out = im.relative ? "." : "";
    for (std::size_t i = 0; i < im.part_count; ++i) {
      out += im.parts[i];
      out += '.';
    }
    out += name;
    return out;
  };
  const bool name = tok.kind == TokenKind::name;
  switch (im.state) {
  case ImportState::none:
    if (is_name(tok, "import")) {
      im = Import{};
      im.state = ImportState::module;
      im.line = tok.line;
    } else if (is_name(tok, "from")) {
      im = Import{};
      im.state = ImportState::from_module;
      im.line = tok.line;
    }
    return;
  case ImportState::module:
    if (is_name(tok, "as")) {
      im.state = ImportState::alias;
    } else if (name) {
      if (im.part_count < im.parts.size()) {
        im.parts[im.part_count++] = tok.text;
      }
    } else if (is_op(tok, ",")) {
      bind_import();
    } else if (!is_op(tok, ".")) {
      bind_import();
      im.state = ImportState::none;
    }
    return;
  case ImportState::alias:
    if (name && im.part_count > 0) {
      note_import(0);
      std::string full(im.parts[0]);
      for (std::size_t i = 1; i < im.part_count; ++i) {
        full += '.';
        full += im.parts[i];
      }
      bind(tok.text, std::move(full));
      im.part_count = 0;
      im.state = ImportState::after_alias;
    } else {
      im.state = ImportState::none;
    }
    return;
  case ImportState::after_alias:
    im.state = is_op(tok, ",") ? ImportState::module : ImportState::none;
    return;
  case ImportState::from_module:
    if (is_op(tok, ".") || is_op(tok, "...")) {
      im.relative = im.relative || im.part_count == 0;
      if (im.part_count == 0) {
        im.level += static_cast<std::uint32_t>(tok.text.size());
      }
    } else if (is_name(tok, "import")) {
      im.state = im.part_count > 0 || im.relative ? ImportState::from_names : ImportState::none;
      if (im.state == ImportState::from_names) {
        note_import(im.level);
      }
    } else if (name) {
      if (im.part_count < im.parts.size()) {
        im.parts[im.part_count++] = tok.text;
      }
    } else {
      im.state = ImportState::none; // `yield from x(`, `raise E from e` and the like
    }
    return;
  case ImportState::from_names:
    if (is_name(tok, "as")) {
      im.state = im.pending.empty() ? ImportState::none : ImportState::from_alias;
    } else if (name) {
      if (!im.pending.empty()) {
        bind(im.pending, dotted(im.pending));
      }
      im.pending = tok.text;
      m_imports.back().names.emplace_back(tok.text);
    } else if (is_op(tok, ",") || is_op(tok, "(")) {
      if (!im.pending.empty()) {
        bind(im.pending, dotted(im.pending));
      }
      im.pending = {};
    } else {
      if (!im.pending.empty()) {
        bind(im.pending, dotted(im.pending));
      }
      im.pending = {};
      if (!is_op(tok, "*")) {
        im.state = ImportState::none; // `)`, newline, `;`, end
      }
    }
    return;
  case ImportState::from_alias:
    if (name) {
      bind(tok.text, dotted(im.pending));
      im.pending = {};
      im.state = ImportState::from_names;
    } else {
      im.state = ImportState::none;
    }
    return;
  }
}

} // namespace tpulaunch::scan
