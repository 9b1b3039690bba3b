#include "tpulaunch/classifier.hpp"

#include <algorithm>
#include <bitset>
#include <cstring>
#include <numeric>

namespace tpulaunch {
namespace {

// ---------------------------------------------------------------------------------------------
// Tables. Everything the classifier recognizes is a row here, so docs and --help can list it.

constexpr std::array<ClassifierRule, 16> k_rules{{
    {"devices-cpu", Category::cpu_selection, "jax.devices(\"cpu\"), jax.devices(backend=\"cpu\")",
     "selects CPU devices: the script runs on the CPU even on a TPU VM"},
    {"local-devices-cpu", Category::cpu_selection, "jax.local_devices(backend=\"cpu\"), jax.local_devices(\"cpu\")",
     "selects this host's CPU devices: the script runs on the CPU even on a TPU VM"},
    {"default-device-cpu", Category::cpu_selection,
     "jax.default_device(<CPU device>), e.g. jax.devices(\"cpu\")[0] or a name assigned from one",
     "makes a CPU device the default: computations run on the CPU"},
    {"backend-cpu-kwarg", Category::cpu_selection, "any call with backend=\"cpu\", e.g. jax.jit(f, backend=\"cpu\")",
     "compiles or places work on the CPU backend"},
    {"config-platforms-cpu", Category::cpu_selection,
     "jax.config.update(\"jax_platforms\" | \"jax_platform_name\", \"cpu[,...]\")",
     "makes CPU the first JAX platform: the TPU is not used"},
    {"env-platforms-cpu", Category::cpu_selection,
     "JAX_PLATFORMS / JAX_PLATFORM_NAME = \"cpu[,...]\" via os.environ[...] =, os.environ.setdefault, "
     "os.environ.update, os.putenv",
     "makes CPU the first JAX platform through the environment: the TPU is not used"},
    {"xla-force-host-devices", Category::cpu_selection,
     "XLA_FLAGS set (same forms) to a value containing --xla_force_host_platform_device_count",
     "fakes several CPU devices: a CPU simulation of a multi-device run"},
    {"num-cpu-devices", Category::cpu_selection, "jax.config.update(\"jax_num_cpu_devices\", N)",
     "sets the number of CPU devices: a CPU simulation of a multi-device run"},
    {"distributed-initialize", Category::multi_host, "jax.distributed.initialize(...)",
     "joins a multi-process JAX cluster: every host must run it"},
    {"process-index", Category::multi_host, "jax.process_index()", "reads this process's index: per-process behaviour"},
    {"process-count", Category::multi_host, "jax.process_count()", "reads the number of processes: per-process behaviour"},
    {"process-local-data", Category::multi_host, "jax.make_array_from_process_local_data(...)",
     "builds a global array from each process's own data"},
    {"collective", Category::multi_host,
     "lax.psum/pmean/pmax/pmin/all_gather/psum_scatter/ppermute/all_to_all, shard_map, "
     "jax.make_array_from_process_local_data/_single_device_arrays, "
     "multihost_utils.process_allgather/host_local_array_to_global_array",
     "communicates across devices or processes"},
    {"global-barrier", Category::multi_host, "multihost_utils.sync_global_devices(...)",
     "waits for every process at a barrier"},
    {"result-check", Category::multi_host, "a raise or assert statement (not one that only checks the backend)",
     "checks a result and fails loudly"},
    {"backend-is-tpu", Category::backend_assertion,
     "jax.default_backend() or <x>.platform compared with \"tpu\" (==, !=, in, not in)",
     "checks that it runs on a TPU backend"},
}};

constexpr std::array<MultiHostMarker, 4> k_markers{{
    {"initialize", {"distributed-initialize", "", ""}},
    {"per-process data", {"process-index", "process-count", "process-local-data"}},
    {"collective", {"collective", "", ""}},
    {"result check", {"result-check", "", ""}},
}};

// How a matched callee's arguments decide whether it is evidence.
enum class ArgCheck : std::uint8_t {
  none,          // the call itself (or, for `reference` rows, any use of the name) is the evidence
  backend_cpu,   // a positional argument or backend= is "cpu"
  cpu_device,    // an argument is a CPU device: a jax.devices("cpu") call or a name assigned from one
  config_key,    // (name, value): name looked up in k_config_keys
  env_pair,      // (name, value): name looked up in k_env_keys
  env_mapping,   // {name: value, ...} or name=value: names looked up in k_env_keys
  backend_probe, // jax.default_backend(): not evidence itself, one side of backend-is-tpu
};

struct CallMatcher {
  std::string_view callee; // fully-qualified, after alias resolution
  std::string_view rule;   // rule id; empty when the key table decides
  ArgCheck check;
  bool reference; // also matches a use that is not a call (e.g. partial(shard_map, ...))
};

constexpr std::array<CallMatcher, 27> k_call_matchers{{
    {"jax.devices", "devices-cpu", ArgCheck::backend_cpu, false},
    {"jax.local_devices", "local-devices-cpu", ArgCheck::backend_cpu, false},
    {"jax.default_device", "default-device-cpu", ArgCheck::cpu_device, false},
    {"jax.config.update", "", ArgCheck::config_key, false},
    // `config.update` with an unresolved `config`: the keys below are JAX's own names.
    {"config.update", "", ArgCheck::config_key, false},
    {"os.environ.setdefault", "", ArgCheck::env_pair, false},
    {"os.putenv", "", ArgCheck::env_pair, false},
    {"os.environ.update", "", ArgCheck::env_mapping, false},
    {"jax.distributed.initialize", "distributed-initialize", ArgCheck::none, false},
    {"jax.process_index", "process-index", ArgCheck::none, false},
    {"jax.process_count", "process-count", ArgCheck::none, false},
    {"jax.lax.psum", "collective", ArgCheck::none, true},
    {"jax.lax.pmean", "collective", ArgCheck::none, true},
    {"jax.lax.pmax", "collective", ArgCheck::none, true},
    {"jax.lax.pmin", "collective", ArgCheck::none, true},
    {"jax.lax.all_gather", "collective", ArgCheck::none, true},
    {"jax.lax.psum_scatter", "collective", ArgCheck::none, true},
    {"jax.lax.ppermute", "collective", ArgCheck::none, true},
    {"jax.lax.all_to_all", "collective", ArgCheck::none, true},
    {"jax.experimental.shard_map.shard_map", "collective", ArgCheck::none, true},
    {"jax.shard_map", "collective", ArgCheck::none, true},
    // Both a collective and per-process data, so it yields two rows.
    {"jax.make_array_from_process_local_data", "collective", ArgCheck::none, false},
    {"jax.make_array_from_process_local_data", "process-local-data", ArgCheck::none, false},
    {"jax.make_array_from_single_device_arrays", "collective", ArgCheck::none, false},
    {"jax.experimental.multihost_utils.process_allgather", "collective", ArgCheck::none, false},
    {"jax.experimental.multihost_utils.host_local_array_to_global_array", "collective", ArgCheck::none, false},
    {"jax.experimental.multihost_utils.sync_global_devices", "global-barrier", ArgCheck::none, false},
}};

constexpr CallMatcher k_default_backend{"jax.default_backend", "", ArgCheck::backend_probe, false};

// How the value given to a configuration key decides whether it is evidence.
enum class ValueCheck : std::uint8_t {
  first_platform_cpu, // a string literal whose first comma-separated platform is "cpu"
  force_host_flag,    // any string in the value contains --xla_force_host_platform_device_count
  any,                // the key alone is the evidence
};

struct KeyRule {
  std::string_view key;
  std::string_view rule;
  ValueCheck check;
};

constexpr std::array<KeyRule, 3> k_env_keys{{
    {"JAX_PLATFORMS", "env-platforms-cpu", ValueCheck::first_platform_cpu},
    {"JAX_PLATFORM_NAME", "env-platforms-cpu", ValueCheck::first_platform_cpu},
    {"XLA_FLAGS", "xla-force-host-devices", ValueCheck::force_host_flag},
}};

constexpr std::array<KeyRule, 3> k_config_keys{{
    {"jax_platforms", "config-platforms-cpu", ValueCheck::first_platform_cpu},
    {"jax_platform_name", "config-platforms-cpu", ValueCheck::first_platform_cpu},
    {"jax_num_cpu_devices", "num-cpu-devices", ValueCheck::any},
}};

constexpr std::string_view k_force_host_flag = "--xla_force_host_platform_device_count";

// Evidence text longer than this (bytes) is cut and ends with "...".
constexpr std::size_t k_max_evidence_text = 200;

// ---------------------------------------------------------------------------------------------
// Small helpers.

// Equality with a literal of known length: the compiler turns the memcmp into a few inline
// compares instead of a library call (these run for a large share of all tokens).
template <std::size_t N> bool equals(std::string_view text, const char (&literal)[N]) {
  return text.size() == N - 1 && std::memcmp(text.data(), literal, N - 1) == 0;
}
template <std::size_t N> bool is_op(const Token& t, const char (&text)[N]) {
  return t.kind == TokenKind::op && equals(t.text, text);
}
template <std::size_t N> bool is_name(const Token& t, const char (&text)[N]) {
  return t.kind == TokenKind::name && equals(t.text, text);
}
bool is_op(const Token& t, std::string_view text) { return t.kind == TokenKind::op && t.text == text; }
bool is_op1(const Token& t, char c) { return t.kind == TokenKind::op && t.text.size() == 1 && t.text[0] == c; }

bool is_opener(const Token& t) {
  return t.kind == TokenKind::op && t.text.size() == 1 && (t.text[0] == '(' || t.text[0] == '[' || t.text[0] == '{');
}
bool is_closer(const Token& t) {
  return t.kind == TokenKind::op && t.text.size() == 1 && (t.text[0] == ')' || t.text[0] == ']' || t.text[0] == '}');
}

std::string lower_trimmed(std::string_view value) {
  const auto first = value.find_first_not_of(" \t\r\n\f\v");
  if (first == std::string_view::npos) {
    return {};
  }
  const auto last = value.find_last_not_of(" \t\r\n\f\v");
  std::string out(value.substr(first, last - first + 1));
  for (auto& c : out) {
    if (c >= 'A' && c <= 'Z') {
      c = static_cast<char>(c - 'A' + 'a');
    }
  }
  return out;
}

// "cpu", "CPU", " cpu , tpu": the first platform of a JAX platform list.
bool first_platform_is_cpu(std::string_view value) { return lower_trimmed(value.substr(0, value.find(','))) == "cpu"; }

// An f-string with a field is not a literal; other strings are.
bool is_literal_string(const Token& t) {
  return t.kind == TokenKind::string && !(t.fstring && t.body().find('{') != std::string_view::npos);
}

// Concatenated value of tokens[begin, end) when they are all string literals (implicit
// concatenation), else nullopt.
std::optional<std::string> literal_value(std::span<const Token> tokens, std::size_t begin, std::size_t end) {
  if (begin >= end) {
    return std::nullopt;
  }
  std::string out;
  for (std::size_t i = begin; i < end; ++i) {
    if (!is_literal_string(tokens[i])) {
      return std::nullopt;
    }
    out += string_value(tokens[i]);
  }
  return out;
}

bool value_matches(ValueCheck check, std::span<const Token> tokens, std::size_t begin, std::size_t end) {
  switch (check) {
  case ValueCheck::first_platform_cpu: {
    const auto value = literal_value(tokens, begin, end);
    return value && first_platform_is_cpu(*value);
  }
  case ValueCheck::force_host_flag:
    // Any string in the expression: `os.environ.get("XLA_FLAGS", "") + " --xla_force..."` and
    // f-strings count, because the flag name itself is the evidence.
    for (std::size_t i = begin; i < end; ++i) {
      if (tokens[i].kind == TokenKind::string && tokens[i].body().find(k_force_host_flag) != std::string_view::npos) {
        return true;
      }
    }
    return false;
  case ValueCheck::any:
    return true;
  }
  return false;
}

template <std::size_t N> const KeyRule* find_key(const std::array<KeyRule, N>& table, std::string_view key) {
  for (const auto& row : table) {
    if (row.key == key) {
      return &row;
    }
  }
  return nullptr;
}

// One argument of a call: `keyword` is empty for positional ones; [begin, end) is the value.
struct Arg {
  std::string_view keyword;
  std::size_t begin = 0;
  std::size_t end = 0;
};

// The argument reader: splits tokens (the inside of a call's parentheses) at top-level commas.
// Only the first k_max_args arguments are kept; no rule looks further.
constexpr std::size_t k_max_args = 8;
struct Args {
  std::array<Arg, k_max_args> items{};
  std::size_t count = 0;

