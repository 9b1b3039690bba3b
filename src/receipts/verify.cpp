#include "tpulaunch/receipts/verify.hpp"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "receipt.hpp"
#include "tpulaunch/json/json_reader.hpp"
#include "tpulaunch/receipts/run_folder.hpp"
#include "tpulaunch/run/records.hpp"

namespace tpulaunch {
namespace {

using receipts::close;
using receipts::json;
using receipts::json_type_name;
using receipts::Receipt;
using receipts::Type;

std::string file_name(std::string_view stem, int index) { return fmt::format("{}-{}.json", stem, index); }

// What the run-wide checks need from one worker's training receipt.
struct TrainingFacts {
  ReceiptForm form = ReceiptForm::course;
  json value; // the receipt
};

class Checker {
public:
  Checker(VerifyReport& report, const Target& target, const VerifyOptions& options)
      : m_report(report), m_target(target), m_slice(*target.slice), m_options(options) {}

  void run(const std::vector<FetchedWorker>& workers) {
    std::vector<std::optional<TrainingFacts>> training(static_cast<std::size_t>(m_target.processes()));
    m_recorded.assign(static_cast<std::size_t>(m_target.processes()), false);
    for (int worker = 0; worker < m_target.processes(); ++worker) {
      if (static_cast<std::size_t>(worker) >= workers.size() || !workers[static_cast<std::size_t>(worker)].present) {
        const std::string folder = static_cast<std::size_t>(worker) < workers.size()
                                       ? workers[static_cast<std::size_t>(worker)].folder
                                       : fmt::format("worker-{}", worker);
        add(worker, "folder", fmt::format("nothing was fetched: {} is missing", folder));
        continue;
      }
      const FetchedWorker& fetched = workers[static_cast<std::size_t>(worker)];
      if (!check_status_record(worker, fetched)) {
        continue; // no record: the worker's own word is what is missing, not its log and receipt
      }
      m_recorded[static_cast<std::size_t>(worker)] = true;
      check_log(worker, fetched);
      if (m_options.kind == VerifyKind::logs) {
        check_standin_mark(worker, fetched);
        continue;
      }
      check_stray_files(worker, fetched);
      if (m_options.kind == VerifyKind::discovery) {
        check_discovery(worker, fetched);
      } else {
        training[static_cast<std::size_t>(worker)] = check_training(worker, fetched);
      }
    }
    check_extra_folders(workers);
    if (m_options.kind == VerifyKind::training) {
      check_run(workers, training);
    }
  }

private:
  void add(int worker, std::string field, std::string message) {
    m_report.findings.push_back(VerifyFinding{worker, std::move(field), std::move(message)});
  }

  static const FetchedFile* find(const FetchedWorker& worker, std::string_view name) {
    for (const FetchedFile& file : worker.artifacts) {
      if (file.name == name) {
        return &file;
      }
    }
    return nullptr;
  }

  // The run guard's record of this worker's part: anything but `state=succeeded` with status 0 is a
  // finding, with the worker's own one-sentence summary (printed as text, never as terminal
  // control); so is a record of another run, plan, start or worker. False when there is no record
  // of this run to read: the worker's other files are then not checked.
  bool check_status_record(int worker, const FetchedWorker& fetched) {
    if (!fetched.status_record) {
      add(worker, std::string(k_run_record),
          fmt::format("missing from {}: the run guard's record of this worker's part did not come back, so nothing "
                      "says the program ran and succeeded there (its log and receipts are not checked)",
                      fetched.folder));
      return false;
    }
    const FetchedFile& file = *fetched.status_record;
    if (!file.error.empty()) {
      add(worker, file.name, file.error);
      return false;
    }
    const Record record = parse_record(file.text);
    if (!check_identity(worker, file.name, record)) {
      return false;
    }
    const std::string state = record.value("state");
    const std::string summary = record.value("summary");
    const std::string status = record.value("status");
    if (state != "succeeded") {
      add(worker, file.name,
          fmt::format("the worker recorded {}: {}", state.empty() ? "no outcome" : printable(state),
                      summary.empty() ? "no summary" : printable(summary)));
    } else if (!status.empty() && status != "0") {
      add(worker, file.name, fmt::format("the worker recorded succeeded, but with status {}", printable(status)));
    }
    return true;
  }

