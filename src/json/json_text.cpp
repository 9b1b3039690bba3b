#include "tpulaunch/json/json_text.hpp"

// Why a refusal, not a lossless encoding, for a value that is not UTF-8 (issue 35 §3 left the
// choice open): every string in tpulaunch's JSON is exact, and consumers use them as they are (a
// step's "argv" is run as it stands, "env" is set as it stands). An encoding that carried the
// bytes (Python's surrogateescape, \udcXX) is not Unicode: jq turns it into U+FFFD, strict parsers
// refuse it, and a consumer that did not know the convention would run other bytes than the plan
// shows. A value that JSON cannot carry is therefore an error that names it; the text and sh forms
// quote any bytes, so the user still has a form that carries it exactly.
//
// Why nlohmann's dump(2) and no writer of our own (issue 35 §3): a hand-written streaming writer
// (JsonWriter, until issue 35) saved 0.45 M instructions of the JSON plan (2.46 M against 2.90 M,
// measured with callgrind), in a process whose plan then waits seconds for gcloud; that saving did
// not justify a second JSON implementation and the test that held the two equal. The plan's
// budget is 3.0 M (bench/plan_bench.sh); docs/performance.md has the figures.

#include <optional>
#include <string_view>

#include <fmt/format.h>

#include "tpulaunch/util/utf8.hpp"

namespace tpulaunch {
namespace {

using Json = nlohmann::ordered_json;

// A JSON Pointer's reference token (RFC 6901): '~' and '/' escaped.
std::string pointer_token(std::string_view name) {
  std::string out;
  for (const char c : name) {
    out += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
  }
  return out;
}

struct NotUtf8 {
  std::string pointer; // where the string stands, from the document ("" for the document itself)
  std::string value;
  std::size_t offset = 0;
};

std::optional<NotUtf8> check_string(const std::string& text) {
  if (const auto offset = first_non_utf8_byte(text)) {
    return NotUtf8{"", text, *offset};
  }
  return std::nullopt;
}

// The first string or key of `value` (in document order) that is not UTF-8. The pointer is made
// on the way back, only for what was found: the walk itself allocates nothing.
std::optional<NotUtf8> find_not_utf8(const Json& value) {
  switch (value.type()) {
  case Json::value_t::string:
    return check_string(value.get_ref<const std::string&>());
  case Json::value_t::object:
    for (const auto& [name, member] : value.get_ref<const Json::object_t&>()) {
      auto found = check_string(name);
      if (!found) {
        found = find_not_utf8(member);
      }
      if (found) {
        found->pointer = "/" + pointer_token(name) + found->pointer;
        return found;
      }
    }
    return std::nullopt;
  case Json::value_t::array: {
    const auto& elements = value.get_ref<const Json::array_t&>();
    for (std::size_t i = 0; i < elements.size(); ++i) {
      if (auto found = find_not_utf8(elements[i])) {
        found->pointer = fmt::format("/{}{}", i, found->pointer);
        return found;
      }
    }
    return std::nullopt;
  }
  default:
    return std::nullopt;
  }
}

} // namespace

Status check_json_strings(const Json& document) {
  const auto found = find_not_utf8(document);
  if (!found) {
    return Ok{};
  }
  return usage_error(fmt::format(
      "--format json cannot carry the value at {}: '{}' is not UTF-8 (byte 0x{:02x} at offset {}), and JSON text is "
      "UTF-8; give the value in UTF-8, or choose another --format",
      found->pointer.empty() ? "/" : printable(found->pointer), printable(found->value),
      static_cast<unsigned char>(found->value[found->offset]), found->offset));
}

Result<std::string> json_text(const Json& document) {
  // dump() checks every string as it writes it, and throws type_error 316 at a byte that is not
  // UTF-8, naming only its index: the document is walked then, and only then, to name the value.
  // (Walked first, every plan would pay for the look: 0.4 M instructions, measured.)
  try {
    std::string text = document.dump(2);
    text += '\n';
    return text;
  } catch (const Json::type_error& error) {
    if (error.id != 316) {
      throw;
    }
  }
  TPULAUNCH_CHECK(check_json_strings(document));
  return failure("internal error: nlohmann's dump() found a string that is not UTF-8, and json_text did not");
}

} // namespace tpulaunch
