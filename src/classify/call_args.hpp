#pragma once
// Reading the arguments of a call the scanner matched: splitting the captured tokens at top-level
// commas, string-literal values, and the value checks of the key tables. Internal to the
// classifier; these run only on matches, so they may allocate.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "classify/classifier_matchers.hpp"
#include "tpulaunch/classify/python_lexer.hpp"

namespace tpulaunch::scan {

// `value` without surrounding whitespace, in lower case.
std::string lower_trimmed(std::string_view value);

// "cpu", "CPU", " cpu , tpu": true when the first platform of a JAX platform list is the CPU.
bool first_platform_is_cpu(std::string_view value);

// Concatenated value of tokens[begin, end) when they are all string literals (implicit
// concatenation), else nullopt.
std::optional<std::string> literal_value(std::span<const Token> tokens, std::size_t begin, std::size_t end);

// Whether the string `value` is evidence under `check` (`any`: always).
bool value_test(ValueCheck check, std::string_view value);

// What a value expression is, as far as the scanner can tell without running it.
struct ValueExpr {
  enum class Shape : std::uint8_t {
    literal,  // string literals only (implicit concatenation): `literal` holds the value
    constant, // None, True, False or a number: never a platform name
    name,     // one bare name: its value is known once the file's bindings are (`name`)
    other,    // anything else (an attribute, a call, an f-string with fields, an operator)
  };
  Shape shape = Shape::other;
  std::string literal;
  std::string_view name;
};
ValueExpr read_value(std::span<const Token> tokens, std::size_t begin, std::size_t end);

// The names in tokens[begin, end) that are read as plain variables: not keywords, not after a
// `.`, not before `.`, `(` or `[` (so `os.environ.get(...)` has none and `FLAGS + " x"` has one).
std::vector<std::string_view> bare_names(std::span<const Token> tokens, std::size_t begin, std::size_t end);

// The source text of tokens[begin, end) as it is in the source they view (begin < end).
std::string_view source_view(std::span<const Token> tokens, std::size_t begin, std::size_t end);

// The source text of tokens[begin, end), cut to `max` bytes with "...", for a message.
std::string source_text(std::span<const Token> tokens, std::size_t begin, std::size_t end, std::size_t max = 60);

// The row of k_env_keys / k_config_keys for `key`, or nullptr.
const KeyRule* find_env_key(std::string_view key);
const KeyRule* find_config_key(std::string_view key);

// One argument of a call: `keyword` is empty for positional ones; [begin, end) is the value.
struct Arg {
  std::string_view keyword;
  std::size_t begin = 0;
  std::size_t end = 0;
};

// The arguments of one call (or the entries of one dict display), in order.
struct Args {
  std::vector<Arg> items;

  // The `index`-th positional argument, or nullptr.
  [[nodiscard]] const Arg* positional(std::size_t index) const;
  // The argument passed as `name=...`, or nullptr.
  [[nodiscard]] const Arg* keyword(std::string_view name) const;
};

// The argument passed as keyword `keyword` (when not empty), else the `position`-th positional one.
const Arg* arg_at(const Args& args, std::size_t position, std::string_view keyword);

// Splits tokens[begin, end) at top-level `separator`s (an op such as "," or ":"); `name=` at the
// start of a part makes it a keyword argument. Every part is kept: nothing past a limit is lost.
Args split_args(std::span<const Token> tokens, std::size_t begin, std::size_t end, std::string_view separator);

} // namespace tpulaunch::scan
