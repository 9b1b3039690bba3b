// libFuzzer target: the slice catalog parser and the figures derived from an accepted catalog.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_check.hpp"
#include "tpulaunch/catalog/catalog.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto catalog = tpulaunch::parse_catalog(text, "fuzz-catalog.json");
  if (!catalog) {
    TPULAUNCH_FUZZ_CHECK(catalog.error().code == tpulaunch::ExitCode::config);
    TPULAUNCH_FUZZ_CHECK(catalog.error().message.find('\n') == std::string::npos);
    return 0;
  }
  for (const auto& slice : catalog->slices()) {
    TPULAUNCH_FUZZ_CHECK(slice.hosts >= 1 && slice.chips_per_host >= 1 && slice.devices_per_host >= 1);
    TPULAUNCH_FUZZ_CHECK(slice.global_chips() >= slice.chips_per_host);
    TPULAUNCH_FUZZ_CHECK(slice.total_hbm_gib() >= 0);
    TPULAUNCH_FUZZ_CHECK(slice.device_count() >= slice.local_device_count());
    TPULAUNCH_FUZZ_CHECK(slice.idle_chips_on_worker_zero() >= 0);
    TPULAUNCH_FUZZ_CHECK(catalog->find(slice.name) != nullptr);
    TPULAUNCH_FUZZ_CHECK(catalog->generation(slice.generation) != nullptr);
  }
  // Unknown names are usage Errors with a suggestion at most, never a crash.
  auto missing = catalog->require("v5litepod-17");
  if (!missing) {
    TPULAUNCH_FUZZ_CHECK(missing.error().code == tpulaunch::ExitCode::usage);
  }
  return 0;
}
