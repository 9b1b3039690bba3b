#pragma once
// The classifier's streaming scanner: it sees each token of a script once and turns matches of
// the rule table into evidence rows. Internal to the classifier: classify_source() runs it.
//
// Files: scanner.cpp (the per-token path, dotted chains, brackets), scanner_assign.cpp (names and
// os.environ keys assigned at statement level), scanner_imports.cpp
// (the import state machine that fills the alias table), scanner_calls.cpp (one check per kind
// of matched call), scanner_values.cpp (platform values: literals now, bare names once the file's
// bindings are known, anything else fails closed), scanner_compare.cpp (backend comparisons),
// scanner_markers.cpp (weak multi-host evidence: printed process indices, shape asserts, a
// conditional jax.distributed.initialize()), scanner_loads.cpp (code that arrives by other doors:
// modules and files loaded by calls, exec'd strings, f-string fields, started programs),
// scanner_paths.cpp (the path a load names: a literal, or one relative to `__file__`).
#include <algorithm>
#include <array>
#include <bitset>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "classify/call_args.hpp"
#include "classify/classifier_matchers.hpp"
#include "classify/name_bindings.hpp"
#include "classify/statement_condition.hpp"
#include "classify/token_match.hpp"
#include "tpulaunch/classify/classifier.hpp"

namespace tpulaunch::scan {

// A position in the source, for an evidence row.
struct Pos {
  std::uint32_t line = 0;
  std::uint32_t column = 0;
  std::size_t offset = 0;
};

// The streaming scanner. It sees each token once, keeps the last k_window tokens for look-back
// (dotted chains, `backend="cpu"`, comparisons) and buffers tokens only inside the argument list
// of a call that matched the table, so the common path allocates nothing.

class Scanner {
public:
  // `lookup` (may be null) answers for values imported from course modules; `embed_depth` counts
  // the code this source is nested in (an f-string's field, an exec'd string).
  explicit Scanner(std::string_view source, const ConstantLookup* lookup = nullptr, std::uint32_t embed_depth = 0);
  Classification run();

private:
  static constexpr std::size_t k_window = 32; // a power of two: the ring index is a mask
  static constexpr std::size_t k_max_brackets = 4096;
  static constexpr std::size_t k_max_capture = std::size_t{1} << 16;
  static constexpr std::uint16_t k_no_matcher = 0xFFFF;

  struct Alias {
    std::string_view local;
    std::string qualified;
  };

  // What a captured call's arguments held, for a device argument (jax.default_device, the
  // jax_default_device option): a CPU device expression, or another listed device.
  struct DeviceSeen {
    bool cpu = false;
    bool device = false;
  };

  struct Bracket {
    char open = '(';
    bool capturing = false;
    bool saw_cpu_device = false;
    bool saw_device = false; // a jax.devices()/local_devices() call that is not a CPU one
    bool suppress_backend_kwarg = false;
    bool kwarg_jax = false; // the call holding `backend=` is (or may be) a JAX function
    std::uint8_t lambda_params = 0; // `lambda`s in this bracket whose parameters have not ended
    std::uint16_t matcher = k_no_matcher;
    std::size_t capture_start = 0;
    std::size_t open_count = 0; // m_count of the opening bracket
    std::size_t offset = 0;     // of the opening bracket in the source (before_bracket() reads there)
    std::size_t kwarg_at = 0;   // m_count of the `=` of a pending `backend=` argument (0: none), or of
                                // the `=` or `:` of an environment key's value (`kwarg_key`)
    const KeyRule* kwarg_key = nullptr; // `JAX_PLATFORMS=` or `"JAX_PLATFORMS":` in this bracket
    Pos root;
    Pos kwarg_pos; // of the `backend` keyword
  };

  // What precedes an opening bracket in the source: the name a `(` calls (or a keyword, `if (`),
  // whether it follows a `.` (`logger.info(`), the name before that (`def` in `def f(`), and
  // whether the bracket follows `)` or `]` (a call of what an expression gave). Read from the
  // source text, as the token window may have moved on; only a few matches ask.
  struct BeforeBracket {
    std::string_view name;
    std::string_view word_before; // the name before `name`, e.g. "def"
    bool attribute = false;
    bool after_closer = false;
  };

  // A platform value passed as a bare name (`jax.devices(PLAT)`): decided in finish(), once the
  // whole file's bindings are known.
  struct PendingValue {
    std::string_view name;
    ValueCheck check = ValueCheck::is_cpu;
    Rule rule = Rule::platform_unresolved; // the evidence when the name's value passes `check`
    bool unknown_is_evidence = true; // an unknown value is platform-unresolved evidence
    std::string what;                // what the value is, for the detail: "the backend"
    Pos pos;
    std::uint32_t stmt = 0;
    // `cfg.PLATFORM` where `cfg` is an imported module: the value is asked of the lookup, not of
    // this file's bindings (`name` is then the source text, for the detail).
    std::optional<ImportedModule> attribute{};
  };

