// libFuzzer target: the strict JSON reader against nlohmann::json::parse, differentially. On every
// input both must accept or both refuse, and when both accept they hold the same value. The reader
// refuses three things nlohmann accepts, on purpose; each is an expected difference only when
// nlohmann's own SAX parse confirms it is really there:
//   - a duplicate key in one object ("duplicate key ..."): nlohmann silently keeps the last;
//   - nesting deeper than k_max_json_depth ("nesting deeper than ..."): nlohmann has no limit;
//   - a number strtod cannot hold ("number out of range"), such as 1e-400, which nlohmann reads as 0.
// nlohmann also takes a NUL byte for the end of the input ("1\0x" parses as 1). JSON has no NUL
// outside strings and none raw inside them, so the reader must refuse any input holding one, and
// the comparison is then made on the text before the first NUL.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "fuzz_check.hpp"
#include "tpulaunch/json/json_reader.hpp"

namespace {

using nlohmann::json;

// What nlohmann's parser saw, recorded through its SAX interface: the facts that make a refusal
// by the strict reader an expected one.
struct Facts : nlohmann::json_sax<json> {
  std::vector<std::set<std::string>> keys; // one set per open object (arrays push an empty one)
  int depth = 0;
  int max_depth = 0;
  bool duplicate_key = false;
  bool number_out_of_range = false;

  bool open() {
    keys.emplace_back();
    max_depth = std::max(max_depth, ++depth);
    return true;
  }
  bool close() {
    keys.pop_back();
    --depth;
    return true;
  }
  bool null() override { return true; }
  bool boolean(bool /*value*/) override { return true; }
  bool number_integer(number_integer_t /*value*/) override { return true; }
  bool number_unsigned(number_unsigned_t /*value*/) override { return true; }
  bool number_float(number_float_t /*value*/, const string_t& text) override {
    errno = 0;
    (void)std::strtod(text.c_str(), nullptr);
    number_out_of_range = number_out_of_range || errno == ERANGE;
    return true;
  }
  bool string(string_t& /*value*/) override { return true; }
  bool binary(binary_t& /*value*/) override { return true; }
  bool start_object(std::size_t /*elements*/) override { return open(); }
  bool key(string_t& name) override {
    duplicate_key = duplicate_key || !keys.back().insert(name).second;
    return true;
  }
  bool end_object() override { return close(); }
  bool start_array(std::size_t /*elements*/) override { return open(); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t /*position*/, const std::string& /*token*/,
                   const nlohmann::detail::exception& /*error*/) override {
    return false;
  }
};

bool mentions(const std::string& message, std::string_view what) { return message.find(what) != std::string::npos; }

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  if (const auto nul = text.find('\0'); nul != std::string_view::npos) {
    TPULAUNCH_FUZZ_CHECK(!tpulaunch::parse_json(text, "fuzz.json").ok());
    text = text.substr(0, nul);
  }
  auto ours = tpulaunch::parse_json(text, "fuzz.json");

  // Parsed in file order, as the reader keeps objects (JsonValue is ordered_json): the same value
  // means the same members in the same order.
  tpulaunch::JsonValue theirs;
  bool theirs_ok = true;
  try {
    theirs = tpulaunch::JsonValue::parse(text.begin(), text.end());
  } catch (const json::exception&) {
    theirs_ok = false;
  }

  if (ours.ok()) {
    TPULAUNCH_FUZZ_CHECK(theirs_ok);               // we never accept what nlohmann refuses
    TPULAUNCH_FUZZ_CHECK(ours->value == theirs);   // and read the same value
    TPULAUNCH_FUZZ_CHECK(ours->value.dump() == theirs.dump());
    return 0;
  }
  if (!theirs_ok) {
    return 0; // both refuse
  }
  // Only nlohmann accepts: one of the documented refusals, and really present in the input.
  Facts facts;
  TPULAUNCH_FUZZ_CHECK(json::sax_parse(text.begin(), text.end(), &facts));
  const std::string& message = ours.error().message;
  const bool expected = (mentions(message, "duplicate key") && facts.duplicate_key) ||
                        (mentions(message, "nesting deeper than") && facts.max_depth > tpulaunch::k_max_json_depth) ||
                        (mentions(message, "number out of range") && facts.number_out_of_range);
  if (!expected) {
    std::fprintf(stderr, "json_diff: nlohmann accepts what the reader refuses: %s\n", message.c_str());
  }
  TPULAUNCH_FUZZ_CHECK(expected);
  return 0;
}
