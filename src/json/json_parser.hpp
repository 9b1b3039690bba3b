#pragma once
// The JSON parser behind parse_json (src/json/json_reader.cpp). Not part of the public headers:
// parse_json is the interface.
#include <algorithm>
#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>

#include "util/byte_scan.hpp"
#include "util/escapes.hpp"
#include "tpulaunch/json/json_reader.hpp"
#include "tpulaunch/util/utf8.hpp"

namespace tpulaunch::json_detail {

// A recursive-descent parser over bytes. Recursion depth is bounded by k_max_json_depth, so a
// hostile file cannot exhaust the stack.
class Parser {
public:
  // `positions` is filled when given; the value tree is always built.
  Parser(std::string_view text, std::string_view origin, std::unordered_map<std::string, TextPosition>* positions)
      : m_text(text), m_origin(origin), m_positions(positions) {}

  Status parse_document(JsonValue& out) {
    skip_bom();
    skip_space();
    std::string pointer;
    if (auto status = parse_value(out, pointer, 0); !status) {
      return status;
    }
    skip_space();
    if (m_pos != m_text.size()) {
      return fail("unexpected text after the JSON value");
    }
    return Ok{};
  }

  // A UTF-8 byte order mark at the start is skipped, as editors on some systems write one.
  void skip_bom() {
    if (m_pos == 0 && m_text.substr(0, 3) == "\xEF\xBB\xBF") {
      advance(3);
    }
  }

  [[nodiscard]] bool at_end() const { return m_pos >= m_text.size(); }

  void skip_space() {
    // One pass with the position in locals: a matrix is a third indentation.
    std::size_t pos = m_pos;
    std::uint32_t line = m_line;
    std::uint32_t column = m_column;
    for (; pos < m_text.size(); ++pos) {
      const char c = m_text[pos];
      if (c == '\n') {
        ++line;
        column = 1;
      } else if (c == ' ' || c == '\t' || c == '\r') {
        ++column;
      } else {
        break;
      }
    }
    m_pos = pos;
    m_line = line;
    m_column = column;
  }

private:
  [[nodiscard]] char peek() const { return at_end() ? '\0' : m_text[m_pos]; }

  void advance(std::size_t count = 1) {
    for (std::size_t i = 0; i < count && !at_end(); ++i) {
      if (m_text[m_pos] == '\n') {
        ++m_line;
        m_column = 1;
      } else {
        ++m_column;
      }
      ++m_pos;
    }
  }

  Status fail(std::string_view what) const { return fail_at(m_line, m_column, what); }
  Status fail_at(std::uint32_t line, std::uint32_t column, std::string_view what) const {
    return config_error(fmt::format("{}:{}:{}: {}", m_origin, line, column, what));
  }

  void mark(const std::string& pointer) {
    if (m_positions != nullptr) {
      (*m_positions)[pointer] = TextPosition{m_line, m_column};
    }
  }

  // What stands at the current position, for "found ..." in messages.
  [[nodiscard]] std::string found() const { return at_end() ? std::string("end of input") : describe(m_text[m_pos]); }

  static std::string describe(char c) {
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) {
      return fmt::format("byte 0x{:02x}", static_cast<unsigned char>(c));
    }
    return fmt::format("'{}'", c);
  }

  Status parse_value(JsonValue& out, std::string& pointer, int depth) {
    if (depth > k_max_json_depth) {
      return fail(fmt::format("nesting deeper than {} levels", k_max_json_depth));
    }
    mark(pointer);
    const char c = peek();
    switch (c) {
    case '{':
      return parse_object(out, pointer, depth);
    case '[':
      return parse_array(out, pointer, depth);
    case '"': {
      std::string text;
      if (auto status = parse_string(text); !status) {
        return status;
      }
      out = std::move(text);
      return Ok{};
    }
    case 't':
      return parse_literal("true", out, true);
    case 'f':
      return parse_literal("false", out, false);
    case 'n':
      return parse_literal("null", out, nullptr);
    default:
      if (c == '-' || (c >= '0' && c <= '9')) {
        return parse_number(out);
      }
      return fail(fmt::format("expected a JSON value, found {}", found()));
    }
  }

  Status parse_literal(std::string_view word, JsonValue& out, JsonValue value) {
    if (m_text.substr(m_pos, word.size()) != word) {
      return fail(fmt::format("expected a JSON value, found {}", found()));
    }
    advance(word.size());
    out = std::move(value);
    return Ok{};
  }

