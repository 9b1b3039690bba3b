#include "tpulaunch/run/stage.hpp"

#include <ctime>
#include <filesystem>
#include <random>

#include <fmt/format.h>

#include "tpulaunch/matrix/matrix_file.hpp"
#include "tpulaunch/remote/remote_program.hpp"
#include "tpulaunch/util/sha256.hpp"
#include "tpulaunch/util/text_file.hpp"
#include "tpulaunch/values/validate.hpp"

namespace tpulaunch {
namespace {

namespace fs = std::filesystem;

bool is_hex(std::string_view text, std::size_t size) {
  return text.size() == size && text.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

// A path below code/: relative, '/'-separated, no empty, "." or ".." part.
bool is_staged_path(std::string_view path) {
  if (path.empty() || path.front() == '/') {
    return false;
  }
  for (const auto& part : fs::path(path)) {
    const std::string name = part.generic_string();
    if (name.empty() || name == "." || name == "..") {
      return false;
    }
  }
  return !path.ends_with('/');
}

Status check_request(const StageRequest& request) {
  const PlanRecord& plan = request.plan;
  TPULAUNCH_CHECK(validate_value(ValueKind::script_id, plan.script));
  TPULAUNCH_CHECK(validate_value(ValueKind::run_id, plan.run_id));
  if (!is_hex(plan.plan_sha256, 64)) {
    return usage_error(fmt::format("--plan '{}': expected the plan's SHA-256 (64 lower-case hex digits)",
                                   printable(plan.plan_sha256)));
  }
  // One line each in the plan record.
  for (const std::string* value : {&plan.tpu, &plan.zone, &plan.project, &plan.capacity, &plan.provisioning,
                                   &plan.checkpoint_dir, &plan.resumes}) {
    if (printable(*value) != *value) {
      return usage_error(fmt::format("'{}': a plan record value is one line of printable text", printable(*value)));
    }
  }
  if (!plan.resumes.empty()) {
    TPULAUNCH_CHECK(validate_value(ValueKind::run_id, plan.resumes));
  }
  const RemoteProgram& guard = run_guard_program();
  if (request.guard_sha256 != guard.sha256) {
    return refused_error(fmt::format("this tpulaunch's run guard has sha256 {}, not {} as the plan pinned: run the plan "
                                     "with the tpulaunch that made it (set TPULAUNCH), or make the plan again",
                                     guard.sha256, printable(request.guard_sha256)));
  }
  for (const StageFile& file : request.files) {
    if (!is_staged_path(file.path) || !is_hex(file.sha256, 64)) {
      return usage_error(fmt::format("--file {} {} {}: expected a file, its path below code/ (relative, no '..') and "
                                     "its SHA-256",
                                     printable(file.local), printable(file.path), printable(file.sha256)));
    }
  }
  return Ok{};
}

// 32 random hex digits: a start token no other write has.
std::string start_token() {
  std::random_device random;
  std::string token;
  for (int i = 0; i < 4; ++i) {
    token += fmt::format("{:08x}", random());
  }
  return token;
}

Status write_into(const fs::path& folder, const std::string& path, std::string_view content) {
  const fs::path target = folder / path;
  std::error_code ec;
  fs::create_directories(target.parent_path(), ec);
  if (ec) {
    return failure(fmt::format("cannot create {}: {}", target.parent_path().string(), ec.message()));
  }
  return write_file_atomically(target.string(), content);
}

} // namespace

std::string staged_folder(const PlanRecord& plan) {
  return fmt::format("stage/jax-tpu-lab/runs/{}/{}/staged-{}", plan.script, plan.run_id,
                     std::string_view(plan.plan_sha256).substr(0, 16));
}

Result<PlanRecord> write_stage(const StageRequest& request) {
  TPULAUNCH_CHECK(check_request(request));
  // Every file is read and checked before anything is written: a file that changed since the plan
  // leaves no stage folder behind.
  std::vector<std::pair<std::string, std::string>> contents; // path below code/, bytes
  if (request.discovery) {
    contents.emplace_back("discover.py", std::string(discovery_program().text));
  }
  for (const StageFile& file : request.files) {
    TPULAUNCH_TRY(std::string text, read_text_file(file.local, "staged file", k_max_script_bytes));
    const std::string digest = sha256_hex(text);
    if (digest != file.sha256) {
      return refused_error(fmt::format("{} changed since the plan was made (its sha256 is {} now, the plan pinned {}): "
                                       "make the plan again",
                                       printable(file.path), digest, file.sha256));
    }
    contents.emplace_back(file.path, std::move(text));
  }
  PlanRecord plan = request.plan;
  plan.start = start_token();
  plan.written = static_cast<long long>(std::time(nullptr));
  if (!request.discovery && !request.files.empty()) {
    plan.script_sha256 = request.files.front().sha256; // the plan stages the script first
  }
  const fs::path folder = fs::path(request.run_dir) / staged_folder(plan);
  TPULAUNCH_CHECK(write_into(folder, std::string(k_run_guard_file), run_guard_program().text));
  TPULAUNCH_CHECK(write_into(folder, "start", plan.start + "\n"));
  for (const auto& [path, text] : contents) {
    TPULAUNCH_CHECK(write_into(folder / "code", path, text));
  }
  TPULAUNCH_CHECK(write_into(request.run_dir, std::string(k_plan_record_file), format_record(to_record(plan))));
  return plan;
}

} // namespace tpulaunch
