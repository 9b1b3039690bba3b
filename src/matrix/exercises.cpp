#include "tpulaunch/matrix/exercises.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <set>

#include <fmt/format.h>

#include "tpulaunch/util/spelling.hpp"
#include "tpulaunch/util/text_file.hpp"
#include "tpulaunch/util/utf8.hpp"
#include "tpulaunch/values/validate.hpp"

namespace tpulaunch {
namespace {

namespace fs = std::filesystem;

bool inside(const fs::path& path, const fs::path& folder) {
  const auto relative = path.lexically_relative(folder);
  return !relative.empty() && *relative.begin() != "..";
}

std::string shown(const std::string& folder) { return folder.empty() ? "." : folder; }

} // namespace

std::filesystem::path real_path(const std::filesystem::path& path) {
  const fs::path target = path.empty() ? fs::path(".") : path;
  // An existing path: one realpath(3) call (std::filesystem's canonical forms walk the path a
  // component at a time, several times the work for every plan).
  if (std::unique_ptr<char, decltype(&std::free)> real{::realpath(target.c_str(), nullptr), &std::free}) {
    return fs::path(real.get());
  }
  std::error_code ec;
  auto real = fs::weakly_canonical(fs::absolute(target), ec);
  return ec ? fs::absolute(target).lexically_normal() : real.lexically_normal();
}

ExercisesLocation locate_exercises(const Matrix& matrix) {
  const fs::path course = real_path(matrix.base_dir);
  const fs::path exercises = real_path(matrix.exercises_path());
  if (inside(exercises, course) || exercises == course) {
    return ExercisesLocation{exercises.string(), ""};
  }
  return ExercisesLocation{"", fmt::format("{}: \"exercises_dir\" '{}' leads outside the course folder {} (to {})",
                                           matrix.origin, printable(matrix.exercises_dir), shown(matrix.base_dir),
                                           printable(exercises.string()))};
}

Result<std::string> real_exercises(const Matrix& matrix) {
  ExercisesLocation location = matrix.exercises_location ? *matrix.exercises_location : locate_exercises(matrix);
  if (!location.error.empty()) {
    return config_error(std::move(location.error));
  }
  return std::move(location.real);
}

Status exercises_inside_course(const Matrix& matrix) {
  TPULAUNCH_CHECK(real_exercises(matrix));
  return Ok{};
}

Status script_inside_exercises(const Matrix& matrix, std::string_view id, const std::string& path) {
  TPULAUNCH_TRY(const std::string folder, real_exercises(matrix));
  if (!inside(real_path(path), fs::path(folder))) {
    return config_error(fmt::format("script '{}': {} leads outside the exercises folder {}", printable(id), path,
                                    shown(matrix.exercises_path())));
  }
  return Ok{};
}

namespace {

// Walks the exercises folder with readdir(3) and the type each entry comes with: a course of
// 10,000 scripts is listed before any is read, so this is time nothing else overlaps.
class FolderWalk {
public:
  FolderWalk(const Matrix& matrix, std::string root, ExerciseListing& out)
      : m_matrix(matrix), m_root(std::move(root)), m_out(out) {}

