#include "tpulaunch/util/text_file.hpp"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace tpulaunch {

namespace {

Error cannot_read(std::string_view what, const std::string& path, std::string_view why) {
  return config_error(fmt::format("cannot read {} '{}': {}", what, printable(path), why));
}

// Reads the open regular file `fd` (of `size` bytes by fstat) whole, then closes it. Room is made
// for one byte more than fstat said: a read that returns exactly that size, short of the room
// asked for, has reached the end, so the usual file takes one read and no second read to find its
// end. (Any other short read reads on.)
Result<std::string> read_open_file(int fd, std::size_t size, const std::string& path, std::string_view what,
                                   std::size_t max_bytes) {
  std::string content;
  content.resize(size + 1);
  std::size_t used = 0;
  while (true) {
    if (used == content.size()) {
      if (used >= max_bytes) {
        ::close(fd);
        return cannot_read(what, path, fmt::format("more than the {} bytes it may have", max_bytes));
      }
      content.resize(content.size() + 4096); // the file grew since fstat
    }
    const ssize_t n = ::read(fd, content.data() + used, content.size() - used);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      return cannot_read(what, path, why);
    }
    if (n == 0) {
      break;
    }
    used += static_cast<std::size_t>(n);
    if (used == size && used < content.size()) {
      break;
    }
  }
  ::close(fd);
  content.resize(used);
  spdlog::debug("read {} '{}' ({} bytes)", what, printable(path), used);
  return content;
}

std::size_t file_size(const struct stat& info) {
  return info.st_size > 0 ? static_cast<std::size_t>(info.st_size) : 0;
}

} // namespace

Result<std::string> read_text_file(const std::string& path, std::string_view what, std::size_t max_bytes) {
  // One open, one fstat and reads straight into the string.
  // O_NONBLOCK keeps open() of a FIFO from waiting for a writer; it is refused below.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    return cannot_read(what, path, std::strerror(errno));
  }
  struct stat info {};
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    const std::string_view why = S_ISDIR(info.st_mode) ? "is a directory" : "not a regular file";
    ::close(fd);
    return cannot_read(what, path, why);
  }
  if (file_size(info) > max_bytes) {
    ::close(fd);
    return cannot_read(what, path, fmt::format("{} bytes, more than the {} it may have", info.st_size, max_bytes));
  }
  return read_open_file(fd, file_size(info), path, what, max_bytes);
}

Result<FileContent> read_file_nofollow(const std::string& path, std::string_view what, std::size_t max_bytes) {
  FileContent file;
  // O_NOFOLLOW: a symlink at the last component is not opened but reported (ELOOP), for the
  // caller to resolve; O_NONBLOCK: a FIFO is opened without waiting for a writer, then refused.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
  if (fd < 0) {
    switch (errno) {
    case ENOENT:
    case ENOTDIR:
      file.kind = FileKind::missing;
      return file;
    case ELOOP:
      file.kind = FileKind::symlink;
      return file;
    case ENXIO:
      file.kind = FileKind::other;
      return file; // a socket
    default:
      return cannot_read(what, path, std::strerror(errno));
    }
  }
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    return cannot_read(what, path, why);
  }
  file.size = file_size(info);
  if (!S_ISREG(info.st_mode) || file.size > max_bytes) {
    file.kind = S_ISREG(info.st_mode) ? FileKind::regular : FileKind::other;
    ::close(fd);
    return file;
  }
  file.kind = FileKind::regular;
  TPULAUNCH_TRY(file.text, read_open_file(fd, file.size, path, what, max_bytes));
  return file;
}

} // namespace tpulaunch
