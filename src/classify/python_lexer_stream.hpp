#pragma once
// The lexer's fast path, internal to the core (the classifier's scanner and the tests include it):
// the per-byte tables, the SSE2 scans and the streaming PythonLexer::run template, which inlines
// its sink's callbacks where each token kind is recognised. The public token type and the
// `tokenize` entry point are in include/tpulaunch/classify/python_lexer.hpp.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "tpulaunch/classify/python_lexer.hpp"

namespace tpulaunch {

// Implementation details of the inline hot loop in PythonLexer::run; not part of the API.
namespace detail {

// Byte flags, looked up once per byte in the hot loops instead of chains of comparisons.
inline constexpr std::uint8_t k_ident_byte = 1U;    // identifier byte (>= 0x80 included, see below)
inline constexpr std::uint8_t k_digit_byte = 2U;
inline constexpr std::uint8_t k_op_second = 4U;     // can be the 2nd byte of a multi-byte operator
inline constexpr std::uint8_t k_string_special = 8U; // may end or change a string body

// The first byte of a token decides its kind: one table load and one jump per token.
enum class ByteClass : std::uint8_t { other, space, ident, digit, newline, hash, quote, backslash, dot, open, close, op };

// Both per-byte tables, built at compile time.
struct ByteTables {
  std::array<std::uint8_t, 256> flags{};
  std::array<ByteClass, 256> dispatch{};
};

// Fills ByteTables from the character sets below.
constexpr ByteTables make_byte_tables() {
  ByteTables t;
  for (int c = 0; c < 256; ++c) {
    const auto i = static_cast<std::size_t>(c);
    const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    // Bytes >= 0x80 are identifier bytes without UTF-8 validation: Python allows non-ASCII
    // identifiers, and no classifier rule can match such a name anyway.
    if (letter || c >= 0x80) {
      t.flags[i] = static_cast<std::uint8_t>(t.flags[i] | k_ident_byte);
      t.dispatch[i] = ByteClass::ident;
    }
    if (c >= '0' && c <= '9') {
      t.flags[i] = static_cast<std::uint8_t>(t.flags[i] | k_ident_byte | k_digit_byte);
      t.dispatch[i] = ByteClass::digit;
    }
  }
  const auto set = [&t](std::string_view bytes, ByteClass cls) {
    for (char c : bytes) {
      t.dispatch[static_cast<unsigned char>(c)] = cls;
    }
  };
  set(" \t\f", ByteClass::space);
  set("\r\n", ByteClass::newline);
  set("#", ByteClass::hash);
  set("'\"", ByteClass::quote);
  set("\\", ByteClass::backslash);
  set(".", ByteClass::dot);
  set("([{", ByteClass::open);
  set(")]}", ByteClass::close);
  set(",:;+-*/%&|^~<>=@!", ByteClass::op);
  for (char c : std::string_view("=>*/<.")) {
    auto& f = t.flags[static_cast<unsigned char>(c)];
    f = static_cast<std::uint8_t>(f | k_op_second);
  }
  for (char c : std::string_view("'\"\\{\r\n")) {
    auto& f = t.flags[static_cast<unsigned char>(c)];
    f = static_cast<std::uint8_t>(f | k_string_special);
  }
  return t;
}

inline constexpr ByteTables k_bytes = make_byte_tables();

// The k_*_byte flags of one byte.
inline std::uint8_t flags_of(char c) { return k_bytes.flags[static_cast<unsigned char>(c)]; }

// Line and column numbers are 32-bit; absurdly long inputs clamp instead of wrapping.
inline std::uint32_t saturate(std::size_t value) {
  return value > std::numeric_limits<std::uint32_t>::max() ? std::numeric_limits<std::uint32_t>::max()
                                                            : static_cast<std::uint32_t>(value);
}

// End of the identifier continuing at `pos`. 16 bytes per step with SSE2, so identifiers shorter
// than that cost no loop-exit misprediction; the tail is scalar and never reads past `n`.
inline std::size_t ident_end(const char* s, std::size_t pos, std::size_t n) {
#if defined(__SSE2__)
  while (pos + 16 <= n) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const void*>(s + pos)));
    const __m128i folded = _mm_or_si128(v, _mm_set1_epi8(0x20)); // A-Z onto a-z
    const __m128i letter = _mm_and_si128(_mm_cmpgt_epi8(folded, _mm_set1_epi8('a' - 1)),
                                         _mm_cmplt_epi8(folded, _mm_set1_epi8('z' + 1)));
    const __m128i digit =
        _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8('0' - 1)), _mm_cmplt_epi8(v, _mm_set1_epi8('9' + 1)));
    const __m128i under = _mm_cmpeq_epi8(v, _mm_set1_epi8('_'));
    const __m128i high = _mm_cmplt_epi8(v, _mm_setzero_si128()); // >= 0x80
    const __m128i ident = _mm_or_si128(_mm_or_si128(letter, digit), _mm_or_si128(under, high));
    const auto mask = static_cast<unsigned>(_mm_movemask_epi8(ident));
    if (mask != 0xFFFFU) {
      return pos + static_cast<std::size_t>(__builtin_ctz(~mask));
    }
    pos += 16;
  }