  [[nodiscard]] const Arg* positional(std::size_t index) const {
    for (std::size_t i = 0; i < count; ++i) {
      if (items[i].keyword.empty()) {
        if (index == 0) {
          return &items[i];
        }
        --index;
      }
    }
    return nullptr;
  }
  [[nodiscard]] const Arg* keyword(std::string_view name) const {
    for (std::size_t i = 0; i < count; ++i) {
      if (items[i].keyword == name) {
        return &items[i];
      }
    }
    return nullptr;
  }
};

Args split_args(std::span<const Token> tokens, std::size_t begin, std::size_t end, std::string_view separator) {
  Args args;
  const auto push = [&](std::size_t from, std::size_t to) {
    if (from >= to || args.count == k_max_args) {
      return;
    }
    Arg arg;
    if (to - from >= 2 && tokens[from].kind == TokenKind::name && is_op(tokens[from + 1], "=")) {
      arg.keyword = tokens[from].text;
      from += 2;
    }
    arg.begin = from;
    arg.end = to;
    args.items[args.count++] = arg;
  };
  std::size_t depth = 0;
  std::size_t start = begin;
  for (std::size_t i = begin; i < end; ++i) {
    const Token& t = tokens[i];
    if (is_opener(t)) {
      ++depth;
    } else if (is_closer(t)) {
      depth = depth > 0 ? depth - 1 : 0;
    } else if (depth == 0 && is_op(t, separator)) {
      push(start, i);
      start = i + 1;
    }
  }
  push(start, end);
  return args;
}

// A position in the source, for an evidence row.
struct Pos {
  std::uint32_t line = 0;
  std::uint32_t column = 0;
  std::size_t offset = 0;
};

// ---------------------------------------------------------------------------------------------
// The streaming scanner. It sees each token once, keeps the last k_window tokens for look-back
// (dotted chains, `backend="cpu"`, comparisons) and buffers tokens only inside the argument list
// of a call that matched the table, so the common path allocates nothing.

class Scanner {
public:
  explicit Scanner(std::string_view source);
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

