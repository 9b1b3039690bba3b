#include "tpulaunch/text_file.hpp"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace tpulaunch {

Result<std::string> read_text_file(const std::string& path, std::string_view what, std::size_t max_bytes) {
  // One open, one fstat and reads straight into the string: `check` reads thousands of files.
  // O_NONBLOCK keeps open() of a FIFO from waiting for a writer; it is refused below.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    return config_error(fmt::format("cannot read {} '{}': {}", what, printable(path), std::strerror(errno)));
  }
  struct stat info {};
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    const std::string why = S_ISDIR(info.st_mode) ? "is a directory" : "not a regular file";
    ::close(fd);
    return config_error(fmt::format("cannot read {} '{}': {}", what, printable(path), why));
  }
  if (static_cast<std::uintmax_t>(info.st_size) > max_bytes) {
    ::close(fd);
    return config_error(fmt::format("cannot read {} '{}': {} bytes, more than the {} it may have", what,
                                    printable(path), info.st_size, max_bytes));
  }
  // Room for one byte more than fstat said: a read that returns exactly the size fstat gave, short
  // of the room asked for, has reached the end, so the usual file takes one read and no second
  // read to find its end. (Any other short read reads on.)
  const std::size_t expected = info.st_size > 0 ? static_cast<std::size_t>(info.st_size) : 0;
  std::string content;
  content.resize(expected + 1);
  std::size_t used = 0;
  while (true) {
    if (used == content.size()) {
      if (used >= max_bytes) {
        ::close(fd);
        return config_error(fmt::format("cannot read {} '{}': more than the {} bytes it may have", what,
                                        printable(path), max_bytes));
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
      return config_error(fmt::format("cannot read {} '{}': {}", what, printable(path), why));
    }
    if (n == 0) {
      break;
    }
    used += static_cast<std::size_t>(n);
    if (used == expected && used < content.size()) {
      break;
    }
  }
  ::close(fd);
  content.resize(used);
  spdlog::debug("read {} '{}' ({} bytes)", what, printable(path), used);
  return content;
}

} // namespace tpulaunch
