#include "tpulaunch/matrix/matrix.hpp"

#include <algorithm>
#include <array>
#include <climits>
#include <filesystem>
#include <utility>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "tpulaunch/json/json_reader.hpp"
#include "tpulaunch/matrix/exercises.hpp"
#include "tpulaunch/util/text_file.hpp"
#include "tpulaunch/values/validate.hpp"

namespace tpulaunch {
namespace {

namespace fs = std::filesystem;


// Entry fields in the order they are written; anything else is kept in `extra`, in its order, and
// written after them.
constexpr std::array<std::string_view, 12> k_entry_fields{
    "class",         "sha256", "reviewed_by", "reviewed_at",          "reason",    "note",
    "jax_platforms", "proves", "files",       "initialize_condition", "overrides", "evidence"};
constexpr std::array<std::string_view, 3> k_matrix_fields{"version", "exercises_dir", "scripts"};
constexpr std::string_view k_helpers_field = "helpers"; // optional, unlike the three above
// How "rule" names a missing multi-host marker: "missing:initialize".
constexpr std::string_view k_missing_prefix = "missing:";

template <std::size_t N> bool is_one_of(std::string_view key, const std::array<std::string_view, N>& fields) {
  return std::find(fields.begin(), fields.end(), key) != fields.end();
}

bool is_hex_digest(std::string_view text) {
  if (text.size() != 64) {
    return false;
  }
  for (const char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
      return false;
    }
  }
  return true;
}

Result<EvidenceOverride> parse_override(const JsonDocument& doc, const JsonValue& value, const std::string& pointer,
                                        const std::string& context) {
  TPULAUNCH_CHECK(require_object(doc, value, pointer, context));
  const JsonObject object(doc, value, pointer, context);
  EvidenceOverride item;
  TPULAUNCH_TRY(item.rule, object.string("rule"));
  if (item.rule.starts_with(k_missing_prefix)) {
    item.rule.erase(0, k_missing_prefix.size());
    item.of = OverrideOf::missing_marker;
  }
  TPULAUNCH_TRY(const long long line, object.integer("line", 0, INT_MAX));
  item.line = static_cast<std::uint32_t>(line);
  TPULAUNCH_TRY(item.reason, object.string("reason"));
  TPULAUNCH_TRY(item.file, object.optional_string("file"));
  return item;
}

Result<InitializeCondition> parse_initialize_condition(const JsonDocument& doc, const JsonValue& value,
                                                       const std::string& pointer, const std::string& context) {
  TPULAUNCH_CHECK(require_object(doc, value, pointer, context));
  const JsonObject object(doc, value, pointer, context);
  InitializeCondition item;
  TPULAUNCH_TRY(const long long line, object.integer("line", 1, INT_MAX));
  item.line = static_cast<std::uint32_t>(line);
  TPULAUNCH_TRY(item.file, object.optional_string("file"));
  TPULAUNCH_TRY(item.condition, object.optional_string("condition"));
  TPULAUNCH_TRY(item.reason, object.string("reason"));
  return item;
}

// Why `path` cannot name a course file (or, with `folder`, a folder ending in '/') in "files" or
// "helpers": it must be a plain relative path in its shortest form, so that paths compare as text.
std::optional<std::string> course_file_problem(std::string_view path, bool folder) {
  for (const char c : path) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      return fmt::format("'{}' holds a control character", printable(path));
    }
  }
  std::string_view plain = path;
  if (folder && plain.ends_with('/')) {
    plain.remove_suffix(1);
  }
  const fs::path as_path{std::string(plain)};
  if (plain.empty() || as_path.is_absolute() || plain.ends_with('/') ||
      as_path.lexically_normal().generic_string() != plain || plain == "." || plain.starts_with("../") || plain == "..") {
    return fmt::format("'{}' must be a path relative to the course folder, in its plain form (e.g. "
                       "\"public/exercises/lesson_helpers.py\")",
                       printable(path));
  }
  return std::nullopt;
}

