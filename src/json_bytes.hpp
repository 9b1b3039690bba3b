#pragma once
// What the JSON reader and writer share about string bytes (internal to the core).
#include <cstdint>
#include <cstring>
#include <string_view>

namespace tpulaunch {

// The end of the run of bytes, from `from` on, that a JSON string holds as they are: printable
// ASCII other than '"' and '\\' (0x7f included, as nlohmann's dump() leaves it). Eight bytes are
// looked at together while none of them needs a closer look.
inline std::size_t plain_json_run(std::string_view text, std::size_t from) {
  constexpr std::uint64_t k_ones = 0x0101010101010101ULL;
  constexpr std::uint64_t k_highs = 0x8080808080808080ULL;
  const auto has_zero = [](std::uint64_t w) { return (w - k_ones) & ~w & k_highs; };
  std::size_t i = from;
  for (; i + 8 <= text.size(); i += 8) {
    std::uint64_t word = 0;
    std::memcpy(&word, text.data() + i, sizeof word);
    const std::uint64_t control = (word - k_ones * 0x20U) & ~word & k_highs; // a byte below 0x20
    if ((control | has_zero(word ^ (k_ones * '"')) | has_zero(word ^ (k_ones * '\\')) | (word & k_highs)) != 0) {
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

} // namespace tpulaunch
