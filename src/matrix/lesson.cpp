// The lesson reader: a script's imports followed to the course's own files, breadth first, with
// the modules and files calls load by a literal name or path; values those files bind for the
// script (a platform imported from common/cfg.py); and, at the end, which rows are in functions
// nothing calls (lesson_calls.hpp). Where an import leads is lesson_imports.cpp's.
#include "tpulaunch/matrix/lesson.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <deque>
#include <filesystem>
#include <map>
#include <set>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "lesson_calls.hpp"
#include "lesson_imports.hpp"
#include "tpulaunch/matrix/exercises.hpp"
#include "tpulaunch/util/sha256.hpp"
#include "tpulaunch/util/text_file.hpp"
#include "tpulaunch/util/utf8.hpp"

namespace tpulaunch {
namespace {

namespace fs = std::filesystem;
using lesson::folder_of;

bool inside(const fs::path& path, const fs::path& folder) {
  const auto relative = path.lexically_relative(folder);
  return !relative.empty() && *relative.begin() != "..";
}

// Imported constants are followed through at most this many files (a re-export of a re-export...).
constexpr int k_max_constant_hops = 8;

} // namespace

std::string evidence_path(std::string_view script_path, const Evidence& evidence) {
  if (evidence.file.empty()) {
    return std::string(script_path);
  }
  return (fs::path(std::string(script_path)).parent_path() / evidence.file).lexically_normal().generic_string();
}

namespace {

// `from package import name` of `importer` at `line`: the package's __init__.py must define it.
struct DefinedName {
  lesson::NameInPackage name;
  std::string importer;
  std::uint32_t line = 0;
};

class LessonReader {
public:
  explicit LessonReader(const LessonRequest& request)
      : m_request(request), m_file_probe(request.root),
        m_probe(request.probe != nullptr ? *request.probe : static_cast<const ImportProbe&>(m_file_probe)),
        m_real_root(request.real_root.empty() ? real_path(request.root) : fs::path(request.real_root)),
        m_script_folder(folder_of(request.script)) {}

  Result<Lesson> run() {
    Lesson lesson;
    lesson.classification = scan_source(m_request.source, lookup_from(m_request.script));
    TPULAUNCH_CHECK(follow(lesson.classification, m_request.script));
    for (const auto& file : m_request.declared) {
      TPULAUNCH_CHECK(add(file, true));
      if (file.ends_with(".py")) {
        m_modules.modules[file].open = true; // loaded by means no import shows
      }
    }
    while (!m_queue.empty()) {
      const std::string staged = std::move(m_queue.front());
      m_queue.pop_front();
      TPULAUNCH_CHECK(read(m_files.at(staged), lesson.classification));
    }
    TPULAUNCH_CHECK(check_defined_names());
    m_modules.script = m_request.script;
    m_modules.script_text = m_request.source;
    m_modules.probe = &m_probe;
    lesson::mark_uncalled(lesson.classification, m_modules);
    suggest_class(lesson.classification);
    for (auto& entry : m_files) {
      lesson.files.push_back(std::move(entry.second)); // sorted by `staged`, as the map is
    }
    return lesson;
  }

private:
  // The lookup the scanner asks for values `importer` imports from course modules.
  ConstantLookup lookup_from(const std::string& importer) {
    return [this, importer](const ImportedModule& module, std::string_view name) {
      return constant(module, name, importer, 0);
    };
  }

  // What `name` is in the course module `module` of `importer` (nullopt: no file of the course).
  std::optional<ImportedConstant> constant(const ImportedModule& module, std::string_view name,
                                           const std::string& importer, int hops) {
    const auto file = lesson::module_file(module.level, module.module, importer, m_request.script, m_probe);
    if (!file || *file == m_request.script) {
      return std::nullopt;
    }
    const std::string shown = from_script(*file);
    if (!inside(real_path(local_path(*file)), m_real_root)) {
      return ImportedConstant{std::nullopt, shown, "the file leads outside the lesson's folder"};
    }
    const auto text = text_of(*file);
    if (!text) {
      return ImportedConstant{std::nullopt, shown, "the file cannot be read"};
    }
    const ModuleConstant found = module_constant(**text, name);
    if (found.value) {
      return ImportedConstant{found.value, fmt::format("{} line {}", shown, found.line), {}};
    }
    if (found.from && hops < k_max_constant_hops) {
      if (auto next = constant(*found.from, found.from->names.front(), *file, hops + 1)) {
        return next;
      }
      return ImportedConstant{std::nullopt, shown, found.why_unknown + ", a module that is no file of the course"};
    }
    return ImportedConstant{std::nullopt, shown, found.why_unknown};
  }

