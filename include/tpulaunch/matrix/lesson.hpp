#pragma once
// A lesson: a script and the course files it needs next to it. The lesson reader follows the
// script's imports (Classification::imports) to the modules that are files of the course — a
// `.py` file, or a package folder, below the lesson's root folder — and those files' imports in
// turn, once each (a cycle ends where it meets a file already read) and at most
// k_max_lesson_files of them. Their evidence counts for the script, each row marked with the file
// it was found in; their digests pin what runs with it. Nothing is read outside the root folder:
// an import that would climb out of it is not followed, and a course file that leads out of it
// (a symlink) is a config Error.
#include <bitset>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tpulaunch/classify/classifier.hpp"
#include "tpulaunch/util/error.hpp"

namespace tpulaunch {

// Most course files one lesson may bring with it: past this, reading it is refused (config Error).
inline constexpr std::size_t k_max_lesson_files = 256;

// One course file staged with a script.
struct LessonFile {
  // Relative to the course folder (the matrix's), as the matrix's "files" and "helpers" name it:
  // "public/exercises/lesson_helpers.py". Outside a course, the same as `staged`.
  std::string course_path;
  // Relative to the lesson's root folder (the exercises folder), '/'-separated:
  // "lesson_helpers.py", "advanced/pkg/__init__.py". On a worker it goes to this path below
  // ~/jax-tpu-lab/, the layout the script has there (staged_script(id).file), so Python finds it.
  std::string staged;
  std::string path;       // where to read it here (the root folder joined with `staged`)
  std::string sha256;     // of its content now; empty when it is missing (only a declared file can be)
  bool declared = false;  // named by the matrix entry's "files" rather than found through an import

  friend bool operator==(const LessonFile&, const LessonFile&) = default;
};

// Whether a path below the root is a file or a folder, symlinks followed (as Python's import
// follows them); read_lesson asks one of these.
struct ImportProbe {
  ImportProbe() = default;
  ImportProbe(const ImportProbe&) = delete;
  ImportProbe& operator=(const ImportProbe&) = delete;
  virtual ~ImportProbe() = default;
  [[nodiscard]] virtual bool is_file(std::string_view relative) const = 0;
  [[nodiscard]] virtual bool is_folder(std::string_view relative) const = 0;
};

// Answers from one listing of each folder (readdir), made the first time the folder is asked about
// and kept: for `check`, which reads the lessons of thousands of scripts in the same folders and
// would otherwise stat every module name each of them imports (`jax`, `numpy`...) in its folder.
// The root is listed when the object is made, and read with no lock after; a subfolder's listing
// is made under a lock. Safe to share between threads. Files made after a listing are not seen.
class ListedFolders final : public ImportProbe {
public:
  explicit ListedFolders(std::string root);
  [[nodiscard]] bool is_file(std::string_view relative) const override;
  [[nodiscard]] bool is_folder(std::string_view relative) const override;

private:
  enum class Kind : std::uint8_t { file, folder };
  struct NameHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view name) const { return std::hash<std::string_view>{}(name); }
  };
  struct Listing {
    // A name's length and its first and last bytes, hashed to a bit: most names asked about are
    // not there (jax, jax.py, numpy...), and one bit test answers for nearly all of them.
    std::bitset<4096> filter;
    std::unordered_map<std::string, Kind, NameHash, std::equal_to<>> names;
  };
  static std::size_t filter_bit(std::string_view name);
  [[nodiscard]] Listing list(const std::string& folder) const;
  [[nodiscard]] bool is(std::string_view relative, Kind kind) const;

  std::string m_root;
  Listing m_top;                                           // the root's, made first and never changed
  mutable std::mutex m_mutex;                              // guards m_folders; a listing never changes once made
  mutable std::unordered_map<std::string, Listing> m_folders; // by subfolder below the root
};

struct LessonRequest {
  std::string root;          // the folder nothing is read outside of ("" is the current folder)
  std::string real_root;     // `root` with symlinks resolved, when the caller knows it ("": found here)
  std::string course_prefix; // `root` relative to the course folder ("public/exercises"), for course_path
  std::string script;        // the script, relative to `root` ("advanced/lesson.py")
  std::string_view source;   // its text, read and checked by the caller
  std::vector<std::string> declared; // more files staged with it, relative to `root`
  std::string what;          // the script in messages: "script 'lesson'"
  const ImportProbe* probe = nullptr; // answers about `root` shared between lessons; nullptr: stat each path
};

struct Lesson {
  // The script's evidence followed by every course file's (Evidence::file set), one suggestion
  // over all of it, and the script's own imports.
  Classification classification;
  std::vector<LessonFile> files; // sorted by `staged`; never the script itself
};

// Reads the lesson of `request.script`. A course file that cannot be read, is not UTF-8 Python,
// leads outside the root or is one too many is a config Error naming it and the script. A declared
// file that is missing is listed with an empty digest (the script is then stale, not an error).
Result<Lesson> read_lesson(const LessonRequest& request);

// The files an import statement of `importer` names below the root, as Python would look for them
// (the script's folder first on sys.path; a relative import from the importer's package), each
// relative to the root; only files that exist, as `probe` answers, are returned. Exposed for the
// tests; read_lesson uses it with the file system.
std::vector<std::string> import_targets(const ImportedModule& module, std::string_view importer, std::string_view script,
                                        const ImportProbe& probe);

// The file a row of `evidence` is in, for a person: `script_path` itself, or the helper's path next
// to it ("public/exercises/lesson_helpers.py" for a row of lesson_helpers.py).
std::string evidence_path(std::string_view script_path, const Evidence& evidence);

} // namespace tpulaunch
