#pragma once
// Reading the files tpulaunch takes as input (catalog, matrix, scripts, receipts): whole, bounded,
// and never blocking on something that is not a regular file.
#include <cstddef>
#include <string>
#include <string_view>

#include "tpulaunch/util/error.hpp"

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

// What read_file_nofollow found at a path.
enum class FileKind { regular, missing, symlink, other };
struct FileContent {
  FileKind kind = FileKind::missing;
  std::size_t size = 0; // bytes, by fstat, for a regular file
  std::string text;     // the content, for a regular file of at most max_bytes
};

// Reads `path` as read_text_file does, but never follows a symlink at its last component and
// leaves the cases a caller must tell apart to it: a missing path, a symlink and something that is
// not a regular file come back as `kind` with no text, a regular file larger than `max_bytes` as
// its `size` with no text. Only a failure to open or read is an Error. One open and one fstat for
// the usual file: `check` reads thousands, and a separate lstat first would cost a third more
// system calls.
Result<FileContent> read_file_nofollow(const std::string& path, std::string_view what, std::size_t max_bytes);

} // namespace tpulaunch
