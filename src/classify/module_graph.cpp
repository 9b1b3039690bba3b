// A module's top-level functions and the names that reach them, and what an importer reads of a
// module: both from the file's tokens, statement by statement.
#include "tpulaunch/classify/module_graph.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "classify/token_match.hpp"
#include "tpulaunch/classify/python_lexer.hpp"

namespace tpulaunch {
namespace {

using scan::is_closer;
using scan::is_name;
using scan::is_op;
using scan::is_opener;

// Names through which a module may call its own functions by name: any of them read anywhere
// makes the module open (fails closed).
constexpr std::array<std::string_view, 8> k_open_names{"globals", "vars",       "locals",   "eval",
                                                       "exec",    "__import__", "__dict__", "import_module"};

// True when `t`, the first token of a logical line, starts a top-level statement: nothing but
// form feeds before it on its line (Python ignores a form feed in indentation).
bool top_level(const Token& t) {
  if (t.column == 1) {
    return true;
  }
  const char* line_start = t.text.data() - (t.column - 1);
  return std::all_of(line_start, t.text.data(), [](char c) { return c == '\f'; });
}

// A bare name: not an attribute (after `.`).
bool bare_name(const std::vector<Token>& tokens, std::size_t i) {
  return tokens[i].kind == TokenKind::name && (i == 0 || !is_op(tokens[i - 1], "."));
}

} // namespace

const ModuleFunction* ModuleGraph::function_at(std::uint32_t line, std::uint32_t column) const {
  for (const auto& function : functions) {
    const bool after = line > function.body_line || (line == function.body_line && column >= function.body_column);
    const bool before = line < function.end_line || (line == function.end_line && column <= function.end_column);
    if (after && before) {
      return &function;
    }
  }
  return nullptr;
}

// Long (about 85 lines) because it is one pass over the tokens with the state of where it is (a
// statement's start, a def's header, a function's body), each token handled once.
ModuleGraph read_module_graph(std::string_view source) {
  const std::vector<Token> tokens = tokenize(source);
  ModuleGraph out;
  constexpr std::size_t none = static_cast<std::size_t>(-1);
  std::size_t body = none;   // index in out.functions of the body the tokens are in
  std::size_t header = none; // ... of the def whose header they are in
  bool decorated = false;    // the top-level statements since the last other one were decorators
  bool line_start = true;
  std::size_t depth = 0;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const Token& t = tokens[i];
    if (t.kind == TokenKind::end) {
      break;
    }
    if (t.kind == TokenKind::newline) {
      line_start = true;
      continue;
    }
    if (line_start && top_level(t)) {
      body = none;
      const std::size_t def = is_name(t, "async") && i + 1 < tokens.size() && is_name(tokens[i + 1], "def") ? i + 1 : i;
      if (is_name(tokens[def], "def") && def + 1 < tokens.size() && tokens[def + 1].kind == TokenKind::name) {
        out.functions.push_back(ModuleFunction{std::string(tokens[def + 1].text), tokens[def].line});
        header = out.functions.size() - 1;
        if (decorated) {
          out.reached.push_back(out.functions.back().name); // the decorator is handed the function
        }
        decorated = false;
        i = def + 1; // the function's own name is no read of it
        line_start = false;
        continue;
      }
      decorated = is_op(t, "@"); // decorators (one per line) until the def they wrap
    }
    line_start = false;
    if (is_opener(t)) {
      ++depth;
    } else if (is_closer(t) && depth > 0) {
      --depth;
    }
    if (header != none && depth == 0 && is_op(t, ":")) {
      body = header;
      header = none;
      if (i + 1 < tokens.size()) {
        ModuleFunction& function = out.functions[body];
        const Token& first =
            tokens[i + 1].kind == TokenKind::newline && i + 2 < tokens.size() ? tokens[i + 2] : tokens[i + 1];
        function.body_line = first.line;
        function.body_column = first.column;
      }
      continue;
    }
    if (body != none) {
      ModuleFunction& function = out.functions[body];
      function.end_line = t.line;
      function.end_column = t.column;
    }
    if (t.kind != TokenKind::name) {
      continue;
    }
    const bool attribute = i > 0 && is_op(tokens[i - 1], ".");
    if (out.open.empty() && (std::find(k_open_names.begin(), k_open_names.end(), t.text) != k_open_names.end() ||
                             (attribute && t.text == "modules"))) {
      out.open = fmt::format("{}{} at line {}", attribute ? "." : "", t.text, t.line);
    }
    if (bare_name(tokens, i)) {
      (body != none ? out.functions[body].names : out.reached).emplace_back(t.text);
    }
  }
  return out;
}

namespace {

// A name an importer binds to the module, or to a package on the way to it (`import a.b.c` binds
// `a`, whose chain `a.b.c.f` may reach the module).
struct Bound {
  std::uint32_t level = 0;
  std::string dotted;
  bool module = false; // the module itself, else a prefix of it
};

// True when tokens[i] starts a statement (an import's keyword where it can be one).
bool statement_start(const std::vector<Token>& tokens, std::size_t i) {
  return i == 0 || tokens[i - 1].kind == TokenKind::newline || is_op(tokens[i - 1], ";") || is_op(tokens[i - 1], ":");
}

class UseReader {
public:
  UseReader(std::string_view source, const ModuleTest& is_module)
      : m_tokens(tokenize(source)), m_is_module(is_module) {}

