#include "classify/statement_condition.hpp"

#include <array>
#include <cstring>

#include "classify/classifier_matchers.hpp"

namespace tpulaunch::scan {
namespace {

// A header that starts a new function (or class) body: the blocks around it are not the
// condition of what it holds, as the function may be called anywhere.
constexpr std::array<std::string_view, 2> k_scopes{"def", "class"};

// `if __name__ == "__main__"` written any way round, without its spaces: the module's entry point.
constexpr std::array<std::string_view, 4> k_main_guards{
    "if__name__==\"__main__\"",
    "if__name__=='__main__'",
    "if\"__main__\"==__name__",
    "if'__main__'==__name__",
};

bool ident_byte(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         static_cast<unsigned char>(c) >= 0x80;
}

bool blank(char c) { return c == ' ' || c == '\t' || c == '\f'; }

// The keyword a header at `begin` starts with (after `async`).
std::string_view header_keyword(std::string_view source, std::size_t begin) {
  std::size_t end = begin;
  while (end < source.size() && ident_byte(source[end])) {
    ++end;
  }
  std::string_view word = source.substr(begin, end - begin);
  if (word == "async") {
    std::size_t next = end;
    while (next < source.size() && blank(source[next])) {
      ++next;
    }
    return header_keyword(source, next);
  }
  return word;
}

} // namespace

std::optional<Condition> conditional_header(std::string_view source, std::size_t begin, std::size_t colon,
                                            std::uint32_t line) {
  const std::string_view keyword = header_keyword(source, begin);
  if (!listed_in(keyword, k_conditional_keywords) || colon >= source.size()) {
    return std::nullopt;
  }
  std::string squeezed;
  std::string header;
  for (std::size_t i = begin; i <= colon; ++i) {
    const char c = source[i];
    const bool space = blank(c) || c == '\n' || c == '\r';
    if (!space && i < colon) {
      squeezed += c;
    }
    if (!space) {
      header += c;
    } else if (!header.empty() && header.back() != ' ') {
      header += ' ';
    }
  }
  if (listed_in(std::string_view(squeezed), k_main_guards)) {
    return std::nullopt;
  }
  if (header.size() > 80) {
    header.resize(77);
    header += "...";
  }
  return Condition{keyword, line, std::move(header)};
}

BlockTracker::BlockTracker(std::string_view source) : m_src(source) {
  find_line_start(source.starts_with("\xEF\xBB\xBF") ? 3 : 0, 1);
}

// From the start of physical line `line` at `from`: past blank and comment lines to the first
// byte of code, whose column is the indentation (in bytes, as the lexer counts columns).
void BlockTracker::find_line_start(std::size_t from, std::uint32_t line) {
  const char* s = m_src.data();
  const std::size_t n = m_src.size();
  std::size_t start = from;
  std::size_t i = from;
  for (;;) {
    // Indentation is mostly spaces: eight at a time.
    constexpr std::uint64_t k_spaces = 0x2020202020202020ULL;
    std::uint64_t word = 0;
    while (i + 8 <= n && (std::memcpy(&word, s + i, 8), word == k_spaces)) {
      i += 8;
    }
    while (i < n && s[i] == ' ') {
      ++i;
    }
    if (i >= n) {
      break;
    }
    const char c = s[i];
    if (c == '\t' || c == '\f') {
      ++i;
    } else if (c == '#') {
      const void* nl = std::memchr(s + i, '\n', n - i);
      std::size_t end = nl != nullptr ? static_cast<std::size_t>(static_cast<const char*>(nl) - s) : n;
      if (const void* cr = std::memchr(s + i, '\r', end - i)) {
        end = static_cast<std::size_t>(static_cast<const char*>(cr) - s);
      }
      i = end;
    } else if (c == '\n' || c == '\r') {
      i += (c == '\r' && i + 1 < n && s[i + 1] == '\n') ? 2U : 1U;
      start = i;
      ++line;
    } else {
      break;
    }
  }
  m_offset = i;
  m_indent = static_cast<std::uint32_t>(i - start + 1);
  m_line = line;
}

// Reads the lines noted since the last call: opens a block at each header, and closes those
// that the next line is not indented into.
void BlockTracker::catch_up() {
  for (const LineEnd& end : m_ends) {
    if (end.colon != std::string_view::npos) {
      m_blocks.push_back(Block{m_indent, m_line, m_offset, end.colon, header_keyword(m_src, m_offset)});
    }
    find_line_start(end.next, end.line);
    while (!m_blocks.empty() && m_blocks.back().indent >= m_indent) {
      m_blocks.pop_back();
    }
  }
  m_ends.clear();
}

std::optional<Condition> BlockTracker::condition() {
  catch_up();
  for (auto it = m_blocks.rbegin(); it != m_blocks.rend(); ++it) {
    if (listed_in(it->keyword, k_scopes)) {
      return std::nullopt;
    }
    if (listed_in(it->keyword, k_conditional_keywords)) {
      if (auto found = conditional_header(m_src, it->begin, it->colon, it->line)) {
        return found;
      }
    }
  }
  return std::nullopt;
}

} // namespace tpulaunch::scan
