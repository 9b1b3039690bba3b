#pragma once
// Whether a statement runs only under a condition: the compound statements (by indentation)
// around the scanner's current logical line, read as it streams, so that a
// jax.distributed.initialize() a host may never reach can say so. A block is conditional when
// its header's keyword is one of k_conditional_keywords and it is not `if __name__ ==
// "__main__":`; only the blocks inside the innermost def or class count (the function may be
// called anywhere), and a call of a function that holds the statement is not followed.
// Internal to the classifier; the scanner adds the one-line `if c: stmt` and conditional
// expressions (`x if c else y`, `c and x`), which its token window shows.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tpulaunch/classify/python_lexer.hpp"

namespace tpulaunch::scan {

struct Condition {
  std::string_view keyword; // "if", "for", ...; empty for a conditional expression
  std::uint32_t line = 0;   // of the compound statement's header (or of the expression)
  std::string header;       // the header up to its `:`, e.g. "if args.multi_host:" (cut to 80 bytes)
};

// The header of a compound statement, source[begin, colon] (`colon` at its `:`), at `line`:
// nullopt unless it is a conditional one (not the __main__ guard).
std::optional<Condition> conditional_header(std::string_view source, std::size_t begin, std::size_t colon,
                                            std::uint32_t line);

class BlockTracker {
public:
  // Positioned at the first logical line of `source` (after a UTF-8 byte order mark).
  explicit BlockTracker(std::string_view source);

  // At the newline token that ends a logical line: `colon` is the source offset of the `:` that
  // ends it when it is a block header (else npos), which opens a block. Only noted: the lines are
  // read when a condition is asked for, so a file that never asks (most never call
  // jax.distributed.initialize()) pays a few stores per line, and the scanner's per-token path
  // nothing.
  void on_line_end(const Token& newline, std::size_t colon) {
    m_ends.push_back(LineEnd{static_cast<std::size_t>(newline.text.data() - m_src.data()) + newline.text.size(),
                             newline.line + 1, colon});
  }

  // The innermost conditional block around the current line, within its function or class.
  [[nodiscard]] std::optional<Condition> condition();

  // The current logical line: the offset of its first byte of code, and its line number.
  [[nodiscard]] std::size_t line_offset() { return (catch_up(), m_offset); }
  [[nodiscard]] std::uint32_t line() { return (catch_up(), m_line); }

private:
  struct Block {
    std::uint32_t indent = 0; // column of the header's first byte
    std::uint32_t line = 0;
    std::size_t begin = 0; // offset of the header's first byte
    std::size_t colon = 0; // offset of its `:`
    std::string_view keyword;
  };

  // A logical line's end: where the next physical line starts, its number, and the header's `:`.
  struct LineEnd {
    std::size_t next = 0;
    std::uint32_t line = 0;
    std::size_t colon = 0;
  };

  void find_line_start(std::size_t from, std::uint32_t line);
  void catch_up();

  std::string_view m_src;
  std::vector<LineEnd> m_ends; // noted, not yet read
  std::vector<Block> m_blocks;
  std::size_t m_offset = 0;
  std::uint32_t m_indent = 1;
  std::uint32_t m_line = 1;
};

} // namespace tpulaunch::scan
