#pragma once
// Eight bytes of text at a time (internal to the core): tests on a 64-bit word that hold for
// every byte in it, so that the usual plain text is passed over without a look at each byte.
// Each test may report a byte that is not there only after one that is (the borrow of the
// subtraction runs upwards), so "no such byte in the word" is always exact.
#include <cstdint>
#include <cstring>
#include <string_view>

namespace tpulaunch::byte_scan {

inline constexpr std::uint64_t k_ones = 0x0101010101010101ULL;
inline constexpr std::uint64_t k_highs = 0x8080808080808080ULL;

// The eight bytes at `at` (which must have eight bytes after it) as one word.
inline std::uint64_t word_at(std::string_view text, std::size_t at) {
  std::uint64_t word = 0;
  std::memcpy(&word, text.data() + at, sizeof word);
  return word;
}

// Non-zero when some byte of `word` is below `limit` (at most 0x80).
constexpr std::uint64_t any_below(std::uint64_t word, unsigned limit) {
  return (word - k_ones * limit) & ~word & k_highs;
}

// Non-zero when some byte of `word` is `byte`.
constexpr std::uint64_t any_equal(std::uint64_t word, unsigned char byte) {
  return any_below(word ^ (k_ones * byte), 1);
}

// Non-zero when some byte of `word` is 0x80 or above (not ASCII).
constexpr std::uint64_t any_high(std::uint64_t word) {
  return word & k_highs;
}

// The end of the run of bytes, from `from` on, that a JSON string holds as they are: printable
// ASCII other than '"' and '\\' (0x7f included, as nlohmann's dump() leaves it). The JSON reader
// uses it.
inline std::size_t plain_json_run(std::string_view text, std::size_t from) {
  std::size_t i = from;
  for (; i + 8 <= text.size(); i += 8) {
    const std::uint64_t word = word_at(text, i);
    if ((any_below(word, 0x20) | any_equal(word, '"') | any_equal(word, '\\') | any_high(word)) != 0) {
      break;
    }
  }
  for (; i < text.size(); ++i) {
    const auto b = static_cast<unsigned char>(text[i]);
    if (b == '"' || b == '\\' || b < 0x20 || b >= 0x80) {
      break;
    }
  }
  return i;
}

// The end of the run of bytes, from `from` on, that UTF-8 text needs no closer look at: ASCII
// other than NUL. Whole words only; the caller looks at the bytes from there on.
inline std::size_t plain_ascii_words(std::string_view text, std::size_t from) {
  std::size_t i = from;
  while (i + 8 <= text.size() && (any_below(word_at(text, i), 1) | any_high(word_at(text, i))) == 0) {
    i += 8;
  }
  return i;
}

} // namespace tpulaunch::byte_scan