  // True when `key` is already a member. A small object (a matrix entry) is searched in place,
  // without a set and its allocations; from 16 members on, `seen` holds a copy of every key.
  static bool duplicate(const std::vector<std::pair<std::string, JsonValue>>& members,
                        std::unordered_set<std::string>& seen, const std::string& key) {
    constexpr std::size_t k_small = 16;
    if (members.size() < k_small) {
      return std::any_of(members.begin(), members.end(), [&](const auto& member) { return member.first == key; });
    }
    if (seen.empty()) {
      for (const auto& member : members) {
        seen.insert(member.first);
      }
    }
    return !seen.insert(key).second;
  }

  // The one walk over an object's members, after its '{': `key(key, line, column)` as soon as
  // a member name is read (before its ':', so a duplicate is named first), then `value(key)` with
  // the position at the member's value, which it must read (and may move `key` from).
  template <typename Key, typename Value> Status walk_object(Key&& key_seen, Value&& value) {
    advance(); // '{'
    skip_space();
    if (peek() == '}') {
      advance();
      return Ok{};
    }
    std::string key;
    while (true) {
      skip_space();
      if (peek() != '"') {
        return fail(fmt::format("expected a member name in double quotes, found {}", found()));
      }
      const auto key_line = m_line;
      const auto key_column = m_column;
      key.clear();
      TPULAUNCH_CHECK(parse_string(key));
      TPULAUNCH_CHECK(key_seen(key, key_line, key_column));
      skip_space();
      if (peek() != ':') {
        return fail(fmt::format("expected ':' after member name, found {}", found()));
      }
      advance();
      skip_space();
      TPULAUNCH_CHECK(value(key));
      skip_space();
      if (peek() == ',') {
        advance();
        continue;
      }
      if (peek() == '}') {
        advance();
        return Ok{};
      }
      return fail(fmt::format("expected ',' or '}}' in object, found {}", found()));
    }
  }

  Status parse_object(JsonValue& out, std::string& pointer, int depth) {
    out = JsonValue::object();
    // Members are gathered here and moved into the object at the end. ordered_json's members are
    // pair<const string, json>, which a growing vector can only copy, so appending to the object
    // one by one deep-copied every member parsed so far at each reallocation: a third of the time
    // to load a 10,000-script matrix.
    std::vector<std::pair<std::string, JsonValue>> members;
    std::unordered_set<std::string> seen; // the keys of `members`, once there are many
    const auto key_seen = [&](const std::string& key, std::uint32_t line, std::uint32_t column) -> Status {
      if (duplicate(members, seen, key)) {
        return fail_at(line, column, fmt::format("duplicate key \"{}\"", printable(key)));
      }
      if (m_positions != nullptr) {
        (*m_positions)[pointer + "/" + json_pointer_token(key) + "#key"] = TextPosition{line, column};
      }
      return Ok{};
    };
    const auto value = [&](std::string& key) -> Status {
      const auto size_before = pointer.size();
      if (m_positions != nullptr) {
        pointer += '/';
        pointer += json_pointer_token(key);
      }
      JsonValue member;
      auto status = parse_value(member, pointer, depth + 1);
      pointer.resize(size_before);
      // Keys are unique (checked above), so append: a lookup per member would make a large
      // object (a matrix with 10,000 scripts) quadratic.
      members.emplace_back(std::move(key), std::move(member));
      return status;
    };
    TPULAUNCH_CHECK(walk_object(key_seen, value));
    auto& object = out.get_ref<JsonValue::object_t&>();
    object.reserve(members.size());
    for (auto& [key, member] : members) {
      object.emplace_back(std::move(key), std::move(member));
    }
    return Ok{};
  }

  Status parse_array(JsonValue& out, std::string& pointer, int depth) {
    advance(); // '['
    out = JsonValue::array();
    skip_space();
    if (peek() == ']') {
      advance();
      return Ok{};
    }
    for (std::size_t index = 0;; ++index) {
      skip_space();
      const auto size_before = pointer.size();
      if (m_positions != nullptr) {
        pointer += '/';
        pointer += std::to_string(index);
      }
      JsonValue element;
      auto status = parse_value(element, pointer, depth + 1);
      pointer.resize(size_before);
      if (!status) {
        return status;
      }
      out.push_back(std::move(element));
      skip_space();
      if (peek() == ',') {
        advance();
        continue;
      }
      if (peek() == ']') {
        advance();
        return Ok{};
      }
      return fail(fmt::format("expected ',' or ']' in array, found {}", found()));
    }
  }

