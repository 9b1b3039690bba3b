#include "tpulaunch/json_writer.hpp"

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

// True when one of the eight bytes in `word` may need more than a copy: a control byte, '"', '\\'
// or a byte of 0x80 and above. (A false alarm only sends the eight bytes down the slow path.)
bool needs_care(std::uint64_t word) {
  constexpr std::uint64_t k_ones = 0x0101010101010101ULL;
  constexpr std::uint64_t k_highs = 0x8080808080808080ULL;
  const auto has_zero = [](std::uint64_t w) { return (w - k_ones) & ~w & k_highs; };
  const std::uint64_t control = (word - k_ones * 0x20U) & ~word & k_highs;
  return (control | has_zero(word ^ (k_ones * '"')) | has_zero(word ^ (k_ones * '\\')) | (word & k_highs)) != 0;
}

void write_string(std::string& out, const std::string& text) {
  constexpr std::string_view k_hex = "0123456789abcdef";
  const std::size_t start = out.size();
  out += '"';
  std::size_t plain_from = 0;
  std::size_t i = 0;
  while (i < text.size()) {
    if (i + 8 <= text.size()) {
      std::uint64_t word = 0;
      std::memcpy(&word, text.data() + i, sizeof word);
      if (!needs_care(word)) {
        i += 8;
        continue;
      }
    }
    const std::size_t end = std::min(text.size(), i + 8);
    for (; i < end; ++i) {
      const auto byte = static_cast<unsigned char>(text[i]);
      const ByteClass kind = k_byte_classes[byte];
      if (kind == ByteClass::plain) {
        continue;
      }
      if (kind == ByteClass::non_ascii) {
        // UTF-8 is checked and written by nlohmann, exactly as dump() does.
        out.resize(start);
        out += Json(text).dump();
        return;
      }
      out.append(text, plain_from, i - plain_from);
      plain_from = i + 1;
      if (kind == ByteClass::short_escape) {
        out += '\\';
        out += short_escape(text[i]);
      } else {
        out += "\\u00";
        out += k_hex[byte >> 4U];
        out += k_hex[byte & 0xfU];
      }
    }
  }
  out.append(text, plain_from, std::string::npos);
  out += '"';
}

// An integer in decimal, as nlohmann writes it (without its serializer's locale set-up).
template <typename Integer> void write_integer(std::string& out, Integer value) {
  std::array<char, 24> digits{};
  const auto [end, error] = std::to_chars(digits.data(), digits.data() + digits.size(), value);
  out.append(digits.data(), end);
}

void indent(std::string& out, int depth) {
  out.append(static_cast<std::size_t>(depth) * 2, ' ');
}

// An object or array as dump(2) lays it out: `open` and `close` together when empty, otherwise
// each element on a line of its own, one level deeper, separated by commas.
template <typename Elements, typename WriteElement>
void write_container(std::string& out, char open, char close, const Elements& elements, int depth,
                     WriteElement write_element) {
  out += open;
  if (!elements.empty()) {
    const char* separator = "\n";
    for (const auto& element : elements) {
      out += separator;
      separator = ",\n";
      indent(out, depth + 1);
      write_element(element);
    }
    out += '\n';
    indent(out, depth);
  }
  out += close;
}

void write_value(std::string& out, const Json& value, int depth) {
  switch (value.type()) {
  case Json::value_t::object:
    write_container(out, '{', '}', value.get_ref<const Json::object_t&>(), depth, [&](const auto& member) {
      write_string(out, member.first);
      out += ": ";
      write_value(out, member.second, depth + 1);
    });
    return;
  case Json::value_t::array:
    write_container(out, '[', ']', value.get_ref<const Json::array_t&>(), depth,
                    [&](const Json& element) { write_value(out, element, depth + 1); });
    return;
  case Json::value_t::string:
    write_string(out, value.get_ref<const std::string&>());
    return;
  case Json::value_t::number_integer:
    write_integer(out, value.get<std::int64_t>());
    return;
  case Json::value_t::number_unsigned:
    write_integer(out, value.get<std::uint64_t>());
    return;
  case Json::value_t::boolean:
    out += value.get<bool>() ? "true" : "false";
    return;
  case Json::value_t::null:
    out += "null";
    return;
  default:
    out += value.dump();
    return; // floating point and binary: nlohmann's own text
  }
}

} // namespace

std::string dump_json(const nlohmann::ordered_json& value) {
  std::string out;
  out.reserve(64U * 1024U); // a plan's JSON is some 20 kB; one allocation instead of a dozen
  write_value(out, value, 0);
  return out;
}

} // namespace tpulaunch
