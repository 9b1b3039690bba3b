#pragma once
// JSON output: what `--format json` prints. The reader's counterpart (json_reader.hpp).
#include <concepts>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace tpulaunch {

// Writes JSON text value by value, laid out exactly as nlohmann's dump(2) lays out the same
// document (two-space indent, members in the order written, UTF-8 kept, control bytes escaped),
// without building the document first: a plan's JSON is written this way. A string of printable
// ASCII is copied eight bytes at a time; any other string goes through nlohmann's own escaping,
// so invalid UTF-8 throws nlohmann's type_error as dump() does. The caller writes a well-formed
// sequence: key() before each member's value, every container closed.
class JsonWriter {
public:
  // `expected_size`: room for the text reserved up front (a plan's JSON is some 20 kB).
  explicit JsonWriter(std::size_t expected_size = 0) { m_out.reserve(expected_size); }
  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  JsonWriter& key(std::string_view name);
  JsonWriter& string(std::string_view text);
  JsonWriter& null();
  JsonWriter& boolean(bool flag);
  template <std::integral Integer> JsonWriter& integer(Integer number) {
    if constexpr (std::is_same_v<Integer, bool>) {
      return boolean(number);
    } else if constexpr (std::is_signed_v<Integer>) {
      return signed_integer(static_cast<std::int64_t>(number));
    } else {
      return unsigned_integer(static_cast<std::uint64_t>(number));
    }
  }
  // A whole document at this place (an object from elsewhere, a floating-point number).
  JsonWriter& value(const nlohmann::ordered_json& document);
  // `string(text)`, or null when `text` is empty.
  JsonWriter& string_or_null(std::string_view text);
  // The text written so far.
  [[nodiscard]] std::string take() && { return std::move(m_out); }

private:
  JsonWriter& signed_integer(std::int64_t number);
  JsonWriter& unsigned_integer(std::uint64_t number);
  void before_value();
  void open(char bracket);
  void close(char bracket);
  void write_string(std::string_view text);

  std::string m_out;
  std::vector<bool> m_empty; // one per open container: nothing written in it yet
  bool m_after_key = false;
};

// The text of value.dump(2), byte for byte, written with JsonWriter.
std::string dump_json(const nlohmann::ordered_json& value);

} // namespace tpulaunch
