#pragma once
// Test-side ways to pull tokens from the streaming lexer (src/classify/python_lexer_stream.hpp) a batch
// at a time, as the tests, the fuzz target and the lexer benchmark do. The core itself only
// streams whole files through PythonLexer::run.
#include <cstddef>
#include <span>

#include "classify/python_lexer_stream.hpp"

namespace tpulaunch::testing {

// Lets the lexer write tokens straight into a caller's buffer; pauses it when the buffer is full.
struct BatchSink : detail::UniformSink<BatchSink> {
  explicit BatchSink(std::span<Token> buffer) : out(buffer) {}
  std::span<Token> out;
  std::size_t count = 0;

  Token& slot() { return out[count]; }
  bool push() { return ++count < out.size(); }
  void push_end() { ++count; }
};

// Fills `out` (non-empty) with the next tokens and returns how many; a batch that ends the input
// ends with the end token, and every later batch is that end token again.
inline std::size_t next_batch(PythonLexer& lexer, std::span<Token> out) {
  if (out.empty()) {
    return 0;
  }
  BatchSink sink(out);
  (void)lexer.run(sink);
  return sink.count;
}

// Stores the next token in `out`; false when it is the end token.
inline bool next_token(PythonLexer& lexer, Token& out) {
  next_batch(lexer, std::span<Token>(&out, 1));
  return out.kind != TokenKind::end;
}

} // namespace tpulaunch::testing