  // Folders past the last process (verify_fetched's extra entries): a worker-4/ on a slice of 4
  // hosts is another run's or another slice's, and never verifies as part of this one.
  void check_extra_folders(const std::vector<FetchedWorker>& workers) {
    for (std::size_t i = static_cast<std::size_t>(m_target.processes()); i < workers.size(); ++i) {
      if (!workers[i].present) {
        continue;
      }
      add(-1, workers[i].folder,
          fmt::format("a folder of a worker this run does not have: the run on {}{} has {} ({} ... {}); it holds "
                      "results of another slice or run",
                      m_target.nodes > 1 ? fmt::format("{} slices of ", m_target.nodes) : "", m_slice.name,
                      counted(static_cast<std::size_t>(m_target.processes()), "process", "processes"),
                      process_folder(0, m_target.hosts(), m_target.nodes),
                      process_folder(m_target.processes() - 1, m_target.hosts(), m_target.nodes)));
    }
  }

  // The record is this run's: the plan record's script, run id, plan and start, and this worker's
  // index (within its slice). False, with a finding, when it is another's.
  bool check_identity(int worker, const std::string& name, const Record& record) {
    const int hosts = std::max(m_target.hosts(), 1);
    const std::string index = std::to_string(worker % hosts);
    if (record.value("worker") != index && record.get("worker")) {
      add(worker, name, fmt::format("is worker {}'s record, not worker {}'s", printable(record.value("worker")), index));
      return false;
    }
    if (!m_options.plan) {
      return true;
    }
    if (auto why = foreign_run_record(record, *m_options.plan)) {
      add(worker, name, std::move(*why));
      return false;
    }
    return true;
  }

  void check_log(int worker, const FetchedWorker& fetched) {
    m_report.logs_found += fetched.logs;
    if (m_options.plan) {
      // The run guard names each log <script>-tpu-<host>.txt (the last part of a nested id).
      const std::string& script = m_options.plan->script;
      const std::string prefix = script.substr(script.rfind('/') + 1) + "-tpu-";
      for (const std::string& name : fetched.log_names) {
        if (!name.starts_with(prefix)) {
          add(worker, name, fmt::format("is not a log of {} (its logs are {}<host>.txt)", script, prefix));
        }
      }
    }
    if (fetched.logs != 1) {
      add(worker, "log", fetched.logs == 0 ? fmt::format("no stdout log (*.txt) in {}", fetched.folder)
                                           : fmt::format("{} logs in {}, expected one per host", fetched.logs, fetched.folder));
    }
  }

  // A worker's folder holds its own receipt only, and only process 0 publishes the checkpoint.
  void check_stray_files(int worker, const FetchedWorker& fetched) {
    for (const FetchedFile& file : fetched.artifacts) {
      for (const std::string_view stem : {"worker", "discovery"}) {
        if (file.name.starts_with(std::string(stem) + "-") && file.name != file_name(stem, worker)) {
          add(worker, file.name, "a receipt of another process in this worker's folder");
        }
      }
      if (file.name == "checkpoint.json" && worker != 0) {
        add(worker, file.name, "only process 0 publishes checkpoint.json");
      }
    }
  }

  // Parses one artifact; a file that is unreadable, not JSON or not an object is a finding.
  std::optional<json> parse(int worker, const FetchedFile& file) {
    if (!file.error.empty()) {
      add(worker, file.name, file.error);
      return std::nullopt;
    }
    auto doc = parse_json(file.text, file.name);
    if (!doc) {
      add(worker, file.name, doc.error().message);
      return std::nullopt;
    }
    if (!doc->value.is_object()) {
      add(worker, file.name, fmt::format("is {}, expected a JSON object", json_type_name(doc->value)));
      return std::nullopt;
    }
    return std::move(doc->value);
  }

