#pragma once
// A private folder under the system's temporary folder (mkdtemp), removed with everything in it
// when the object goes; shared by the tests that need files of their own.
#include <stdlib.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>

namespace tpulaunch::test_support {

class TempFolder {
public:
  explicit TempFolder(std::string_view name) {
    std::string pattern =
        (std::filesystem::temp_directory_path() / ("tpulaunch-" + std::string(name) + ".XXXXXX")).string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      throw std::runtime_error("mkdtemp failed for " + pattern);
    }
    m_path = pattern;
  }
  ~TempFolder() {
    std::error_code ec;
    std::filesystem::remove_all(m_path, ec);
  }
  TempFolder(const TempFolder&) = delete;
  TempFolder& operator=(const TempFolder&) = delete;

  [[nodiscard]] const std::filesystem::path& path() const { return m_path; }

private:
  std::filesystem::path m_path;
};

} // namespace tpulaunch::test_support
