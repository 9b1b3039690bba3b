#include "tpulaunch/matrix/matrix_file.hpp"

#include <array>
#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

#include <fmt/format.h>

#include "tpulaunch/matrix/exercises.hpp"

namespace tpulaunch {
namespace {

namespace fs = std::filesystem;

std::string errno_text() { return std::strerror(errno); }

// Why `target` cannot be locked, with what the lock file says about its holder: a review still
// running is waited for; one that was killed left its lock behind, which only a person may remove.
std::string locked_message(const std::string& target, const std::string& lock) {
  std::string text;
  if (const int fd = ::open(lock.c_str(), O_RDONLY | O_CLOEXEC); fd >= 0) {
    std::array<char, 32> buffer{};
    const ssize_t n = ::read(fd, buffer.data(), buffer.size() - 1);
    ::close(fd);
    text.assign(buffer.data(), n > 0 ? static_cast<std::size_t>(n) : 0);
  }
  pid_t pid = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), pid);
  const bool has_pid = ec == std::errc{} && pid > 0 && (end == text.data() + text.size() || *end == '\n');
  if (!has_pid) {
    return fmt::format("'{}' is locked by another review ({} exists); retry when it is done, or remove the lock if "
                       "no review is running",
                       target, lock);
  }
  if (::kill(pid, 0) == 0 || errno == EPERM) {
    return fmt::format("'{}' is locked by another review (process {}, still running); retry when it is done", target,
                       pid);
  }
  return fmt::format("'{}' is locked by another review (process {}, no longer running on this machine); if no review "
                     "is running elsewhere, remove the lock {} and retry",
                     target, pid, lock);
}

// A killed review can leave its temp file (".<name>.tmp.XXXXXX", see write_file_atomically).
// Only the holder of the lock writes one, so under the lock any such file is a leftover.
void remove_stale_temp_files(const std::string& path) {
  const fs::path target(path);
  const fs::path folder = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  const std::string prefix = "." + target.filename().string() + ".tmp.";
  std::error_code ec;
  for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() == prefix.size() + 6 && name.starts_with(prefix) && it->is_regular_file(ec)) {
      fs::remove(it->path(), ec);
    }
  }
}