  // The receipt of the kind asked for; when only the other kind is there, say so.
  std::optional<json> own_receipt(int worker, const FetchedWorker& fetched, bool training) {
    const std::string own = file_name(training ? "worker" : "discovery", worker);
    const std::string other = file_name(training ? "discovery" : "worker", worker);
    const FetchedFile* file = find(fetched, own);
    if (file == nullptr) {
      add(worker, own,
          find(fetched, other) != nullptr
              ? fmt::format("missing; only {} is there, and {}", other,
                            training ? "topology discovery is not training" : "a training receipt is not a discovery receipt")
              : "missing");
      return std::nullopt;
    }
    auto value = parse(worker, *file);
    if (value) {
      ++m_report.receipts_checked;
    }
    return value;
  }

  void check_backend(const Receipt& r) {
    const auto backend = r.string("backend");
    if (!backend || *backend == "tpu") {
      return;
    }
    if (*backend == "standin" && m_options.allow_standin) {
      m_report.standin = true;
      return;
    }
    r.add("backend", fmt::format("not a TPU result (backend '{}')", printable(*backend)));
  }

  // --kind logs checks no receipt, but a receipt that is there and names the stand-in's backend
  // makes the run a stand-in run, as for the other kinds: said in the report with the test seam, a
  // finding without it. Whatever else a receipt holds (or a file that is not one) is not the logs'
  // business.
  void check_standin_mark(int worker, const FetchedWorker& fetched) {
    for (const FetchedFile& file : fetched.artifacts) {
      if (!file.error.empty()) {
        continue;
      }
      const auto doc = parse_json(file.text, file.name);
      if (!doc || !doc->value.is_object()) {
        continue;
      }
      const auto backend = doc->value.find("backend");
      if (backend == doc->value.end() || *backend != "standin") {
        continue;
      }
      if (m_options.allow_standin) {
        m_report.standin = true;
      } else {
        add(worker, file.name, "backend: not a TPU result (backend 'standin')");
      }
      return;
    }
  }

  // The topology every receipt reports, under the names its form uses.
  void check_topology(const Receipt& r, std::string_view local_key, std::string_view global_key) {
    if (auto index = r.integer("process_index"); index && *index != r.worker()) {
      r.add("process_index", fmt::format("is {}, but this is worker {}'s folder (gcloud worker i runs JAX process i)",
                                         *index, r.worker()));
    }
    r.expect_int("process_count", m_target.processes(), m_slice.name);
    r.expect_int(local_key, m_slice.local_device_count(), m_slice.name);
    r.expect_int(global_key, m_target.devices(), m_slice.name);
    check_backend(r);
  }

  void check_discovery(int worker, const FetchedWorker& fetched) {
    auto value = own_receipt(worker, fetched, false);
    if (!value) {
      return;
    }
    const Receipt r(m_report, worker, *value);
    const auto kind = value->find("kind");
    if (kind == value->end() || *kind != "discovery") {
      r.add("kind", kind != value->end() && *kind == "training"
                        ? "a training receipt, but a discovery receipt was asked for"
                        : "is not 'discovery'");
      return;
    }
    check_topology(r, "local_device_count", "device_count");
  }