  // Lists the root folder and every real subfolder of it.
  Status run() {
    const int fd = ::open(m_root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    return fd < 0 ? unreadable(errno) : list(fd, "");
  }

private:
  // Lists the open folder `fd` (closing it), whose path below the root is `relative` ("" for the
  // root, else ending in '/'), and every real subfolder of it.
  Status list(int fd, const std::string& relative) {
    DIR* const dir = ::fdopendir(fd);
    if (dir == nullptr) {
      const int error = errno;
      ::close(fd);
      return unreadable(error);
    }
    const std::unique_ptr<DIR, int (*)(DIR*)> closer(dir, &::closedir);
    std::string path = relative;
    for (;;) {
      errno = 0;
      const dirent* const entry = ::readdir(dir);
      if (entry == nullptr) {
        return errno == 0 ? Status{Ok{}} : unreadable(errno);
      }
      const std::string_view name = entry->d_name;
      if (name == "." || name == "..") {
        continue;
      }
      path.resize(relative.size());
      path += name;
      TPULAUNCH_CHECK(add(dir, entry, path));
    }
  }

  Status add(DIR* dir, const dirent* entry, const std::string& path) {
    const std::string_view name = entry->d_name;
    unsigned char type = entry->d_type;
    struct stat info {};
    if (type == DT_UNKNOWN && ::fstatat(::dirfd(dir), entry->d_name, &info, AT_SYMLINK_NOFOLLOW) == 0) {
      type = static_cast<unsigned char>(IFTODT(info.st_mode)); // a file system that does not say
    }
    if (type == DT_LNK && ::fstatat(::dirfd(dir), entry->d_name, &info, 0) == 0 && S_ISDIR(info.st_mode)) {
      m_out.linked_folders.push_back(shown_path(path)); // never followed: it may lead anywhere
      return Ok{};
    }
    if (type == DT_DIR) {
      if (!validate_value(ValueKind::script_id, path).ok()) {
        m_out.invalid_names.push_back(shown_path(path)); // no script in it could ever be reviewed
        return Ok{};
      }
      const int sub = ::openat(::dirfd(dir), entry->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (sub < 0) {
        return unreadable(errno);
      }
      return list(sub, path + "/");
    }
    // Any other entry named *.py (a file, a symlink to one, a dangling symlink) is a script; its
    // reader decides what it is. ".py" alone is a hidden file's name, not a script's.
    if (name.size() <= 3 || !name.ends_with(".py")) {
      return Ok{};
    }
    const std::string_view id = std::string_view(path).substr(0, path.size() - 3);
    if (m_matrix.is_helper(path)) {
      m_out.helpers.push_back(path); // a module scripts import: staged with them, never run alone
    } else if (validate_value(ValueKind::script_id, id).ok()) {
      m_out.ids.emplace_back(id);
    } else {
      m_out.invalid_names.push_back(shown_path(path));
    }
    return Ok{};
  }

  [[nodiscard]] std::string shown_path(const std::string& relative) const {
    return (fs::path(m_root) / relative).string();
  }

  [[nodiscard]] Status unreadable(int error) const {
    return config_error(fmt::format("cannot read the exercises folder '{}' named by {}: {}", m_root, m_matrix.origin,
                                    std::strerror(error)));
  }

  const Matrix& m_matrix;
  std::string m_root;
  ExerciseListing& m_out;
};

} // namespace

Result<ExerciseListing> list_exercises(const Matrix& matrix) {
  TPULAUNCH_CHECK(exercises_inside_course(matrix));
  ExerciseListing listing;
  TPULAUNCH_CHECK(FolderWalk(matrix, shown(matrix.exercises_path()), listing).run());
  std::sort(listing.ids.begin(), listing.ids.end());
  std::sort(listing.invalid_names.begin(), listing.invalid_names.end());
  std::sort(listing.linked_folders.begin(), listing.linked_folders.end());
  std::sort(listing.helpers.begin(), listing.helpers.end());
  return listing;
}

std::vector<std::string> imported_course_files(const Matrix& matrix, const ExerciseListing& listing) {
  std::set<std::string> found;
  const ListedFolders folders(matrix.exercises_path()); // each folder listed once for every script
  for (const auto& id : listing.ids) {
    ScriptStatus status;
    status.id = id;
    status.path = matrix.script_path(id);
    auto source = read_text_file(status.path, "script", k_max_script_bytes);
    if (!source || !check_utf8_text(*source, status.path, "script").ok()) {
      continue;
    }
    status.source = std::move(*source);
    if (auto lesson = read_lesson(matrix, status, &folders)) {
      for (const auto& file : lesson->files) {
        found.insert(file.course_path);
      }
    }
  }
  return {found.begin(), found.end()};
}

namespace {

// Adds the .py entries of `folder` and of every real folder below it to `out`; a folder that
// cannot be read is an error of its own, and the walk goes on past it.
void add_python_files(const fs::path& folder, PythonFiles& out) {
  std::error_code ec;
  fs::directory_iterator it(folder, ec);
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    // Hidden entries (.venv, .ipynb_checkpoints, .drafts) hold no script of the course.
    if (name.starts_with('.')) {
      continue;
    }
    std::error_code type_ec;
    if (it->symlink_status(type_ec).type() == fs::file_type::directory) {
      add_python_files(it->path(), out); // a symlink to a folder is not followed
    } else if (name.size() > 3 && name.ends_with(".py")) {
      // Any other entry of that name (a FIFO, a socket, a dangling symlink) is meant as a script:
      // its reader says what it is, as check does, rather than pass over it in silence.
      out.files.push_back(it->path().lexically_normal().generic_string());
    }
  }
  if (ec) {
    out.unreadable.push_back(
        config_error(fmt::format("cannot read folder '{}': {}", printable(folder.string()), ec.message())));
  }
}

} // namespace

Result<PythonFiles> python_files_below(const std::string& folder) {
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) {
    return config_error(
        fmt::format("cannot read folder '{}': {}", printable(folder), ec ? ec.message() : std::string("not a folder")));
  }
  PythonFiles found;
  add_python_files(folder, found);
  std::sort(found.files.begin(), found.files.end());
  if (found.files.empty() && found.unreadable.empty()) {
    return usage_error(fmt::format("no .py file in the folder '{}' or in any folder below it", printable(folder)));
  }
  return found;
}

bool is_nested_script_id(std::string_view id) { return id.find('/') != std::string_view::npos; }

StagedScript staged_script(std::string_view id) {
  StagedScript staged;
  staged.file = std::string(id) + ".py";
  const auto slash = id.rfind('/');
  staged.folder = slash == std::string_view::npos ? std::string() : std::string(id.substr(0, slash + 1));
  staged.name = std::string(id.substr(staged.folder.size()));
  return staged;
}

Status check_known_script(const Matrix& matrix, std::string_view id) {
  std::error_code ec;
  if (matrix.find(id) != nullptr || fs::exists(fs::symlink_status(matrix.script_path(id), ec))) {
    return Ok{};
  }
  std::vector<std::string> candidates;
  for (const auto& [known, entry] : matrix.scripts) {
    candidates.push_back(known);
  }
  if (auto listing = list_exercises(matrix)) {
    for (auto& known : listing->ids) {
      if (matrix.find(known) == nullptr) {
        candidates.push_back(std::move(known));
      }
    }
  }
  return usage_error(fmt::format("no script '{}' in {} or in {}{}", printable(id), matrix.origin,
                                 shown(matrix.exercises_path()), did_you_mean(nearest_matches(id, candidates))));
}

} // namespace tpulaunch