  // An environment or config key passed as a bare name (`os.environ[KEY] = "cpu"`): the key's
  // value is known in finish(), and only then the table row that says how to read the value.
  struct PendingKey {
    std::string_view name;
    bool config = false;      // looked up in k_config_keys, else k_env_keys
    bool plain = true;        // `=`, not `+=` (which only a flag search reads)
    std::vector<Token> value; // the value's tokens (views into the source)
    DeviceSeen seen;
    std::string where;        // "os.environ[...]", "jax.config.update()", for the detail
    Pos pos;
  };

  enum class ImportState : std::uint8_t { none, module, alias, after_alias, from_module, from_names, from_alias };

  struct Import {
    ImportState state = ImportState::none;
    std::array<std::string_view, 16> parts{};
    std::size_t part_count = 0;
    bool relative = false;
    std::uint32_t level = 0;  // leading dots of `from ..m import`
    std::uint32_t line = 0;   // of the `import` or `from` keyword
    std::string_view pending; // `from m import <pending>` waiting to see whether `as` follows
  };

  // A comparison `A == B` where one side has been seen and the other is being looked for.
  struct Compare {
    bool active = false;
    bool want_tpu_string = false; // left side was backend-ish; else it was "tpu"
    bool in_collection = false;
    std::size_t collection_depth = 0;
    std::size_t base_depth = 0;
    std::size_t op_count = 0; // m_count of the operator (`==`, `!=`, `in`)
    std::uint32_t budget = 0;
    Pos start;
  };

  // An assert statement, read to its end: a shape-assert when every condition reads array
  // metadata (k_metadata_attributes), else a result-check.
  struct AssertStatement {
    bool active = false;
    std::size_t capture_start = 0; // of the `assert` token
    Pos pos;
    std::uint32_t stmt = 0;
  };

  // os.environ["KEY"] = <value up to the end of the statement>, os.environ[KEY] = <value> (a key
  // held in a name), or os.environ |= <mapping>
  struct EnvAssignment {
    bool active = false;
    const KeyRule* key = nullptr; // nullptr: a mapping (`|=`) or a key held in a name
    std::string_view key_name;    // the name holding the key, or empty
    bool plain = true;            // `=`, not `+=`
    std::size_t capture_start = 0;
    Pos root;
  };

