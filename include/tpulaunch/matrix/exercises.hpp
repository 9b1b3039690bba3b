#pragma once
// The exercises folder of a course: which scripts it holds, that it stays inside the course, and
// where a script goes on a worker. A script's id is its path below the folder without ".py", so
// `advanced/sub_lesson` is <exercises>/advanced/sub_lesson.py; each '/'-separated part follows
// the script-id rule (validate.hpp), so no part is "..", hidden or an option.
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "tpulaunch/util/error.hpp"
#include "tpulaunch/matrix/matrix.hpp"

namespace tpulaunch {

// What the exercises folder holds, searched through every subfolder.
struct ExerciseListing {
  std::vector<std::string> ids;            // scripts with a valid id, sorted
  std::vector<std::string> invalid_names;  // .py files, and folders holding any, whose name cannot be part of an id
  std::vector<std::string> linked_folders; // symlinks to folders: not followed, so their scripts are not listed
  std::vector<std::string> helpers;        // .py files the matrix marks as helpers (not scripts), relative
                                           // to the folder ("lesson_helpers.py"), sorted
};

// The real location of `path`: symlinks resolved where the path exists, '.' and '..' folded
// (the current folder for an empty path).
std::filesystem::path real_path(const std::filesystem::path& path);

// Lists the exercises folder; a file the matrix's "helpers" name is a helper, not a script. An unreadable folder, or one that leads outside the course, is a
// config Error naming the matrix.
Result<ExerciseListing> list_exercises(const Matrix& matrix);

// Looks where the exercises folder of `matrix` really is, symlinks resolved, and whether it is
// inside the course (the matrix's folder): what Matrix::exercises_location holds.
ExercisesLocation locate_exercises(const Matrix& matrix);

// The real exercises folder when it is inside the course; otherwise a config Error as for any path
// that escapes the course. Read from Matrix::exercises_location when it is set.
Result<std::string> real_exercises(const Matrix& matrix);

// Ok when the exercises folder, symlinks resolved, is inside the course (real_exercises).
Status exercises_inside_course(const Matrix& matrix);

// Ok when `path` (a script's file, symlinks resolved) is inside the exercises folder; otherwise a
// config Error "script 'id': <path> leads outside the exercises folder <folder>".
Status script_inside_exercises(const Matrix& matrix, std::string_view id, const std::string& path);

// The course files the scripts of `listing` import (lesson.hpp), relative to the course folder as
// the matrix's "helpers" name them, sorted: what `init` marks as helpers. A script that cannot be
// read, or whose lesson cannot, is passed over (check reports it).
std::vector<std::string> imported_course_files(const Matrix& matrix, const ExerciseListing& listing);

// What classify reads when it is given a folder: every entry named *.py in it and in every folder
// below it, whatever it is (a FIFO or a dangling symlink too: reading it says what it is), sorted,
// as `folder`/sub/name.py; and an Error for each folder below it that cannot be read.
struct PythonFiles {
  std::vector<std::string> files;
  std::vector<Error> unreadable;
};

// The PythonFiles of `folder` (a symlink to a folder is not followed, hidden files and folders such
// as .venv are skipped). `folder` itself unreadable is a config Error; a folder with no .py entry
// and no unreadable folder a usage Error.
Result<PythonFiles> python_files_below(const std::string& folder);

// True for an id of a script in a subfolder ("advanced/sub_lesson").
bool is_nested_script_id(std::string_view id);

// Where script `id` is staged on a worker, relative to the course folder in the worker's home
// (~/jax-tpu-lab/): the same relative path it has below the exercises folder. The copy lands in the
// worker's home as `name` + ".py" (gcloud copies into a folder that exists), and the run guard moves
// it to `file`, creating `folder` first.
struct StagedScript {
  std::string file;   // "advanced/sub_lesson.py"
  std::string folder; // "advanced/"; "" for a script at the top of the exercises folder
  std::string name;   // "sub_lesson": the id's last part, which names the copy and the per-host log
};
StagedScript staged_script(std::string_view id);

// Ok when `id` has a matrix entry or a file in the exercises folder; otherwise a usage Error
// "no script 'x' in <matrix> or in <folder> (did you mean 'y'?)" with the nearest known ids.
Status check_known_script(const Matrix& matrix, std::string_view id);

} // namespace tpulaunch
