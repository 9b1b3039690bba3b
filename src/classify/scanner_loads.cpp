// Code that arrives by other doors than an import statement: a module a call loads by name
// (importlib.import_module, __import__, runpy.run_module), a file a call loads by path
// (runpy.run_path, importlib.util.spec_from_file_location, ...), code exec() or eval() runs from
// a string or a file, the {fields} of f-strings, and the command lines of programs the script
// starts. A literal name or path is handed to the lesson reader (Classification::imports,
// loaded_files), which follows it like an import; anything else is an import-unresolved row.
#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "classify/scanner.hpp"

namespace tpulaunch::scan {
namespace {

// Code nested deeper than this (an exec'd string in an f-string field in ...) is not read.
constexpr std::uint32_t k_max_embed_depth = 8;

bool identifier_byte(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         static_cast<unsigned char>(c) >= 0x80;
}

// "a.b.c": dotted identifiers, none empty, none starting with a digit.
bool is_module_name(std::string_view name) {
  if (name.empty()) {
    return false;
  }
  std::size_t start = 0;
  while (start <= name.size()) {
    const std::size_t dot = std::min(name.find('.', start), name.size());
    const std::string_view part = name.substr(start, dot - start);
    if (part.empty() || (part[0] >= '0' && part[0] <= '9') || !std::all_of(part.begin(), part.end(), identifier_byte)) {
      return false;
    }
    start = dot + 1;
  }
  return true;
}

std::string call_name(const CallMatcher& matcher) {
  return fmt::format("{}()", matcher.callee);
}

// The names of a fromlist written as a display of string literals (`["a", "b"]`, `("a",)`, `()`)
// or None; nullopt for anything else.
std::optional<std::vector<std::string>> literal_names(std::span<const Token> tokens, std::size_t begin,
                                                      std::size_t end) {
  std::vector<std::string> names;
  if (end == begin + 1 && is_name(tokens[begin], "None")) {
    return names;
  }
  if (end - begin < 2 || !is_opener(tokens[begin]) || !is_closer(tokens[end - 1])) {
    return std::nullopt;
  }
  for (const Arg& item : split_args(tokens, begin + 1, end - 1, ",").items) {
    const auto value = literal_value(tokens, item.begin, item.end);
    if (!value || !item.keyword.empty()) {
      return std::nullopt;
    }
    names.push_back(*value);
  }
  return names;
}

// The end of a string literal starting at body[i] (a quote) inside an f-string's field: past its
// closing quote (or the end of the body).
std::size_t skip_string(std::string_view body, std::size_t i) {
  const char quote = body[i];
  const bool triple = body.substr(i, 3) == std::string(3, quote);
  std::size_t at = i + (triple ? 3 : 1);
  while (at < body.size()) {
    if (body[at] == '\\') {
      at += 2;
    } else if (triple ? body.substr(at, 3) == std::string(3, quote) : body[at] == quote) {
      return at + (triple ? 3 : 1);
    } else {
      ++at;
    }
  }
  return body.size();
}

void add_fields(std::string_view body, bool raw, std::string& out, std::uint32_t depth);

// The field whose expression starts at body[i] (just past its `{`): its expression goes to `out`
// on a line of its own, nested fields of its format spec too. Returns where the field ends (past
// its `}`).
std::size_t add_field(std::string_view body, std::size_t i, std::string& out, std::uint32_t depth) {
  std::size_t level = 0;
  const std::size_t start = i;
  std::size_t expression_end = std::string_view::npos;
  while (i < body.size()) {
    const char c = body[i];
    if (c == '\'' || c == '"') {
      i = skip_string(body, i);
      continue;
    }
    if (c == '(' || c == '[' || c == '{') {
      ++level;
    } else if ((c == ')' || c == ']' || c == '}') && level > 0) {
      --level;
    } else if (level == 0 && (c == '}' || c == ':' || (c == '!' && (i + 1 >= body.size() || body[i + 1] != '=')))) {
      expression_end = i;
      break;
    }
    ++i;
  }
  std::string_view expression = body.substr(start, std::min(expression_end, body.size()) - start);
  // `{x=}` prints the expression too: the `=` is no part of it.
  while (!expression.empty() && (expression.back() == ' ' || expression.back() == '=')) {
    expression.remove_suffix(1);
  }
  out += expression;
  out += '\n';
  if (expression_end == std::string_view::npos) {
    return body.size();
  }
  // The conversion (`!r`) and the format spec (`:>{width}`), up to the field's `}`; the spec's own
  // fields are expressions as well.
  std::size_t end = expression_end;
  std::size_t nested = 0;
  for (; end < body.size(); ++end) {
    if (body[end] == '{') {
      ++nested;
    } else if (body[end] == '}') {
      if (nested == 0) {
        break;
      }
      --nested;
    }
  }
  if (body[expression_end] == ':' || body[expression_end] == '!') {
    add_fields(body.substr(expression_end + 1, end - expression_end - 1), true, out, depth + 1);
  }
  return std::min(end + 1, body.size());
}

// Every {field} of an f-string's body, as lines of Python (`{{` and `}}` are text).
void add_fields(std::string_view body, bool raw, std::string& out, std::uint32_t depth) {
  if (depth > k_max_embed_depth) {
    return;
  }
  std::size_t i = 0;
  while (i < body.size()) {
    const char c = body[i];
    if (c == '\\' && !raw) {
      i += 2; // `\{` is no field in a non-raw f-string only as `\N{NAME}`; skipping is enough
    } else if (c == '{' && i + 1 < body.size() && body[i + 1] == '{') {
      i += 2;
    } else if (c == '{') {
      i = add_field(body, i + 1, out, depth);
    } else {
      ++i;
    }
  }
}

} // namespace

void Scanner::add_module_load(const Bracket& bracket, std::uint32_t level, std::string module,
                              std::vector<std::string> names) {
  m_imports.push_back(ImportedModule{level, std::move(module), std::move(names), bracket.root.line,
                                     call_name(k_call_matchers[bracket.matcher])});
}

void Scanner::add_file_load(const Bracket& bracket, std::string path, bool from_file_folder) {
  const std::string call = call_name(k_call_matchers[bracket.matcher]);
  // Fails closed: the row stands until the lesson reader finds the course file the path names.
  add_evidence(Rule::import_unresolved, bracket.root,
               fmt::format("{} loads the file '{}'{}, which only the lesson reader can follow", call, path,
                           from_file_folder ? " next to this file" : ""));
  m_loaded.push_back(LoadedFile{std::move(path), from_file_folder, bracket.root.line, bracket.root.column, call});
}

void Scanner::add_unresolved_load(const Bracket& bracket, std::string detail) {
  add_evidence(Rule::import_unresolved, bracket.root, std::move(detail));
}

// importlib.import_module(name, package) and runpy.run_module(mod_name).
void Scanner::check_load_module(const Bracket& bracket, std::span<const Token> tokens, const Args& args) {
  const CallMatcher& matcher = k_call_matchers[bracket.matcher];
  const Arg* name = arg_at(args, 0, matcher.keywords[0]);
  if (name == nullptr) {
    return; // a TypeError when it runs: nothing is loaded
  }
  const auto unresolved = [&](std::string_view why) {
    add_unresolved_load(bracket, fmt::format("{} is given `{}`, {}: which module it loads is only known at run time",
                                             call_name(matcher), source_text(tokens, name->begin, name->end), why));
  };
  const auto value = literal_value(tokens, name->begin, name->end);
  if (!value) {
    unresolved("not a string literal");
    return;
  }
  const auto level = static_cast<std::uint32_t>(std::min(value->find_first_not_of('.'), value->size()));
  std::string module = value->substr(level);
  if (level == 0) {
    if (!is_module_name(module)) {
      unresolved("which is no module name");
      return;
    }
    // runpy.run_module runs a package's __main__ module.
    add_module_load(bracket, 0, std::move(module),
                    matcher.check == ArgCheck::run_module ? std::vector<std::string>{"__main__"}
                                                          : std::vector<std::string>{});
    return;
  }
  const Arg* package = matcher.check == ArgCheck::load_module ? arg_at(args, 1, matcher.keywords[1]) : nullptr;
  if (package == nullptr) {
    return; // a relative name with no package is refused when it runs: nothing is loaded
  }
  if (!module.empty() && !is_module_name(module)) {
    unresolved("which is no module name");
    return;
  }
  if (package->end == package->begin + 1 && is_name(tokens[package->begin], "__package__")) {
    add_module_load(bracket, level, std::move(module), {}); // relative to this file's package
    return;
  }
  const auto base = literal_value(tokens, package->begin, package->end);
  if (!base || !is_module_name(*base)) {
    unresolved(fmt::format("a relative name in the package `{}`", source_text(tokens, package->begin, package->end)));
    return;
  }
  // ".x" in package "a.b" is "a.b.x"; each further dot is one package up.
  std::string absolute = *base;
  for (std::uint32_t up = 1; up < level; ++up) {
    const auto dot = absolute.rfind('.');
    if (dot == std::string::npos) {
      unresolved("a relative name that climbs above its package");
      return;
    }
    absolute.resize(dot);
  }
  if (!module.empty()) {
    absolute += "." + module;
  }
  add_module_load(bracket, 0, std::move(absolute), {});
}

// __import__(name, globals=None, locals=None, fromlist=(), level=0).
void Scanner::check_dunder_import(const Bracket& bracket, std::span<const Token> tokens, const Args& args) {
  const Arg* name = arg_at(args, 0, "name");
  if (name == nullptr) {
    return;
  }
  const std::string call = call_name(k_call_matchers[bracket.matcher]);
  const auto value = literal_value(tokens, name->begin, name->end);
  std::vector<std::string> names;
  std::uint32_t level = 0;
  std::string why;
  if (!value) {
    why = fmt::format("{} is given `{}`, not a string literal", call, source_text(tokens, name->begin, name->end));
  } else if (const Arg* fromlist = arg_at(args, 3, "fromlist")) {
    if (auto list = literal_names(tokens, fromlist->begin, fromlist->end)) {
      names = std::move(*list);
    } else {
      why = fmt::format("{} is given the fromlist `{}`, not a list of string literals", call,
                        source_text(tokens, fromlist->begin, fromlist->end));
    }
  }
  if (const Arg* relative = arg_at(args, 4, "level"); why.empty() && relative != nullptr) {
    const Token& t = tokens[relative->begin];
    if (relative->end != relative->begin + 1 || t.kind != TokenKind::number || t.text.size() > 2 ||
        !std::all_of(t.text.begin(), t.text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      why = fmt::format("{} is given the level `{}`, not a small number", call,
                        source_text(tokens, relative->begin, relative->end));
    } else {
      level = static_cast<std::uint32_t>(std::stoul(std::string(t.text)));
    }
  }
  if (why.empty() && !is_module_name(*value) && !(level > 0 && value->empty())) {
    why = fmt::format("{} is given '{}', which is no module name", call, *value);
  }
  if (!why.empty()) {
    add_unresolved_load(bracket, why + ": which module it loads is only known at run time");
    return;
  }
  add_module_load(bracket, level, *value, std::move(names));
}

// runpy.run_path(path), importlib.util.spec_from_file_location(name, path), ...: the path argument.
void Scanner::check_load_path(const Bracket& bracket, std::span<const Token> tokens, const Args& args) {
  const CallMatcher& matcher = k_call_matchers[bracket.matcher];
  const Arg* path = arg_at(args, matcher.position, matcher.keywords[0]);
  if (path == nullptr) {
    return; // no file named: spec_from_file_location(name) asks the import system, which imports follow
  }
  if (auto literal = path_expression(tokens, path->begin, path->end)) {
    add_file_load(bracket, std::move(literal->path), literal->from_file_folder);
    return;
  }
  add_unresolved_load(bracket, fmt::format("{} is given the path `{}`, neither a string literal nor one relative to "
                                           "__file__: which file it loads is only known at run time",
                                           call_name(matcher), source_text(tokens, path->begin, path->end)));
}

// exec(source) and eval(source): a string literal is read as code here; a file read whole
// (open(PATH).read(), Path(PATH).read_text(), compile() of either) is loaded like runpy.run_path;
// anything else is code only known at run time.
void Scanner::check_exec(const Bracket& bracket, std::span<const Token> tokens, std::size_t begin, std::size_t end,
                         std::uint32_t depth) {
  const std::string call = call_name(k_call_matchers[bracket.matcher]);
  while (end - begin >= 2 && is_op(tokens[begin], "(") && is_op(tokens[end - 1], ")")) {
    ++begin;
    --end;
  }
  if (const auto code = literal_value(tokens, begin, end)) {
    scan_embedded(*code, bracket.root, fmt::format("the code {} runs", call), true);
    return;
  }
  if (const auto inner = call_parts(tokens, begin, end); inner && inner->callee == "compile" && depth < 4) {
    const Args args = split_args(tokens, inner->args_begin, inner->args_end, ","); // outlives `source`
    if (const Arg* source = args.positional(0)) {
      check_exec(bracket, tokens, source->begin, source->end, depth + 1);
      return;
    }
  }
  // `<opened>.read()` or `<path>.read_text()`: the method's object is [begin, dot).
  if (end - begin >= 4 && is_op(tokens[end - 1], ")") && tokens[end - 3].kind == TokenKind::name &&
      is_op(tokens[end - 4], ".") && is_op(tokens[end - 2], "(")) {
    const std::string_view method = tokens[end - 3].text;
    const std::size_t dot = end - 4;
    if (method == "read") {
      if (const auto opened = call_parts(tokens, begin, dot);
          opened && (opened->callee == "open" || opened->callee == "io.open" || opened->callee == "builtins.open")) {
        const Args args = split_args(tokens, opened->args_begin, opened->args_end, ","); // outlives `file`
        if (const Arg* file = args.positional(0)) {
          if (auto literal = path_expression(tokens, file->begin, file->end)) {
            add_file_load(bracket, std::move(literal->path), literal->from_file_folder);
            return;
          }
        }
      }
    } else if (method == "read_text") {
      if (auto literal = path_expression(tokens, begin, dot)) {
        add_file_load(bracket, std::move(literal->path), literal->from_file_folder);
        return;
      }
    }
  }
  add_unresolved_load(
      bracket, fmt::format("{} runs `{}`: code the classifier cannot read", call, source_text(tokens, begin, end)));
}

// Code inside this source (an exec'd string, an f-string's fields) is scanned as a source of its
// own that sees this file's imports; its CPU selections, imports and loads are this file's, at
// `pos`. Its other rows are not kept: an f-string's jax.process_index() is only printed. Code that
// does not tokenize is a source-unreadable row when `unreadable_counts`.
void Scanner::scan_embedded(std::string_view code, const Pos& pos, std::string_view where, bool unreadable_counts) {
  if (m_embed_depth >= k_max_embed_depth) {
    add_evidence(Rule::source_unreadable, pos,
                 fmt::format("{} is code nested deeper than {} levels, which the classifier does not read", where,
                             k_max_embed_depth));
    return;
  }
  Scanner inner(code, m_lookup, m_embed_depth + 1);
  inner.m_outer = this; // the code sees this file's imports
  inner.m_filter |= m_filter;
  Classification found = inner.run();
  for (const Evidence& row : found.evidence) {
    if (row.category == Category::cpu_selection && (unreadable_counts || row.rule != Rule::source_unreadable)) {
      add_evidence(row.rule, pos, fmt::format("in {}{}{}", where, row.detail.empty() ? "" : ": ", row.detail));
    }
  }
  for (ImportedModule& module : found.imports) {
    module.line = pos.line;
    if (module.call.empty()) {
      module.call = std::string(where);
    }
    m_imports.push_back(std::move(module));
  }
  for (LoadedFile& file : found.loaded_files) {
    file.line = pos.line;
    file.column = pos.column;
    m_loaded.push_back(std::move(file));
  }
}

// An f-string's {fields} are expressions that run: read them when a name in the string could
// start a match (the filter), so the usual f-string of a print costs one pass over its bytes.
void Scanner::on_fstring(const Token& tok) {
  const std::string_view body = tok.body();
  // Only a call selects anything (`{jax.devices("cpu")}`, `{f(backend="cpu")}`): most f-strings
  // format names and attributes, and one memchr passes them. A call is read when the name before
  // its `(` could end a match (the filter), or the string passes a `backend=`.
  if (body.find('{') == std::string_view::npos) {
    return;
  }
  bool interesting = false;
  for (std::size_t open = body.find('('); open != std::string_view::npos && !interesting;
       open = body.find('(', open + 1)) {
    std::size_t end = open;
    while (end > 0 && body[end - 1] == ' ') {
      --end;
    }
    std::size_t begin = end;
    while (begin > 0 && identifier_byte(body[begin - 1])) {
      --begin;
    }
    interesting = begin < end && maybe_interesting(body.substr(begin, end - begin));
  }
  if (!interesting && (body.find('(') == std::string_view::npos || body.find("backend") == std::string_view::npos)) {
    return;
  }
  std::string code;
  add_fields(body, tok.raw, code, 0);
  if (code.empty()) {
    return;
  }
  // The lexer has read the string already: a field that does not tokenize here is this reading's
  // limit, not unreadable source.
  scan_embedded(code, pos_of(tok), "an f-string's {...} field", false);
}

// subprocess.run("JAX_PLATFORMS=cpu python x.py", shell=True), os.system(...),
// subprocess.run(["env", "JAX_PLATFORMS=cpu", ...]): a KEY=VALUE of the environment table in a
// string of the command line hands the platform on to the program started.
void Scanner::check_started_program(const Bracket& bracket, std::span<const Token> tokens, std::size_t end) {
  for (std::size_t i = bracket.capture_start; i < end; ++i) {
    const Token& t = tokens[i];
    if (t.kind != TokenKind::string) {
      continue;
    }
    const std::string text = t.fstring ? std::string(t.body()) : string_value(t);
    if (text.find("JAX_") == std::string::npos && text.find("XLA_FLAGS") == std::string::npos) {
      continue;
    }
    for (const KeyRule& rule : k_env_keys) {
      const std::string assignment = std::string(rule.key) + "=";
      for (std::size_t at = text.find(assignment); at != std::string::npos; at = text.find(assignment, at + 1)) {
        const char before = at == 0 ? ' ' : text[at - 1];
        if (identifier_byte(before)) {
          continue; // MY_JAX_PLATFORMS=
        }
        std::size_t from = at + assignment.size();
        std::size_t to = from;
        if (from < text.size() && (text[from] == '\'' || text[from] == '"')) {
          to = std::min(text.find(text[from], from + 1), text.size());
          ++from;
        } else {
          while (to < text.size() && std::isspace(static_cast<unsigned char>(text[to])) == 0 && text[to] != ';' &&
                 text[to] != '&' && text[to] != '|') {
            ++to;
          }
        }
        const std::string value = text.substr(from, to - from);
        if (t.fstring && value.find('{') != std::string::npos) {
          add_evidence(Rule::platform_unresolved, bracket.root,
                       fmt::format("the command line of {}() sets {} from an f-string's field, only known at run time",
                                   k_call_matchers[bracket.matcher].callee, rule.key));
        } else if (value_test(rule.check, value)) {
          add_evidence(rule.rule, bracket.root);
        }
      }
    }
  }
}

} // namespace tpulaunch::scan
