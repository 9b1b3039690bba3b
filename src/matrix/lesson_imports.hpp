#pragma once
// Where an import leads below a lesson's root folder, as Python would look for it: the lesson
// reader's view of import_targets (lesson.hpp), with what that leaves out: a submodule of a course
// package that is not there (an error: Python fails, or runs a copy left elsewhere) and the names a
// package's __init__.py must define. Internal to the matrix folder.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tpulaunch/classify/classifier.hpp"
#include "tpulaunch/matrix/lesson.hpp"

namespace tpulaunch::lesson {

// "a/b" + "c" with '/' ("" is the root itself).
std::string join(std::string_view folder, std::string_view name);

// The folder of a root-relative file ("" for one at the top).
std::string folder_of(std::string_view file);

// Answers for paths below a real folder, following symlinks as Python's import does.
class FileProbe final : public ImportProbe {
public:
  explicit FileProbe(std::string root) : m_root(std::move(root)) {}
  [[nodiscard]] bool is_file(std::string_view relative) const override;
  [[nodiscard]] bool is_folder(std::string_view relative) const override;

private:
  std::string m_root;
};

// A module an import names inside a course package (or below a module of the course) that is
// not there.
struct MissingModule {
  std::string module;         // as the import names it: "common.missing", ".missing"
  std::string package;        // the package's folder below the root ("common"), or the module's file
  std::string name;           // the missing part: "missing"
  bool not_a_package = false; // `package` is a module file, which has no submodules
};

// `from package import name` where `name` is no submodule of the regular package: its __init__.py
// must define it.
struct NameInPackage {
  std::string init; // "common/__init__.py"
  std::string name;
  std::string package; // "common", for messages
};

struct ImportResolution {
  std::vector<std::string> files; // what import_targets returns
  std::optional<MissingModule> missing;
  std::vector<NameInPackage> must_define;
};

// Where `module` (an import of `importer`; `script` is the file Python was started with) leads.
ImportResolution resolve_import(const ImportedModule& module, std::string_view importer, std::string_view script,
                                const ImportProbe& probe);

// The file of exactly the module `dotted` (with `level` leading dots, from `importer`): a module
// file or a regular package's __init__.py; nullopt when no file of the course is that module.
std::optional<std::string> module_file(std::uint32_t level, std::string_view dotted, std::string_view importer,
                                       std::string_view script, const ImportProbe& probe);

} // namespace tpulaunch::lesson
