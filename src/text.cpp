#include "tpulaunch/text.hpp"
#include "tpulaunch/validate.hpp"

#include <algorithm>
#include <optional>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>
#include <sys/stat.h>

#include <fmt/format.h>

namespace tpulaunch {
namespace {

struct LinePosition {
  std::size_t line = 1;
  std::size_t column = 1;
};

// Optimal string alignment distance: Levenshtein plus adjacent transpositions, so the typo
// "v5litepod-61" is one edit from "v5litepod-16".
std::size_t edit_distance(std::string_view a, std::string_view b) {
  const std::size_t width = b.size() + 1;
  std::vector<std::size_t> d((a.size() + 1) * width);
  auto at = [&](std::size_t i, std::size_t j) -> std::size_t& { return d[i * width + j]; };
  for (std::size_t i = 0; i <= a.size(); ++i) {
    at(i, 0) = i;
  }
  for (std::size_t j = 0; j <= b.size(); ++j) {
    at(0, j) = j;
  }
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      at(i, j) = std::min({at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        at(i, j) = std::min(at(i, j), at(i - 2, j - 2) + 1);
      }
    }
  }
  return at(a.size(), b.size());
}

// The first byte that makes `text` not UTF-8 text (a NUL or an invalid sequence), if any.
std::optional<std::size_t> first_non_text_byte(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
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

std::string closest_match(std::string_view word, const std::vector<std::string>& candidates) {
  const std::size_t limit = std::max<std::size_t>(2, word.size() / 3);
  std::string best;
  std::size_t best_distance = limit + 1;
  for (const auto& candidate : candidates) {
    const std::size_t distance = edit_distance(word, candidate);
    // On a tie, a candidate of the same length is the likelier typo (a transposition).
    const bool better = distance < best_distance ||
                        (distance == best_distance && !best.empty() && candidate.size() == word.size() &&
                         best.size() != word.size());
    if (better) {
      best_distance = distance;
      best = candidate;
    }
  }
  return best;
}

std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates) {
  const std::string best = closest_match(word, candidates);
  return best.empty() ? std::string() : fmt::format(" (did you mean '{}'?)", best);
}

Result<std::string> read_text_file(const std::string& path, std::string_view what, std::size_t max_bytes) {
  // One open, one fstat and reads straight into the string: `check` reads thousands of files.
  // O_NONBLOCK keeps open() of a FIFO from waiting for a writer; it is refused below.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    return config_error(fmt::format("cannot read {} '{}': {}", what, printable(path), std::strerror(errno)));
  }
  struct stat info {};
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    const std::string why = S_ISDIR(info.st_mode) ? "is a directory" : "not a regular file";
    ::close(fd);
    return config_error(fmt::format("cannot read {} '{}': {}", what, printable(path), why));
  }
  if (static_cast<std::uintmax_t>(info.st_size) > max_bytes) {
    ::close(fd);
    return config_error(fmt::format("cannot read {} '{}': {} bytes, more than the {} it may have", what,
                                    printable(path), info.st_size, max_bytes));
  }
  std::string content;
  content.resize(info.st_size > 0 ? static_cast<std::size_t>(info.st_size) : 0);
  std::size_t used = 0;
  while (true) {
    if (used == content.size()) {
      if (used >= max_bytes) {
        ::close(fd);
        return config_error(fmt::format("cannot read {} '{}': more than the {} bytes it may have", what,
                                        printable(path), max_bytes));
      }
      content.resize(content.size() + 4096); // the file grew since fstat
    }
    const ssize_t n = ::read(fd, content.data() + used, content.size() - used);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      return config_error(fmt::format("cannot read {} '{}': {}", what, path, why));
    }
    if (n == 0) {
      break;
    }
    used += static_cast<std::size_t>(n);
  }
  ::close(fd);
  content.resize(used);
  return content;
}

} // namespace tpulaunch

namespace tpulaunch {

Status check_utf8_text(std::string_view text, std::string_view path, std::string_view what) {
  if (auto bad = first_non_text_byte(text)) {
    const auto at = position_of(text, *bad);
    return config_error(fmt::format("{}:{}:{}: {} is not UTF-8 text (byte 0x{:02x})", path, at.line, at.column, what,
                                    static_cast<unsigned char>(text[*bad])));
  }
  return Ok{};
}

} // namespace tpulaunch