  ModuleUse run() {
    std::vector<bool> in_import(m_tokens.size(), false);
    for (std::size_t i = 0; i < m_tokens.size(); ++i) {
      if ((is_name(m_tokens[i], "import") || is_name(m_tokens[i], "from")) && statement_start(m_tokens, i)) {
        std::size_t end = i;
        while (end < m_tokens.size() && m_tokens[end].kind != TokenKind::newline &&
               m_tokens[end].kind != TokenKind::end && !is_op(m_tokens[end], ";")) {
          in_import[end++] = true;
        }
        is_name(m_tokens[i], "import") ? read_import(i + 1, end) : read_from(i + 1, end);
        i = end;
      }
    }
    for (std::size_t i = 0; i < m_tokens.size() && m_use.all.empty(); ++i) {
      if (!in_import[i] && bare_name(m_tokens, i)) {
        if (const auto it = m_bound.find(m_tokens[i].text); it != m_bound.end()) {
          read_chain(it->second, i);
        }
      }
    }
    return std::move(m_use);
  }

private:
  bool is_module(std::uint32_t level, const std::string& dotted) {
    const auto key = std::pair{level, dotted};
    if (const auto it = m_known.find(key); it != m_known.end()) {
      return it->second;
    }
    return m_known[key] = m_is_module(level, dotted);
  }

  // `import a.b.c [as z], ...` over tokens [begin, end).
  void read_import(std::size_t begin, std::size_t end) {
    std::string dotted;
    std::string_view first;
    for (std::size_t i = begin; i <= end; ++i) {
      if (i == end || is_op(m_tokens[i], ",")) {
        if (!first.empty() && !m_bound.contains(first)) {
          bind_prefix(first, dotted);
        }
        dotted.clear();
        first = {};
      } else if (is_name(m_tokens[i], "as") && i + 1 < end) {
        if (is_module(0, dotted)) {
          m_bound[m_tokens[i + 1].text] = Bound{0, dotted, true};
        }
        dotted.clear();
        first = {};
        ++i;
      } else if (m_tokens[i].kind == TokenKind::name) {
        first = first.empty() ? m_tokens[i].text : first;
        dotted += m_tokens[i].text;
      } else if (is_op(m_tokens[i], ".")) {
        dotted += '.';
      }
    }
  }

  // `import a.b.c` binds `a`: worth following when `a`, `a.b` or `a.b.c` is the module.
  void bind_prefix(std::string_view first, const std::string& dotted) {
    for (std::size_t dot = dotted.find('.');; dot = dotted.find('.', dot + 1)) {
      if (is_module(0, dotted.substr(0, dot))) {
        m_bound[first] = Bound{0, std::string(first), is_module(0, std::string(first))};
        return;
      }
      if (dot == std::string::npos) {
        return;
      }
    }
  }

  // `from [.]M import a [as b], ... | *` over tokens [begin, end).
  void read_from(std::size_t begin, std::size_t end) {
    std::uint32_t level = 0;
    std::size_t i = begin;
    for (; i < end && (is_op(m_tokens[i], ".") || is_op(m_tokens[i], "...")); ++i) {
      level += static_cast<std::uint32_t>(m_tokens[i].text.size());
    }
    std::string module;
    for (; i < end && !is_name(m_tokens[i], "import"); ++i) {
      module += m_tokens[i].text;
    }
    const bool from_it = is_module(level, module);
    for (++i; i < end; ++i) {
      const Token& t = m_tokens[i];
      if (is_op(t, "*") && from_it) {
        m_use.all = fmt::format("it is star-imported at line {}", t.line);
      }
      if (t.kind != TokenKind::name || is_name(t, "as")) {
        continue;
      }
      std::string_view local = t.text;
      const bool alias = i + 2 < end && is_name(m_tokens[i + 1], "as");
      if (alias) {
        local = m_tokens[i + 2].text;
      }
      if (from_it) {
        m_use.names.emplace_back(t.text);
      }
      const std::string sub = module.empty() ? std::string(t.text) : module + "." + std::string(t.text);
      if (is_module(level, sub)) {
        m_bound[local] = Bound{level, sub, true};
      }
      i += alias ? 2 : 0;
    }
  }

  // A bare name bound to the module (or a package on its way) at tokens[i]: the attribute it reads
  // of the module, or the module used as a value.
  void read_chain(const Bound& bound, std::size_t i) {
    std::string dotted = bound.dotted;
    bool at_module = bound.module;
    while (!at_module && i + 2 < m_tokens.size() && is_op(m_tokens[i + 1], ".") &&
           m_tokens[i + 2].kind == TokenKind::name) {
      dotted += "." + std::string(m_tokens[i + 2].text);
      i += 2;
      at_module = is_module(bound.level, dotted);
    }
    if (!at_module) {
      return; // a chain that never reaches the module (another module of the package)
    }
    if (i + 2 < m_tokens.size() && is_op(m_tokens[i + 1], ".") && m_tokens[i + 2].kind == TokenKind::name) {
      m_use.names.emplace_back(m_tokens[i + 2].text);
      return;
    }
    m_use.all = fmt::format("the module {} is used as a value at line {}", dotted, m_tokens[i].line);
  }

  std::vector<Token> m_tokens;
  const ModuleTest& m_is_module;
  std::map<std::pair<std::uint32_t, std::string>, bool> m_known;
  std::map<std::string_view, Bound, std::less<>> m_bound;
  ModuleUse m_use;
};

} // namespace

ModuleUse read_module_use(std::string_view importer, const ModuleTest& is_module) {
  return UseReader(importer, is_module).run();
}

} // namespace tpulaunch
