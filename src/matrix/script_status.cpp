// The review state of one script (matrix.hpp: ScriptStatus): its file read safely from the
// exercises folder, its digest and its lesson's compared with what the matrix pins, and the
// messages that tell a person what to do about it.
#include <sys/stat.h>

#include <filesystem>
#include <map>
#include <utility>

#include <fmt/format.h>

#include "tpulaunch/classify/source_encoding.hpp"
#include "tpulaunch/matrix/exercises.hpp"
#include "tpulaunch/matrix/matrix.hpp"
#include "tpulaunch/values/validate.hpp"
#include "tpulaunch/shell/shell.hpp"
#include "tpulaunch/util/sha256.hpp"
#include "tpulaunch/util/text_file.hpp"

namespace tpulaunch {

namespace fs = std::filesystem;

std::string_view to_string(ReviewState state) {
  switch (state) {
  case ReviewState::reviewed: return "reviewed";
  case ReviewState::no_entry: return "no-entry";
  case ReviewState::unknown_class: return "unknown-class";
  case ReviewState::missing_file: return "missing-file";
  case ReviewState::stale_digest: return "stale-digest";
  }
  return "unknown";
}

std::optional<ScriptClass> ScriptStatus::route_class() const {
  if (state != ReviewState::reviewed || entry == nullptr) {
    return std::nullopt;
  }
  return entry->script_class;
}

namespace {

// The commands a message tells a person to run, as argv data rendered by the one quoting
// function: `tpulaunch review ID --class CLASS --by NAME` (CLASS and NAME are for them to fill in).
ShellLine review_command(std::string_view id) {
  return ShellLine{"tpulaunch", "review", Word(std::string(id)), "--class", "CLASS", "--by", "NAME"};
}

std::string review_hint(std::string_view id) { return to_shell(review_command(id)); }

std::string classify_then_review_hint(std::string_view id, const std::string& path) {
  constexpr Code k_and{" && "};
  return to_shell(ShellLine{"tpulaunch", "classify", Word(path)}.code(k_and).line(review_command(id)));
}

} // namespace

std::string ScriptStatus::explanation() const {
  switch (state) {
  case ReviewState::reviewed:
    return {};
  case ReviewState::no_entry:
    if (helper) {
      return fmt::format("'{}' is a helper (the matrix's \"helpers\" name {}), not a script: it is staged with each "
                         "script that imports it and never runs alone",
                         id, path);
    }
    return fmt::format("'{}' has no entry in the execution matrix; review it: {}", id, classify_then_review_hint(id, path));
  case ReviewState::unknown_class:
    return fmt::format("'{}' has the unknown class \"{}\" (known: cpu-only, single-host-compatible, multi-host-qualified); record a review: {}",
                       id, printable(entry != nullptr ? entry->class_name : ""), review_hint(id));
  case ReviewState::missing_file:
    return fmt::format("'{}' is in the matrix but its file {} is missing; restore it or remove the entry", id, path);
  case ReviewState::stale_digest:
    if (!changed.empty()) {
      return fmt::format("'{}' changed since it was reviewed: {}; review it again: {}", id, changed, review_hint(id));
    }
    return fmt::format("'{}' changed since it was reviewed (sha256 {} reviewed, {} now); review it again: {}", id,
                       entry != nullptr ? entry->sha256.substr(0, 12) : "", actual_sha256.substr(0, 12), review_hint(id));
  }
  return {};
}

namespace {

// The first difference between the course files `entry` was reviewed with and the lesson's now
// (in path order), as words for explanation(); empty when they are the same.
std::string lesson_change(const MatrixEntry& entry, const std::vector<LessonFile>& now) {
  std::map<std::string_view, std::pair<const MatrixFile*, const LessonFile*>> files;
  for (const auto& file : entry.files) {
    files[file.path].first = &file;
  }
  for (const auto& file : now) {
    files[file.course_path].second = &file;
  }
  const auto short_digest = [](const std::string& digest) { return digest.substr(0, 12); };
  for (const auto& [path, pair] : files) {
    const auto [reviewed, current] = pair;
    if (current == nullptr) {
      return fmt::format("it no longer brings its course file {} with it (not imported any more)", path);
    }
    if (reviewed == nullptr) {
      return fmt::format("it now brings the course file {} with it, which was not reviewed with it", path);
    }
    if (current->sha256.empty()) {
      return fmt::format("its course file {} is missing", path);
    }
    if (reviewed->sha256.empty()) {
      return fmt::format("the digest of its course file {} is not recorded", path);
    }
    if (reviewed->sha256 != current->sha256) {
      return fmt::format("its course file {} changed (sha256 {} reviewed, {} now)", path, short_digest(reviewed->sha256),
                         short_digest(current->sha256));
    }
  }
  return {};
}

// Checks the source `status` holds (Python source text in its declared encoding), hashes it and compares with the entry's digest,
// then, for a script whose own digest matches, its course files' with the entry's "files".
Result<ScriptStatus> with_review_state(const Matrix& matrix, ScriptStatus status, const ImportProbe* probe) {
  TPULAUNCH_CHECK(check_python_source(status.source, status.path, fmt::format("script '{}'", status.id)));
  status.actual_sha256 = sha256_hex(status.source);
  if (status.entry == nullptr) {
    status.state = ReviewState::no_entry;
  } else if (!status.entry->script_class) {
    status.state = ReviewState::unknown_class;
  } else if (status.entry->sha256 != status.actual_sha256) {
    status.state = ReviewState::stale_digest;
  } else {
    TPULAUNCH_TRY(Lesson lesson, read_lesson(matrix, status, probe));
    status.changed = lesson_change(*status.entry, lesson.files);
    status.state = status.changed.empty() ? ReviewState::reviewed : ReviewState::stale_digest;
    status.files = std::move(lesson.files);
    status.classification = std::move(lesson.classification);
  }
  return status;
}

} // namespace

Result<ScriptStatus> resolve_script(const Matrix& matrix, std::string_view id, const ImportProbe* probe) {
  TPULAUNCH_CHECK(validate_value(ValueKind::script_id, id));
  ScriptStatus status;
  status.id = std::string(id);
  status.path = matrix.script_path(id);
  status.course_path = matrix.course_path(std::string(id) + ".py");
  status.entry = matrix.find(id);
  status.helper = matrix.is_helper(status.id + ".py");

  // The exercises folder itself must stay in the course: a symlinked folder leading elsewhere is
  // refused like any other path that escapes it.
  TPULAUNCH_CHECK(exercises_inside_course(matrix));
  const auto not_regular = [&] {
    return config_error(fmt::format("script '{}': {} is not a regular file", id, status.path));
  };
  const auto too_large = [&](std::uintmax_t size) {
    return config_error(fmt::format("script '{}': {} is {} bytes, more than the {} a script may have", id, status.path,
                                    size, k_max_script_bytes));
  };
  // A plain file at the top of the folder is inside by construction, so the usual script takes one
  // open (which does not follow a symlink) and one fstat: check does this for thousands of files.
  if (!is_nested_script_id(id)) {
    TPULAUNCH_TRY(FileContent file, read_file_nofollow(status.path, "script", k_max_script_bytes));
    switch (file.kind) {
    case FileKind::missing:
      status.state = status.entry == nullptr ? ReviewState::no_entry : ReviewState::missing_file;
      return status;
    case FileKind::other:
      return not_regular();
    case FileKind::regular:
      if (file.size > k_max_script_bytes) {
        return too_large(file.size);
      }
      status.source = std::move(file.text);
      return with_review_state(matrix, std::move(status), probe);
    case FileKind::symlink:
      break; // resolved below
    }
  }
  // A symlink, or a script in a subfolder (whose folders may be symlinks), must really lead inside
  // the exercises folder: a symlink that leads out of the course would let a reviewed name run
  // unreviewed code.
  struct stat info {};
  if (::lstat(status.path.c_str(), &info) != 0) {
    status.state = status.entry == nullptr ? ReviewState::no_entry : ReviewState::missing_file;
    return status;
  }
  TPULAUNCH_CHECK(script_inside_exercises(matrix, id, status.path));
  if ((S_ISLNK(info.st_mode) && ::stat(status.path.c_str(), &info) != 0) || !S_ISREG(info.st_mode)) {
    return not_regular();
  }
  if (static_cast<std::uintmax_t>(info.st_size) > k_max_script_bytes) {
    return too_large(static_cast<std::uintmax_t>(info.st_size));
  }
  TPULAUNCH_TRY(status.source, read_text_file(status.path, "script", k_max_script_bytes));
  return with_review_state(matrix, std::move(status), probe);
}

Result<Lesson> read_lesson(const Matrix& matrix, const ScriptStatus& status, const ImportProbe* probe) {
  LessonRequest request;
  TPULAUNCH_TRY(request.real_root, real_exercises(matrix));
  request.root = matrix.exercises_path();
  request.course_prefix = matrix.exercises_prefix();
  request.script = status.id + ".py";
  request.source = status.source;
  request.what = fmt::format("script '{}'", status.id);
  request.probe = probe;
  if (status.entry != nullptr) {
    for (const auto& file : status.entry->files) {
      if (file.declared) {
        // Inside the exercises folder (checked when the matrix was read): the rest of the path.
        request.declared.push_back(request.course_prefix.empty() ? file.path
                                                                 : file.path.substr(request.course_prefix.size() + 1));
      }
    }
  }
  return read_lesson(request);
}

std::vector<MatrixFile> reviewed_files(const Lesson& lesson) {
  std::vector<MatrixFile> files;
  for (const auto& file : lesson.files) {
    files.push_back(MatrixFile{file.course_path, file.sha256, file.declared});
  }
  return files;
}

Result<std::string> script_id_from_argument(const Matrix& matrix, std::string_view argument) {
  // Whatever the argument names lies in the exercises folder, so that folder must stay in the course.
  TPULAUNCH_CHECK(exercises_inside_course(matrix));
  if (!argument.ends_with(".py")) {
    // An id, perhaps of a script in a subfolder ("advanced/sub_lesson").
    TPULAUNCH_CHECK(validate_value(ValueKind::script_id, argument));
    TPULAUNCH_CHECK(check_known_script(matrix, argument));
    return std::string(argument);
  }
  const std::string exercises = matrix.exercises_path().empty() ? "." : matrix.exercises_path();
  // A path from the current folder, or a file name below the exercises folder ("tpu-hello.py").
  fs::path path{std::string(argument)};
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(path, ec)) && !path.is_absolute() &&
      fs::exists(fs::symlink_status(fs::path(exercises) / path, ec))) {
    path = fs::path(exercises) / path;
  }
  const auto relative = real_path(path.parent_path()).lexically_relative(real_path(exercises)) / path.filename();
  const std::string text = relative.lexically_normal().generic_string();
  if (relative.empty() || text.starts_with("..")) {
    return usage_error(fmt::format("'{}' is not a .py file in the exercises folder {}", printable(argument), exercises));
  }
  const std::string id = text.substr(0, text.size() - 3);
  TPULAUNCH_CHECK(validate_value(ValueKind::script_id, id));
  TPULAUNCH_CHECK(check_known_script(matrix, id));
  return id;
}

} // namespace tpulaunch
