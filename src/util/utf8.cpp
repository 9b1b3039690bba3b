#include "tpulaunch/util/utf8.hpp"

#include "util/byte_scan.hpp"

#include <optional>

#include <fmt/format.h>

namespace tpulaunch {
namespace {

struct LinePosition {
  std::size_t line = 1;
  std::size_t column = 1;
};

// The first byte that makes `text` not UTF-8 text (a NUL or an invalid sequence), if any.
std::optional<std::size_t> first_non_text_byte(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    i = byte_scan::plain_ascii_words(text, i);
    if (i == text.size()) {
      break;
    }
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == 0) {
      return i;
    }
    if (c < 0x80) {
      ++i;
      continue;
    }
    const std::size_t length = utf8_sequence_length(text, i);
    if (length == 0) {
      return i;
    }
    i += length;
  }
  return std::nullopt;
}

LinePosition position_of(std::string_view text, std::size_t offset) {
  LinePosition position;
  for (std::size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++position.line;
      position.column = 1;
    } else {
      ++position.column;
    }
  }
  return position;
}

} // namespace

std::optional<std::size_t> first_non_utf8_byte(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    if (i + 8 <= text.size() && byte_scan::any_high(byte_scan::word_at(text, i)) == 0) {
      i += 8; // eight ASCII bytes
      continue;
    }
    if (static_cast<unsigned char>(text[i]) < 0x80) {
      ++i;
      continue;
    }
    const std::size_t length = utf8_sequence_length(text, i);
    if (length == 0) {
      return i;
    }
    i += length;
  }
  return std::nullopt;
}

std::size_t utf8_cut(std::string_view text, std::size_t max) {
  if (max >= text.size()) {
    return text.size();
  }
  std::size_t cut = max;
  // Back over continuation bytes (10xxxxxx) to the start of the sequence byte `max` belongs to.
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0U) == 0x80U) {
    --cut;
  }
  return cut;
}

void append_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::size_t utf8_sequence_length(std::string_view text, std::size_t pos) {
  auto byte = [&](std::size_t at) -> unsigned { return at < text.size() ? static_cast<unsigned char>(text[at]) : 0U; };
  auto cont = [&](std::size_t at) { return (byte(at) & 0xC0U) == 0x80U; };
  const unsigned b0 = byte(pos);
  const unsigned b1 = byte(pos + 1);
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    return cont(pos + 1) ? 2 : 0;
  }
  if (b0 >= 0xE0 && b0 <= 0xEF) {
    if ((b0 == 0xE0 && b1 < 0xA0) || (b0 == 0xED && b1 >= 0xA0)) {
      return 0; // overlong, or a surrogate
    }
    return cont(pos + 1) && cont(pos + 2) ? 3 : 0;
  }
  if (b0 >= 0xF0 && b0 <= 0xF4) {
    if ((b0 == 0xF0 && b1 < 0x90) || (b0 == 0xF4 && b1 >= 0x90)) {
      return 0; // overlong, or above U+10FFFF
    }
    return cont(pos + 1) && cont(pos + 2) && cont(pos + 3) ? 4 : 0;
  }
  return 0;
}

Status check_utf8_text(std::string_view text, std::string_view path, std::string_view what) {
  if (auto bad = first_non_text_byte(text)) {
    const auto at = position_of(text, *bad);
    return config_error(fmt::format("{}:{}:{}: {} is not UTF-8 text (byte 0x{:02x})", path, at.line, at.column, what,
                                    static_cast<unsigned char>(text[*bad])));
  }
  return Ok{};
}

} // namespace tpulaunch