  Status parse_number(JsonValue& out) {
    const std::size_t start = m_pos;
    std::size_t end = m_pos;
    auto digit = [&](std::size_t at) { return at < m_text.size() && m_text[at] >= '0' && m_text[at] <= '9'; };
    bool integral = true;
    if (end < m_text.size() && m_text[end] == '-') {
      ++end;
    }
    if (!digit(end)) {
      return fail("invalid number");
    }
    if (m_text[end] == '0' && digit(end + 1)) {
      return fail("invalid number: leading zero");
    }
    while (digit(end)) {
      ++end;
    }
    if (end < m_text.size() && m_text[end] == '.') {
      integral = false;
      ++end;
      if (!digit(end)) {
        return fail("invalid number: digits expected after '.'");
      }
      while (digit(end)) {
        ++end;
      }
    }
    if (end < m_text.size() && (m_text[end] == 'e' || m_text[end] == 'E')) {
      integral = false;
      ++end;
      if (end < m_text.size() && (m_text[end] == '+' || m_text[end] == '-')) {
        ++end;
      }
      if (!digit(end)) {
        return fail("invalid number: digits expected in exponent");
      }
      while (digit(end)) {
        ++end;
      }
    }
    const char* first = m_text.data() + start;
    const char* last = m_text.data() + end;
    if (integral) {
      // As nlohmann::json::parse reads integers: signed when they fit, else unsigned when they
      // fit 64 bits, else a double (fuzz/json_diff_fuzz.cpp holds the two readers to that).
      std::int64_t value = 0;
      if (auto [ptr, ec] = std::from_chars(first, last, value); ec == std::errc{} && ptr == last) {
        out = value;
        advance(end - start);
        return Ok{};
      }
      std::uint64_t positive = 0;
      if (auto [ptr, ec] = std::from_chars(first, last, positive); ec == std::errc{} && ptr == last) {
        out = positive;
        advance(end - start);
        return Ok{};
      }
    }
    double value = 0;
    if (auto [ptr, ec] = std::from_chars(first, last, value); ec != std::errc{} || ptr != last) {
      return fail("number out of range");
    }
    out = value;
    advance(end - start);
    return Ok{};
  }

  // Reads 4 hex digits after "\u".
  bool read_hex4(std::uint32_t& value) {
    value = 0;
    for (int i = 0; i < 4; ++i) {
      const int digit = escapes::hex_digit(peek());
      if (digit < 0) {
        return false;
      }
      value = (value << 4U) | static_cast<std::uint32_t>(digit);
      advance();
    }
    return true;
  }

  Status parse_string(std::string& out) {
    advance(); // opening quote
    while (true) {
      if (at_end()) {
        return fail("unterminated string");
      }
      const auto c = static_cast<unsigned char>(m_text[m_pos]);
      if (c == '"') {
        advance();
        return Ok{};
      }
      if (c < 0x20) {
        return fail(fmt::format("control character {} in string (escape it)", describe(static_cast<char>(c))));
      }
      if (c == '\\') {
        advance();
        const char e = peek();
        advance();
        switch (e) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
        case 'f':
        case 'n':
        case 'r':
        case 't':
          out += escapes::control(e);
          break;
        case 'u': {
          std::uint32_t cp = 0;
          if (!read_hex4(cp)) {
            return fail("invalid \\u escape");
          }
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            std::uint32_t low = 0;
            if (peek() != '\\' || m_text.substr(m_pos, 2) != "\\u") {
              return fail("unpaired surrogate in \\u escape");
            }
            advance(2);
            if (!read_hex4(low) || low < 0xDC00 || low > 0xDFFF) {
              return fail("unpaired surrogate in \\u escape");
            }
            cp = 0x10000 + ((cp - 0xD800) << 10U) + (low - 0xDC00);
          } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            return fail("unpaired surrogate in \\u escape");
          }
          append_utf8(out, cp);
          break;
        }
        default:
          return fail(fmt::format("invalid escape: backslash followed by {}", describe(e)));
        }
        continue;
      }
      if (c < 0x80) {
        // Copy the run of plain ASCII up to the next quote, escape or special byte at once.
        const std::size_t end = byte_scan::plain_json_run(m_text, m_pos + 1);
        out.append(m_text.substr(m_pos, end - m_pos));
        m_column += static_cast<std::uint32_t>(end - m_pos); // no newline can be in the run
        m_pos = end;
        continue;
      }
      const std::size_t length = utf8_sequence_length(m_text, m_pos);
      if (length == 0) {
        return fail("invalid UTF-8 in string");
      }
      out.append(m_text.substr(m_pos, length));
      m_pos += length; // a multi-byte character is one column
      ++m_column;
    }
  }

  std::string_view m_text;
  std::string_view m_origin;
  std::unordered_map<std::string, TextPosition>* m_positions;
  std::size_t m_pos = 0;
  std::uint32_t m_line = 1;
  std::uint32_t m_column = 1;
};

} // namespace tpulaunch::json_detail