  struct Bracket {
    char open = '(';
    bool capturing = false;
    bool saw_cpu_device = false;
    bool suppress_backend_kwarg = false;
    std::uint16_t matcher = k_no_matcher;
    std::size_t capture_start = 0;
    Pos root;
  };

  enum class ImportState : std::uint8_t { none, module, alias, after_alias, from_module, from_names, from_alias };

  struct Import {
    ImportState state = ImportState::none;
    std::array<std::string_view, 16> parts{};
    std::size_t part_count = 0;
    bool relative = false;
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

  // os.environ["KEY"] = <value up to the end of the statement>
  struct EnvAssignment {
    bool active = false;
    const KeyRule* key = nullptr;
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
  bool on_name(const Token& tok);
  bool on_number(const Token& tok) { return on_literal(tok); }
  bool on_string(const Token& tok) { return on_literal(tok); }
  bool on_open(const Token& tok);
  bool on_close(const Token& tok);
  bool on_op(const Token& tok);
  bool on_newline(const Token& tok);
  void on_end(const Token& tok);

private:
  [[gnu::always_inline]] inline bool prologue(const Token& tok, bool dot);
  [[gnu::always_inline]] inline void epilogue(const Token& tok, bool captured);
  bool on_literal(const Token& tok);
  void on_chain_end(const Token& tok);
  std::size_t chain_root(std::size_t last) const;
  void resolve_chain(std::size_t root, std::size_t last);
  void step_import(const Token& tok);
  void bind_import();
  void bind(std::string_view local, std::string qualified);
  void open_bracket(const Token& tok);
  void close_bracket(const Token& tok);
  void check_backend_kwarg();
  bool on_assignment(const Token& tok);
  void end_statement(const Token& tok);
  void note_backend_assignment();
  [[nodiscard]] bool is_backend_name(std::string_view name) const {
    return !m_backend_names.empty() &&
           std::find(m_backend_names.begin(), m_backend_names.end(), name) != m_backend_names.end();
  }
  void evaluate_call(const Bracket& bracket, std::size_t end);
  void evaluate_env_assignment();
  void start_compare(const Token& tok);
  void step_compare(const Token& tok);
  Pos primary_start(std::size_t last) const;
  void add_evidence(std::string_view rule, const Pos& pos);
  void on_cpu_device_evidence();
  void stop_capturing();
  void finish(Classification& out);

