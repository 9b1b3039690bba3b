// String literals: the body between a string token's quotes, and its value with escapes processed.
#include <cstdint>

#include "util/escapes.hpp"
#include "tpulaunch/classify/python_lexer.hpp"
#include "tpulaunch/util/utf8.hpp"

namespace tpulaunch {
std::string_view Token::body() const {
  if (kind != TokenKind::string) {
    return {};
  }
  const std::size_t begin = static_cast<std::size_t>(prefix_length) + quote_length;
  if (begin >= text.size()) {
    return {};
  }
  std::size_t end = text.size();
  if (terminated && end >= begin + quote_length) {
    end -= quote_length;
  }
  return text.substr(begin, end - begin);
}

// Long (about 100 lines) because it is one switch over Python's escape sequences, each case a few
// lines; split up, the table of escapes would no longer read as one.
std::string string_value(const Token& token) {
  const std::string_view body = token.body();
  if (token.raw || body.find('\\') == std::string_view::npos) {
    return std::string(body);
  }
  std::string out;
  out.reserve(body.size());
  std::size_t i = 0;
  while (i < body.size()) {
    const char c = body[i];
    if (c != '\\' || i + 1 >= body.size()) {
      out += c;
      ++i;
      continue;
    }
    const char e = body[i + 1];
    std::size_t used = 2;
    switch (e) {
    case '\n':
      break;
    case '\r':
      if (i + 2 < body.size() && body[i + 2] == '\n') {
        used = 3;
      }
      break;
    case '\\':
    case '\'':
    case '"':
      out += e;
      break;
    case 'a':
    case 'b':
    case 'f':
    case 'n':
    case 'r':
    case 't':
    case 'v':
      out += escapes::control(e);
      break;
    case 'x': {
      const int hi = i + 2 < body.size() ? escapes::hex_digit(body[i + 2]) : -1;
      const int lo = i + 3 < body.size() ? escapes::hex_digit(body[i + 3]) : -1;
      if (hi < 0 || lo < 0) {
        out.append(body.substr(i, 2));
        break;
      }
      const auto value = static_cast<std::uint32_t>(hi * 16 + lo);
      if (token.bytes) {
        out += static_cast<char>(value);
      } else {
        append_utf8(out, value);
      }
      used = 4;
      break;
    }
    case 'u':
    case 'U': {
      const std::size_t digits = e == 'u' ? 4 : 8;
      std::uint32_t value = 0;
      bool ok = !token.bytes && i + 2 + digits <= body.size();
      for (std::size_t k = 0; ok && k < digits; ++k) {
        const int h = escapes::hex_digit(body[i + 2 + k]);
        ok = h >= 0;
        value = value * 16 + static_cast<std::uint32_t>(h < 0 ? 0 : h);
      }
      if (!ok || value > 0x10FFFF) {
        out.append(body.substr(i, 2));
        break;
      }
      append_utf8(out, value);
      used = 2 + digits;
      break;
    }
    default:
      if (e >= '0' && e <= '7') {
        std::uint32_t value = 0;
        std::size_t k = i + 1;
        while (k < body.size() && k < i + 4 && body[k] >= '0' && body[k] <= '7') {
          value = value * 8 + static_cast<std::uint32_t>(body[k] - '0');
          ++k;
        }
        if (token.bytes) {
          out += static_cast<char>(value & 0xFF);
        } else {
          append_utf8(out, value);
        }
        used = k - i;
      } else {
        // Unknown escapes (and \N{...}) stay as written, as Python keeps unknown ones.
        out.append(body.substr(i, 2));
      }
      break;
    }
    i += used;
  }
  return out;
}

} // namespace tpulaunch
