// libFuzzer target: verify's checks on untrusted receipts. The input is up to four files separated
// by "\n--8<--\n" (worker-0.json, checkpoint.json, worker-1.json, discovery-1.json); the first byte
// picks the kind. Whatever the bytes, verify returns findings: it never crashes, and every finding
// is one line.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_check.hpp"
#include "tpulaunch/receipts/verify.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) {
    return 0;
  }
  using namespace tpulaunch;
  constexpr VerifyKind k_kinds[] = {VerifyKind::training, VerifyKind::discovery, VerifyKind::logs};
  const VerifyKind kind = k_kinds[data[0] % 3];
  std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  std::vector<std::string> parts;
  constexpr std::string_view k_cut = "\n--8<--\n";
  while (parts.size() < 3) {
    const auto at = rest.find(k_cut);
    if (at == std::string_view::npos) {
      break;
    }
    parts.emplace_back(rest.substr(0, at));
    rest.remove_prefix(at + k_cut.size());
  }
  parts.emplace_back(rest);

  Slice slice;
  slice.name = "v5litepod-8x2";
  slice.hosts = 2;
  slice.chips_per_host = 4;
  slice.devices_per_host = 4;
  constexpr const char* k_names[] = {"worker-0.json", "checkpoint.json", "worker-1.json", "discovery-1.json"};
  std::vector<FetchedWorker> workers(2);
  for (std::size_t i = 0; i < workers.size(); ++i) {
    workers[i].present = true;
    workers[i].folder = "worker-" + std::to_string(i);
    workers[i].logs = 1;
  }
  for (std::size_t i = 0; i < parts.size(); ++i) {
    workers[i < 2 ? 0 : 1].artifacts.push_back(FetchedFile{k_names[i], parts[i], ""});
  }
  const VerifyReport report = verify_fetched(workers, slice_target(slice), VerifyOptions{kind, data[0] % 2 == 0});
  TPULAUNCH_FUZZ_CHECK(report.ok() == report.findings.empty());
  for (const VerifyFinding& finding : report.findings) {
    TPULAUNCH_FUZZ_CHECK(finding.message.find('\n') == std::string::npos);
    TPULAUNCH_FUZZ_CHECK(finding.worker >= -1 && finding.worker < 2);
  }
  return 0;
}
