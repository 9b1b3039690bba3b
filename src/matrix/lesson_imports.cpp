// Where an import leads below the lesson's root folder: the folder listings that answer (file
// or folder?), and the walk over a dotted module name as Python's import system makes it.
#include "lesson_imports.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <memory>

namespace tpulaunch {
namespace lesson {

std::string join(std::string_view folder, std::string_view name) {
  if (folder.empty()) {
    return std::string(name);
  }
  std::string out(folder);
  out += '/';
  out += name;
  return out;
}

std::string folder_of(std::string_view file) {
  const auto slash = file.rfind('/');
  return slash == std::string_view::npos ? std::string() : std::string(file.substr(0, slash));
}

namespace {

bool has_mode(const std::string& root, std::string_view relative, mode_t type) {
  struct stat info {};
  const std::string path = join(root, relative);
  return ::stat(path.c_str(), &info) == 0 && (info.st_mode & S_IFMT) == type;
}

// What a name is in the folder `path` holds, as Python's path finder looks: a regular package
// (a folder with __init__.py) before a module file, then a folder without one (a namespace
// package). Files found are added to `files`; `path` is left holding the package's folder, or
// the module's path without ".py", or the folder it held when the name is nothing.
enum class Kind : std::uint8_t { none, module_file, package, namespace_package, path_entry };

class ModuleWalk {
public:
  explicit ModuleWalk(const ImportProbe& probe) : m_probe(probe) {}

  Kind find(std::string& path, std::string_view name, std::vector<std::string>& files) const {
    const std::size_t folder_size = path.size();
    if (!path.empty()) {
      path += '/';
    }
    path += name;
    const std::size_t module_size = path.size();
    const bool is_folder = m_probe.is_folder(path);
    if (is_folder) {
      path += "/__init__.py";
      if (m_probe.is_file(path)) {
        files.push_back(path);
        path.resize(module_size);
        return Kind::package;
      }
      path.resize(module_size);
    }
    path += ".py";
    if (m_probe.is_file(path)) {
      files.push_back(path);
      path.resize(module_size);
      return Kind::module_file;
    }
    path.resize(module_size);
    if (is_folder) {
      return Kind::namespace_package; // nothing to stage, but its modules may be
    }
    path.resize(folder_size);
    return Kind::none;
  }

  // Where a module of `level` dots from `importer` starts: the script's folder (sys.path[0]) for
  // an absolute one, the importer's package (one folder up per further dot) for a relative one;
  // nullopt beyond the root. A relative one's package __init__.py goes to `files`.
  std::optional<std::pair<std::string, Kind>> base(std::uint32_t level, std::string_view importer,
                                                   std::string_view script, std::vector<std::string>& files) const {
    if (level == 0) {
      return std::pair{folder_of(script), Kind::path_entry};
    }
    std::string folder = folder_of(importer);
    for (std::uint32_t up = 1; up < level; ++up) {
      if (folder.empty()) {
        return std::nullopt; // beyond the root: not a file of this course
      }
      folder = folder_of(folder);
    }
    const std::string init = join(folder, "__init__.py");
    if (m_probe.is_file(init)) {
      files.push_back(init);
      return std::pair{std::move(folder), Kind::package};
    }
    return std::pair{std::move(folder), Kind::namespace_package};
  }

private:
  const ImportProbe& m_probe;
};

// "common.missing" for the missing part of `module` (its dotted parts, up to and with `part`).
std::string dotted_to(const ImportedModule& module, std::string_view walked, std::string_view part) {
  std::string out(module.level, '.');
  out += walked;
  if (!walked.empty()) {
    out += '.';
  }
  out += part;
  return out;
}

} // namespace

bool FileProbe::is_file(std::string_view relative) const {
  return has_mode(m_root, relative, S_IFREG);
}
bool FileProbe::is_folder(std::string_view relative) const {
  return has_mode(m_root, relative, S_IFDIR);
}

// Only a regular package or a module of the course makes a missing name certain: Python looks in
// the script's folder first, and a regular package's modules are only in its folder. A namespace
// package may have portions elsewhere on sys.path, so a name missing from it is not followed and
// not refused.
ImportResolution resolve_import(const ImportedModule& module, std::string_view importer, std::string_view script,
                                const ImportProbe& probe) {
  ImportResolution out;
  const ModuleWalk walk(probe);
  auto start = walk.base(module.level, importer, script, out.files);
  if (!start) {
    return out;
  }
  std::string path = std::move(start->first);
  Kind current = start->second;
  std::string walked; // the dotted parts found so far
  for (std::string_view dotted = module.module; !dotted.empty();) {
    const auto dot = dotted.find('.');
    const std::string_view part = dotted.substr(0, dot);
    if (current == Kind::module_file) {
      out.missing = MissingModule{dotted_to(module, walked, part), path + ".py", std::string(part), true};
      return out;
    }
    const Kind found = walk.find(path, part, out.files);
    if (found == Kind::none) {
      if (current == Kind::package) {
        out.missing = MissingModule{dotted_to(module, walked, part), path, std::string(part), false};
      }
      return out; // else not a course module (the standard library, an installed package)
    }
    current = found;
    walked += walked.empty() ? "" : ".";
    walked += part;
    dotted = dot == std::string_view::npos ? std::string_view() : dotted.substr(dot + 1);
  }
  if (current != Kind::package && current != Kind::namespace_package) {
    return out; // `from module import name` takes a name from the module
  }
  // `from package import name`: the name may be a submodule, or a name its __init__.py defines.
  for (const auto& name : module.names) {
    std::string inner = path;
    if (walk.find(inner, name, out.files) == Kind::none && current == Kind::package && name != "*") {
      out.must_define.push_back(NameInPackage{join(path, "__init__.py"), name, dotted_to(module, "", walked)});
    }
  }
  return out;
}

std::optional<std::string> module_file(std::uint32_t level, std::string_view dotted, std::string_view importer,
                                       std::string_view script, const ImportProbe& probe) {
  std::vector<std::string> files;
  const ModuleWalk walk(probe);
  auto start = walk.base(level, importer, script, files);
  if (!start) {
    return std::nullopt;
  }
  std::string path = std::move(start->first);
  Kind current = start->second;
  while (!dotted.empty()) {
    if (current == Kind::module_file) {
      return std::nullopt;
    }
    const auto dot = dotted.find('.');
    current = walk.find(path, dotted.substr(0, dot), files);
    if (current == Kind::none) {
      return std::nullopt;
    }
    dotted = dot == std::string_view::npos ? std::string_view() : dotted.substr(dot + 1);
  }
  switch (current) {
  case Kind::module_file:
    return path + ".py";
  case Kind::package:
    return join(path, "__init__.py");
  default:
    return std::nullopt;
  }
}

} // namespace lesson

ListedFolders::ListedFolders(std::string root) : m_root(std::move(root)), m_top(list("")) {}

bool ListedFolders::is_file(std::string_view relative) const {
  return is(relative, Kind::file);
}
bool ListedFolders::is_folder(std::string_view relative) const {
  return is(relative, Kind::folder);
}

// The regular files and folders in `folder` (below the root), symlinks followed; an unreadable or
// missing folder lists nothing.
ListedFolders::Listing ListedFolders::list(const std::string& folder) const {
  Listing made;
  const std::string path = folder.empty() ? (m_root.empty() ? "." : m_root) : lesson::join(m_root, folder);
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

std::vector<std::string> import_targets(const ImportedModule& module, std::string_view importer,
                                        std::string_view script, const ImportProbe& probe) {
  return lesson::resolve_import(module, importer, script, probe).files;
}

} // namespace tpulaunch