Result<MatrixFile> parse_file(const JsonDocument& doc, const JsonValue& value, const std::string& pointer,
                              const std::string& context) {
  TPULAUNCH_CHECK(require_object(doc, value, pointer, context));
  const JsonObject object(doc, value, pointer, context);
  MatrixFile item;
  TPULAUNCH_TRY(item.path, object.string("path"));
  if (const auto problem = course_file_problem(item.path, false)) {
    return object.error_at("path", *problem);
  }
  TPULAUNCH_TRY(item.sha256, object.optional_string("sha256"));
  if (!item.sha256.empty() && !is_hex_digest(item.sha256)) {
    return object.error_at("sha256", "\"sha256\" must be 64 lower-case hex digits");
  }
  if (object.has("declared")) {
    TPULAUNCH_TRY(const JsonValue* declared, object.member("declared", JsonValue::value_t::boolean));
    item.declared = declared->get<bool>();
  }
  return item;
}

Result<std::vector<MatrixFile>> parse_files(const JsonDocument& doc, const JsonValue& list, const std::string& pointer,
                                            const std::string& context) {
  std::vector<MatrixFile> files;
  for (std::size_t i = 0; i < list.size(); ++i) {
    TPULAUNCH_TRY(MatrixFile item, parse_file(doc, list[i], fmt::format("{}/{}", pointer, i), context + " file"));
    if (std::any_of(files.begin(), files.end(), [&](const MatrixFile& f) { return f.path == item.path; })) {
      return config_error(fmt::format("{}: {} file: '{}' is listed twice", doc.where(fmt::format("{}/{}", pointer, i)),
                                      context, printable(item.path)));
    }
    files.push_back(std::move(item));
  }
  return files;
}

Result<std::vector<std::string>> parse_helpers(const JsonDocument& doc, const JsonValue& list) {
  std::vector<std::string> helpers;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string pointer = fmt::format("/{}/{}", k_helpers_field, i);
    if (!list[i].is_string()) {
      return config_error(fmt::format("{}: matrix: \"helpers\" holds paths (strings)", doc.where(pointer)));
    }
    std::string path = list[i].get<std::string>();
    if (const auto problem = course_file_problem(path, true)) {
      return config_error(fmt::format("{}: matrix: \"helpers\": {}", doc.where(pointer), *problem));
    }
    helpers.push_back(std::move(path));
  }
  return helpers;
}

bool in_exercises(std::string_view prefix, std::string_view path) {
  return prefix.empty() || (path.size() > prefix.size() + 1 && path.starts_with(prefix) && path[prefix.size()] == '/');
}

// What the whole matrix gets wrong about "files" and "helpers" once every field is read (the
// exercises folder may come last): a path outside the exercises folder, a script's own file listed
// as one of its files, a helper that is also a script entry. Gives the JSON pointer and the message.
std::optional<std::pair<std::string, std::string>> lesson_paths_problem(const Matrix& matrix) {
  const std::string prefix = matrix.exercises_prefix();
  const auto outside = [&](const std::string& path) {
    return fmt::format("'{}' is not in the exercises folder '{}': course files are staged next to the scripts",
                       printable(path), printable(matrix.exercises_dir));
  };
  for (std::size_t i = 0; i < matrix.helpers.size(); ++i) {
    const std::string& helper = matrix.helpers[i];
    const std::string pointer = fmt::format("/{}/{}", k_helpers_field, i);
    if (!in_exercises(prefix, helper)) {
      return std::pair{pointer, "\"helpers\": " + outside(helper)};
    }
    for (const auto& [id, entry] : matrix.scripts) {
      const std::string script = matrix.course_path(id + ".py");
      if (helper.ends_with('/') ? script.starts_with(helper) : script == helper) {
        return std::pair{pointer, fmt::format("\"helpers\": '{}' {} the file of script '{}', which has an entry: a "
                                              "file is a script or a helper, not both",
                                              printable(helper), helper.ends_with('/') ? "holds" : "is", printable(id))};
      }
    }
  }
  for (const auto& [id, entry] : matrix.scripts) {
    for (std::size_t i = 0; i < entry.files.size(); ++i) {
      const std::string& path = entry.files[i].path;
      const std::string pointer = fmt::format("/scripts/{}/files/{}/path", json_pointer_token(id), i);
      if (!in_exercises(prefix, path)) {
        return std::pair{pointer, fmt::format("script '{}' file: {}", printable(id), outside(path))};
      }
      if (path == matrix.course_path(id + ".py")) {
        return std::pair{pointer, fmt::format("script '{}' file: '{}' is the script itself", printable(id),
                                              printable(path))};
      }
    }
  }
  return std::nullopt;
}

