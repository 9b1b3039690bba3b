// The lesson reader: a script's imports followed to the course's own files, breadth first.
#include "tpulaunch/matrix/lesson.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "tpulaunch/matrix/exercises.hpp"
#include "tpulaunch/util/sha256.hpp"
#include "tpulaunch/util/text_file.hpp"
#include "tpulaunch/util/utf8.hpp"

namespace tpulaunch {
namespace {

namespace fs = std::filesystem;

// "a/b" + "c" with '/' ("" is the root itself).
std::string join(std::string_view folder, std::string_view name) {
  if (folder.empty()) {
    return std::string(name);
  }
  std::string out(folder);
  out += '/';
  out += name;
  return out;
}

// The folder of a root-relative file ("" for one at the top).
std::string folder_of(std::string_view file) {
  const auto slash = file.rfind('/');
  return slash == std::string_view::npos ? std::string() : std::string(file.substr(0, slash));
}

bool inside(const fs::path& path, const fs::path& folder) {
  const auto relative = path.lexically_relative(folder);
  return !relative.empty() && *relative.begin() != "..";
}

// Answers for paths below a real folder, following symlinks as Python's import does.
class FileProbe final : public ImportProbe {
public:
  explicit FileProbe(std::string root) : m_root(std::move(root)) {}
  [[nodiscard]] bool is_file(std::string_view relative) const override { return mode(relative, S_IFREG); }
  [[nodiscard]] bool is_folder(std::string_view relative) const override { return mode(relative, S_IFDIR); }

private:
  [[nodiscard]] bool mode(std::string_view relative, mode_t type) const {
    struct stat info {};
    const std::string path = join(m_root, relative);
    return ::stat(path.c_str(), &info) == 0 && (info.st_mode & S_IFMT) == type;
  }
  std::string m_root;
};

} // namespace

ListedFolders::ListedFolders(std::string root) : m_root(std::move(root)), m_top(list("")) {}

bool ListedFolders::is_file(std::string_view relative) const { return is(relative, Kind::file); }
bool ListedFolders::is_folder(std::string_view relative) const { return is(relative, Kind::folder); }

// The regular files and folders in `folder` (below the root), symlinks followed; an unreadable or
// missing folder lists nothing.
ListedFolders::Listing ListedFolders::list(const std::string& folder) const {
  Listing made;
  const std::string path = folder.empty() ? (m_root.empty() ? "." : m_root) : join(m_root, folder);
  if (DIR* dir = ::opendir(path.c_str())) {
    const std::unique_ptr<DIR, int (*)(DIR*)> closer(dir, &::closedir);
    while (const dirent* entry = ::readdir(dir)) {
      unsigned char type = entry->d_type;
      struct stat info {};
      if ((type == DT_LNK || type == DT_UNKNOWN) && ::fstatat(::dirfd(dir), entry->d_name, &info, 0) == 0) {
        type = S_ISREG(info.st_mode) ? DT_REG : S_ISDIR(info.st_mode) ? DT_DIR : DT_UNKNOWN; // followed
      }
      if (type == DT_REG || type == DT_DIR) {
        const std::string_view name = entry->d_name;
        made.filter.set(filter_bit(name));
        made.names.emplace(name, type == DT_REG ? Kind::file : Kind::folder);
      }
    }
  }
  return made;
}

bool ListedFolders::is(std::string_view relative, Kind kind) const {
  const auto slash = relative.rfind('/');
  const Listing* listing = &m_top;
  if (slash != std::string_view::npos) {
    const std::string folder(relative.substr(0, slash));
    const std::lock_guard<std::mutex> lock(m_mutex);
    auto it = m_folders.find(folder);
    if (it == m_folders.end()) {
      it = m_folders.emplace(folder, list(folder)).first;
    }
    listing = &it->second; // elements of an unordered_map stay where they are as others are added
    relative.remove_prefix(slash + 1);
  }
  if (relative.empty() || !listing->filter.test(filter_bit(relative))) {
    return false;
  }
  const auto found = listing->names.find(relative);
  return found != listing->names.end() && found->second == kind;
}

std::size_t ListedFolders::filter_bit(std::string_view name) {
  const auto first = static_cast<unsigned char>(name.front());
  const auto last = static_cast<unsigned char>(name.back());
  return (name.size() * 131U + first * 31U + last) & 4095U;
}

std::vector<std::string> import_targets(const ImportedModule& module, std::string_view importer, std::string_view script,
                                        const ImportProbe& probe) {
  std::vector<std::string> out;
  // A regular package's __init__.py, else the module's own file. Python looks for a package
  // folder first, then a module file, then takes a folder with no __init__.py as a namespace package.
  // `path` holds the folder looked in; on a package it is left holding the package's folder.
  // Most names are no file of the course (jax, numpy): one buffer, no allocation for them.
  enum class Found { none, module_file, package };
  std::string path;
  const auto find = [&](std::string_view name) {
    const std::size_t folder_size = path.size();
    if (!path.empty()) {
      path += '/';
    }
    path += name;
    const std::size_t module_size = path.size();
    const bool is_folder = probe.is_folder(path);
    if (is_folder) {
      path += "/__init__.py";
      if (probe.is_file(path)) {
        out.push_back(path);
        path.resize(module_size);
        return Found::package;
      }
      path.resize(module_size);
    }
    path += ".py";
    if (probe.is_file(path)) {
      out.push_back(path);
      path.resize(folder_size);
      return Found::module_file;
    }
    path.resize(module_size);
    if (is_folder) {
      return Found::package; // a namespace package: nothing to stage, but its modules may be
    }
    path.resize(folder_size);
    return Found::none;
  };

  std::string base;
  if (module.level == 0) {
    base = folder_of(script); // sys.path[0]: the folder of the script Python was started with
  } else {
    base = folder_of(importer); // `.` is the importer's package, each further dot one folder up
    for (std::uint32_t up = 1; up < module.level; ++up) {
      if (base.empty()) {
        return out; // beyond the root: not a file of this course
      }
      base = folder_of(base);
    }
    if (probe.is_file(join(base, "__init__.py"))) {
      out.push_back(join(base, "__init__.py"));
    }
  }
  path = std::move(base);
  for (std::string_view dotted = module.module; !dotted.empty();) {
    const auto dot = dotted.find('.');
    switch (find(dotted.substr(0, dot))) {
    case Found::none:
      return out; // not a course module (the standard library, an installed package)
    case Found::module_file:
      return out; // a module has no submodules, and `from m import name` takes a name from it
    case Found::package:
      break;
    }
    dotted = dot == std::string_view::npos ? std::string_view() : dotted.substr(dot + 1);
  }
  // `from package import name`: the name may be a submodule.
  const std::size_t package_size = path.size();
  for (const auto& name : module.names) {
    (void)find(name);
    path.resize(package_size);
  }
  return out;
}

std::string evidence_path(std::string_view script_path, const Evidence& evidence) {
  if (evidence.file.empty()) {
    return std::string(script_path);
  }
  return (fs::path(std::string(script_path)).parent_path() / evidence.file).lexically_normal().generic_string();
}

namespace {

class LessonReader {
public:
  explicit LessonReader(const LessonRequest& request)
      : m_request(request), m_file_probe(request.root),
        m_probe(request.probe != nullptr ? *request.probe : static_cast<const ImportProbe&>(m_file_probe)),
        m_real_root(request.real_root.empty() ? real_path(request.root) : fs::path(request.real_root)),
        m_script_folder(folder_of(request.script)) {}