#endif
  while (pos < n && (flags_of(s[pos]) & k_ident_byte) != 0) {
    ++pos;
  }
  return pos;
}

// End of a run of spaces starting at `pos` (indentation).
inline std::size_t spaces_end(const char* s, std::size_t pos, std::size_t n) {
#if defined(__SSE2__)
  while (pos + 16 <= n) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const void*>(s + pos)));
    const auto mask = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(' '))));
    if (mask != 0xFFFFU) {
      return pos + static_cast<std::size_t>(__builtin_ctz(~mask));
    }
    pos += 16;
  }
#endif
  while (pos < n && s[pos] == ' ') {
    ++pos;
  }
  return pos;
}

// Multi-byte operators, longest first; any other operator byte is a one-byte operator.
inline constexpr std::array<std::string_view, 24> k_long_operators{
    "**=", "//=", ">>=", "<<=", "...", "==", "!=", "<=", ">=", "->", ":=", "**",
    "//",  "<<",  ">>",  "+=",  "-=",  "*=", "/=", "%=", "&=", "|=", "^=", "@=",
};

// Length of the operator at the start of `rest` (up to 3 bytes): the longest table entry, else 1.
inline std::size_t operator_length(std::string_view rest) {
  for (auto op : k_long_operators) {
    if (rest.starts_with(op)) {
      return op.size();
    }
  }
  return 1;
}

// End of the number literal starting at `start` (a digit, or '.' before a digit).
std::size_t number_end(std::string_view source, std::size_t start);

// True for r, u, b, f, br, rb, fr, rf in any letter case.
bool is_string_prefix(std::string_view letters);

} // namespace detail

// Streaming lexer over a source buffer that must outlive it and its tokens.
class PythonLexer {
public:
  // Starts at the beginning of `source`, skipping a UTF-8 byte-order mark.
  explicit PythonLexer(std::string_view source);

  // Streams tokens to `sink` until the end token or until a callback returns false (then a later
  // call resumes); returns true once on_end ran. The lexer builds each token in `sink.slot()`
  // (a Token& the sink owns, so tokens are never copied) and then calls one of
  // `bool on_name(Token&)`, on_number, on_string, on_open ( [ {, on_close ) ] }, on_op (other
  // operators), on_newline, or `void on_end(Token&)`. The sink's code is inlined where each kind
  // is recognized, which makes this the fastest way to consume a whole file.
  template <typename Sink> bool run(Sink& sink);

  // The first error seen so far (unterminated string or bracket, stray byte), if any.
  [[nodiscard]] const std::optional<LexError>& error() const { return m_error; }

private:
  void set_error(std::uint32_t line, std::uint32_t column, std::string_view message);
  void set_byte_error(std::uint32_t line, std::uint32_t column, char byte);
  void finish_input();
  [[nodiscard]] std::uint32_t column_at(std::size_t pos) const;
  void consume_line_end();
  void skip_after_backslash(bool fstring);
  bool scan_string(bool fstring, unsigned nesting);
  bool scan_string_body(char quote, bool triple, bool fstring, unsigned nesting);
  bool scan_fstring_field(char quote, bool triple, unsigned nesting);
  bool scan_fstring_spec(char quote, bool triple, unsigned nesting);
  void lex_string(Token& out, std::size_t start, std::size_t prefix_length);

  std::string_view m_src;
  std::size_t m_pos = 0;
  std::size_t m_line_start = 0;
  std::uint32_t m_line = 1;
  std::uint32_t m_depth = 0;            // open brackets; no newline tokens while > 0
  std::uint32_t m_open_line = 0;        // where the outermost open bracket is, for the error
  std::uint32_t m_open_column = 0;
  char m_open_char = '(';
  bool m_line_has_tokens = false;       // a newline token ends only non-blank logical lines
  bool m_finished = false;
  std::optional<LexError> m_error;
};

