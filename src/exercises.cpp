#include "tpulaunch/exercises.hpp"

#include <stdlib.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <memory>

#include <fmt/format.h>

#include "tpulaunch/spelling.hpp"
#include "tpulaunch/validate.hpp"

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

Status exercises_inside_course(const Matrix& matrix) {
  if (matrix.real_exercises.empty() && matrix.exercises_error.empty()) {
    const fs::path course = real_path(matrix.base_dir);
    const fs::path exercises = real_path(matrix.exercises_path());
    if (inside(exercises, course) || exercises == course) {
      matrix.real_exercises = exercises.string();
    } else {
      matrix.exercises_error = fmt::format("{}: \"exercises_dir\" '{}' leads outside the course folder {} (to {})",
                                           matrix.origin, printable(matrix.exercises_dir), shown(matrix.base_dir),
                                           printable(exercises.string()));
    }
  }
  if (!matrix.exercises_error.empty()) {
    return config_error(matrix.exercises_error);
  }
  return Ok{};
}

Status script_inside_exercises(const Matrix& matrix, std::string_view id, const std::string& path) {
  TPULAUNCH_CHECK(exercises_inside_course(matrix));
  if (!inside(real_path(path), fs::path(matrix.real_exercises))) {
    return config_error(fmt::format("script '{}': {} leads outside the exercises folder {}", printable(id), path,
                                    shown(matrix.exercises_path())));
  }
  return Ok{};
}

Result<ExerciseListing> list_exercises(const Matrix& matrix) {
  TPULAUNCH_CHECK(exercises_inside_course(matrix));
  const std::string dir = shown(matrix.exercises_path());
  std::error_code ec;
  fs::recursive_directory_iterator it(dir, ec);
  const auto unreadable = [&](const std::error_code& error) {
    return config_error(
        fmt::format("cannot read the exercises folder '{}' named by {}: {}", dir, matrix.origin, error.message()));
  };
  if (ec) {
    return unreadable(ec);
  }
  ExerciseListing listing;
  for (const fs::recursive_directory_iterator end; it != end; it.increment(ec)) {
    if (ec) {
      return unreadable(ec);
    }
    const fs::path& path = it->path();
    const std::string relative = path.lexically_relative(dir).generic_string();
    if (it->is_symlink(ec) && it->is_directory(ec)) {
      listing.linked_folders.push_back(path.string()); // never followed: it may lead anywhere
      continue;
    }
    if (it->is_directory(ec) && !it->is_symlink(ec)) {
      if (!validate_value(ValueKind::script_id, relative).ok()) {
        listing.invalid_names.push_back(path.string()); // no script in it could ever be reviewed
        it.disable_recursion_pending();
      }
      continue;
    }
    if (path.extension() != ".py") {
      continue;
    }
    const std::string id = relative.substr(0, relative.size() - 3);
    if (validate_value(ValueKind::script_id, id).ok()) {
      listing.ids.push_back(id);
    } else {
      listing.invalid_names.push_back(path.string());
    }
  }
  std::sort(listing.ids.begin(), listing.ids.end());
  std::sort(listing.invalid_names.begin(), listing.invalid_names.end());
  std::sort(listing.linked_folders.begin(), listing.linked_folders.end());
  return listing;
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