// Holds `path`.lock for its lifetime. The lock file records the holder's pid for a person who
// finds a stale one after a crash.
class LockFile {
public:
  static Result<LockFile> acquire(const std::string& target, std::chrono::milliseconds wait) {
    const std::string path = target + ".lock";
    const auto deadline = std::chrono::steady_clock::now() + wait;
    while (true) {
      const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
      if (fd >= 0) {
        const std::string pid = std::to_string(::getpid()) + "\n";
        (void)!::write(fd, pid.data(), pid.size());
        ::close(fd);
        return LockFile(path);
      }
      if (errno != EEXIST) {
        return failure(fmt::format("cannot lock '{}': {}", target, errno_text()));
      }
      if (std::chrono::steady_clock::now() >= deadline) {
        return failure(locked_message(target, path));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  LockFile(LockFile&& other) noexcept : m_path(std::move(other.m_path)) { other.m_path.clear(); }
  LockFile& operator=(LockFile&&) = delete;
  LockFile(const LockFile&) = delete;
  LockFile& operator=(const LockFile&) = delete;
  ~LockFile() {
    if (!m_path.empty()) {
      ::unlink(m_path.c_str());
    }
  }

private:
  explicit LockFile(std::string path) : m_path(std::move(path)) {}
  std::string m_path;
};

} // namespace

Status write_file_atomically(const std::string& path, std::string_view content, Overwrite overwrite) {
  const fs::path target(path);
  const std::string folder = target.parent_path().empty() ? "." : target.parent_path().string();
  std::string temp = (fs::path(folder) / ("." + target.filename().string() + ".tmp.XXXXXX")).string();
  const int fd = ::mkstemp(temp.data());
  if (fd < 0) {
    return failure(fmt::format("cannot write '{}': cannot create a temporary file in {}: {}", path, folder, errno_text()));
  }
  auto abandon = [&](const std::string& why) {
    ::close(fd);
    ::unlink(temp.c_str());
    return failure(fmt::format("cannot write '{}': {}; the original is unchanged", path, why));
  };
  struct stat original {};
  const mode_t mode = ::stat(path.c_str(), &original) == 0 ? (original.st_mode & 07777) : 0644;
  if (::fchmod(fd, mode) != 0) {
    return abandon(errno_text());
  }
  std::size_t written = 0;
  while (written < content.size()) {
    const ssize_t n = ::write(fd, content.data() + written, content.size() - written);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      return abandon(errno_text());
    }
    written += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) {
    return abandon(errno_text());
  }
  if (::close(fd) != 0) {
    ::unlink(temp.c_str());
    return failure(fmt::format("cannot write '{}': {}; the original is unchanged", path, errno_text()));
  }
  if (overwrite == Overwrite::no) {
    // link() fails when `path` exists, so the check and the write are one step.
    const int linked = ::link(temp.c_str(), path.c_str());
    const int error = errno;
    ::unlink(temp.c_str());
    if (linked != 0) {
      return failure(error == EEXIST ? fmt::format("'{}' already exists; it is never overwritten", path)
                                     : fmt::format("cannot write '{}': {}", path, std::strerror(error)));
    }
  } else if (::rename(temp.c_str(), path.c_str()) != 0) {
    const std::string why = errno_text();
    ::unlink(temp.c_str());
    return failure(fmt::format("cannot write '{}': {}; the original is unchanged", path, why));
  }
  // Make the rename itself durable.
  if (const int dir = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dir >= 0) {
    (void)::fsync(dir);
    ::close(dir);
  }
  return Ok{};
}

Result<Matrix> update_matrix_file(const std::string& path, const std::function<Status(Matrix&)>& edit,
                                  const UpdateOptions& options) {
  // A malformed matrix is reported before any lock is taken.
  TPULAUNCH_TRY(Matrix matrix, load_matrix_file(path));
  // rename() would replace a read-only file without complaint (and root passes every access()
  // check), so honour the permission bits explicitly.
  struct stat info {};
  if (::stat(path.c_str(), &info) == 0 && (info.st_mode & 0222) == 0) {
    return failure(fmt::format("cannot write '{}': the file is read-only; the original is unchanged", path));
  }
  TPULAUNCH_TRY(LockFile lock, LockFile::acquire(path, options.lock_wait));
  // Read again under the lock: another review may have landed while we waited.
  TPULAUNCH_TRY(matrix, load_matrix_file(path));
  remove_stale_temp_files(path);
  TPULAUNCH_CHECK(edit(matrix));
  TPULAUNCH_CHECK(write_file_atomically(path, serialize_matrix(matrix)));
  return matrix;
}

Result<Matrix> init_matrix_file(const std::string& path, std::string_view exercises_dir) {
  if (const auto problem = exercises_dir_problem(exercises_dir)) {
    return usage_error(fmt::format("--exercises-dir: {}", *problem));
  }
  // A matrix for a folder that is not there would list no script, and every later command would
  // say so less plainly: the folder comes first.
  const fs::path folder = fs::path(path).parent_path() / std::string(exercises_dir);
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) {
    return usage_error(fmt::format("the exercises folder {} does not exist in {}; create it and put the course's "
                                   "scripts there, or name their folder with --exercises-dir DIR (nothing was written)",
                                   printable(folder.lexically_normal().string()),
                                   printable(fs::current_path(ec).string())));
  }
  Matrix matrix;
  matrix.exercises_dir = std::string(exercises_dir);
  matrix.origin = path;
  matrix.base_dir = fs::path(path).parent_path().string();
  matrix.exercises_location = locate_exercises(matrix);
  // The course files the scripts import are helpers, not scripts: marked from the start, so that
  // check --strict does not ask for a review of each.
  if (auto listing = list_exercises(matrix)) {
    matrix.helpers = imported_course_files(matrix, *listing);
  }
  TPULAUNCH_CHECK(write_file_atomically(path, serialize_matrix(matrix), Overwrite::no));
  return matrix;
}

} // namespace tpulaunch
