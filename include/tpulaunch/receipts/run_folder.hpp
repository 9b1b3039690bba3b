#pragma once
// The names inside a run folder, spelled once: the plan fetches into them, the sh script creates
// them, and verify reads them.
#include <string>
#include <string_view>

namespace tpulaunch {

inline constexpr std::string_view k_worker_folder_prefix = "worker-";

// The folder that holds worker `worker`'s fetched files inside a local run folder: "worker-3".
inline std::string worker_folder(int worker) { return std::string(k_worker_folder_prefix) + std::to_string(worker); }

// The same name for any worker, as docs and the text form show it: "worker-<i>".
inline std::string worker_folder_pattern() { return std::string(k_worker_folder_prefix) + "<i>"; }

} // namespace tpulaunch
