#include "tpulaunch/receipts.hpp"

#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "tpulaunch/json_reader.hpp"
#include "tpulaunch/text_file.hpp"

namespace tpulaunch {
namespace {

namespace fs = std::filesystem;

constexpr double k_tolerance = 1e-9;

bool close(double a, double b) { return std::fabs(a - b) <= k_tolerance * std::max(1.0, std::max(std::fabs(a), std::fabs(b))); }

bool same_numbers(const nlohmann::json& a, const nlohmann::json& b) {
  if (!a.is_array() || !b.is_array() || a.size() != b.size()) {
    return false;
  }
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!a[i].is_number() || !b[i].is_number() || !close(a[i].get<double>(), b[i].get<double>())) {
      return false;
    }
  }
  return true;
}

class Checker {
public:
  Checker(VerifyReport& report, const Slice& slice, const VerifyOptions& options)
      : m_report(report), m_slice(slice), m_options(options) {}

  void add(int worker, std::string field, std::string message) {
    m_report.findings.push_back(VerifyFinding{worker, std::move(field), std::move(message)});
  }

  // The folder holding worker i's files: worker-<i>/<run-id>/ (how `scp --recurse` of the remote
  // run folder lands), or worker-<i>/ itself for the course form.
  static fs::path content_dir(const fs::path& run, int worker) {
    const fs::path dir = run / fmt::format("worker-{}", worker);
    const fs::path nested = dir / run.filename();
    std::error_code ec;
    return fs::is_directory(nested, ec) ? nested : dir;
  }

  std::optional<nlohmann::json> read_json(int worker, const fs::path& path) {
    auto text = read_text_file(path.string(), "receipt");
    if (!text) {
      add(worker, path.filename().string(), text.error().message);
      return std::nullopt;
    }
    auto doc = parse_json(*text, path.string());
    if (!doc) {
      add(worker, path.filename().string(), doc.error().message);
      return std::nullopt;
    }
    if (!doc->value.is_object()) {
      add(worker, path.filename().string(), "not a JSON object");
      return std::nullopt;
    }
    return std::move(doc->value);
  }

  // Compares an integer field with what the catalog says.
  void expect_int(int worker, const nlohmann::json& receipt, std::string_view field, long long expected) {
    auto it = receipt.find(field);
    if (it == receipt.end() || !it->is_number_integer()) {
      add(worker, std::string(field), "missing or not an integer");
    } else if (it->get<long long>() != expected) {
      add(worker, std::string(field), fmt::format("is {}, but {} has {}", it->get<long long>(), m_slice.name, expected));
    }
  }

  void check_backend(int worker, const nlohmann::json& receipt) {
    auto it = receipt.find("backend");
    const std::string backend = it != receipt.end() && it->is_string() ? it->get<std::string>() : "";
    if (backend == "tpu") {
      return;
    }
    if (backend == "standin" && m_options.allow_standin) {
      m_report.standin = true;
      return;
    }
    add(worker, "backend", fmt::format("not a TPU result (backend '{}')", backend));
  }

  // Checks the kind and the topology fields shared by both receipt kinds.
  bool check_common(int worker, const nlohmann::json& receipt, std::string_view expected_kind) {
    auto kind = receipt.find("kind");
    const std::string found = kind != receipt.end() && kind->is_string() ? kind->get<std::string>() : "";
    if (found != expected_kind) {
      add(worker, "kind",
          found == "discovery"  ? "a discovery receipt: topology discovery is not training"
          : found == "training" ? "a training receipt, but a discovery receipt was asked for"
                                : fmt::format("is '{}', expected '{}'", found, expected_kind));
      return false;
    }
    expect_int(worker, receipt, "process_index", worker);
    expect_int(worker, receipt, "process_count", m_slice.hosts);
    expect_int(worker, receipt, "local_device_count", m_slice.local_device_count());
    expect_int(worker, receipt, "device_count", m_slice.device_count());
    check_backend(worker, receipt);
    return true;
  }