  std::optional<TrainingFacts> check_training(int worker, const FetchedWorker& fetched) {
    auto value = own_receipt(worker, fetched, true);
    if (!value) {
      return std::nullopt;
    }
    const Receipt r(m_report, worker, *value);
    const auto kind = value->find("kind");
    if (kind != value->end() && *kind != "training") {
      r.add("kind", *kind == "discovery" ? "a discovery receipt: topology discovery is not training"
                                         : fmt::format("is {}, expected 'training' or no kind (the course's form)",
                                                       printable(kind->dump())));
      return std::nullopt;
    }
    const ReceiptForm form = kind == value->end() ? ReceiptForm::course : ReceiptForm::detailed;
    if (m_report.form && *m_report.form != form) {
      r.add("kind", fmt::format("this receipt has the {} form, but an earlier one has the {} form", to_string(form),
                                to_string(*m_report.form)));
      return std::nullopt;
    }
    m_report.form = form;
    if (form == ReceiptForm::course) {
      check_course_receipt(r);
    } else {
      check_detailed_receipt(r);
    }
    return TrainingFacts{form, std::move(*value)};
  }

  // The lesson's program: process p owns input p + 1; theta starts at 0 and takes one step of
  // 0.1 * the global mean gradient, 2 * (0 - mean(p + 1)) = -(P + 1) over P processes.
  void check_course_receipt(const Receipt& r) {
    const int processes = m_target.processes();
    const double hosts = processes;
    check_topology(r, "local_devices", "global_devices");
    r.expect_number("owned_input", r.worker() + 1.0, "the lesson's input is process_index + 1");
    const std::string p = counted(static_cast<std::size_t>(processes), "process", "processes");
    r.expect_number("global_mean_gradient", -(hosts + 1), fmt::format("-(P + 1) for P = {}", p));
    r.expect_number("updated_theta", 0.1 * (hosts + 1), fmt::format("0.1 * (P + 1) for P = {}", p));
  }

  void check_detailed_receipt(const Receipt& r) {
    check_topology(r, "local_device_count", "device_count");
    if (auto check = r.string("check"); check && *check != "passed") {
      r.add("check", "the program's own result check did not pass");
    }
    if (const json* inputs = r.get("owned_inputs", Type::array); inputs != nullptr && inputs->empty()) {
      r.add("owned_inputs", "is empty");
    }
    (void)r.number("global_mean_gradient");
    (void)r.get("params_after", Type::array);
  }

  void check_run(const std::vector<FetchedWorker>& workers, const std::vector<std::optional<TrainingFacts>>& training) {
    if (!m_report.form) {
      return; // no receipt could be read: each worker already has a finding
    }
    check_distinct_inputs(training);
    check_agreement(training);
    check_checkpoint(workers, training);
  }

  // Each process owns its own inputs: no value may appear in two receipts.
  void check_distinct_inputs(const std::vector<std::optional<TrainingFacts>>& training) {
    std::map<double, int> owner;
    for (int worker = 0; worker < static_cast<int>(training.size()); ++worker) {
      const auto& facts = training[static_cast<std::size_t>(worker)];
      if (!facts) {
        continue;
      }
      const bool course = facts->form == ReceiptForm::course;
      const std::string_view key = course ? "owned_input" : "owned_inputs";
      const auto it = facts->value.find(key);
      if (it == facts->value.end()) {
        continue;
      }
      const json values = course ? json::array({*it}) : *it;
      if (!values.is_array()) {
        continue;
      }
      for (const json& value : values) {
        if (!value.is_number()) {
          add(worker, std::string(key), "holds a value that is not a number");
          break;
        }
        auto [where, inserted] = owner.emplace(value.get<double>(), worker);
        if (!inserted && where->second != worker) {
          add(worker, std::string(key), fmt::format("input {} is also owned by worker {}", value.dump(), where->second));
          break;
        }
      }
    }
  }

  // Every replica applied the same update: the detailed form compares the workers directly (the
  // course form's values are each checked against the formula already).
  void check_agreement(const std::vector<std::optional<TrainingFacts>>& training) {
    const TrainingFacts* reference = nullptr;
    int reference_worker = -1;
    for (int worker = 0; worker < static_cast<int>(training.size()); ++worker) {
      const auto& facts = training[static_cast<std::size_t>(worker)];
      if (!facts || facts->form != ReceiptForm::detailed) {
        continue;
      }
      if (reference == nullptr) {
        reference = &*facts;
        reference_worker = worker;
        continue;
      }
      for (const char* key : {"global_mean_gradient", "params_after"}) {
        if (!same_numbers(facts->value, reference->value, key)) {
          add(worker, key, fmt::format("differs from worker {}'s", reference_worker));
        }
      }
    }
  }

