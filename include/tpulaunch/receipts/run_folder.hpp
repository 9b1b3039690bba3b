#pragma once
// The names inside a run folder, spelled once: the plan fetches into them, the sh script creates
// them, and verify reads them.
#include <string>
#include <string_view>

namespace tpulaunch {

inline constexpr std::string_view k_worker_folder_prefix = "worker-";
// The run guard's record of a worker's part (src/remote/run_guard.bash writes it in the run folder).
inline constexpr std::string_view k_run_record = "run-status.rec";
// With several slices (--slices, docs/multislice.md) each slice's workers sit in slice-<s>/.
inline constexpr std::string_view k_slice_folder_prefix = "slice-";

// The folder that holds worker `worker`'s fetched files inside a local run folder: "worker-3".
inline std::string worker_folder(int worker) { return std::string(k_worker_folder_prefix) + std::to_string(worker); }

// The folder of slice `slice`'s workers in a run of several slices: "slice-1".
inline std::string slice_folder(int slice) { return std::string(k_slice_folder_prefix) + std::to_string(slice); }

// The folder of JAX process `process` (= worker + slice x hosts): worker-<p> on one slice, and
// slice-<s>/worker-<i> when the run spans `slices` slices of `hosts` hosts each.
inline std::string process_folder(int process, int hosts, int slices) {
  if (slices <= 1 || hosts <= 0) {
    return worker_folder(process);
  }
  return slice_folder(process / hosts) + "/" + worker_folder(process % hosts);
}

// The same name for any worker, as docs and the text form show it: "worker-<i>".
inline std::string worker_folder_pattern() { return std::string(k_worker_folder_prefix) + "<i>"; }

} // namespace tpulaunch
