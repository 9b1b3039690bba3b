#pragma once
// A strict JSON reader for the files people edit by hand (catalog, matrix, receipts). Unlike a
// plain nlohmann::json::parse it refuses duplicate keys (which nlohmann would silently keep the
// last of), and it remembers where every value stands, so errors name `file:line:column`.
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "tpulaunch/util/error.hpp"

namespace tpulaunch {

// A JSON value as written: objects keep their members in file order, so a file that is read and
// written again (the matrix) keeps the fields this version does not know where they were.
using JsonValue = nlohmann::ordered_json;

struct TextPosition {
  std::uint32_t line = 1;   // 1-based
  std::uint32_t column = 1; // 1-based, in bytes
};

struct JsonDocument {
  JsonValue value;
  std::string origin; // the file name used in messages
  std::string source; // the text, kept so positions can be found when a message needs one

  // "origin:line:column" of the value at `pointer` (e.g. "/slices/3/hosts"; an object member's
  // key is pointer + "#key"), or of the nearest parent that has a position; "origin" when none.
  [[nodiscard]] std::string where(std::string_view pointer) const;

  // Position of each value by JSON pointer. Computed on first use: only error messages need
  // them, so the common, valid case never pays for them.
  [[nodiscard]] const std::unordered_map<std::string, TextPosition>& positions() const;

private:
  mutable std::unordered_map<std::string, TextPosition> m_positions;
  mutable bool m_positions_ready = false;
};

// Parses `text` (RFC 8259, UTF-8) strictly. On error returns a config Error whose message starts
// with "origin:line:column: ". Nesting deeper than `k_max_json_depth` is refused.
inline constexpr int k_max_json_depth = 64;
Result<JsonDocument> parse_json(std::string_view text, std::string_view origin);

// Escapes one object key for use in a JSON pointer ("~" -> "~0", "/" -> "~1").
std::string json_pointer_token(std::string_view key);

} // namespace tpulaunch

namespace tpulaunch {

// Typed access to the members of one JSON object, with errors that name the position and a
// context such as "slice 'v5litepod-16'". Every accessor returns a config Error on failure.
class JsonObject {
public:
  JsonObject(const JsonDocument& doc, const JsonValue& value, std::string pointer, std::string context);

  [[nodiscard]] bool has(std::string_view key) const;
  Result<std::string> string(std::string_view key) const;                // required, non-empty
  Result<std::string> optional_string(std::string_view key) const;       // "" when absent
  Result<long long> integer(std::string_view key, long long min, long long max) const;
  Result<const JsonValue*> member(std::string_view key, JsonValue::value_t type) const;
  // A config Error "<where>: <context>: <what>" positioned at member `key` (or the object).
  [[nodiscard]] Error error_at(std::string_view key, std::string_view what) const;
  [[nodiscard]] std::string pointer_of(std::string_view key) const;
  [[nodiscard]] const JsonValue& value() const { return m_value; }

private:
  const JsonDocument& m_doc;
  const JsonValue& m_value;
  std::string m_pointer;
  std::string m_context;
};

// A config Error unless `value` at `pointer` is an object; `context` names it in the message.
Status require_object(const JsonDocument& doc, const JsonValue& value, std::string_view pointer,
                      std::string_view context);

} // namespace tpulaunch