  // Both hold `key` as the same number, or as arrays of the same numbers; false otherwise.
  static bool same_numbers(const json& a, const json& b, std::string_view key) {
    const auto x = a.find(key);
    const auto y = b.find(key);
    if (x == a.end() || y == b.end()) {
      return true; // already a finding of its own
    }
    const json xs = x->is_array() ? *x : json::array({*x});
    const json ys = y->is_array() ? *y : json::array({*y});
    if (xs.size() != ys.size()) {
      return false;
    }
    for (std::size_t i = 0; i < xs.size(); ++i) {
      if (!xs[i].is_number() || !ys[i].is_number() || !close(xs[i].get<double>(), ys[i].get<double>())) {
        return false;
      }
    }
    return true;
  }

  void check_checkpoint(const std::vector<FetchedWorker>& workers, const std::vector<std::optional<TrainingFacts>>& training) {
    if (m_recorded.empty() || !m_recorded[0]) {
      return; // process 0's files were not checked: its missing record is the finding
    }
    const FetchedFile* file = workers.empty() ? nullptr : find(workers[0], "checkpoint.json");
    if (file == nullptr) {
      if (!workers.empty() && workers[0].present) {
        add(0, "checkpoint.json", "missing: process 0 publishes it after the barrier");
      }
      return;
    }
    auto value = parse(0, *file);
    if (!value) {
      return;
    }
    const Receipt c(m_report, 0, *value, "checkpoint.json");
    if (*m_report.form == ReceiptForm::course) {
      c.expect_int("global_devices", m_target.devices(), m_slice.name);
      const auto theta = c.number("theta");
      for (int worker = 0; theta && worker < static_cast<int>(training.size()); ++worker) {
        const auto& facts = training[static_cast<std::size_t>(worker)];
        if (!facts) {
          continue;
        }
        const auto updated = facts->value.find("updated_theta");
        if (updated != facts->value.end() && updated->is_number() && !close(updated->get<double>(), *theta)) {
          add(worker, "updated_theta", fmt::format("is {}, but the checkpoint's theta is {}", updated->get<double>(), *theta));
        }
      }
      return;
    }
    if (auto kind = c.string("kind"); kind && *kind != "checkpoint") {
      c.add("kind", "is not 'checkpoint'");
    }
    if (auto by = c.integer("written_by"); by && *by != 0) {
      c.add("written_by", fmt::format("is {}, but only process 0 publishes the checkpoint", *by));
    }
    c.expect_int("process_count", m_target.processes(), m_slice.name);
    if (training.empty() || !training[0]) {
      return;
    }
    if (!same_numbers(*value, training[0]->value, "global_mean_gradient")) {
      c.add("global_mean_gradient", "disagrees with the receipts");
    }
    json renamed = *value;
    if (auto params = c.get("params", Type::array); params != nullptr) {
      renamed["params_after"] = *params;
      if (!same_numbers(renamed, training[0]->value, "params_after")) {
        c.add("params", "disagree with the receipts' params_after");
      }
    }
  }

  VerifyReport& m_report;
  const Target& m_target;
  const Slice& m_slice; // each node's
  const VerifyOptions& m_options;
  std::vector<bool> m_recorded; // per process: its run record was read, so its files were checked
};

} // namespace

VerifyReport verify_fetched(const std::vector<FetchedWorker>& workers, const Target& target, const VerifyOptions& options) {
  VerifyReport report;
  report.slice = target.slice->name;
  report.kind = options.kind;
  report.workers = target.processes();
  Checker(report, target, options).run(workers);
  return report;
}

} // namespace tpulaunch