  // back(1) is the previous token, up to back(k_window - 1) (the last slot is the one being
  // written). Slots never written hold the sentinel (an end token), so look-back before the
  // first token sees "start of input" without a count check.
  [[nodiscard]] const Token& back(std::size_t i) const {
    return i >= k_window ? m_sentinel : m_window[(m_count - i) & (k_window - 1)];
  }
  [[nodiscard]] Pos pos_of(const Token& t) const {
    return {t.line, t.column, static_cast<std::size_t>(t.text.data() - m_src.data())};
  }
  [[nodiscard]] std::size_t depth() const { return m_brackets.size() + m_bracket_overflow; }
  [[nodiscard]] bool statement_start(const Token& t) const {
    return t.kind == TokenKind::newline || t.kind == TokenKind::end || is_op(t, ";") || is_op(t, ":");
  }

public:
  // Sink interface of PythonLexer::run: the lexer builds each token in the ring slot after
  // back(1), then calls one of these.
  Token& slot() { return m_window[m_count & (k_window - 1)]; }
  // on_name and on_op run for most tokens: they are inlined into the lexer's loop (scanner.cpp,
  // the one place that runs it with a Scanner), which GCC would not do for their size alone.
  [[gnu::always_inline]] inline bool on_name(const Token& tok);
  bool on_number(const Token& tok) { return on_literal(tok); }
  bool on_string(const Token& tok) { return on_literal(tok); }
  bool on_open(const Token& tok);
  bool on_close(const Token& tok);
  [[gnu::always_inline]] inline bool on_op(const Token& tok);
  bool on_newline(const Token& tok);
  void on_end(const Token& tok);

private:
  [[gnu::always_inline]] inline bool prologue(const Token& tok, bool dot);
  [[gnu::always_inline]] inline void epilogue(const Token& tok, bool captured);
  bool on_literal(const Token& tok);
  void on_chain_end(const Token& tok);
  std::size_t chain_root(std::size_t last) const;
  void resolve_chain(std::size_t root, std::size_t last);
  // What an import of this file (or of the file an f-string or exec'd string is in) binds `local`
  // to, or nullptr.
  [[nodiscard]] const std::string* alias_of(std::string_view local) const;
  void step_import(const Token& tok);
  void bind_import();
  void note_import(std::uint32_t level);
  void bind(std::string_view local, std::string qualified);
  void open_bracket(const Token& tok);
  void close_bracket(const Token& tok);
  void note_keyword_argument();
  [[nodiscard]] bool in_environ_mapping() const;
  void finish_backend_kwarg();
  bool on_assignment(const Token& tok);
  bool on_environ_update();
  bool on_subscript_assignment(bool plain);
  void note_unpacked_subscript();
  void end_statement(const Token& tok);
  void note_backend_assignment();
  [[nodiscard]] bool is_backend_name(std::string_view name) const {
    return !m_backend_names.empty() &&
           std::find(m_backend_names.begin(), m_backend_names.end(), name) != m_backend_names.end();
  }
  void evaluate_call(const Bracket& bracket, std::size_t end);
  void evaluate_loader(const Bracket& bracket, std::size_t end);
  void check_backend_cpu(const Bracket& bracket, std::span<const Token> tokens, const Args& args);
  void check_device(DeviceSeen seen, std::span<const Token> tokens, std::size_t begin, std::size_t end,
                    Rule rule, const Pos& pos, std::string_view what);
  void check_key_value(const Bracket& bracket, std::span<const Token> tokens, const Args& args);
  void check_env_mapping(const Bracket& bracket, std::span<const Token> tokens, const Args& args);
  void check_computed(const Bracket& bracket, std::span<const Token> tokens, const Args& args);
  void check_key(bool config, std::span<const Token> tokens, const Arg& key, const Arg& value, DeviceSeen seen,
                 const Pos& pos, std::string_view where);
  void check_rule_value(const KeyRule& rule, std::span<const Token> tokens, std::size_t begin, std::size_t end,
                        DeviceSeen seen, const Pos& pos);
  [[nodiscard]] bool names_one_of(std::span<const Token> tokens, std::size_t begin, std::size_t end,
                                  const std::vector<std::string_view>& names) const;
  [[nodiscard]] std::optional<std::string> qualify(std::span<const Token> tokens, std::size_t begin,
                                                   std::size_t end) const;
  void evaluate_env_assignment();
  void start_assert(const Token& tok);
  void evaluate_assert();
  [[nodiscard]] bool in_output_call() const;
  [[nodiscard]] BeforeBracket before_bracket(std::size_t offset) const;
  void note_condition(std::size_t root);
  void set_expression_condition(std::size_t row, std::uint32_t line);
  void check_value(ValueCheck check, Rule rule, std::span<const Token> tokens, std::size_t begin,
                   std::size_t end, const Pos& pos, bool unknown_is_evidence, std::string_view what);
  void check_mapping(std::span<const Token> tokens, std::size_t begin, std::size_t end, const Pos& pos);
  void add_lex_error(const LexError& error);
  void resolve_pending();
  // The whole file's bindings (name_bindings.hpp), made the first time they are asked for: a second
  // pass over the tokens that only files with a bare-name value or a builtin loader call pay for.
  const NameBindings& file_bindings();
  void drop_shadowed_builtins();
  [[nodiscard]] NameValue imported_value(const ImportedModule& from, std::string_view shown, NameValue known,
                                         std::string& note) const;
  [[nodiscard]] std::optional<ImportedModule> module_attribute(std::span<const Token> tokens, std::size_t begin,
                                                               std::size_t end) const;
  // scanner_loads.cpp
  void check_load_module(const Bracket& bracket, std::span<const Token> tokens, const Args& args);
  void check_dunder_import(const Bracket& bracket, std::span<const Token> tokens, const Args& args);
  void check_load_path(const Bracket& bracket, std::span<const Token> tokens, const Args& args);
  void check_exec(const Bracket& bracket, std::span<const Token> tokens, std::size_t begin, std::size_t end,
                  std::uint32_t depth);
  void check_started_program(const Bracket& bracket, std::span<const Token> tokens, std::size_t end);
  void add_module_load(const Bracket& bracket, std::uint32_t level, std::string module, std::vector<std::string> names);
  void add_file_load(const Bracket& bracket, std::string path, bool from_file_folder);
  void add_unresolved_load(const Bracket& bracket, std::string detail);
  void scan_embedded(std::string_view code, const Pos& pos, std::string_view where, bool unreadable_counts);
  void on_fstring(const Token& tok);
  void note_mapping_key();
  // scanner_paths.cpp
  struct PathLiteral {
    std::string path;
    bool from_file_folder = false;
  };
  [[nodiscard]] std::optional<PathLiteral> path_expression(std::span<const Token> tokens, std::size_t begin,
                                                           std::size_t end) const;
  [[nodiscard]] bool folder_expression(std::span<const Token> tokens, std::size_t begin, std::size_t end) const;
  [[nodiscard]] bool file_expression(std::span<const Token> tokens, std::size_t begin, std::size_t end) const;
  struct CallParts {
    std::string callee; // qualified through the imports
    std::size_t args_begin = 0;
    std::size_t args_end = 0;
  };
  [[nodiscard]] std::optional<CallParts> call_parts(std::span<const Token> tokens, std::size_t begin,
                                                    std::size_t end) const;
  void start_compare(const Token& tok);
  void step_compare(const Token& tok);
  Pos primary_start(std::size_t last) const;
  void add_evidence(Rule rule, const Pos& pos, std::string detail = {});
  void add_evidence_at(Rule rule, const Pos& pos, std::uint32_t stmt, std::string detail);
  void on_cpu_device_evidence();
  void on_device_listed();
  void stop_capturing();
  void finish(Classification& out);

