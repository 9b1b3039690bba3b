#pragma once
// Safe updates of the matrix file: an exclusive lock for the whole read-modify-write, then a
// temporary file in the same folder, flushed and renamed over the original. After any failure
// the original is intact; two reviewers never interleave (the second waits, then sees the first's
// entry, or is refused with a clear message when the lock stays held).
#include <chrono>
#include <functional>
#include <string>

#include "tpulaunch/util/error.hpp"
#include "tpulaunch/matrix/matrix.hpp"

namespace tpulaunch {

struct UpdateOptions {
  std::chrono::milliseconds lock_wait{2000}; // how long to wait for another review's lock
};

// Locks `path`.lock (created with O_EXCL), loads the matrix, applies `edit`, and writes the
// canonical text atomically. An Error from `edit` is returned unchanged and nothing is written.
// A held lock (after `lock_wait`) or a failed write is a failure Error naming the file.
Result<Matrix> update_matrix_file(const std::string& path, const std::function<Status(Matrix&)>& edit,
                                  const UpdateOptions& options = {});

enum class Overwrite { yes, no };

// Writes `content` to `path` atomically (temporary file, fsync, rename, fsync of the folder),
// keeping the original's permission bits. On failure the original is untouched. With
// Overwrite::no the file appears whole or not at all, and an existing `path` is a failure Error.
Status write_file_atomically(const std::string& path, std::string_view content, Overwrite overwrite = Overwrite::yes);

// Writes a new matrix with no reviews for a course whose scripts are in `exercises_dir` (relative
// to the matrix's folder) to `path`, atomically; never over an existing file (a failure Error). The
// course files the scripts import are listed as "helpers" (imported_course_files). A bad folder
// (absolute, leaving the course, or not an existing folder) is a usage Error, and nothing is
// written. Returns the matrix written.
Result<Matrix> init_matrix_file(const std::string& path, std::string_view exercises_dir);

} // namespace tpulaunch
