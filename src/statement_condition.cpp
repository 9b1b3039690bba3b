#include "statement_condition.hpp"

#include <array>
#include <vector>

#include "classifier_matchers.hpp"
#include "token_match.hpp"

namespace tpulaunch::scan {
namespace {

constexpr std::size_t k_none = static_cast<std::size_t>(-1);

// Keywords that open a compound statement (its header ends at a `:`).
constexpr std::array<std::string_view, 14> k_headers{"if",   "elif",  "else", "while", "for",   "try",   "except",
                                                     "finally", "with", "def",  "class", "async", "match", "case"};

// A header that starts a new function (or class) body: what encloses it is not this statement's
// condition, as the function may be called anywhere.
constexpr std::array<std::string_view, 2> k_scopes{"def", "class"};

struct Header {
  std::uint32_t indent = 0;
  std::size_t begin = 0; // its first token (after `async`)
  std::size_t colon = 0;
};

// The `:` that ends the compound header starting at `begin` (before `end`), skipping those of
// lambdas and those inside brackets; k_none when there is none.
std::size_t header_colon(std::span<const Token> tokens, std::size_t begin, std::size_t end) {
  std::size_t depth = 0;
  std::size_t lambdas = 0;
  for (std::size_t i = begin; i < end; ++i) {
    const Token& t = tokens[i];
    if (is_opener(t)) {
      ++depth;
    } else if (is_closer(t)) {
      depth = depth > 0 ? depth - 1 : 0;
    } else if (depth == 0 && is_name(t, "lambda")) {
      ++lambdas;
    } else if (depth == 0 && is_op(t, ":")) {
      if (lambdas == 0) {
        return i;
      }
      --lambdas;
    }
  }
  return k_none;
}

bool is_main_string(const Token& t) { return is_literal_string(t) && string_value(t) == "__main__"; }

// `if __name__ == "__main__":` (either way round): the module's entry point, no condition.
bool main_guard(std::span<const Token> tokens, const Header& h) {
  if (h.colon != h.begin + 4 || !is_name(tokens[h.begin], "if") || !is_op(tokens[h.begin + 2], "==")) {
    return false;
  }
  const Token& a = tokens[h.begin + 1];
  const Token& b = tokens[h.begin + 3];
  return (is_name(a, "__name__") && is_main_string(b)) || (is_main_string(a) && is_name(b, "__name__"));
}

std::string header_text(std::span<const Token> tokens, const Header& h) {
  const char* first = tokens[h.begin].text.data();
  const char* last = tokens[h.colon].text.data() + tokens[h.colon].text.size();
  std::string text;
  for (const char* c = first; c < last; ++c) {
    if (*c == '\n' || *c == '\r' || *c == '\t') {
      if (text.empty() || text.back() != ' ') {
        text += ' ';
      }
    } else if (*c != ' ' || text.empty() || text.back() != ' ') {
      text += *c;
    }
  }
  if (text.size() > 80) {
    text.resize(77);
    text += "...";
  }
  return text;
}

// The header starting at `begin` (skipping `async`), if the logical line [begin, end) is one
// whose `:` comes before `limit`.
std::optional<Header> header_at(std::span<const Token> tokens, std::size_t begin, std::size_t end, std::size_t limit,
                                std::uint32_t indent) {
  std::size_t first = begin;
  if (is_name(tokens[first], "async") && first + 1 < end) {
    ++first;
  }
  if (tokens[first].kind != TokenKind::name || !listed_in(tokens[first].text, k_headers)) {
    return std::nullopt;
  }
  const std::size_t colon = header_colon(tokens, first, end);
  if (colon == k_none || colon >= limit) {
    return std::nullopt;
  }
  return Header{indent, first, colon};
}

// A conditional expression around tokens[index] in the simple statement [begin, end): a ternary
// (`x if c else y`, on either side), or the right operand of `and` / `or`.
bool in_conditional_expression(std::span<const Token> tokens, std::size_t begin, std::size_t end, std::size_t index) {
  std::vector<std::size_t> depth(end - begin, 0);
  std::size_t d = 0;
  for (std::size_t i = begin; i < end; ++i) {
    if (is_closer(tokens[i]) && d > 0) {
      --d;
    }
    depth[i - begin] = d;
    if (is_opener(tokens[i])) {
      ++d;
    }
  }
  const std::size_t at = depth[index - begin];
  for (std::size_t i = index + 1; i < end; ++i) {
    const std::size_t di = depth[i - begin];
    if (di < at || (di == at && is_op(tokens[i], ","))) {
      break;
    }
    if (di == at && is_name(tokens[i], "if")) {
      return true;
    }
  }
  for (std::size_t i = index; i > begin; --i) {
    const Token& t = tokens[i - 1];
    const std::size_t di = depth[i - 1 - begin];
    if (di < at || (di == at && (is_op(t, ",") || is_op(t, "=") || is_op(t, ":=")))) {
      break;
    }
    if (di == at && (is_name(t, "and") || is_name(t, "or") || is_name(t, "else"))) {
      return true;
    }
  }
  return false;
}

} // namespace

std::optional<Condition> condition_of(std::span<const Token> tokens, std::size_t index) {
  std::vector<Header> open; // the compound statements whose bodies the current line is in
  std::size_t begin = 0;
  while (begin < tokens.size() && begin <= index) {
    std::size_t end = begin;
    while (end < tokens.size() && tokens[end].kind != TokenKind::newline && tokens[end].kind != TokenKind::end) {
      ++end;
    }
    if (end == begin) {
      ++begin;
      continue;
    }
    const std::uint32_t indent = tokens[begin].column;
    while (!open.empty() && open.back().indent >= indent) {
      open.pop_back();
    }
    if (index >= end) {
      if (auto header = header_at(tokens, begin, end, end, indent); header && header->colon + 1 == end) {
        open.push_back(*header);
      }
      begin = end + 1;
      continue;
    }
    // The line holding tokens[index]: a one-line `if c: stmt` before it, then its simple statement.
    std::size_t start = begin;
    if (auto header = header_at(tokens, begin, end, index, indent)) {
      open.push_back(*header);
      start = header->colon + 1;
    }
    std::size_t stop = start;
    for (std::size_t i = start, d = 0; i < end; ++i) {
      d += is_opener(tokens[i]) ? 1U : 0U;
      d -= (is_closer(tokens[i]) && d > 0) ? 1U : 0U;
      if (d == 0 && is_op(tokens[i], ";")) {
        if (i > index) {
          break;
        }
        start = i + 1;
      }
      stop = i + 1;
    }
    if (in_conditional_expression(tokens, start, stop, index)) {
      return Condition{{}, tokens[index].line, {}};
    }
    for (auto it = open.rbegin(); it != open.rend(); ++it) {
      const std::string_view keyword = tokens[it->begin].text;
      if (listed_in(keyword, k_scopes)) {
        break;
      }
      if (listed_in(keyword, k_conditional_keywords) && !main_guard(tokens, *it)) {
        return Condition{keyword, tokens[it->begin].line, header_text(tokens, *it)};
      }
    }
    return std::nullopt;
  }
  return std::nullopt;
}

} // namespace tpulaunch::scan
