#pragma once
// What a name holds, file-wide: the classifier's answer to `jax.devices(PLAT)`. A name bound
// exactly once in the whole file, by a plain `NAME = "literal"` (or `NAME: T = "literal"`, or
// `NAME = OTHER` where OTHER is such a name), has that value; any other name's value is unknown.
// A name read in a target (`os.environ[KEY] = ...` reads os and KEY) binds nothing.
// Every other way Python binds a name (a second assignment, augmented or tuple targets, for and
// with targets, `as`, imports, def/class/lambda parameters, walrus, global/del, match captures,
// a star import) counts as one more binding, so an unknown value is never mistaken for a known
// one. Flow-insensitive by design: it does not follow scopes or control flow. Internal to the
// classifier; run only when a script passes a bare name where a platform value goes.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tpulaunch/classify/classifier.hpp"
#include "tpulaunch/classify/python_lexer.hpp"

namespace tpulaunch::scan {

// What is known about one name's value.
struct NameValue {
  std::optional<std::string> value; // set when the name is bound once to a string literal
  std::string why_unknown;          // when it is not: "'PLAT' is bound 2 times (lines 3, 9)"
  std::uint32_t line = 0;           // of the name's binding, when it is bound once
  // When the name (or the name it is bound to) is bound once, by `from M import NAME [as name]`:
  // that import, its `names` holding NAME. Another file then knows the value.
  std::optional<ImportedModule> from{};
};

class NameBindings {
public:
  // Reads every binding in `tokens` (all tokens of one file, ending with the end token).
  explicit NameBindings(std::span<const Token> tokens);

  // The value of `name` where it is read (file-wide; see above).
  [[nodiscard]] NameValue value_of(std::string_view name) const;

  // True when some statement binds `name`, or a star import or a module __getattr__ may.
  [[nodiscard]] bool may_bind(std::string_view name) const;

  // True when some statement of the file binds `name` (a star import is not counted).
  [[nodiscard]] bool binds(std::string_view name) const { return m_bindings.contains(name); }

private:
  struct Binding {
    std::uint32_t line = 0;
    std::size_t value_begin = 0; // the value's tokens, for a plain `NAME = value`
    std::size_t value_end = 0;   // == value_begin when the binding has no value we can read
    std::int32_t from = -1;      // `from M import NAME`: its index in m_from
  };

  void scan_line(std::size_t begin, std::size_t end);
  [[nodiscard]] std::size_t header_colon(std::size_t begin, std::size_t end) const;
  [[nodiscard]] std::size_t matching_closer(std::size_t opener, std::size_t end) const;
  void scan_simple(std::size_t begin, std::size_t end);
  void scan_generic(std::size_t begin, std::size_t end);
  void scan_header(std::size_t begin, std::size_t end);
  void bind(std::size_t index, std::size_t value_begin = 0, std::size_t value_end = 0, std::int32_t from = -1);
  void scan_from_import(std::size_t begin, std::size_t end);
  void bind_names(std::size_t begin, std::size_t end);
  void bind_targets(std::size_t begin, std::size_t end);
  [[nodiscard]] NameValue resolve(std::string_view name, int depth) const;

  std::span<const Token> m_tokens;
  std::vector<std::uint32_t> m_depth; // bracket depth at each token
  std::unordered_map<std::string_view, std::vector<Binding>> m_bindings;
  std::vector<ImportedModule> m_from; // the `from M import NAME` of each binding that has one
  bool m_star_import = false;
};

} // namespace tpulaunch::scan