  // `file` (staged) as rows and notes name it: relative to the script's folder.
  [[nodiscard]] std::string from_script(const std::string& staged) const {
    return m_script_folder.empty() ? staged : fs::path(staged).lexically_relative(m_script_folder).generic_string();
  }

  // Follows what `scanned` (of `importer`) imports and loads; the import-unresolved row of a load
  // that names a course file goes, as it is now followed.
  Status follow(Classification& scanned, const std::string& importer) {
    for (const auto& module : scanned.imports) {
      auto resolution = lesson::resolve_import(module, importer, m_request.script, m_probe);
      if (resolution.missing) {
        return missing_module(*resolution.missing, importer, module.line);
      }
      for (auto& name : resolution.must_define) {
        m_defined.push_back(DefinedName{std::move(name), importer, module.line});
      }
      for (const auto& target : resolution.files) {
        TPULAUNCH_CHECK(add(target, false));
        if (target == m_request.script) {
          continue;
        }
        lesson::CourseModule& course = m_modules.modules[target];
        if (module.call.empty()) {
          course.importers.insert(importer);
        } else {
          course.open = true; // the call hands its module object to anything
        }
      }
    }
    return follow_loads(scanned, importer);
  }

  // The course files a loaded path may name: from the loading file's folder, or (a path relative
  // to the working folder) from the root, where a worker runs the program, and from the script's
  // folder, where a person may; a folder stands for its __main__.py (runpy.run_path).
  [[nodiscard]] std::vector<std::string> loaded_candidates(const LoadedFile& loaded,
                                                           const std::string& importer) const {
    std::vector<std::string> found;
    if (loaded.path.empty() ? !loaded.from_file_folder : fs::path(loaded.path).is_absolute()) {
      return found;
    }
    std::vector<std::string> bases{loaded.from_file_folder ? folder_of(importer) : std::string()};
    if (!loaded.from_file_folder && !m_script_folder.empty()) {
      bases.push_back(m_script_folder);
    }
    for (const auto& base : bases) {
      std::string path = (fs::path(base) / loaded.path).lexically_normal().generic_string();
      while (path.ends_with('/')) {
        path.pop_back();
      }
      if (path.empty() || path == "." || path.starts_with("../") || path == "..") {
        continue; // the root itself, or above it
      }
      if (!m_probe.is_file(path) && m_probe.is_folder(path)) {
        path += "/__main__.py";
      }
      if (m_probe.is_file(path) && std::find(found.begin(), found.end(), path) == found.end()) {
        found.push_back(std::move(path));
      }
    }
    return found;
  }

  Status follow_loads(Classification& scanned, const std::string& importer) {
    std::vector<std::pair<std::uint32_t, std::uint32_t>> followed; // rows whose every load was found
    std::vector<std::pair<std::uint32_t, std::uint32_t>> missed;
    for (const LoadedFile& loaded : scanned.loaded_files) {
      const auto files = loaded_candidates(loaded, importer);
      const std::pair at{loaded.line, loaded.column};
      (files.empty() ? missed : followed).push_back(at);
      for (const auto& file : files) {
        m_loaded_python.insert(file); // Python, whatever its name
        TPULAUNCH_CHECK(add(file, false));
        if (file != m_request.script) {
          m_modules.modules[file].open = true;
        }
      }
      if (files.empty()) {
        for (Evidence& row : scanned.evidence) {
          if (row.rule == Rule::import_unresolved && row.line == loaded.line && row.column == loaded.column) {
            row.detail = fmt::format(
                "{} loads '{}', which names no file of the course ({}): what it runs is only known at run time",
                loaded.call, loaded.path,
                loaded.from_file_folder ? "looked for next to the file that loads it"
                                        : "a path relative to the working folder, looked for below the lesson's "
                                          "folder and next to the script");
          }
        }
      }
    }
    std::erase_if(scanned.evidence, [&](const Evidence& row) {
      const std::pair at{row.line, row.column};
      return row.rule == Rule::import_unresolved && std::find(followed.begin(), followed.end(), at) != followed.end() &&
             std::find(missed.begin(), missed.end(), at) == missed.end();
    });
    return Ok{};
  }

