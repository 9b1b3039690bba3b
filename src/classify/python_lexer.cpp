#include "classify/python_lexer_stream.hpp"

#include <array>
#include <cstring>
#include <limits>
#include <span>

namespace tpulaunch {
namespace {

using detail::flags_of;
using detail::k_ident_byte;
using detail::k_string_special;
using detail::saturate;

// String prefixes, lower-cased; Python accepts any letter case.
constexpr std::array<std::string_view, 8> k_string_prefixes{"r", "u", "b", "f", "br", "rb", "fr", "rf"};

// f-strings nest (f"{f'{x}'}"); beyond this depth a `{` is read as plain text, which bounds the
// recursion on hostile input.
constexpr unsigned k_max_fstring_nesting = 32;

constexpr char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

} // namespace

// End of the number literal starting at `start` (a digit, or '.' before a digit).
std::size_t detail::number_end(std::string_view src, std::size_t start) {
  const char* s = src.data();
  const std::size_t n = src.size();
  std::size_t pos = start;
  const auto digits = [&] {
    while (pos < n && ((flags_of(s[pos]) & detail::k_digit_byte) != 0 || s[pos] == '_')) {
      ++pos;
    }
  };
  if (s[pos] == '0' && pos + 1 < n && (lower(s[pos + 1]) == 'x' || lower(s[pos + 1]) == 'o' || lower(s[pos + 1]) == 'b')) {
    // 0x/0o/0b: hex digits are letters, and `e` is not an exponent there.
    pos += 2;
    while (pos < n && (flags_of(s[pos]) & k_ident_byte) != 0 && static_cast<unsigned char>(s[pos]) < 0x80) {
      ++pos;
    }
    return pos;
  }
  digits();
  if (pos < n && s[pos] == '.') {
    ++pos;
    digits();
  }
  if (pos < n && lower(s[pos]) == 'e') {
    std::size_t exp = pos + 1;
    if (exp < n && (s[exp] == '+' || s[exp] == '-')) {
      ++exp;
    }
    if (exp < n && (flags_of(s[exp]) & detail::k_digit_byte) != 0) {
      pos = exp;
      digits();
    }
  }
  if (pos < n && lower(s[pos]) == 'j') {
    ++pos;
  }
  return pos;
}

bool detail::is_string_prefix(std::string_view letters) {
  if (letters.empty() || letters.size() > 2) {
    return false;
  }
  std::array<char, 2> buf{};
  for (std::size_t i = 0; i < letters.size(); ++i) {
    buf[i] = lower(letters[i]);
  }
  const std::string_view lowered(buf.data(), letters.size());
  for (auto prefix : k_string_prefixes) {
    if (prefix == lowered) {
      return true;
    }
  }
  return false;
}

std::string_view to_string(TokenKind kind) {
  switch (kind) {
  case TokenKind::name:
    return "name";
  case TokenKind::number:
    return "number";
  case TokenKind::string:
    return "string";
  case TokenKind::op:
    return "op";
  case TokenKind::newline:
    return "newline";
  case TokenKind::end:
    return "end";
  }
  return "end";
}

PythonLexer::PythonLexer(std::string_view source) : m_src(source) {
  if (m_src.size() >= 3 && static_cast<unsigned char>(m_src[0]) == 0xEF &&
      static_cast<unsigned char>(m_src[1]) == 0xBB && static_cast<unsigned char>(m_src[2]) == 0xBF) {
    m_pos = 3;
    m_line_start = 3;
  }
}

void PythonLexer::set_error(std::uint32_t line, std::uint32_t column, std::string_view message) {
  if (!m_error) {
    m_error = LexError{line, column, std::string(message)};
  }
}

void PythonLexer::set_byte_error(std::uint32_t line, std::uint32_t column, char byte) {
  if (m_error) {
    return; // only the first error is kept, so later ones cost nothing
  }
  static constexpr char k_digits[] = "0123456789abcdef";
  const auto value = static_cast<unsigned char>(byte);
  std::string message = "unexpected byte 0x";
  message += k_digits[value >> 4];
  message += k_digits[value & 0x0F];
  m_error = LexError{line, column, std::move(message)};
}

std::uint32_t PythonLexer::column_at(std::size_t pos) const { return saturate(pos - m_line_start + 1); }

void PythonLexer::consume_line_end() {
  if (m_src[m_pos] == '\r' && m_pos + 1 < m_src.size() && m_src[m_pos + 1] == '\n') {
    m_pos += 2;
  } else {
    m_pos += 1;
  }
  if (m_line < std::numeric_limits<std::uint32_t>::max()) {
    ++m_line;
  }
  m_line_start = m_pos;
}

void PythonLexer::skip_after_backslash(bool fstring) {
  if (m_pos >= m_src.size()) {
    return;
  }
  const char c = m_src[m_pos];
  if (c == '\n' || c == '\r') {
    consume_line_end();
  } else if (fstring && (c == '{' || c == '}')) {
    // A backslash does not escape a brace in an f-string: `\{x}` is a backslash and a field.
  } else {
    ++m_pos;
  }
}

bool PythonLexer::scan_string(bool fstring, unsigned nesting) {
  const char quote = m_src[m_pos];
  const bool triple =
      m_pos + 2 < m_src.size() && m_src[m_pos + 1] == quote && m_src[m_pos + 2] == quote;
  m_pos += triple ? 3 : 1;
  return scan_string_body(quote, triple, fstring, nesting);
}

bool PythonLexer::scan_string_body(char quote, bool triple, bool fstring, unsigned nesting) {
  const char* s = m_src.data();
  const std::size_t n = m_src.size();
  while (m_pos < n) {
    // Skip plain text with one table test per byte; only quotes, backslashes, line ends and
    // braces need a closer look.
    while (m_pos < n && (flags_of(s[m_pos]) & k_string_special) == 0) {
      ++m_pos;
    }
    if (m_pos >= n) {
      break;
    }
    const char c = s[m_pos];
    if (c == quote) {
      if (!triple) {
        ++m_pos;
        return true;
      }
      if (m_pos + 2 < n && s[m_pos + 1] == quote && s[m_pos + 2] == quote) {
        m_pos += 3;
        return true;
      }
      ++m_pos;
      continue;
    }
    switch (c) {
    case '\\':
      ++m_pos;
      skip_after_backslash(fstring);
      continue;
    case '\n':
    case '\r':
      if (!triple) {
        return false; // the newline is not part of the string; lexing resumes there
      }
      consume_line_end();
      continue;
    case '{':
      if (fstring) {
        if (m_pos + 1 < n && s[m_pos + 1] == '{') {
          m_pos += 2;
          continue;
        }
        ++m_pos;
        if (!scan_fstring_field(quote, triple, nesting + 1)) {
          return false;
        }
        continue;
      }
      break;
    default:
      break;
    }
    ++m_pos;
  }
  return false;
}

// The `{expression!conversion:spec}` part of an f-string. The expression is skipped, not
// tokenized, but strings inside it are scanned so that quotes there (PEP 701 allows the outer
// quote again) and braces in them do not end the field or the f-string early.
bool PythonLexer::scan_fstring_field(char quote, bool triple, unsigned nesting) {
  if (nesting > k_max_fstring_nesting) {
    return true; // too deep: read the `{` as text rather than recurse further
  }
  const char* s = m_src.data();
  const std::size_t n = m_src.size();
  std::size_t depth = 0;
  while (m_pos < n) {
    const char c = s[m_pos];
    switch (c) {
    case '\n':
    case '\r':
      if (!triple) {
        return false;
      }
      consume_line_end();
      continue;
    case '\'':
    case '"': {
      // A prefix (rb, f, ...) right before the quote decides whether the inner string nests.
      std::size_t letters = 0;
      while (letters < 3 && m_pos > letters && (flags_of(s[m_pos - letters - 1]) & k_ident_byte) != 0) {
        ++letters;
      }
      const std::string_view prefix = m_src.substr(m_pos - letters, letters);
      const bool inner_f = detail::is_string_prefix(prefix) &&
                           (prefix.find('f') != std::string_view::npos || prefix.find('F') != std::string_view::npos);
      if (!scan_string(inner_f, nesting + 1)) {
        return false;
      }
      continue;
    }
    case '#':
      // A comment inside a (multi-line) field runs to the end of the line.
      while (m_pos < n && s[m_pos] != '\n' && s[m_pos] != '\r') {
        ++m_pos;
      }
      continue;
    case '\\':
      ++m_pos;
      skip_after_backslash(false);
      continue;
    case '(':
    case '[':
    case '{':
      ++depth;
      break;
    case ')':
    case ']':
      if (depth > 0) {
        --depth;
      }
      break;
    case '}':
      if (depth == 0) {
        ++m_pos;
        return true;
      }
      --depth;
      break;
    case ':':
      if (depth == 0) {
        ++m_pos;
        return scan_fstring_spec(quote, triple, nesting);
      }
      break;
    default:
      break;
    }
    ++m_pos;
  }
  return false;
}

// The format spec after `:` is text with optional nested `{fields}` up to the closing `}`.
bool PythonLexer::scan_fstring_spec(char quote, bool triple, unsigned nesting) {
  const char* s = m_src.data();
  const std::size_t n = m_src.size();
  while (m_pos < n) {
    const char c = s[m_pos];
    if (c == quote && (!triple || (m_pos + 2 < n && s[m_pos + 1] == quote && s[m_pos + 2] == quote))) {
      // The f-string ends inside the field: a Python error. Leave the quote for the string
      // scanner so the token ends here instead of swallowing the rest of the file.
      set_error(m_line, column_at(m_pos), "f-string: expecting '}'");
      return true;
    }
    switch (c) {
    case '}':
      ++m_pos;
      return true;
    case '{':
      ++m_pos;
      if (!scan_fstring_field(quote, triple, nesting + 1)) {
        return false;
      }
      continue;
    case '\n':
    case '\r':
      if (!triple) {
        return false;
      }
      consume_line_end();
      continue;
    case '\\':
      ++m_pos;
      skip_after_backslash(true);
      continue;
    default:
      break;
    }
    ++m_pos;
  }
  return false;
}

void PythonLexer::lex_string(Token& out, std::size_t start, std::size_t prefix_length) {
  const std::uint32_t line = m_line;
  const std::uint32_t column = column_at(start);
  bool raw = false;
  bool bytes = false;
  bool fstring = false;
  for (std::size_t i = start; i < start + prefix_length; ++i) {
    const char c = lower(m_src[i]);
    raw = raw || c == 'r';
    bytes = bytes || c == 'b';
    fstring = fstring || c == 'f';
  }
  m_pos = start + prefix_length;
  const char quote = m_src[m_pos];
  const bool triple =
      m_pos + 2 < m_src.size() && m_src[m_pos + 1] == quote && m_src[m_pos + 2] == quote;
  m_pos += triple ? 3 : 1;
  const bool terminated = scan_string_body(quote, triple, fstring, 0);
  if (!terminated) {
    set_error(line, column, triple ? "unterminated triple-quoted string literal" : "unterminated string literal");
  }
  out.kind = TokenKind::string;
  out.line = line;
  out.column = column;
  out.text = m_src.substr(start, m_pos - start);
  out.raw = raw;
  out.bytes = bytes;
  out.fstring = fstring;
  out.terminated = terminated;
  out.prefix_length = static_cast<std::uint8_t>(prefix_length);
  out.quote_length = triple ? 3 : 1;
}

void PythonLexer::finish_input() {
  if (m_finished) {
    return;
  }
  m_finished = true;
  if (m_depth > 0) {
    const std::string message = std::string("'") + m_open_char + "' was never closed";
    set_error(m_open_line, m_open_column, message);
  }
}

namespace {

// Collects every token into a vector. The lexer builds a token in slot() and may build one it
// then drops (a newline inside brackets), so a token counts only when its callback runs.
struct VectorSink : detail::UniformSink<VectorSink> {
  explicit VectorSink(std::vector<Token>& tokens) : out(tokens) {}
  std::vector<Token>& out;
  Token scratch;

  Token& slot() { return scratch; }
  bool push() {
    out.push_back(scratch);
    return true;
  }
  void push_end() { out.push_back(scratch); }
};

} // namespace

std::vector<Token> tokenize(std::string_view source, std::optional<LexError>* error) {
  std::vector<Token> tokens;
  PythonLexer lexer(source);
  VectorSink sink(tokens);
  while (!lexer.run(sink)) {
  }
  if (error != nullptr) {
    *error = lexer.error();
  }
  return tokens;
}

} // namespace tpulaunch