Result<MatrixEntry> parse_entry(const JsonDocument& doc, const std::string& id, const JsonValue& value) {
  const std::string pointer = "/scripts/" + json_pointer_token(id);
  const std::string context = fmt::format("script '{}'", printable(id));
  if (auto status = validate_value(ValueKind::script_id, id); !status) {
    return config_error(fmt::format("{}: {}", doc.where(pointer + "#key"), status.error().message));
  }
  TPULAUNCH_CHECK(require_object(doc, value, pointer, context));
  const JsonObject object(doc, value, pointer, context);
  MatrixEntry entry;
  entry.id = id;
  TPULAUNCH_TRY(entry.class_name, object.string("class"));
  entry.script_class = parse_script_class(entry.class_name);
  TPULAUNCH_TRY(entry.sha256, object.string("sha256"));
  if (!is_hex_digest(entry.sha256)) {
    return object.error_at("sha256", "\"sha256\" must be 64 lower-case hex digits");
  }
  TPULAUNCH_TRY(entry.reviewed_by, object.optional_string("reviewed_by"));
  TPULAUNCH_TRY(entry.reviewed_at, object.optional_string("reviewed_at"));
  TPULAUNCH_TRY(entry.reason, object.optional_string("reason"));
  TPULAUNCH_TRY(entry.note, object.optional_string("note"));
  TPULAUNCH_TRY(entry.jax_platforms, object.optional_string("jax_platforms"));
  if (!entry.jax_platforms.empty()) {
    if (auto status = validate_value(ValueKind::jax_platforms, entry.jax_platforms); !status) {
      return object.error_at("jax_platforms", status.error().message);
    }
  }
  if (object.has("proves")) {
    TPULAUNCH_TRY(const std::string proves, object.string("proves"));
    entry.proves = parse_proves(proves);
    if (!entry.proves) {
      return object.error_at(
          "proves", fmt::format("\"proves\" is '{}': expected training, discovery or logs", printable(proves)));
    }
  }
  if (object.has("initialize_condition")) {
    TPULAUNCH_TRY(const JsonValue* item, object.member("initialize_condition", JsonValue::value_t::object));
    TPULAUNCH_TRY(entry.initialize_condition, parse_initialize_condition(doc, *item, pointer + "/initialize_condition",
                                                                         context + " initialize_condition"));
  }
  if (object.has("overrides")) {
    TPULAUNCH_TRY(const JsonValue* list, object.member("overrides", JsonValue::value_t::array));
    for (std::size_t i = 0; i < list->size(); ++i) {
      TPULAUNCH_TRY(EvidenceOverride item, parse_override(doc, (*list)[i], fmt::format("{}/overrides/{}", pointer, i),
                                                          context + " override"));
      entry.overrides.push_back(std::move(item));
    }
  }
  if (object.has("evidence")) {
    TPULAUNCH_TRY(const JsonValue* list, object.member("evidence", JsonValue::value_t::array));
    entry.evidence = *list;
  }
  if (object.has("files")) {
    TPULAUNCH_TRY(const JsonValue* list, object.member("files", JsonValue::value_t::array));
    TPULAUNCH_TRY(entry.files, parse_files(doc, *list, pointer + "/files", context));
  }
  for (const auto& [key, member] : value.items()) {
    if (!is_one_of(key, k_entry_fields)) {
      entry.extra[key] = member;
    }
  }
  return entry;
}

Status check_exercises_dir(const JsonObject& root, const std::string& dir) {
  if (const auto problem = exercises_dir_problem(dir)) {
    return root.error_at("exercises_dir", *problem);
  }
  return Ok{};
}

// The real location of `path`: symlinks resolved where the path exists, '.' and '..' folded.
std::string join_path(const std::string& base, const std::string& rest) {
  if (base.empty()) {
    return rest;
  }
  return (fs::path(base) / rest).string();
}

} // namespace