  Error missing_module(const lesson::MissingModule& missing, const std::string& importer, std::uint32_t line) const {
    if (missing.not_a_package) {
      return config_error(fmt::format("{}:{}: {} imports {}, but {} is a module of the course, not a package: it "
                                      "has no module '{}'; change the import",
                                      local_path(importer), line, m_request.what, missing.module,
                                      local_path(missing.package), missing.name));
    }
    return config_error(fmt::format("{}:{}: {} imports {}, but the course package {}/ has no module '{}' (no {}.py, "
                                    "no {}/ in it): Python would fail, or import a copy left elsewhere; add the "
                                    "module or change the import",
                                    local_path(importer), line, m_request.what, missing.module,
                                    local_path(missing.package), missing.name, missing.name, missing.name));
  }

  // `from package import name` with no module `name` in the package: its __init__.py must define it.
  Status check_defined_names() {
    for (const DefinedName& defined : m_defined) {
      const auto text = text_of(defined.name.init);
      if (!text || module_may_bind(**text, defined.name.name)) {
        continue; // an unreadable __init__.py is reported where it is read
      }
      const std::string folder = local_path(folder_of(defined.name.init));
      return config_error(fmt::format("{}:{}: {} imports {} from the course package {}/, which has no module '{}' "
                                      "(no {}.py, no {}/ in it) and whose __init__.py does not define it: Python "
                                      "would fail, or import a copy left elsewhere; add the module or change the "
                                      "import",
                                      local_path(defined.importer), defined.line, m_request.what, defined.name.name,
                                      folder, defined.name.name, defined.name.name, defined.name.name));
    }
    return Ok{};
  }

  [[nodiscard]] std::string local_path(const std::string& staged) const {
    if (m_request.root.empty()) {
      return staged.empty() ? std::string(".") : staged;
    }
    return staged.empty() ? m_request.root : (fs::path(m_request.root) / staged).string();
  }

  // The text of the Python course file `staged`, read once (the scanner's lookups may ask before
  // the file's turn comes) and checked to be UTF-8.
  Result<const std::string*> text_of(const std::string& staged) {
    if (const auto it = m_texts.find(staged); it != m_texts.end()) {
      return &it->second;
    }
    const std::string path = local_path(staged);
    const std::string what = fmt::format("course file of {}", m_request.what);
    TPULAUNCH_TRY(std::string text, read_text_file(path, what, k_max_script_bytes));
    TPULAUNCH_CHECK(check_utf8_text(text, path, what));
    return &m_texts.emplace(staged, std::move(text)).first->second;
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
    if (!file.staged.ends_with(".py") && !m_loaded_python.contains(file.staged)) {
      // A declared data file: staged and pinned, not Python to read.
      TPULAUNCH_TRY(const std::string data,
                    read_text_file(file.path, fmt::format("course file of {}", m_request.what), k_max_input_bytes));
      file.sha256 = sha256_hex(data);
      return Ok{};
    }
    TPULAUNCH_TRY(const std::string* text, text_of(file.staged));
    file.sha256 = sha256_hex(*text);
    Classification scanned = scan_source(*text, lookup_from(file.staged));
    TPULAUNCH_CHECK(follow(scanned, file.staged));
    lesson::CourseModule& course = m_modules.modules[file.staged];
    course.shown = from_script(file.staged);
    course.text = text;
    for (auto& row : scanned.evidence) {
      row.file = course.shown;
      into.evidence.push_back(std::move(row));
    }
    spdlog::debug("lesson of {}: {} ({} evidence rows)", m_request.what, file.path, scanned.evidence.size());
    return Ok{};
  }

  const LessonRequest& m_request;
  lesson::FileProbe m_file_probe;
  const ImportProbe& m_probe;
  fs::path m_real_root;
  std::string m_script_folder;
  std::map<std::string, LessonFile> m_files;  // by `staged`: sorted, and each file once
  std::deque<std::string> m_queue;            // read in the order found
  std::map<std::string, std::string> m_texts; // the Python course files' text, by `staged`
  std::vector<DefinedName> m_defined;         // names packages' __init__.py must define
  std::set<std::string> m_loaded_python;      // files a call loads as code, whatever their name
  lesson::LessonModules m_modules;            // for mark_uncalled
};

} // namespace

Result<Lesson> read_lesson(const LessonRequest& request) { return LessonReader(request).run(); }

} // namespace tpulaunch
