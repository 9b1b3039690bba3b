#include "tpulaunch/json/json_reader.hpp"

#include "json/json_parser.hpp"
#include "tpulaunch/util/utf8.hpp"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <string>
#include <unordered_set>

#include <fmt/format.h>

namespace tpulaunch {

using json_detail::Parser;

std::string json_pointer_token(std::string_view key) {
  std::string out;
  out.reserve(key.size());
  for (const char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

const std::unordered_map<std::string, TextPosition>& JsonDocument::positions() const {
  if (!m_positions_ready) {
    m_positions_ready = true;
    JsonValue scratch;
    Parser parser(source, origin, &m_positions);
    (void)parser.parse_document(scratch); // the text parsed once already; this pass only records where
  }
  return m_positions;
}

std::string JsonDocument::where(std::string_view pointer) const {
  const auto& table = positions();
  std::string probe(pointer);
  while (true) {
    if (auto it = table.find(probe); it != table.end()) {
      return fmt::format("{}:{}:{}", origin, it->second.line, it->second.column);
    }
    if (probe.empty()) {
      return origin;
    }
    probe.resize(probe.rfind('/'));
  }
}

Result<JsonDocument> parse_json(std::string_view text, std::string_view origin) {
  JsonDocument doc;
  doc.origin = std::string(origin);
  Parser parser(text, doc.origin, nullptr);
  if (auto status = parser.parse_document(doc.value); !status) {
    return status.error();
  }
  doc.source = std::string(text);
  return doc;
}

} // namespace tpulaunch

namespace tpulaunch {
namespace {

std::string_view type_name(JsonValue::value_t type) {
  switch (type) {
  case JsonValue::value_t::object: return "an object";
  case JsonValue::value_t::array: return "an array";
  case JsonValue::value_t::string: return "a string";
  case JsonValue::value_t::boolean: return "a boolean";
  case JsonValue::value_t::number_integer:
  case JsonValue::value_t::number_unsigned: return "an integer";
  case JsonValue::value_t::number_float: return "a number";
  case JsonValue::value_t::null: return "null";
  default: return "a value";
  }
}

} // namespace

JsonObject::JsonObject(const JsonDocument& doc, const JsonValue& value, std::string pointer, std::string context)
    : m_doc(doc), m_value(value), m_pointer(std::move(pointer)), m_context(std::move(context)) {}

std::string JsonObject::pointer_of(std::string_view key) const {
  return m_pointer + "/" + json_pointer_token(key);
}

Error JsonObject::error_at(std::string_view key, std::string_view what) const {
  const std::string where = key.empty() ? m_doc.where(m_pointer) : m_doc.where(pointer_of(key));
  return config_error(fmt::format("{}: {}: {}", where, m_context, what));
}

bool JsonObject::has(std::string_view key) const { return m_value.contains(key); }

Result<const JsonValue*> JsonObject::member(std::string_view key, JsonValue::value_t type) const {
  auto it = m_value.find(key);
  if (it == m_value.end()) {
    return error_at("", fmt::format("missing field \"{}\"", key));
  }
  const bool matches = it->type() == type ||
                       (type == JsonValue::value_t::number_integer && it->is_number_unsigned());
  if (!matches) {
    return error_at(key, fmt::format("field \"{}\" must be {}, not {}", key, type_name(type), type_name(it->type())));
  }
  return &*it;
}

Result<std::string> JsonObject::string(std::string_view key) const {
  auto value = member(key, JsonValue::value_t::string);
  if (!value) {
    return value.error();
  }
  const auto& text = (*value)->get_ref<const std::string&>();
  if (text.empty()) {
    return error_at(key, fmt::format("field \"{}\" must not be empty", key));
  }
  return text;
}

Result<std::string> JsonObject::optional_string(std::string_view key) const {
  if (!has(key)) {
    return std::string();
  }
  auto value = member(key, JsonValue::value_t::string);
  if (!value) {
    return value.error();
  }
  return (*value)->get<std::string>();
}

Result<long long> JsonObject::integer(std::string_view key, long long min, long long max) const {
  auto value = member(key, JsonValue::value_t::number_integer);
  if (!value) {
    return value.error();
  }
  if ((*value)->is_number_unsigned() && (*value)->get<unsigned long long>() > static_cast<unsigned long long>(max)) {
    return error_at(key, fmt::format("field \"{}\" must be between {} and {}", key, min, max));
  }
  const auto number = (*value)->get<long long>();
  if (number < min || number > max) {
    return error_at(key, fmt::format("field \"{}\" must be between {} and {}, not {}", key, min, max, number));
  }
  return number;
}

Status require_object(const JsonDocument& doc, const JsonValue& value, std::string_view pointer,
                      std::string_view context) {
  if (!value.is_object()) {
    return config_error(fmt::format("{}: {} must be an object, not {}", doc.where(pointer), context, type_name(value.type())));
  }
  return Ok{};
}

} // namespace tpulaunch