std::optional<std::string> exercises_dir_problem(std::string_view dir) {
  // The folder reaches command lines (as the script path) and the file system, which would cut
  // it at a NUL: no control bytes at all.
  for (const char c : dir) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      return fmt::format("\"exercises_dir\" '{}' holds a control character", printable(dir));
    }
  }
  if (dir.empty()) {
    return "\"exercises_dir\" must not be empty";
  }
  const fs::path path{std::string(dir)};
  if (path.is_absolute()) {
    return "\"exercises_dir\" must be relative to the matrix's folder";
  }
  for (const auto& component : path) {
    if (component == "..") {
      return "\"exercises_dir\" must stay inside the course (no '..')";
    }
  }
  return std::nullopt;
}

std::string Matrix::exercises_path() const { return join_path(base_dir, exercises_dir); }

std::string Matrix::exercises_prefix() const {
  std::string prefix = fs::path(exercises_dir).lexically_normal().generic_string();
  while (prefix.ends_with('/')) {
    prefix.pop_back();
  }
  return prefix == "." ? std::string() : prefix;
}

std::string Matrix::course_path(std::string_view file) const {
  const std::string prefix = exercises_prefix();
  return prefix.empty() ? std::string(file) : prefix + "/" + std::string(file);
}

bool Matrix::is_helper(std::string_view file) const {
  if (helpers.empty()) {
    return false;
  }
  const std::string path = course_path(file);
  return std::any_of(helpers.begin(), helpers.end(), [&path](const std::string& helper) {
    return helper.ends_with('/') ? path.starts_with(helper) : path == helper;
  });
}

std::string Matrix::script_path(std::string_view id) const {
  return join_path(exercises_path(), std::string(id) + ".py");
}

const MatrixEntry* Matrix::find(std::string_view id) const {
  auto it = scripts.find(std::string(id));
  return it == scripts.end() ? nullptr : &it->second;
}

Result<Matrix> parse_matrix(std::string_view json, std::string_view origin) {
  TPULAUNCH_TRY(const JsonDocument doc, parse_json(json, origin));
  TPULAUNCH_CHECK(require_object(doc, doc.value, "", "the matrix"));
  const JsonObject root(doc, doc.value, "", "matrix");
  Matrix matrix;
  matrix.origin = std::string(origin);
  matrix.base_dir = fs::path(std::string(origin)).parent_path().string();
  TPULAUNCH_TRY(const long long version, root.integer("version", 1, 1));
  matrix.version = static_cast<int>(version);
  TPULAUNCH_TRY(matrix.exercises_dir, root.string("exercises_dir"));
  TPULAUNCH_CHECK(check_exercises_dir(root, matrix.exercises_dir));
  TPULAUNCH_TRY(const JsonValue* scripts, root.member("scripts", JsonValue::value_t::object));
  for (const auto& [id, value] : scripts->items()) {
    TPULAUNCH_TRY(MatrixEntry entry, parse_entry(doc, id, value));
    matrix.scripts.emplace(id, std::move(entry));
  }
  if (root.has(k_helpers_field)) {
    TPULAUNCH_TRY(const JsonValue* list, root.member(k_helpers_field, JsonValue::value_t::array));
    TPULAUNCH_TRY(matrix.helpers, parse_helpers(doc, *list));
  }
  for (const auto& [key, member] : doc.value.items()) {
    if (!is_one_of(key, k_matrix_fields) && key != k_helpers_field) {
      matrix.extra[key] = member;
    }
  }
  if (const auto problem = lesson_paths_problem(matrix)) {
    return config_error(fmt::format("{}: {}", doc.where(problem->first), problem->second));
  }
  return matrix;
}

Result<Matrix> load_matrix_file(const std::string& path) {
  TPULAUNCH_TRY(const std::string text, read_text_file(path, "matrix"));
  TPULAUNCH_TRY(Matrix matrix, parse_matrix(text, path));
  matrix.exercises_location = locate_exercises(matrix);
  spdlog::debug("matrix: {} ({} scripts)", printable(path), matrix.scripts.size());
  return matrix;
}