  void add_filter(std::string_view name) { m_filter.set(filter_hash(name)); }
  [[nodiscard]] bool maybe_interesting(std::string_view name) const { return m_filter.test(filter_hash(name)); }
  static std::size_t filter_hash(std::string_view name) { return name_bucket(name); }

  std::string_view m_src;
  const ConstantLookup* m_lookup = nullptr;
  std::uint32_t m_embed_depth = 0;
  const Scanner* m_outer = nullptr; // the scanner of the source this code is embedded in
  Token m_sentinel;
  std::array<Token, k_window> m_window{};
  std::size_t m_count = 0;

  // Last components of every callee plus every import alias: a name outside this set cannot end a
  // matching chain, so most names cost one hash and one bit test.
  std::bitset<4096> m_filter;
  std::vector<Alias> m_aliases;
  std::string m_qualified;
  Import m_import;
  std::vector<ImportedModule> m_imports; // every import statement's module, for the lesson reader
  std::vector<LoadedFile> m_loaded;      // every file a call loads by a literal path, likewise

  std::vector<Bracket> m_brackets;
  std::size_t m_bracket_overflow = 0;
  std::vector<Token> m_capture;
  std::size_t m_capturing = 0; // open captures (call arguments and env assignment)
  std::uint16_t m_next_call = k_no_matcher;
  Pos m_next_call_root;

  EnvAssignment m_env;
  AssertStatement m_assert;
  Compare m_compare;

  std::uint32_t m_stmt = 0;
  std::string_view m_assign_target; // `NAME = ...` at statement start
  std::uint32_t m_assign_stmt = 0;
  std::size_t m_assign_eq = 0; // m_count of that statement's `=`
  std::vector<std::string_view> m_cpu_names; // names assigned from a CPU device expression
  std::vector<std::string_view> m_device_names; // ... from another jax.devices()/local_devices() one
  // Names whose last `NAME = ...` was jax.default_backend() or `<x>.platform`: comparing one with
  // "tpu" is backend-is-tpu evidence.
  std::vector<std::string_view> m_backend_names;

  std::vector<Evidence> m_evidence;
  std::vector<std::uint32_t> m_evidence_stmt;   // statement of each evidence row
  std::vector<std::uint32_t> m_backend_stmts;   // statements holding a backend-is-tpu match
  std::vector<std::uint32_t> m_guard_stmts;     // ... that end with ':' (an if guarding the backend)
  std::vector<PendingValue> m_pending;
  std::vector<PendingKey> m_pending_keys;
  // The blocks around the current line, tracked only in a source that holds "initialize" (no
  // jax.distributed.initialize() can be matched in one that does not).
  std::optional<BlockTracker> m_blocks;
  // After a jax.distributed.initialize() row: an `if` later in its expression makes it conditional.
  struct InitializeWatch {
    bool active = false;
    std::size_t row = 0;   // index in m_evidence
    std::size_t depth = 0; // bracket depth of the call
  } m_init_watch;
  bool m_reported_nesting = false;
  // Calls of exec, eval or __import__ by their bare name, with the rows each added: a file that
  // binds the name itself (`def eval(model): ...`) calls its own function, not the builtin.
  struct BuiltinCall {
    std::string_view name;
    std::size_t first_row = 0;
    std::size_t end_row = 0;
  };
  std::vector<BuiltinCall> m_builtin_calls;
  std::vector<Token> m_all_tokens;
  std::optional<NameBindings> m_bindings;
};


} // namespace tpulaunch::scan
