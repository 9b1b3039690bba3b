// libFuzzer target: the execution matrix parser, and the canonical text `review` writes: what
// parses must serialize, parse again to the same content (every unknown field kept, in its
// order: parse -> serialise -> parse is the identity), and serialize to the same text; what does
// not parse gives one config Error line.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_check.hpp"
#include "tpulaunch/matrix/matrix.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto matrix = tpulaunch::parse_matrix(text, "course/execution-matrix.json");
  if (!matrix) {
    TPULAUNCH_FUZZ_CHECK(matrix.error().code == tpulaunch::ExitCode::config);
    TPULAUNCH_FUZZ_CHECK(matrix.error().message.find('\n') == std::string::npos);
    return 0;
  }
  TPULAUNCH_FUZZ_CHECK(matrix->origin == "course/execution-matrix.json" && matrix->base_dir == "course");
  const std::string canonical = tpulaunch::serialize_matrix(*matrix);
  auto again = tpulaunch::parse_matrix(canonical, "course/execution-matrix.json");
  TPULAUNCH_FUZZ_CHECK(again.ok());
  TPULAUNCH_FUZZ_CHECK(tpulaunch::same_content(*matrix, *again));
  TPULAUNCH_FUZZ_CHECK(tpulaunch::serialize_matrix(*again) == canonical);
  TPULAUNCH_FUZZ_CHECK(again->scripts.size() == matrix->scripts.size());
  for (const auto& [id, entry] : matrix->scripts) {
    TPULAUNCH_FUZZ_CHECK(entry.id == id);
    TPULAUNCH_FUZZ_CHECK(entry.sha256.size() == 64);
    (void)matrix->script_path(id);
  }
  return 0;
}