  // Receipts of kind `stem` (worker / discovery) in one worker's artifacts: the one expected and
  // any that should not be there.
  void check_stray_receipts(int worker, const fs::path& artifacts) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(artifacts, ec)) {
      const std::string name = entry.path().filename().string();
      for (const std::string_view stem : {"worker-", "discovery-"}) {
        if (name.starts_with(stem) && name.ends_with(".json") && name != fmt::format("{}{}.json", stem, worker)) {
          add(worker, name, "a receipt of another process in this worker's folder");
        }
      }
      if (name == "checkpoint.json" && worker != 0) {
        add(worker, name, "only process 0 publishes checkpoint.json");
      }
    }
  }

  void check_log(int worker, const fs::path& dir) {
    std::error_code ec;
    int logs = 0;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      if (entry.is_regular_file() && entry.path().extension() == ".txt") {
        ++logs;
      }
    }
    m_report.logs_found += logs;
    if (logs != 1) {
      add(worker, "log", logs == 0 ? fmt::format("no stdout log (*.txt) in {}", dir.string())
                                   : fmt::format("{} logs in {}, expected one per host", logs, dir.string()));
    }
  }

  void run(const fs::path& folder) {
    std::vector<std::optional<nlohmann::json>> receipts(static_cast<std::size_t>(m_slice.hosts));
    std::error_code ec;
    for (int worker = 0; worker < m_slice.hosts; ++worker) {
      const fs::path dir = content_dir(folder, worker);
      if (!fs::is_directory(dir, ec)) {
        add(worker, "folder", fmt::format("nothing was fetched: {} is missing", dir.string()));
        continue;
      }
      check_log(worker, dir);
      if (m_options.kind == VerifyKind::logs) {
        continue;
      }
      const fs::path artifacts = dir / "artifacts";
      check_stray_receipts(worker, artifacts);
      const bool training = m_options.kind == VerifyKind::training;
      const fs::path own = artifacts / fmt::format("{}-{}.json", training ? "worker" : "discovery", worker);
      const fs::path other = artifacts / fmt::format("{}-{}.json", training ? "discovery" : "worker", worker);
      if (!fs::exists(own, ec)) {
        add(worker, own.filename().string(),
            fs::exists(other, ec) ? fmt::format("missing; only {} is there, and {}", other.filename().string(),
                                                training ? "topology discovery is not training"
                                                         : "a training receipt is not a discovery receipt")
                                  : "missing");
        continue;
      }
      auto receipt = read_json(worker, own);
      if (!receipt) {
        continue;
      }
      ++m_report.receipts_checked;
      if (check_common(worker, *receipt, training ? "training" : "discovery") && training) {
        check_training(worker, *receipt);
        receipts[static_cast<std::size_t>(worker)] = std::move(receipt);
      }
    }
    if (m_options.kind == VerifyKind::training) {
      check_agreement(receipts);
      check_checkpoint(folder, receipts);
    }
  }

  void check_training(int worker, const nlohmann::json& receipt) {
    if (receipt.value("check", std::string()) != "passed") {
      add(worker, "check", "the program's own result check did not pass");
    }
    auto inputs = receipt.find("owned_inputs");
    if (inputs == receipt.end() || !inputs->is_array() || inputs->empty()) {
      add(worker, "owned_inputs", "missing or empty");
    }
    for (const char* field : {"global_mean_gradient"}) {
      if (!receipt.contains(field) || !receipt[field].is_number()) {
        add(worker, field, "missing or not a number");
      }
    }
    if (!receipt.contains("params_after") || !receipt["params_after"].is_array()) {
      add(worker, "params_after", "missing or not an array");
    }
  }

  // Every worker must own distinct inputs and agree on the global result and the new parameters.
  void check_agreement(const std::vector<std::optional<nlohmann::json>>& receipts) {
    std::map<long long, int> owner;
    const nlohmann::json* reference = nullptr;
    int reference_worker = -1;
    for (int worker = 0; worker < static_cast<int>(receipts.size()); ++worker) {
      const auto& receipt = receipts[static_cast<std::size_t>(worker)];
      if (!receipt) {
        continue;
      }
      if (auto inputs = receipt->find("owned_inputs"); inputs != receipt->end() && inputs->is_array()) {
        for (const auto& value : *inputs) {
          if (!value.is_number_integer()) {
            add(worker, "owned_inputs", "holds a value that is not an integer");
            break;
          }
          auto [it, inserted] = owner.emplace(value.get<long long>(), worker);
          if (!inserted && it->second != worker) {
            add(worker, "owned_inputs", fmt::format("input {} is also owned by worker {}", it->first, it->second));
            break;
          }
        }
      }
      if (reference == nullptr) {
        reference = &*receipt;
        reference_worker = worker;
        continue;
      }
      const auto& g = (*receipt)["global_mean_gradient"];
      const auto& rg = (*reference)["global_mean_gradient"];
      if (g.is_number() && rg.is_number() && !close(g.get<double>(), rg.get<double>())) {
        add(worker, "global_mean_gradient",
            fmt::format("{} differs from worker {}'s {}", g.dump(), reference_worker, rg.dump()));
      }
      if (!same_numbers((*receipt)["params_after"], (*reference)["params_after"])) {
        add(worker, "params_after", fmt::format("differs from worker {}'s", reference_worker));
      }
    }
  }

  void check_checkpoint(const fs::path& folder, const std::vector<std::optional<nlohmann::json>>& receipts) {
    std::error_code ec;
    const fs::path path = content_dir(folder, 0) / "artifacts" / "checkpoint.json";
    if (!fs::exists(path, ec)) {
      add(0, "checkpoint.json", "missing: process 0 publishes it after the barrier");
      return;
    }
    auto checkpoint = read_json(0, path);
    if (!checkpoint) {
      return;
    }
    if (checkpoint->value("kind", std::string()) != "checkpoint") {
      add(0, "checkpoint.json", "kind is not 'checkpoint'");
    }
    if (!checkpoint->contains("written_by") || (*checkpoint)["written_by"] != 0) {
      add(0, "checkpoint.json", "written_by is not process 0");
    }
    if (!checkpoint->contains("process_count") || (*checkpoint)["process_count"] != m_slice.hosts) {
      add(0, "checkpoint.json", fmt::format("process_count is not {}", m_slice.hosts));
    }
    if (receipts.empty() || !receipts[0]) {
      return;
    }
    if (!same_numbers((*checkpoint)["params"], (*receipts[0])["params_after"])) {
      add(0, "checkpoint.json", "params disagree with the receipts' params_after");
    }
    const auto& g = (*checkpoint)["global_mean_gradient"];
    const auto& rg = (*receipts[0])["global_mean_gradient"];
    if (!g.is_number() || !rg.is_number() || !close(g.get<double>(), rg.get<double>())) {
      add(0, "checkpoint.json", "global_mean_gradient disagrees with the receipts");
    }
  }

private:
  VerifyReport& m_report;
  const Slice& m_slice;
  const VerifyOptions& m_options;
};

} // namespace

Result<VerifyReport> verify_run(const std::string& folder, const Slice& slice, const VerifyOptions& options) {
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) {
    return config_error(fmt::format("run folder '{}' does not exist or is not a folder", folder));
  }
  VerifyReport report;
  report.folder = folder;
  report.slice = slice.name;
  report.kind = options.kind;
  report.workers = slice.hosts;
  fs::path path(folder);
  if (!path.has_filename()) {
    path = path.parent_path(); // "run/" -> "run", so the run id is its last component
  }
  Checker checker(report, slice, options);
  checker.run(path);
  return report;
}

} // namespace tpulaunch
