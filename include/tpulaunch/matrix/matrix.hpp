#pragma once
// The execution matrix: the course's reviewed class for each script, pinned to the SHA-256 of
// the file as reviewed. Anything absent, unknown, missing or changed is review-required.
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "tpulaunch/classify/classifier.hpp"
#include "tpulaunch/util/error.hpp"
#include "tpulaunch/matrix/lesson.hpp"
#include "tpulaunch/classify/script_class.hpp"

namespace tpulaunch {

// What an override accepts: a piece of evidence on a line, or a multi-host marker the source lacks.
enum class OverrideOf { evidence, missing_marker };

// A reviewer's recorded decision to accept one piece of evidence that would otherwise refuse a
// route ("this cpu selection is only in the --debug path"), or the lack of a multi-host marker.
// The matrix file writes both in "rule": a missing marker as "missing:<marker>" (override_rule_text).
struct EvidenceOverride {
  std::string rule;        // evidence: classifier rule id ("devices-cpu"); missing_marker: its name ("initialize")
  std::uint32_t line = 0;  // line of the evidence in the reviewed file; 0 for a missing marker
  std::string reason;
  std::string file{};      // the course file the evidence is in, as Evidence::file names it ("" for the script)
  OverrideOf of = OverrideOf::evidence;

  friend bool operator==(const EvidenceOverride&, const EvidenceOverride&) = default;
};

// The "rule" of `override_item` as the matrix file writes it: "devices-cpu", "missing:initialize".
std::string override_rule_text(const EvidenceOverride& override_item);

// A course file reviewed with a script and staged with it (the entry's "files").
struct MatrixFile {
  std::string path;      // relative to the course folder: "public/exercises/lesson_helpers.py"
  std::string sha256;    // as reviewed; empty when not recorded yet (the script is then stale)
  bool declared = false; // named by the course rather than found through an import: review keeps it

  friend bool operator==(const MatrixFile&, const MatrixFile&) = default;
};

// What a script's run proves, as its review declares it (the entry's "proves"): the receipts a
// plan's verify step checks by default. An entry without it declares nothing: verify then checks
// one log and a recorded success per worker, and says no training claim was checked.
enum class Proves { training, discovery, logs };
inline constexpr std::array<Proves, 3> k_proves{Proves::training, Proves::discovery, Proves::logs};
// "training", "discovery", "logs".
std::string_view to_string(Proves proves);
// The value named `name`, or nullopt.
std::optional<Proves> parse_proves(std::string_view name);

// A reviewer's acceptance of a jax.distributed.initialize() that runs only under a condition
// (`review --initialize-condition REASON`): recorded next to exactly that call, as an override is.
struct InitializeCondition {
  std::uint32_t line = 0; // of the call, in the reviewed file
  std::string file{};     // the course file the call is in, as Evidence::file names it ("" for the script)
  std::string condition;  // the classifier's words for the condition, as reviewed
  std::string reason;

  friend bool operator==(const InitializeCondition&, const InitializeCondition&) = default;
};

struct MatrixEntry {
  std::string id;
  std::string class_name;                  // as written; may be unknown
  std::optional<ScriptClass> script_class; // nullopt when class_name is unknown
  std::string sha256;                      // 64 lower-case hex digits
  std::string reviewed_by;
  std::string reviewed_at;
  std::string reason;
  std::string note;
  // A reviewed JAX_PLATFORMS for TPU routes ("tpu,cpu"), in place of tpulaunch's "tpu"; "" for
  // the default. `review --jax-platforms` records it; plan then accepts --env JAX_PLATFORMS with it.
  std::string jax_platforms;
  std::optional<Proves> proves;                            // nullopt: the review declares nothing (`review --proves`)
  std::optional<InitializeCondition> initialize_condition; // `review --initialize-condition`
  std::vector<EvidenceOverride> overrides;
  std::vector<MatrixFile> files;           // the course files reviewed with the script, sorted by path
  nlohmann::ordered_json evidence = nlohmann::ordered_json::array(); // summary recorded by `review`
  // Fields this version does not know, kept as they are and in their order.
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();

  friend bool operator==(const MatrixEntry&, const MatrixEntry&) = default;
};

// The exercises folder with symlinks resolved, or why it cannot be used (it leads outside the
// course folder).
struct ExercisesLocation {
  std::string real;  // the real folder; "" when `error` is set
  std::string error; // the config Error's message; "" when the folder is inside the course
};

struct Matrix {
  int version = 1;
  std::string exercises_dir = "public/exercises";
  std::map<std::string, MatrixEntry> scripts; // sorted: stable order, one-entry diffs
  // Course files that are not scripts ("helpers"): paths relative to the course folder, each a
  // file ("public/exercises/lesson_helpers.py") or a folder ending in '/' (every file below it).
  std::vector<std::string> helpers;
  nlohmann::ordered_json extra = nlohmann::ordered_json::object(); // unknown top-level fields, in order
  std::string origin;   // path of the matrix file, for messages
  std::string base_dir; // folder of the matrix file ("" for the current folder)

