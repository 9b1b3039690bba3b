// verify's reading of a run folder: which folder holds each worker's files, and those files
// read (size-limited, every failure kept as the file's error for the checks to report).
#include <algorithm>
#include <filesystem>
#include <set>

#include <fmt/format.h>

#include "tpulaunch/receipts/run_folder.hpp"
#include "tpulaunch/receipts/verify.hpp"
#include "tpulaunch/run/records.hpp"
#include "tpulaunch/util/text_file.hpp"

namespace tpulaunch {
namespace {

namespace fs = std::filesystem;

// A receipt or checkpoint larger than this is refused unread: the lesson's are under 300 bytes.
constexpr std::size_t k_max_receipt_bytes = 1024U * 1024U;

// The folder holding worker i's files: worker-<i>/<run-id>/ (slice-<s>/worker-<i>/ with slices) (how `scp --recurse` of
// the remote run folder lands), or worker-<i>/ itself for the course form. The nested folder is found by what it holds,
// not by the run folder's name, so a run folder copied under another name still verifies: the one subfolder of
// worker-<i>/ with a run record, else the one named like the run folder. Several with a record is a finding
// (`ambiguous`), never a guess.
struct ContentDir {
  fs::path dir;
  std::string ambiguous; // non-empty: why no single folder could be chosen
};

ContentDir content_dir(const fs::path& run, const std::string& folder) {
  const fs::path dir = run / folder;
  std::error_code ec;
  std::vector<fs::path> recorded;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.is_directory(ec) && fs::exists(entry.path() / k_run_record, ec)) {
      recorded.push_back(entry.path());
    }
  }
  if (recorded.size() == 1) {
    return {recorded.front(), ""};
  }
  if (recorded.size() > 1) {
    std::sort(recorded.begin(), recorded.end());
    return {dir, fmt::format("{} holds {} run folders with a run record ({} and {}): one run per folder",
                             dir.string(), recorded.size(), recorded[0].filename().string(),
                             recorded[1].filename().string())};
  }
  const fs::path nested = dir / run.filename();
  return {fs::is_directory(nested, ec) ? nested : dir, ""};
}

bool is_artifact(const std::string& name) {
  return name == "checkpoint.json" ||
         (name.ends_with(".json") && (name.starts_with("worker-") || name.starts_with("discovery-")));
}

FetchedWorker read_worker(const fs::path& run, const std::string& folder) {
  FetchedWorker fetched;
  const ContentDir content = content_dir(run, folder);
  const fs::path& dir = content.dir;
  fetched.folder = dir.string();
  std::error_code ec;
  fetched.present = fs::is_directory(dir, ec);
  if (!fetched.present) {
    return fetched;
  }
  if (!content.ambiguous.empty()) {
    fetched.status_record = FetchedFile{std::string(k_run_record), {}, content.ambiguous};
    return fetched;
  }
  if (fs::exists(dir / k_run_record, ec)) {
    FetchedFile record{std::string(k_run_record), {}, {}};
    auto text = read_text_file((dir / k_run_record).string(), "run record", k_max_receipt_bytes);
    if (text) {
      record.text = std::move(text).value();
    } else {
      record.error = text.error().message;
    }
    fetched.status_record = std::move(record);
  }
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.is_regular_file(ec) && entry.path().extension() == ".txt") {
      ++fetched.logs;
      fetched.log_names.push_back(entry.path().filename().string());
    }
  }
  for (const auto& entry : fs::directory_iterator(dir / "artifacts", ec)) {
    const std::string name = entry.path().filename().string();
    if (!is_artifact(name)) {
      continue;
    }
    FetchedFile file{name, {}, {}};
    auto text = read_text_file(entry.path().string(), "receipt", k_max_receipt_bytes);
    if (text) {
      file.text = std::move(text).value();
    } else {
      file.error = text.error().message;
    }
    fetched.artifacts.push_back(std::move(file));
  }
  return fetched;
}

// The worker and slice folders in `run` that no process of `target` has (worker-4/ on a slice of
// 4 hosts, slice-2/ of a run over 2 slices), sorted: each is a finding of its own.
std::vector<std::string> extra_folders(const fs::path& run, const Target& target) {
  std::set<std::string> expected;
  for (int process = 0; process < target.processes(); ++process) {
    const std::string folder = process_folder(process, target.hosts(), target.nodes);
    expected.insert(folder);
    expected.insert(folder.substr(0, folder.find('/'))); // slice-<s> itself
  }
  std::vector<std::string> extra;
  const auto look = [&](const fs::path& dir, const std::string& prefix) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      const std::string name = prefix + entry.path().filename().string();
      const std::string leaf = entry.path().filename().string();
      if ((leaf.starts_with(k_worker_folder_prefix) || leaf.starts_with(k_slice_folder_prefix)) &&
          !expected.contains(name)) {
        extra.push_back(name);
      }
    }
  };
  look(run, "");
  for (int slice = 0; target.nodes > 1 && slice < target.nodes; ++slice) {
    look(run / slice_folder(slice), slice_folder(slice) + "/");
  }
  std::sort(extra.begin(), extra.end());
  return extra;
}

} // namespace

Result<VerifyReport> verify_run(const std::string& folder, const Target& target, const VerifyOptions& options) {
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) {
    return config_error(fmt::format("run folder '{}' does not exist or is not a folder", printable(folder)));
  }
  fs::path path(folder);
  if (!path.has_filename()) {
    path = path.parent_path(); // "run/" -> "run", so the run id is its last component
  }
  std::vector<FetchedWorker> workers;
  workers.reserve(static_cast<std::size_t>(target.processes()));
  for (int worker = 0; worker < target.processes(); ++worker) {
    workers.push_back(read_worker(path, process_folder(worker, target.hosts(), target.nodes)));
  }
  for (std::string& extra : extra_folders(path, target)) {
    FetchedWorker fetched;
    fetched.present = true;
    fetched.folder = std::move(extra);
    workers.push_back(std::move(fetched));
  }
  // Whose run this is: the plan record the plan's write step left beside the worker folders.
  VerifyOptions checked = options;
  std::optional<VerifyFinding> no_plan;
  const std::string plan_file = (path / std::string(k_plan_record_file)).string();
  auto text = read_text_file(plan_file, "plan record", k_max_receipt_bytes);
  auto plan = text ? parse_plan_record(*text, plan_file) : Result<PlanRecord>(text.error());
  if (plan) {
    checked.plan = std::move(plan).value();
  } else {
    no_plan = VerifyFinding{-1, std::string(k_plan_record_file),
                            fmt::format("{}: whose results these are cannot be told (the plan's write step writes it)",
                                        plan.error().message)};
  }
  VerifyReport report = verify_fetched(workers, target, checked);
  if (no_plan) {
    report.findings.insert(report.findings.begin(), *no_plan);
  }
  report.folder = folder;
  return report;
}

// The names of verify.hpp's kinds and forms (what the CLI and the plan write).
std::string_view to_string(VerifyKind kind) {
  switch (kind) {
  case VerifyKind::training: return "training";
  case VerifyKind::discovery: return "discovery";
  case VerifyKind::logs: return "logs";
  case VerifyKind::none: return "none";
  }
  return "none";
}

std::optional<VerifyKind> parse_verify_kind(std::string_view name) {
  for (const auto kind : k_verify_kinds) {
    if (to_string(kind) == name) {
      return kind;
    }
  }
  return std::nullopt;
}

std::string_view to_string(ReceiptForm form) { return form == ReceiptForm::course ? "course" : "detailed"; }

} // namespace tpulaunch
