#pragma once
// Whether a statement runs only under a condition, as far as its file's tokens show: the
// innermost compound statement around it (by indentation, or before the `:` of a one-line
// `if x: stmt`) that is conditional (k_conditional_keywords), within its function, or a
// conditional expression (`x if c else y`, `c and x`) on its line. Internal to the classifier: it
// qualifies a jax.distributed.initialize() that a host may never reach. A call of a function
// that holds the statement is not followed.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "tpulaunch/python_lexer.hpp"

namespace tpulaunch::scan {

struct Condition {
  std::string_view keyword; // "if", "for", ...; empty for a conditional expression
  std::uint32_t line = 0;   // of the compound statement's header (or of the expression)
  std::string header;       // the header up to its `:`, e.g. "if args.multi_host:" (cut to 80 bytes)
};

// The condition the token at `index` of `tokens` (all tokens of one file, ending with the end
// token) runs under, or nullopt when it runs whenever its function (or the module) does.
// `if __name__ == "__main__":` is no condition.
std::optional<Condition> condition_of(std::span<const Token> tokens, std::size_t index);

} // namespace tpulaunch::scan