// A sink that treats every token kind alike (CRTP): each callback is the derived sink's `push()`,
// and the end token its `push_end()`. The core's tokenize() and the test-side batches use it.
namespace detail {
template <typename Derived> struct UniformSink {
  bool on_name(Token&) { return self().push(); }
  bool on_number(Token&) { return self().push(); }
  bool on_string(Token&) { return self().push(); }
  bool on_open(Token&) { return self().push(); }
  bool on_close(Token&) { return self().push(); }
  bool on_op(Token&) { return self().push(); }
  bool on_newline(Token&) { return self().push(); }
  void on_end(Token&) { self().push_end(); }

private:
  Derived& self() { return static_cast<Derived&>(*this); }
};
} // namespace detail

// The hot loop keeps the position, line and bracket depth in locals (stores into a Token, which
// has byte-sized fields, could otherwise alias the members and force reloads). Strings and
// errors are rarer and go through the members: sync before, reload after. Long (about 230 lines)
// for the same reason: one loop with one jump per token's first byte, and every case inline in it,
// so those locals stay in registers; helpers would take them by reference and spill them.
template <typename Sink> bool PythonLexer::run(Sink& sink) {
  using detail::ByteClass;
  const char* const s = m_src.data();
  const std::size_t n = m_src.size();
  std::size_t pos = m_pos;
  std::size_t line_start = m_line_start;
  std::uint32_t line = m_line;
  std::uint32_t depth = m_depth;
  bool has_tokens = m_line_has_tokens;

  const auto sync = [&] {
    m_pos = pos;
    m_line_start = line_start;
    m_line = line;
    m_depth = depth;
    m_line_has_tokens = has_tokens;
  };
  // A callback that returns false pauses the lexer: its state goes back to the members first.
  const auto paused = [&](bool accepted) {
    if (!accepted) {
      sync();
    }
    return !accepted;
  };
  const auto reload = [&] {
    pos = m_pos;
    line_start = m_line_start;
    line = m_line;
  };
  // Tokens are written field by field straight into the sink's slot and never copied: a
  // whole-struct copy of a just-written token reads it back with wider loads than the stores
  // that wrote it, which cannot be store-forwarded and stalls on every token.
  // Forced inline: GCC kept it out of line (it is used at a dozen places), a call per token.
  const auto make = [&](TokenKind kind, std::size_t start, std::size_t end) __attribute__((always_inline))->Token& {
    Token& t = sink.slot();
    t.kind = kind;
    t.raw = false;
    t.bytes = false;
    t.fstring = false;
    t.terminated = true;
    t.prefix_length = 0;
    t.quote_length = 0;
    t.line = line;
    t.column = detail::saturate(start - line_start + 1);
    t.text = std::string_view(s + start, end - start);
    return t;
  };
  const auto lex_number = [&](std::size_t start) {
    pos = detail::number_end(m_src, start);
    Token& t = make(TokenKind::number, start, pos);
    has_tokens = true;
    return sink.on_number(t);
  };
  const auto skip_one_space = [&] {
    // Most tokens are followed by one space or none: skip it without a branch.
    if (pos < n) {
      pos += static_cast<std::size_t>(s[pos] == ' ');
    }
  };

  for (;;) {
    if (pos >= n) {
      if (has_tokens) {
        // Python ends the last logical line even without a trailing newline.
        Token& t = make(TokenKind::newline, n, n);
        has_tokens = false;
        if (paused(sink.on_newline(t))) {
          return false;
        }
        continue;
      }
      sync();
      finish_input();
      sink.on_end(make(TokenKind::end, n, n));
      return true;
    }
    const char c = s[pos];
    const std::size_t start = pos;
    switch (detail::k_bytes.dispatch[static_cast<unsigned char>(c)]) {
    case ByteClass::space:
      pos = detail::spaces_end(s, pos + 1, n);
      continue;
    case ByteClass::ident: {
      const std::size_t end = detail::ident_end(s, start + 1, n);
      if (end < n && (s[end] == '"' || s[end] == '\'') && end - start <= 2 &&
          detail::is_string_prefix(m_src.substr(start, end - start))) {
        sync();
        Token& t = sink.slot();
        lex_string(t, start, end - start);
        reload();
        has_tokens = true;
        if (paused(sink.on_string(t))) {
          return false;
        }
        continue;
      }
      pos = end;
      Token& t = make(TokenKind::name, start, end);
      has_tokens = true;
      skip_one_space();
      if (paused(sink.on_name(t))) {
        return false;
      }
      continue;
    }
    case ByteClass::digit:
      if (paused(lex_number(start))) {
        return false;
      }
      continue;
    case ByteClass::newline: {
      pos += (c == '\r' && pos + 1 < n && s[pos + 1] == '\n') ? 2 : 1;
      const bool emit = depth == 0 && has_tokens;
      Token& t = make(TokenKind::newline, start, pos);
      if (line < std::numeric_limits<std::uint32_t>::max()) {
        ++line;
      }
      line_start = pos;
      pos = detail::spaces_end(s, pos, n); // indentation
      if (emit) {
        has_tokens = false;
        if (paused(sink.on_newline(t))) {
          return false;
        }
      }
      continue;
    }
    case ByteClass::hash: {
      // memchr is vectorized, and comments are often long.
      const void* nl = std::memchr(s + pos, '\n', n - pos);
      std::size_t end = nl != nullptr ? static_cast<std::size_t>(static_cast<const char*>(nl) - s) : n;
      const void* cr = std::memchr(s + pos, '\r', end - pos);
      if (cr != nullptr) {
        end = static_cast<std::size_t>(static_cast<const char*>(cr) - s);
      }
      pos = end;
      continue;
    }
    case ByteClass::quote: {
      sync();
      Token& t = sink.slot();
      lex_string(t, start, 0);
      reload();
      has_tokens = true;
      if (paused(sink.on_string(t))) {
        return false;
      }
      continue;
    }
    case ByteClass::backslash:
      ++pos;
      if (pos < n && (s[pos] == '\n' || s[pos] == '\r')) {
        // Explicit line joining: no newline token.
        pos += (s[pos] == '\r' && pos + 1 < n && s[pos + 1] == '\n') ? 2 : 1;
        if (line < std::numeric_limits<std::uint32_t>::max()) {
          ++line;
        }
        line_start = pos;
      } else {
        set_error(line, detail::saturate(start - line_start + 1),
                  "unexpected character after line continuation character");
      }
      continue;
    case ByteClass::dot: {
      if (start + 1 < n && (detail::flags_of(s[start + 1]) & detail::k_digit_byte) != 0) {
        if (paused(lex_number(start))) {
          return false;
        }
        continue;
      }
      pos = start + ((start + 2 < n && s[start + 1] == '.' && s[start + 2] == '.') ? 3 : 1);
      Token& t = make(TokenKind::op, start, pos);
      has_tokens = true;
      if (paused(sink.on_op(t))) {
        return false;
      }
      continue;
    }
    case ByteClass::open: {
      Token& t = make(TokenKind::op, start, start + 1);
      if (depth == 0) {
        m_open_line = line;
        m_open_column = t.column;
        m_open_char = c;
      }
      if (depth < std::numeric_limits<std::uint32_t>::max()) {
        ++depth;
      }
      pos = start + 1;
      has_tokens = true;
      if (paused(sink.on_open(t))) {
        return false;
      }
      continue;
    }
    case ByteClass::close: {
      Token& t = make(TokenKind::op, start, start + 1);
      if (depth > 0) {
        --depth;
      } else {
        set_error(line, t.column, c == ')' ? "unmatched ')'" : (c == ']' ? "unmatched ']'" : "unmatched '}'"));
      }
      pos = start + 1;
      has_tokens = true;
      skip_one_space();
      if (paused(sink.on_close(t))) {
        return false;
      }
      continue;
    }
    case ByteClass::op: {
      std::size_t length = 1;
      if (start + 1 < n && (detail::flags_of(s[start + 1]) & detail::k_op_second) != 0) {
        length = detail::operator_length(m_src.substr(start, 3));
      }
      pos = start + length;
      Token& t = make(TokenKind::op, start, pos);
      has_tokens = true;
      skip_one_space();
      if (paused(sink.on_op(t))) {
        return false;
      }
      continue;
    }
    case ByteClass::other:
      set_byte_error(line, detail::saturate(start - line_start + 1), c);
      ++pos;
      continue;
    }
  }
}

} // namespace tpulaunch
