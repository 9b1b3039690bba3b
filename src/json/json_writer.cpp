#include "tpulaunch/json/json_writer.hpp"

// Why a writer of our own rather than nlohmann's dump(2) (issue 24 §5 asks for the reason here):
// measured on 2026-12-05 with callgrind, as bench/plan_bench.sh does, on `plan collective-update
// --slice v5litepod-16 ... --format json`: this writer, streaming, 2.13 M instructions for the
// whole process; the plan built as an nlohmann::ordered_json and printed by this writer, 2.47 M;
// built and printed by nlohmann's own dump(2), 2.69 M, over the 2.5 M the plan may cost. Same
// bytes in all three. The layout stays dump(2)'s, byte for byte, and json_writer_test holds the
// two equal, so the day this writer goes, nothing that reads tpulaunch's JSON sees a change.

#include "util/byte_scan.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace tpulaunch {
namespace {

using Json = nlohmann::ordered_json;

// What a byte of a string becomes: itself, a two-character escape, \u00XX, or (non-ASCII) a
// reason to let nlohmann write the whole string.
enum class ByteClass : unsigned char { plain, short_escape, unicode_escape, non_ascii };

constexpr std::array<ByteClass, 256> make_byte_classes() {
  std::array<ByteClass, 256> classes{};
  for (std::size_t b = 0; b < 256; ++b) {
    classes[b] = b < 0x20 ? ByteClass::unicode_escape : b < 0x80 ? ByteClass::plain : ByteClass::non_ascii;
  }
  for (const char c : std::string_view("\"\\\b\f\n\r\t")) {
    classes[static_cast<unsigned char>(c)] = ByteClass::short_escape;
  }
  return classes;
}
constexpr std::array<ByteClass, 256> k_byte_classes = make_byte_classes();

char short_escape(char c) {
  switch (c) {
  case '\b':
    return 'b';
  case '\f':
    return 'f';
  case '\n':
    return 'n';
  case '\r':
    return 'r';
  case '\t':
    return 't';
  default:
    return c; // '"' and '\\' stand for themselves after the backslash
  }
}

// An integer in decimal, as nlohmann writes it (without its serializer's locale set-up).
template <typename Integer> void append_decimal(std::string& out, Integer number) {
  std::array<char, 24> digits{};
  const auto result = std::to_chars(digits.data(), digits.data() + digits.size(), number);
  out.append(digits.data(), result.ptr);
}

} // namespace

void JsonWriter::write_string(std::string_view text) {
  constexpr std::string_view k_hex = "0123456789abcdef";
  const std::size_t start = m_out.size();
  m_out += '"';
  std::size_t i = 0;
  while (true) {
    const std::size_t end = byte_scan::plain_json_run(text, i);
    m_out.append(text.substr(i, end - i));
    if (end == text.size()) {
      break;
    }
    const auto byte = static_cast<unsigned char>(text[end]);
    const ByteClass kind = k_byte_classes[byte];
    if (kind == ByteClass::non_ascii) {
      // UTF-8 is checked and written by nlohmann, exactly as dump() does.
      m_out.resize(start);
      m_out += nlohmann::ordered_json(std::string(text)).dump();
      return;
    }
    if (kind == ByteClass::short_escape) {
      m_out += '\\';
      m_out += short_escape(text[end]);
    } else {
      m_out += "\\u00";
      m_out += k_hex[byte >> 4U];
      m_out += k_hex[byte & 0xfU];
    }
    i = end + 1;
  }
  m_out += '"';
}

// Where a value starts: right after its key in an object; on a line of its own, one level
// deeper, in an array; as it is at the top.
void JsonWriter::before_value() {
  if (m_after_key) {
    m_after_key = false;
    return;
  }
  if (m_empty.empty()) {
    return;
  }
  m_out += m_empty.back() ? "\n" : ",\n";
  m_empty.back() = false;
  m_out.append(m_empty.size() * 2, ' ');
}

void JsonWriter::open(char bracket) {
  before_value();
  m_out += bracket;
  m_empty.push_back(true);
}

// An empty container closes on the same line ("{}"); otherwise on a line of its own.
void JsonWriter::close(char bracket) {
  const bool empty = m_empty.back();
  m_empty.pop_back();
  if (!empty) {
    m_out += '\n';
    m_out.append(m_empty.size() * 2, ' ');
  }
  m_out += bracket;
}

JsonWriter& JsonWriter::begin_object() {
  open('{');
  return *this;
}

JsonWriter& JsonWriter::end_object() {
  close('}');
  return *this;
}

JsonWriter& JsonWriter::begin_array() {
  open('[');
  return *this;
}

JsonWriter& JsonWriter::end_array() {
  close(']');
  return *this;
}

JsonWriter& JsonWriter::key(std::string_view name) {
  before_value(); // a member starts as an array element does
  write_string(name);
  m_out += ": ";
  m_after_key = true;
  return *this;
}

JsonWriter& JsonWriter::string(std::string_view text) {
  before_value();
  write_string(text);
  return *this;
}

JsonWriter& JsonWriter::string_or_null(std::string_view text) {
  return text.empty() ? null() : string(text);
}

JsonWriter& JsonWriter::null() {
  before_value();
  m_out += "null";
  return *this;
}

JsonWriter& JsonWriter::boolean(bool flag) {
  before_value();
  m_out += flag ? "true" : "false";
  return *this;
}

JsonWriter& JsonWriter::signed_integer(std::int64_t number) {
  before_value();
  append_decimal(m_out, number);
  return *this;
}

JsonWriter& JsonWriter::unsigned_integer(std::uint64_t number) {
  before_value();
  append_decimal(m_out, number);
  return *this;
}

JsonWriter& JsonWriter::value(const nlohmann::ordered_json& document) {
  switch (document.type()) {
  case Json::value_t::object:
    begin_object();
    for (const auto& [name, member] : document.get_ref<const Json::object_t&>()) {
      key(name).value(member);
    }
    return end_object();
  case Json::value_t::array:
    begin_array();
    for (const Json& element : document.get_ref<const Json::array_t&>()) {
      value(element);
    }
    return end_array();
  case Json::value_t::string:
    return string(document.get_ref<const std::string&>());
  case Json::value_t::number_integer:
    return integer(document.get<std::int64_t>());
  case Json::value_t::number_unsigned:
    return integer(document.get<std::uint64_t>());
  case Json::value_t::boolean:
    return boolean(document.get<bool>());
  case Json::value_t::null:
    return null();
  default: // floating point and binary: nlohmann's own text
    before_value();
    m_out += document.dump();
    return *this;
  }
}

std::string dump_json(const nlohmann::ordered_json& value) {
  JsonWriter writer;
  writer.value(value);
  return std::move(writer).take();
}

} // namespace tpulaunch
