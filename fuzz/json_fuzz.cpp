// libFuzzer target: the strict JSON reader. Any bytes must give a document or a config Error whose
// message starts with "origin:line:column: "; never a crash, a hang or an exception.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_check.hpp"
#include "tpulaunch/json/json_reader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto doc = tpulaunch::parse_json(text, "fuzz.json");
  if (!doc) {
    TPULAUNCH_FUZZ_CHECK(doc.error().code == tpulaunch::ExitCode::config);
    TPULAUNCH_FUZZ_CHECK(doc.error().message.starts_with("fuzz.json:"));
    TPULAUNCH_FUZZ_CHECK(doc.error().message.find('\n') == std::string::npos);
    return 0;
  }
  // Every accepted document is valid UTF-8 JSON: nlohmann can dump it (it throws on bad UTF-8).
  const std::string dumped = doc->value.dump();
  // And the reader accepts its own canonical form again, with the same value.
  auto again = tpulaunch::parse_json(dumped, "fuzz-again.json");
  TPULAUNCH_FUZZ_CHECK(again.ok());
  TPULAUNCH_FUZZ_CHECK(again->value == doc->value);
  for (const auto& [pointer, position] : doc->positions()) {
    TPULAUNCH_FUZZ_CHECK(position.line >= 1 && position.column >= 1);
    (void)doc->where(pointer);
  }
  (void)doc->where("/no/such/pointer");
  return 0;
}