std::optional<std::string> find_matrix_upward(const std::string& folder, std::string_view name) {
  std::error_code ec;
  std::string up; // "", "../", "../../", ...
  fs::path start = fs::path(folder).lexically_normal();
  if (start.has_relative_path() && !start.has_filename()) {
    start = start.parent_path(); // "/a/b/" -> "/a/b", so each step up is one folder
  }
  for (fs::path dir = start;; dir = dir.parent_path()) {
    if (fs::is_regular_file(dir / name, ec)) {
      return up + std::string(name);
    }
    if (dir == dir.parent_path() || dir.empty()) {
      return std::nullopt;
    }
    up += "../";
  }
}

std::string serialize_matrix(const Matrix& matrix) {
  nlohmann::ordered_json root;
  root["version"] = matrix.version;
  root["exercises_dir"] = matrix.exercises_dir;
  if (!matrix.helpers.empty()) {
    root[std::string(k_helpers_field)] = matrix.helpers;
  }
  nlohmann::ordered_json scripts = nlohmann::ordered_json::object();
  for (const auto& [id, entry] : matrix.scripts) {
    nlohmann::ordered_json out;
    out["class"] = entry.class_name;
    out["sha256"] = entry.sha256;
    if (!entry.files.empty()) {
      nlohmann::ordered_json list = nlohmann::ordered_json::array();
      for (const auto& file : entry.files) {
        nlohmann::ordered_json item{{"path", file.path}};
        if (!file.sha256.empty()) {
          item["sha256"] = file.sha256;
        }
        if (file.declared) {
          item["declared"] = true;
        }
        list.push_back(std::move(item));
      }
      out["files"] = std::move(list);
    }
    auto optional = [&out](std::string_view key, const std::string& value) {
      if (!value.empty()) {
        out[std::string(key)] = value;
      }
    };
    optional("reviewed_by", entry.reviewed_by);
    optional("reviewed_at", entry.reviewed_at);
    optional("reason", entry.reason);
    optional("note", entry.note);
    optional("jax_platforms", entry.jax_platforms);
    if (entry.proves) {
      out["proves"] = to_string(*entry.proves);
    }
    if (const auto& acceptance = entry.initialize_condition) {
      nlohmann::ordered_json item{{"line", acceptance->line}};
      if (!acceptance->file.empty()) {
        item["file"] = acceptance->file;
      }
      if (!acceptance->condition.empty()) {
        item["condition"] = acceptance->condition;
      }
      item["reason"] = acceptance->reason;
      out["initialize_condition"] = std::move(item);
    }
    if (!entry.overrides.empty()) {
      nlohmann::ordered_json list = nlohmann::ordered_json::array();
      for (const auto& item : entry.overrides) {
        nlohmann::ordered_json override_item{{"rule", override_rule_text(item)}, {"line", item.line}};
        if (!item.file.empty()) {
          override_item["file"] = item.file;
        }
        override_item["reason"] = item.reason;
        list.push_back(std::move(override_item));
      }
      out["overrides"] = std::move(list);
    }
    if (!entry.evidence.empty()) {
      out["evidence"] = entry.evidence;
    }
    for (const auto& [key, member] : entry.extra.items()) {
      out[key] = member;
    }
    scripts[id] = std::move(out);
  }
  root["scripts"] = std::move(scripts);
  for (const auto& [key, member] : matrix.extra.items()) {
    root[key] = member;
  }
  return root.dump(2) + "\n";
}

std::string_view to_string(Proves proves) {
  switch (proves) {
  case Proves::training:
    return "training";
  case Proves::discovery:
    return "discovery";
  case Proves::logs:
    return "logs";
  }
  return "logs";
}

std::optional<Proves> parse_proves(std::string_view name) {
  for (const Proves proves : k_proves) {
    if (to_string(proves) == name) {
      return proves;
    }
  }
  return std::nullopt;
}

std::string override_rule_text(const EvidenceOverride& override_item) {
  return override_item.of == OverrideOf::missing_marker ? std::string(k_missing_prefix) + override_item.rule
                                                        : override_item.rule;
}

bool same_content(const Matrix& a, const Matrix& b) {
  return a.version == b.version && a.exercises_dir == b.exercises_dir && a.helpers == b.helpers &&
         a.scripts == b.scripts && a.extra == b.extra;
}

} // namespace tpulaunch
