#pragma once
// Reading the files tpulaunch takes as input (catalog, matrix, scripts, receipts): whole, bounded,
// and never blocking on something that is not a regular file.
#include <cstddef>
#include <string>
#include <string_view>

#include "tpulaunch/error.hpp"

namespace tpulaunch {

// Inputs larger than this are refused rather than read: no catalog, matrix or receipt is near it.
inline constexpr std::size_t k_max_input_bytes = 64U * 1024U * 1024U;
// Course scripts are smaller still.
inline constexpr std::size_t k_max_script_bytes = 16U * 1024U * 1024U;

// The whole content of the regular file at `path`. A missing or unreadable file, one that is not
// a regular file (a FIFO, a device, a folder: never opened for reading, so never a hang), or one
// larger than `max_bytes` is a config Error naming the path and the reason; `what` says what the
// file is ("catalog", "matrix").
Result<std::string> read_text_file(const std::string& path, std::string_view what,
                                   std::size_t max_bytes = k_max_input_bytes);

} // namespace tpulaunch