  Result<Lesson> run() {
    Lesson lesson;
    lesson.classification = scan_source(m_request.source);
    TPULAUNCH_CHECK(follow(lesson.classification.imports, m_request.script));
    for (const auto& file : m_request.declared) {
      TPULAUNCH_CHECK(add(file, true));
    }
    while (!m_queue.empty()) {
      const std::string staged = std::move(m_queue.front());
      m_queue.pop_front();
      TPULAUNCH_CHECK(read(m_files.at(staged), lesson.classification));
    }
    suggest_class(lesson.classification);
    for (auto& entry : m_files) {
      lesson.files.push_back(std::move(entry.second)); // sorted by `staged`, as the map is
    }
    return lesson;
  }

private:
  Status follow(const std::vector<ImportedModule>& imports, const std::string& importer) {
    for (const auto& module : imports) {
      for (const auto& target : import_targets(module, importer, m_request.script, m_probe)) {
        TPULAUNCH_CHECK(add(target, false));
      }
    }
    return Ok{};
  }

  [[nodiscard]] std::string local_path(const std::string& staged) const {
    return m_request.root.empty() ? staged : (fs::path(m_request.root) / staged).string();
  }

  // Queues `staged` (relative to the root) once; the script itself is never one of its files.
  Status add(const std::string& staged, bool declared) {
    if (staged == m_request.script) {
      return Ok{};
    }
    if (auto it = m_files.find(staged); it != m_files.end()) {
      it->second.declared = it->second.declared || declared;
      return Ok{};
    }
    if (m_files.size() >= k_max_lesson_files) {
      return config_error(fmt::format("{} brings more than {} course files with it (the limit), the last {}",
                                      m_request.what, k_max_lesson_files, local_path(staged)));
    }
    LessonFile file;
    file.staged = staged;
    file.course_path = m_request.course_prefix.empty()
                           ? staged
                           : (fs::path(m_request.course_prefix) / staged).lexically_normal().generic_string();
    file.path = local_path(staged);
    file.declared = declared;
    struct stat info {};
    if (::lstat(file.path.c_str(), &info) != 0) {
      m_files.emplace(staged, std::move(file)); // a declared file that is missing: listed, no digest
      return Ok{};
    }
    if (!inside(real_path(file.path), m_real_root)) {
      return config_error(fmt::format("{}: {} leads outside the folder {}", m_request.what, file.path,
                                      m_request.root.empty() ? "." : m_request.root));
    }
    m_files.emplace(staged, std::move(file));
    m_queue.push_back(staged);
    return Ok{};
  }