  void add_filter(std::string_view name) { m_filter.set(filter_hash(name)); }
  [[nodiscard]] bool maybe_interesting(std::string_view name) const { return m_filter.test(filter_hash(name)); }
  static std::size_t filter_hash(std::string_view name) {
    const auto first = static_cast<unsigned char>(name.front());
    const auto last = static_cast<unsigned char>(name.back());
    return (name.size() * 131U + first * 31U + last) & 4095U;
  }

  std::string_view m_src;
  Token m_sentinel;
  std::array<Token, k_window> m_window{};
  std::size_t m_count = 0;

  // Last components of every callee plus every import alias: a name outside this set cannot end a
  // matching chain, so most names cost one hash and one bit test.
  std::bitset<4096> m_filter;
  std::vector<Alias> m_aliases;
  std::string m_qualified;
  Import m_import;

  std::vector<Bracket> m_brackets;
  std::size_t m_bracket_overflow = 0;
  std::vector<Token> m_capture;
  std::size_t m_capturing = 0; // open captures (call arguments and env assignment)
  std::uint16_t m_next_call = k_no_matcher;
  Pos m_next_call_root;

  EnvAssignment m_env;
  Compare m_compare;

  std::uint32_t m_stmt = 0;
  std::string_view m_assign_target; // `NAME = ...` at statement start
  std::uint32_t m_assign_stmt = 0;
  std::size_t m_assign_eq = 0; // m_count of that statement's `=`
  std::vector<std::string_view> m_cpu_names; // names assigned from a CPU device expression
  // Names whose last `NAME = ...` was jax.default_backend() or `<x>.platform`: comparing one with
  // "tpu" is backend-is-tpu evidence.
  std::vector<std::string_view> m_backend_names;