  // Path of script `id`'s file: base_dir/exercises_dir/id.py, relative when base_dir is. An id
  // may name a script in a subfolder: `advanced/sub_lesson` is <exercises>/advanced/sub_lesson.py.
  [[nodiscard]] std::string script_path(std::string_view id) const;
  [[nodiscard]] std::string exercises_path() const;
  // The exercises folder as the course-relative prefix of its files: "public/exercises", "" for ".".
  [[nodiscard]] std::string exercises_prefix() const;
  [[nodiscard]] const MatrixEntry* find(std::string_view id) const;
  // `file` (relative to the exercises folder, "advanced/lesson_helpers.py") relative to the course
  // folder, as "files" and "helpers" name it.
  [[nodiscard]] std::string course_path(std::string_view file) const;
  // True when the file `file` (relative to the exercises folder) is one of the "helpers".
  [[nodiscard]] bool is_helper(std::string_view file) const;

  // Where the exercises folder really is, found once when the matrix is loaded (load_matrix_file,
  // init_matrix_file: locate_exercises in matrix/exercises.hpp) and only read after that, so that
  // threads may share a const Matrix. nullopt for a matrix only parsed: each use then looks again.
  std::optional<ExercisesLocation> exercises_location;
};

// True when `a` and `b` hold the same version, folder, scripts and unknown fields (not the
// origin): what `parse → serialize → parse` must keep.
bool same_content(const Matrix& a, const Matrix& b);

// Why `dir` cannot be an exercises_dir (absolute, leaving the course with '..', empty, or holding
// a control character), or nullopt when it can.
std::optional<std::string> exercises_dir_problem(std::string_view dir);

// Parses matrix JSON. Malformed JSON, a mistyped field, a bad digest or an absolute or escaping
// exercises_dir is a config Error naming `origin` and the position. An unknown class is not an
// error here: the script is then review-required.
Result<Matrix> parse_matrix(std::string_view json, std::string_view origin);
Result<Matrix> load_matrix_file(const std::string& path);

// The matrix a command started in `folder` (absolute) uses when none is named: `name` in
// `folder`, or else in the nearest folder above it that holds one, as git finds .git, written
// relative to `folder` ("execution-matrix.json", "../../execution-matrix.json"). nullopt when no
// folder up to the root holds a file of that name.
std::optional<std::string> find_matrix_upward(const std::string& folder, std::string_view name);

// The canonical text of `matrix`: fixed key order at the top and in entries, scripts sorted by
// id, two-space indent, trailing newline. `review` writes exactly this.
std::string serialize_matrix(const Matrix& matrix);

// Why a script cannot be routed as reviewed.
enum class ReviewState { reviewed, no_entry, unknown_class, missing_file, stale_digest };
std::string_view to_string(ReviewState state);

struct ScriptStatus {
  std::string id;
  std::string path;          // relative to the working folder when the matrix path is
  std::string course_path;   // relative to the course folder (the matrix's): "public/exercises/<id>.py"
  ReviewState state = ReviewState::no_entry;
  const MatrixEntry* entry = nullptr;
  std::string actual_sha256; // empty when the file is missing
  std::string source;        // the file's content, for the classifier (empty when missing)
  // The course files to stage with the script (found through its imports, or declared in the
  // entry's "files"): where each is read here, where it goes on a worker (below ~/jax-tpu-lab/,
  // next to staged_script(id).file) and its digest, which for a reviewed script is the one the
  // matrix pins. Set when the lesson was read: always for a `reviewed` script.
  std::vector<LessonFile> files;
  // The script classified with its course files, when resolve_script read them (route_script and
  // check use it rather than reading them again).
  std::optional<Classification> classification;
  bool helper = false;  // the matrix's "helpers" name its file: a module scripts import, not a script
  std::string changed; // for stale_digest: what changed ("its course file ... changed (sha256 ...)")

  [[nodiscard]] bool reviewed() const { return state == ReviewState::reviewed; }
  // The class to route by; nullopt means review-required.
  [[nodiscard]] std::optional<ScriptClass> route_class() const;
  // "review-required: <cause>; <how to fix>" (empty when reviewed).
  [[nodiscard]] std::string explanation() const;
};

// Looks up script `id`, reads its file and compares digests; when the script's own digest matches
// a known class, also reads its lesson (lesson.hpp) and compares the course files' digests and
// paths with the entry's "files": any change there makes the script stale_digest too. Fails only when the file exists but
// cannot be read or is not a regular file inside the exercises folder, or when the exercises
// folder itself leads outside the course (config Error).
// `probe`, when given, answers where the lesson's imports lead (ListedFolders, for many scripts).
Result<ScriptStatus> resolve_script(const Matrix& matrix, std::string_view id, const ImportProbe* probe = nullptr);

// The lesson of the script `status` holds (its source read): its imports followed below the
// exercises folder, with the entry's declared files. Errors as read_lesson gives them.
Result<Lesson> read_lesson(const Matrix& matrix, const ScriptStatus& status, const ImportProbe* probe = nullptr);

// The entry's "files" for a review of `lesson`: each course file with its digest now, declared
// ones marked as such.
std::vector<MatrixFile> reviewed_files(const Lesson& lesson);

// Turns a command-line argument into a script id: an id (`advanced/sub_lesson`), a path to a .py
// file inside the exercises folder, or a .py file name below that folder (`tpu-hello.py`). A path
// outside the folder, an invalid id, or an id with neither a matrix entry nor a file is a usage
// Error; the last names the nearest ids ("did you mean").
Result<std::string> script_id_from_argument(const Matrix& matrix, std::string_view argument);

} // namespace tpulaunch