  Status read(LessonFile& file, Classification& into) {
    const bool python = file.staged.ends_with(".py");
    TPULAUNCH_TRY(const std::string text,
                  read_text_file(file.path, fmt::format("course file of {}", m_request.what),
                                 python ? k_max_script_bytes : k_max_input_bytes));
    file.sha256 = sha256_hex(text);
    if (!python) {
      return Ok{}; // a declared data file: staged and pinned, not Python to read
    }
    TPULAUNCH_CHECK(check_utf8_text(text, file.path, fmt::format("course file of {}", m_request.what)));
    Classification scanned = scan_source(text);
    const std::string from_script =
        m_script_folder.empty() ? file.staged : fs::path(file.staged).lexically_relative(m_script_folder).generic_string();
    for (auto& row : scanned.evidence) {
      row.file = from_script;
      into.evidence.push_back(std::move(row));
    }
    spdlog::debug("lesson of {}: {} ({} evidence rows)", m_request.what, file.path, scanned.evidence.size());
    return follow(scanned.imports, file.staged);
  }

  const LessonRequest& m_request;
  FileProbe m_file_probe;
  const ImportProbe& m_probe;
  fs::path m_real_root;
  std::string m_script_folder;
  std::map<std::string, LessonFile> m_files; // by `staged`: sorted, and each file once
  std::deque<std::string> m_queue;           // read in the order found
};

} // namespace

Result<Lesson> read_lesson(const LessonRequest& request) { return LessonReader(request).run(); }

} // namespace tpulaunch
