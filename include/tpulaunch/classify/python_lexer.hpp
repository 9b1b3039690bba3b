#pragma once
// A tokenizer for Python 3 source, written for the script classifier: it tells code from strings
// and comments, so that text inside strings, docstrings and comments is never taken for a call.
// Tokens are views into the source, and it accepts any bytes: garbage produces tokens and at most
// one recorded error, never a crash or a hang. The classifier streams tokens through the inlined
// fast path in src/classify/python_lexer_stream.hpp; `tokenize` is the entry point for everyone else.
//
// Not produced: INDENT/DEDENT, comment tokens, blank-line NL tokens. f-strings are one string
// token each (their `{expression}` parts are skipped, not tokenized): text in strings is never
// evidence, and an f-string's expression rarely holds the calls the classifier looks for.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tpulaunch {

enum class TokenKind : std::uint8_t {
  name,    // identifiers and keywords (non-ASCII bytes are accepted as identifier bytes)
  number,  // integer, float and imaginary literals
  string,  // one string literal, including its prefix and quotes (adjacent literals are separate)
  op,      // operators and punctuation, longest match first (`**=`, `->`, `:=`, `...`)
  newline, // end of a logical line that held tokens (never inside brackets); empty text at EOF
  end,     // end of input; repeated on every later call
};

// "name", "number", "string", "op", "newline" or "end".
std::string_view to_string(TokenKind kind);

// One token. `text` views the source; `line` and `column` (bytes, after a leading BOM) are 1-based.
struct Token {
  TokenKind kind = TokenKind::end;
  bool raw = false;        // string prefix has r/R
  bool bytes = false;      // string prefix has b/B
  bool fstring = false;    // string prefix has f/F
  bool terminated = true;  // false for a string cut off by end of line/input
  std::uint8_t prefix_length = 0; // bytes of string prefix (0..2)
  std::uint8_t quote_length = 0;  // 1 or 3 for strings
  std::uint32_t line = 0;
  std::uint32_t column = 0;
  std::string_view text;

  // For strings, the raw source between the quotes (escapes not processed); else empty.
  [[nodiscard]] std::string_view body() const;
};

// The value of a string token: body() with escapes processed unless the string is raw.
// Handles \\ \' \" \a \b \f \n \r \t \v, octal, \x, \u, \U (as UTF-8), and backslash-newline;
// unknown escapes and \N{...} are kept verbatim. Allocates, so callers use it only on matches.
std::string string_value(const Token& token);

// The first problem found in the input. Lexing always continues past it.
struct LexError {
  std::uint32_t line = 0;
  std::uint32_t column = 0;
  std::string message;
};

// All tokens of `source`, ending with the end token; stores the first error in `error` if given.
std::vector<Token> tokenize(std::string_view source, std::optional<LexError>* error = nullptr);

} // namespace tpulaunch