  std::vector<Evidence> m_evidence;
  std::vector<std::uint32_t> m_evidence_stmt;   // statement of each evidence row
  std::vector<std::uint32_t> m_backend_stmts;   // statements holding a backend-is-tpu match
  std::vector<std::uint32_t> m_guard_stmts;     // ... that end with ':' (an if guarding the backend)
};

Scanner::Scanner(std::string_view source) : m_src(source) {
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
}

void Scanner::add_evidence(std::string_view rule_id, const Pos& pos) {
  const ClassifierRule* rule = find_classifier_rule(rule_id);
  if (rule == nullptr) {
    return;
  }
  for (std::size_t i = m_evidence.size(); i > 0 && m_evidence[i - 1].line == pos.line; --i) {
    if (m_evidence[i - 1].rule == rule_id && m_evidence[i - 1].column == pos.column) {
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
  std::string shown(text.substr(0, k_max_evidence_text));
  if (text.size() > k_max_evidence_text) {
    shown += "..."; // a minified or generated line: the start is enough to find it
  }

  m_evidence.push_back(
      Evidence{std::string(rule->id), rule->category, pos.line, pos.column, std::move(shown), std::string(rule->implies)});
  m_evidence_stmt.push_back(m_stmt);
  if (rule_id == "backend-is-tpu") {
    m_backend_stmts.push_back(m_stmt);
  }
}

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

void Scanner::stop_capturing() {
  for (auto& bracket : m_brackets) {
    bracket.capturing = false;
  }
  m_env.active = false;
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

void Scanner::resolve_chain(std::size_t root, std::size_t last) {
  const std::string_view root_name = back(root).text;
  m_qualified.clear();
  bool aliased = false;
  for (auto it = m_aliases.rbegin(); it != m_aliases.rend(); ++it) {
    if (it->local == root_name) {
      m_qualified += it->qualified;
      aliased = true;
      break;
    }
  }
  if (!aliased) {
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
  if (is_name(before, "def") || is_name(before, "class")) {
    return;
  }
  resolve_chain(root, 1);
  const std::string_view qualified = m_qualified;
  if (!(qualified.starts_with("jax") || qualified.starts_with("os") || qualified.starts_with("config"))) {
    return;
  }
  const bool call = is_op(tok, "(");
  const Pos root_pos = pos_of(back(root));
  if (call && qualified == k_default_backend.callee) {
    if (m_compare.active && !m_compare.want_tpu_string) {
      add_evidence("backend-is-tpu", m_compare.start);
      m_compare.active = false;
    }
    return;
  }
  for (std::size_t i = 0; i < k_call_matchers.size(); ++i) {
    const CallMatcher& matcher = k_call_matchers[i];
    if (matcher.callee != qualified || (!call && !matcher.reference)) {
      continue;
    }
    if (matcher.check == ArgCheck::none) {
      add_evidence(matcher.rule, root_pos);
    } else if (call && m_next_call == k_no_matcher) {
      m_next_call = static_cast<std::uint16_t>(i);
      m_next_call_root = root_pos;
    }
  }
}

void Scanner::bind(std::string_view local, std::string qualified) {
  if (local.empty()) {
    return;
  }
  // A one-name chain resolves to the alias target, so only aliases of a callee itself (`from jax
  // import devices as d`) can end a matching chain; longer chains end in a callee's last name.
  const bool callee = qualified == k_default_backend.callee ||
                      std::any_of(k_call_matchers.begin(), k_call_matchers.end(),
                                  [&qualified](const CallMatcher& m) { return m.callee == qualified; });
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

// `import a.b.c` binds `a` to "a"; `import a.b.c as x` binds `x` to "a.b.c".
void Scanner::bind_import() {
  if (m_import.part_count > 0) {
    bind(m_import.parts[0], std::string(m_import.parts[0]));
  }
  m_import.part_count = 0;
}

// Import statements are a small state machine over the token stream; they populate the alias
// table that resolve_chain() reads. Relative imports bind names to ".module.name", which matches
// no rule but still shadows an earlier binding of the same name.
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
    } else if (is_name(tok, "from")) {
      im = Import{};
      im.state = ImportState::from_module;
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
    } else if (is_name(tok, "import")) {
      im.state = im.part_count > 0 || im.relative ? ImportState::from_names : ImportState::none;
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

void Scanner::open_bracket(const Token& tok) {
  if (m_capturing > 0) {
    m_capture.push_back(tok);
  }
  const std::uint16_t matcher = tok.text[0] == '(' ? m_next_call : k_no_matcher;
  m_next_call = k_no_matcher;
  if (m_brackets.size() >= k_max_brackets || m_bracket_overflow > 0) {
    ++m_bracket_overflow;
    return;
  }
  Bracket bracket;
  bracket.open = tok.text[0];
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

// `<call>(..., backend="cpu", ...)`: checked by look-back when the `,` or `)` after the value
// arrives, so no call needs buffering for it.
void Scanner::check_backend_kwarg() {
  if (back(1).kind != TokenKind::string || m_bracket_overflow > 0 || m_brackets.empty()) {
    return;
  }
  const Bracket& inner = m_brackets.back();
  if (inner.open != '(' || inner.suppress_backend_kwarg) {
    return;
  }
  std::size_t j = 1;
  while (j + 3 < k_window && back(j).kind == TokenKind::string) {
    ++j;
  }
  if (!is_op(back(j), "=") || !is_name(back(j + 1), "backend") ||
      !(is_op(back(j + 2), "(") || is_op(back(j + 2), ","))) {
    return;
  }
  std::string value;
  for (std::size_t i = j - 1; i >= 1; --i) {
    if (!is_literal_string(back(i))) {
      return;
    }
    value += string_value(back(i));
  }
  if (lower_trimmed(value) == "cpu") {
    add_evidence("backend-cpu-kwarg", pos_of(back(j + 1)));
  }
}

void Scanner::evaluate_call(const Bracket& bracket, std::size_t end) {
  const CallMatcher& matcher = k_call_matchers[bracket.matcher];
  const std::span<const Token> tokens(m_capture);
  const Args args = split_args(tokens, bracket.capture_start, end, ",");
  switch (matcher.check) {
  case ArgCheck::none:
  case ArgCheck::backend_probe:
    return;
  case ArgCheck::backend_cpu: {
    bool cpu = false;
    for (std::size_t i = 0; i < args.count && !cpu; ++i) {
      const Arg& arg = args.items[i];
      if (arg.keyword.empty() || arg.keyword == "backend") {
        const auto value = literal_value(tokens, arg.begin, arg.end);
        cpu = value && lower_trimmed(*value) == "cpu";
      }
    }
    if (cpu) {
      add_evidence(matcher.rule, bracket.root);
      on_cpu_device_evidence();
    }
    return;
  }
  case ArgCheck::cpu_device: {
    bool cpu = bracket.saw_cpu_device;
    for (std::size_t i = bracket.capture_start; i < end && !cpu; ++i) {
      const Token& t = tokens[i];
      cpu = t.kind == TokenKind::name && (i == bracket.capture_start || !is_op(tokens[i - 1], ".")) &&
            std::find(m_cpu_names.begin(), m_cpu_names.end(), t.text) != m_cpu_names.end();
    }
    if (cpu) {
      add_evidence(matcher.rule, bracket.root);
    }
    return;
  }
  case ArgCheck::config_key:
  case ArgCheck::env_pair: {
    const Arg* name = args.positional(0);
    const Arg* value = args.positional(1);
    if (name == nullptr || value == nullptr) {
      return;
    }
    const auto key = literal_value(tokens, name->begin, name->end);
    if (!key) {
      return;
    }
    const KeyRule* rule = matcher.check == ArgCheck::config_key ? find_key(k_config_keys, *key) : find_key(k_env_keys, *key);
    if (rule != nullptr && value_matches(rule->check, tokens, value->begin, value->end)) {
      add_evidence(rule->rule, bracket.root);
    }
    return;
  }
  case ArgCheck::env_mapping:
    for (std::size_t i = 0; i < args.count; ++i) {
      const Arg& arg = args.items[i];
      if (!arg.keyword.empty()) {
        const KeyRule* rule = find_key(k_env_keys, arg.keyword);
        if (rule != nullptr && value_matches(rule->check, tokens, arg.begin, arg.end)) {
          add_evidence(rule->rule, bracket.root);
        }
        continue;
      }
      if (arg.end - arg.begin < 2 || !is_op(tokens[arg.begin], "{") || !is_op(tokens[arg.end - 1], "}")) {
        continue;
      }
      const Args entries = split_args(tokens, arg.begin + 1, arg.end - 1, ",");
      for (std::size_t e = 0; e < entries.count; ++e) {
        const Arg& entry = entries.items[e];
        const Args pair = split_args(tokens, entry.begin, entry.end, ":");
        if (pair.count != 2 || !pair.items[0].keyword.empty()) {
          continue;
        }
        const auto key = literal_value(tokens, pair.items[0].begin, pair.items[0].end);
        const KeyRule* rule = key ? find_key(k_env_keys, *key) : nullptr;
        if (rule != nullptr && value_matches(rule->check, tokens, pair.items[1].begin, pair.items[1].end)) {
          add_evidence(rule->rule, bracket.root);
        }
      }
    }
    return;
  }
}

// `=` or `+=` at statement level: os.environ["KEY"] = value, or `name = ...` (to learn names that
// hold CPU devices). Returns true when it starts capturing the assigned value.
bool Scanner::on_assignment(const Token& tok) {
  if (depth() != 0) {
    return false;
  }
  const bool plain = tok.text == "=";
  if (plain && back(1).kind == TokenKind::name && statement_start(back(2))) {
    m_assign_target = back(1).text;
    m_assign_stmt = m_stmt;
    m_assign_eq = m_count;
    return false;
  }
  if (!is_op(back(1), "]") || m_env.active) {
    return false;
  }
  std::size_t j = 2;
  while (j + 2 < k_window && back(j).kind == TokenKind::string) {
    ++j;
  }
  if (j == 2 || !is_op(back(j), "[") || back(j + 1).kind != TokenKind::name) {
    return false;
  }
  const std::size_t root = chain_root(j + 1);
  if (root == 0) {
    return false;
  }
  resolve_chain(root, j + 1);
  if (m_qualified != "os.environ") {
    return false;
  }
  std::string key;
  for (std::size_t i = j - 1; i >= 2; --i) {
    if (!is_literal_string(back(i))) {
      return false;
    }
    key += string_value(back(i));
  }
  const KeyRule* rule = find_key(k_env_keys, key);
  // `+=` appends, so only a flag search (XLA_FLAGS) makes sense for it.
  if (rule == nullptr || (!plain && rule->check != ValueCheck::force_host_flag)) {
    return false;
  }
  m_env.active = true;
  m_env.key = rule;
  m_env.capture_start = m_capture.size();
  m_env.root = pos_of(back(root));
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
  if (value_matches(m_env.key->check, tokens, m_env.capture_start, tokens.size())) {
    add_evidence(m_env.key->rule, m_env.root);
  }
  if (m_capturing == 0) {
    m_capture.clear();
  }
}

void Scanner::end_statement(const Token& tok) {
  evaluate_env_assignment();
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
    add_evidence("backend-is-tpu", cmp.start);
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
        add_evidence("backend-is-tpu", cmp.start);
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
      add_evidence("backend-is-tpu", cmp.start);
      cmp.active = false;
    }
    return;
  }
  // "tpu" on the left: look for `.platform` or jax.default_backend() in the right operand.
  if (is_name(tok, "platform") && is_op(back(1), ".")) {
    add_evidence("backend-is-tpu", cmp.start);
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

bool Scanner::on_name(const Token& tok) {
  const bool importing = prologue(tok, false);
  const std::string_view text = tok.text;
  // Only in, from, raise, import and assert matter: one length test rejects most names.
  switch (text.size()) {
  case 2:
    if (text[0] == 'i' && text[1] == 'n') {
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
      add_evidence("result-check", pos_of(tok));
    }
    break;
  case 6:
    if (!importing && equals(text, "import")) {
      step_import(tok);
    } else if (equals(text, "assert") && !is_op1(back(1), '.')) {
      add_evidence("result-check", pos_of(tok));
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
  if (back(1).kind == TokenKind::string) {
    check_backend_kwarg();
  }
  close_bracket(tok);
  epilogue(tok, true);
  return true;
}

bool Scanner::on_op(const Token& tok) {
  const std::string_view text = tok.text;
  const bool dot = text.size() == 1 && text[0] == '.';
  prologue(tok, dot);
  bool captured = false;
  if (text.size() == 1) {
    switch (text[0]) {
    case ',':
      if (back(1).kind == TokenKind::string) {
        check_backend_kwarg();
      }
      break;
    case '=':
      captured = on_assignment(tok);
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
    } else if (text[0] == '+') {
      captured = on_assignment(tok);
    }
  }
  epilogue(tok, captured);
  return true;
}

bool Scanner::on_newline(const Token& tok) {
  prologue(tok, false);
  end_statement(tok);
  epilogue(tok, true);
  return true;
}

void Scanner::on_end(const Token& tok) { (void)on_newline(tok); }

void Scanner::finish(Classification& out) {
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
    const std::uint32_t stmt = m_evidence_stmt[index];
    if (row.rule == "result-check") {
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
  finish(out);
  out.lex_error = lexer.error();
  return out;
}

const Evidence* first_of(const Classification& c, Category category) {
  for (const auto& row : c.evidence) {
    if (row.category == category) {
      return &row;
    }
  }
  return nullptr;
}

const Evidence* first_rule(const Classification& c, std::string_view rule) {
  for (const auto& row : c.evidence) {
    if (row.rule == rule) {
      return &row;
    }
  }
  return nullptr;
}

// The suggestion, in order (the first branch that applies wins):
//  1. the source does not tokenize cleanly                         -> none (a human reads it)
//  2. CPU selection together with jax.distributed.initialize() or
//     with a TPU backend check                                     -> none, plus a contradiction
//  3. CPU selection                                                -> cpu-only (collectives
//     without initialize() run over CPU devices, e.g. with --xla_force_host_platform_device_count)
//  4. initialize() with all four multi-host markers                -> multi-host-qualified
//  5. initialize() with markers missing                            -> none: "lacks: ..."
//  6. anything else                                                -> single-host-compatible
void suggest(Classification& c) {
  const Evidence* cpu = first_of(c, Category::cpu_selection);
  const Evidence* init = first_rule(c, "distributed-initialize");
  const Evidence* backend = first_of(c, Category::backend_assertion);
  if (cpu != nullptr && init != nullptr) {
    c.contradictions.push_back("cpu selection at line " + std::to_string(cpu->line) +
                               " contradicts jax.distributed.initialize() at line " + std::to_string(init->line));
  }
  if (cpu != nullptr && backend != nullptr) {
    c.contradictions.push_back("cpu selection at line " + std::to_string(cpu->line) +
                               " contradicts the TPU backend check at line " + std::to_string(backend->line));
  }
  if (c.lex_error) {
    c.why = "the source is not valid Python at line " + std::to_string(c.lex_error->line) + ", column " +
            std::to_string(c.lex_error->column) + " (" + c.lex_error->message + "), so evidence may be incomplete";
    return;
  }
  if (!c.contradictions.empty()) {
    c.why = "contradictory evidence: " + c.contradictions.front();
    return;
  }
  if (cpu != nullptr) {
    c.suggested = ScriptClass::cpu_only;
    c.why = "selects CPU devices at line " + std::to_string(cpu->line) + " (" + cpu->rule + ")";
    const Evidence* collective = first_rule(c, "collective");
    if (collective != nullptr) {
      c.why += "; its collectives (line " + std::to_string(collective->line) +
               ") run over CPU devices without jax.distributed.initialize()";
    }
    return;
  }
  if (init != nullptr) {
    const auto missing = missing_multi_host_markers(c);
    if (missing.empty()) {
      c.suggested = ScriptClass::multi_host_qualified;
      c.why = "initializes distributed JAX at line " + std::to_string(init->line) +
              " and has per-process data, a collective and a result check";
      return;
    }
    c.why = "initializes distributed JAX at line " + std::to_string(init->line) + " but lacks: ";
    for (std::size_t i = 0; i < missing.size(); ++i) {
      c.why += (i == 0 ? "" : ", ");
      c.why += missing[i];
    }
    return;
  }
  c.suggested = ScriptClass::single_host_compatible;
  if (backend != nullptr) {
    c.why = "checks for a TPU backend at line " + std::to_string(backend->line) +
            " with no cpu selection and no jax.distributed.initialize()";
  } else if (c.has_category(Category::multi_host)) {
    c.why = "no cpu selection and no jax.distributed.initialize(): its multi-host markers run on one host";
  } else {
    c.why = "no cpu selection and no multi-host markers";
  }
}

} // namespace

std::string_view to_string(Category category) {
  switch (category) {
  case Category::cpu_selection:
    return "cpu-selection";
  case Category::multi_host:
    return "multi-host";
  case Category::backend_assertion:
    return "backend-assertion";
  }
  return "cpu-selection";
}

bool Classification::has_rule(std::string_view rule) const {
  return std::any_of(evidence.begin(), evidence.end(), [rule](const Evidence& e) { return e.rule == rule; });
}

bool Classification::has_category(Category category) const {
  return std::any_of(evidence.begin(), evidence.end(), [category](const Evidence& e) { return e.category == category; });
}

std::vector<const Evidence*> Classification::of_category(Category category) const {
  std::vector<const Evidence*> out;
  for (const auto& e : evidence) {
    if (e.category == category) {
      out.push_back(&e);
    }
  }
  return out;
}

Classification classify_source(std::string_view source) {
  Scanner scanner(source);
  Classification out = scanner.run();
  suggest(out);
  return out;
}

std::span<const ClassifierRule> classifier_rules() { return k_rules; }

const ClassifierRule* find_classifier_rule(std::string_view id) {
  for (const auto& rule : k_rules) {
    if (rule.id == id) {
      return &rule;
    }
  }
  return nullptr;
}

std::span<const MultiHostMarker> multi_host_markers() { return k_markers; }

std::vector<std::string_view> missing_multi_host_markers(const Classification& classification) {
  std::vector<std::string_view> missing;
  for (const auto& marker : k_markers) {
    const bool present = std::any_of(marker.rules.begin(), marker.rules.end(), [&](std::string_view rule) {
      return !rule.empty() && classification.has_rule(rule);
    });
    if (!present) {
      missing.push_back(marker.name);
    }
  }
  return missing;
}

} // namespace tpulaunch
