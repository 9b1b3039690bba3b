#include "tpulaunch/error.hpp"

#include <fmt/format.h>

namespace tpulaunch {

std::string printable(std::string_view value) {
  std::string out;
  constexpr std::size_t k_limit = 120; // a huge value is cut, so one message stays one line
  for (std::size_t i = 0; i < value.size(); ++i) {
    if (out.size() >= k_limit) {
      out += fmt::format("... ({} bytes)", value.size());
      break;
    }
    const auto c = static_cast<unsigned char>(value[i]);
    if (c < 0x20 || c >= 0x7f || c == '\\') {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

std::string counted(std::size_t count, std::string_view noun, std::string_view plural) {
  if (count == 1) {
    return fmt::format("1 {}", noun);
  }
  return plural.empty() ? fmt::format("{} {}s", count, noun) : fmt::format("{} {}", count, plural);
}

} // namespace tpulaunch
