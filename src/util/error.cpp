#include "tpulaunch/util/error.hpp"

#include <utility>

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

namespace {

// The number of 1 to 9 digits at `text`[`at`...], and where it ends; nullopt when there is none.
std::optional<std::pair<std::uint32_t, std::size_t>> number_at(std::string_view text, std::size_t at) {
  std::size_t end = at;
  std::uint32_t value = 0;
  while (end < text.size() && end - at < 9 && text[end] >= '0' && text[end] <= '9') {
    value = value * 10 + static_cast<std::uint32_t>(text[end] - '0');
    ++end;
  }
  if (end == at || value == 0) {
    return std::nullopt;
  }
  return std::make_pair(value, end);
}

} // namespace

std::optional<MessagePosition> message_position(std::string_view message) {
  const std::size_t prose = message.find(": "); // the file name ends before the first ": "
  for (std::size_t colon = message.find(':'); colon != std::string_view::npos && colon > 0 && colon <= prose;
       colon = message.find(':', colon + 1)) {
    const auto line = number_at(message, colon + 1);
    if (!line || line->second >= message.size() || message[line->second] != ':') {
      continue;
    }
    MessagePosition position{std::string(message.substr(0, colon)), line->first, 0};
    if (const auto column = number_at(message, line->second + 1);
        column && column->second + 1 < message.size() && message.substr(column->second, 2) == ": ") {
      position.column = column->first;
      return position;
    }
    if (message.substr(line->second, 2) == ": ") {
      return position;
    }
  }
  return std::nullopt;
}

} // namespace tpulaunch
