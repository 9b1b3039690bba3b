#include "tpulaunch/receipts/verify.hpp"

#include <filesystem>
#include <fstream>
#include <memory>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/test_catalog.hpp"
#include "tpulaunch/receipts/run_folder.hpp"
#include "tpulaunch/run/records.hpp"

namespace tpulaunch {
namespace {

namespace fs = std::filesystem;

// Builds a fetched run folder as the full-form pipeline leaves it:
// <run>/worker-<i>/<run-id>/{<id>-tpu-<host>.txt, artifacts/{worker-<i>.json, checkpoint.json}}.
class DetailedReceiptsTest : public ::testing::Test {
protected:
  void SetUp() override {
    m_slice = m_catalog->find("v5litepod-16");
    m_run = fs::temp_directory_path() / ("tpulaunch-receipts-" + std::to_string(::getpid()) + "-" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name()) / "r1";
    fs::remove_all(m_run.parent_path());
    for (int i = 0; i < 4; ++i) {
      write_worker(i, receipt(i));
    }
    write_json(artifacts(0) / "checkpoint.json", {{"kind", "checkpoint"}, {"written_by", 0}, {"process_count", 4},
                                                  {"step", 1}, {"params", {0.75}}, {"global_mean_gradient", -2.5}});
    std::ofstream(m_run / "plan.rec") << format_record(to_record(m_plan));
  }

  // The run guard's record of worker i, of this run unless `changes` say otherwise.
  void write_record(int i, const std::vector<std::pair<std::string, std::string>>& changes = {}) {
    Record record{{{"record", std::string(k_run_record_kind)},
                   {"script", m_plan.script},
                   {"run-id", m_plan.run_id},
                   {"plan", m_plan.plan_sha256},
                   {"start", m_plan.start},
                   {"worker", std::to_string(i)},
                   {"state", "succeeded"},
                   {"status", "0"},
                   {"summary", "succeeded"}}};
    for (const auto& [key, value] : changes) {
      for (auto& field : record.fields) {
        if (field.first == key) {
          field.second = value;
        }
      }
    }
    std::ofstream(content(i) / "run-status.rec") << format_record(record);
  }
  void TearDown() override { fs::remove_all(m_run.parent_path()); }

  fs::path content(int i) const { return m_run / ("worker-" + std::to_string(i)) / "r1"; }
  fs::path artifacts(int i) const { return content(i) / "artifacts"; }

  static nlohmann::json receipt(int i) {
    return {{"kind", "training"},        {"process_index", i},       {"process_count", 4},
            {"local_device_count", 4},   {"device_count", 16},       {"backend", "tpu"},
            {"owned_inputs", {i * 2, i * 2 + 1}}, {"global_mean_gradient", -2.5}, {"params_after", {0.75}},
            {"check", "passed"}};
  }
  static void write_json(const fs::path& path, const nlohmann::json& j) {
    fs::create_directories(path.parent_path());
    std::ofstream(path) << j.dump();
  }
  void write_worker(int i, const nlohmann::json& j) {
    write_json(artifacts(i) / ("worker-" + std::to_string(i) + ".json"), j);
    std::ofstream(content(i) / ("lesson-tpu-host-" + std::to_string(i) + ".txt")) << "log\n";
    write_record(i);
  }
  VerifyReport verify(VerifyKind kind = VerifyKind::training) {
    auto result = verify_run(m_run.string(), slice_target(*m_slice), VerifyOptions{kind, false});
    EXPECT_TRUE(result.ok());
    return result.ok() ? std::move(result).value() : VerifyReport{};
  }
  static bool has(const VerifyReport& r, int worker, const std::string& field, const std::string& text = "") {
    for (const auto& f : r.findings) {
      if (f.worker == worker && f.field == field && f.message.find(text) != std::string::npos) {
        return true;
      }
    }
    return false;
  }

  const Catalog* m_catalog = &test_support::embedded_catalog();
  const Slice* m_slice = nullptr;
  fs::path m_run;
  PlanRecord m_plan{"lesson", "r1", std::string(64, 'a'), "v5litepod-16", 1, std::string(32, '0'), 0};
};

TEST_F(DetailedReceiptsTest, ACompleteRunVerifies) {
  const auto report = verify();
  EXPECT_TRUE(report.ok()) << (report.findings.empty() ? "" : report.findings[0].message);
  EXPECT_EQ(report.receipts_checked, 4);
  EXPECT_EQ(report.logs_found, 4);
}

TEST_F(DetailedReceiptsTest, EachFailureNamesTheWorkerAndTheField) {
  auto r = receipt(2);
  r["process_count"] = 1;
  r["device_count"] = 4;
  write_worker(2, r);
  const auto report = verify();
  EXPECT_TRUE(has(report, 2, "process_count", "is 1, but v5litepod-16 has 4"));
  EXPECT_TRUE(has(report, 2, "device_count"));
  EXPECT_EQ(report.findings.size(), 2U);
}

// The run guard's record is the worker's own word on its part: a worker that recorded a
// failure never verifies, whatever receipts it left.
TEST_F(DetailedReceiptsTest, AWorkerThatRecordedFailureNeverVerifies) {
  EXPECT_TRUE(verify().ok());
  write_record(1, {{"state", "failed"}, {"summary", "failed with status 7"}});
  const auto report = verify();
  EXPECT_TRUE(has(report, 1, "run-status.rec", "the worker recorded failed: failed with status 7"));
  EXPECT_EQ(report.findings.size(), 1U);
}

// The fetched folder is found by what it holds, so a run folder copied under another name verifies.
TEST_F(DetailedReceiptsTest, ACopiedRunFolderVerifies) {
  const fs::path copy = m_run.parent_path() / "copy-of-r1";
  fs::copy(m_run, copy, fs::copy_options::recursive);
  auto result = verify_run(copy.string(), slice_target(*m_slice), VerifyOptions{VerifyKind::training, false});
  ASSERT_TRUE(result.ok());
  EXPECT_TRUE(result->ok()) << (result->findings.empty() ? "" : result->findings[0].message);
  // Two runs' folders in one worker folder: which one is meant is never guessed.
  fs::copy(content(2), m_run / "worker-2" / "r2", fs::copy_options::recursive);
  EXPECT_TRUE(has(verify(), 2, "run-status.rec", "holds 2 run folders with a run record (r1 and r2)"));
}

// A worker whose run record did not come back is named for that, once: not as a missing log and a
// missing receipt, which follow from it.
TEST_F(DetailedReceiptsTest, AMissingRunRecordIsNamedAsSuch) {
  fs::remove(content(2) / "run-status.rec");
  fs::remove(artifacts(2) / "worker-2.json");
  fs::remove(content(2) / "lesson-tpu-host-2.txt");
  for (const VerifyKind kind : {VerifyKind::training, VerifyKind::logs, VerifyKind::discovery}) {
    const auto report = verify(kind);
    ASSERT_EQ(report.findings.size(), kind == VerifyKind::discovery ? 4U : 1U) << to_string(kind);
    EXPECT_TRUE(has(report, 2, "run-status.rec", "missing from ")) << to_string(kind);
    EXPECT_TRUE(has(report, 2, "run-status.rec", "the run guard's record of this worker's part did not come back"));
    EXPECT_FALSE(has(report, 2, "log"));
    EXPECT_FALSE(has(report, 2, "worker-2.json"));
  }
  // Process 0's: its checkpoint is not asked for either.
  fs::remove(content(0) / "run-status.rec");
  fs::remove(artifacts(0) / "checkpoint.json");
  const auto report = verify();
  EXPECT_TRUE(has(report, 0, "run-status.rec", "missing"));
  EXPECT_FALSE(has(report, 0, "checkpoint.json"));
}

// The logs kind is what a script that declares nothing gets: one log and a recorded success (status
// 0) per worker, whatever receipts are or are not there.
TEST_F(DetailedReceiptsTest, LogsNeedEveryWorkerToHaveRecordedStatusZero) {
  for (int i = 0; i < 4; ++i) {
    fs::remove_all(artifacts(i));
  }
  EXPECT_TRUE(verify(VerifyKind::logs).ok());
  write_record(3, {{"state", "failed"}, {"status", "1"}, {"summary", "failed with status 1"}});
  EXPECT_TRUE(has(verify(VerifyKind::logs), 3, "run-status.rec", "the worker recorded failed: failed with status 1"));
  write_record(3, {{"status", "7"}});
  EXPECT_TRUE(has(verify(VerifyKind::logs), 3, "run-status.rec", "recorded succeeded, but with status 7"));
}

// A worker-4/ on a slice of 4 hosts is another run's or another slice's folder: a finding, never
// ignored, whatever the kind.
TEST_F(DetailedReceiptsTest, AFolderOfAWorkerTheSliceDoesNotHaveIsAFinding) {
  fs::copy(m_run / "worker-3", m_run / "worker-4", fs::copy_options::recursive);
  fs::create_directories(m_run / "slice-1");
  for (const VerifyKind kind : {VerifyKind::training, VerifyKind::logs}) {
    const auto report = verify(kind);
    EXPECT_EQ(report.findings.size(), 2U) << to_string(kind);
    EXPECT_TRUE(has(report, -1, "worker-4",
                    "a folder of a worker this run does not have: the run on v5litepod-16 has 4 processes "
                    "(worker-0 ... worker-3)"));
    EXPECT_TRUE(has(report, -1, "slice-1"));
  }
  // Files of the run itself (the run guard the plan wrote) are no worker's.
  fs::remove_all(m_run / "worker-4");
  fs::remove_all(m_run / "slice-1");
  std::ofstream(m_run / "tpulaunch-run-guard-0123456789ab.sh") << "#\n";
  EXPECT_TRUE(verify().ok());
}

// With several slices, each slice's folder holds its hosts' workers and nothing else.
TEST_F(DetailedReceiptsTest, ASliceOrWorkerFolderOutsideAMultisliceRunIsAFinding) {
  Target target = slice_target(*m_slice);
  target.nodes = 2;
  const fs::path run = m_run.parent_path() / "ms";
  for (int p = 0; p < 8; ++p) {
    fs::create_directories(run / process_folder(p, 4, 2));
  }
  fs::create_directories(run / "slice-0" / "worker-4");
  fs::create_directories(run / "slice-2");
  fs::create_directories(run / "worker-0");
  auto result = verify_run(run.string(), target, VerifyOptions{VerifyKind::logs, false});
  ASSERT_TRUE(result.ok());
  std::vector<std::string> extra;
  for (const auto& f : result->findings) {
    if (f.worker == -1 && f.field != "plan.rec") { // this test writes no plan record
      extra.push_back(f.field);
    }
  }
  EXPECT_EQ(extra, (std::vector<std::string>{"slice-0/worker-4", "slice-2", "worker-0"}));
  EXPECT_TRUE(has(*result, -1, "slice-2",
                  "the run on 2 slices of v5litepod-16 has 8 processes (slice-0/worker-0 ... "
                  "slice-1/worker-3)"));
}

TEST_F(DetailedReceiptsTest, AMissingWorkerIsAFailure) {
  fs::remove_all(m_run / "worker-3");
  EXPECT_TRUE(has(verify(), 3, "folder", "nothing was fetched"));
}

// A run is a key: records of another script, run or plan, or of an earlier start of this plan (a
// plan pasted again), are named as such and never verify.
TEST_F(DetailedReceiptsTest, RecordsOfAnotherRunPlanOrStartDoNotVerify) {
  EXPECT_TRUE(verify().ok());
  write_record(1, {{"script", "l06"}});
  write_record(2, {{"plan", std::string(64, 'b')}});
  write_record(3, {{"start", std::string(32, '1')}});
  const VerifyReport report = verify();
  EXPECT_TRUE(has(report, 1, "run-status.rec", "belongs to run l06/r1 (plan aaaaaaaaaaaaaaaa), not to this run lesson/r1"));
  EXPECT_TRUE(has(report, 2, "run-status.rec", "(plan bbbbbbbbbbbbbbbb), not to this run"));
  EXPECT_TRUE(has(report, 3, "run-status.rec", "comes from an earlier start of this plan"));
  EXPECT_FALSE(has(report, 0, "run-status.rec"));
}

TEST_F(DetailedReceiptsTest, ARecordOfAnotherWorkerOrALogOfAnotherScriptIsAFinding) {
  write_record(2, {{"worker", "3"}});
  std::ofstream(content(1) / "l06-tpu-host-1.txt") << "log\n";
  const VerifyReport report = verify();
  EXPECT_TRUE(has(report, 2, "run-status.rec", "is worker 3's record, not worker 2's"));
  EXPECT_TRUE(has(report, 1, "l06-tpu-host-1.txt", "is not a log of lesson"));
}

TEST_F(DetailedReceiptsTest, ARunFolderWithoutAPlanRecordIsNotVerified) {
  fs::remove(m_run / "plan.rec");
  const VerifyReport report = verify();
  EXPECT_TRUE(has(report, -1, "plan.rec", "whose results these are cannot be told"));
  std::ofstream(m_run / "plan.rec") << "record=something else\n";
  EXPECT_TRUE(has(verify(), -1, "plan.rec", "not a tpulaunch plan record"));
}

TEST_F(DetailedReceiptsTest, NonTpuBackendIsNotATpuResult) {
  auto r = receipt(1);
  r["backend"] = "cpu";
  write_worker(1, r);
  EXPECT_TRUE(has(verify(), 1, "backend", "not a TPU result (backend 'cpu')"));
  r["backend"] = "standin";
  write_worker(1, r);
  EXPECT_TRUE(has(verify(), 1, "backend", "not a TPU result"));
  auto allowed = verify_run(m_run.string(), slice_target(*m_slice), VerifyOptions{VerifyKind::training, true});
  ASSERT_TRUE(allowed.ok());
  EXPECT_TRUE(allowed->ok());
  EXPECT_TRUE(allowed->standin);
}

TEST_F(DetailedReceiptsTest, OwnedInputsMustBeDistinct) {
  auto r = receipt(3);
  r["owned_inputs"] = {0, 7};
  write_worker(3, r);
  EXPECT_TRUE(has(verify(), 3, "owned_inputs", "also owned by worker 0"));
}

TEST_F(DetailedReceiptsTest, WorkersMustAgreeOnTheResult) {
  auto r = receipt(1);
  r["global_mean_gradient"] = -2.4;
  r["params_after"] = {0.74};
  write_worker(1, r);
  const auto report = verify();
  EXPECT_TRUE(has(report, 1, "global_mean_gradient"));
  EXPECT_TRUE(has(report, 1, "params_after"));
}

TEST_F(DetailedReceiptsTest, CheckpointComesFromProcessZeroOnly) {
  fs::copy_file(artifacts(0) / "checkpoint.json", artifacts(2) / "checkpoint.json");
  EXPECT_TRUE(has(verify(), 2, "checkpoint.json", "only process 0"));
  fs::remove(artifacts(0) / "checkpoint.json");
  EXPECT_TRUE(has(verify(), 0, "checkpoint.json", "missing"));
}

TEST_F(DetailedReceiptsTest, CheckpointMustAgreeWithTheReceipts) {
  write_json(artifacts(0) / "checkpoint.json", {{"kind", "checkpoint"}, {"written_by", 0}, {"process_count", 4},
                                                {"params", {0.5}}, {"global_mean_gradient", -2.5}});
  EXPECT_TRUE(has(verify(), 0, "checkpoint.json", "params: disagree"));
}

TEST_F(DetailedReceiptsTest, OneLogPerHost) {
  fs::remove(content(1) / "lesson-tpu-host-1.txt");
  std::ofstream(content(2) / "second.txt") << "x";
  const auto report = verify();
  EXPECT_TRUE(has(report, 1, "log", "no stdout log"));
  EXPECT_TRUE(has(report, 2, "log", "2 logs"));
}

TEST_F(DetailedReceiptsTest, DiscoveryReceiptsAreNeverTrainingReceipts) {
  for (int i = 0; i < 4; ++i) {
    fs::remove(artifacts(i) / ("worker-" + std::to_string(i) + ".json"));
    auto d = receipt(i);
    d["kind"] = "discovery";
    write_json(artifacts(i) / ("discovery-" + std::to_string(i) + ".json"), d);
  }
  fs::remove(artifacts(0) / "checkpoint.json");
  const auto training = verify(VerifyKind::training);
  EXPECT_TRUE(has(training, 0, "worker-0.json", "topology discovery is not training"));
  EXPECT_TRUE(verify(VerifyKind::discovery).ok());
}

TEST_F(DetailedReceiptsTest, ATrainingReceiptIsNotADiscoveryReceipt) {
  // A file named like a discovery receipt but holding a training receipt is refused by its kind.
  write_json(artifacts(0) / "discovery-0.json", receipt(0));
  EXPECT_TRUE(has(verify(VerifyKind::discovery), 0, "kind", "a training receipt, but a discovery receipt was asked for"));
  EXPECT_TRUE(has(verify(VerifyKind::discovery), 1, "discovery-1.json", "a training receipt is not a discovery receipt"));
}

TEST_F(DetailedReceiptsTest, MalformedReceiptIsAFindingWithItsPosition) {
  std::ofstream(artifacts(1) / "worker-1.json") << "{\"kind\": \"training\",\n \"kind\": 1}";
  const auto report = verify();
  EXPECT_TRUE(has(report, 1, "worker-1.json", ":2:2: duplicate key \"kind\""));
}

TEST_F(DetailedReceiptsTest, AMissingFolderIsAConfigError) {
  auto result = verify_run((m_run / "nope").string(), slice_target(*m_slice), VerifyOptions{});
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, ExitCode::config);
}

TEST_F(DetailedReceiptsTest, WrongTypesAreFindingsNotCrashes) {
  auto r = receipt(1);
  r["check"] = 1;
  r["params_after"] = "x";
  r.erase("global_mean_gradient");
  write_worker(1, r);
  const auto report = verify();
  EXPECT_TRUE(has(report, 1, "check", "is an integer, expected a string"));
  EXPECT_TRUE(has(report, 1, "params_after", "is string, expected an array"));
  EXPECT_TRUE(has(report, 1, "global_mean_gradient", "missing (expected a number)"));
  EXPECT_EQ(report.form, ReceiptForm::detailed);
}

TEST_F(DetailedReceiptsTest, ANonObjectReceiptIsAFinding) {
  std::ofstream(artifacts(2) / "worker-2.json") << "[1, 2]";
  EXPECT_TRUE(has(verify(), 2, "worker-2.json", "is array, expected a JSON object"));
}

TEST_F(DetailedReceiptsTest, AHugeReceiptIsRefusedUnread) {
  std::ofstream(artifacts(2) / "worker-2.json") << std::string(2 * 1024 * 1024, ' ') << "{}";
  EXPECT_TRUE(has(verify(), 2, "worker-2.json", "more than the"));
}

TEST_F(DetailedReceiptsTest, InvalidUtf8IsAFinding) {
  std::ofstream(artifacts(3) / "worker-3.json") << "{\"kind\": \"tr\xff\"}";
  EXPECT_TRUE(has(verify(), 3, "worker-3.json", "UTF-8"));
}

TEST_F(DetailedReceiptsTest, FormsMayNotBeMixed) {
  auto r = receipt(2);
  r.erase("kind");
  write_worker(2, r);
  EXPECT_TRUE(has(verify(), 2, "kind", "the course form, but an earlier one has the detailed form"));
}

// The course's own multihost_collective.py: worker-<i>.json and checkpoint.json as the lesson writes
// them, on v5litepod-16 (4 processes x 4 local devices).
class CourseReceiptsTest : public ::testing::Test {
protected:
  void SetUp() override {
    m_slice = m_catalog->find("v5litepod-16");
    for (int i = 0; i < 4; ++i) {
      m_receipts.push_back(receipt(i));
    }
    m_checkpoint = {{"global_devices", 16}, {"theta", k_theta}};
  }

  // float32 0.1 * 5 as the lesson prints it.
  static constexpr double k_theta = 0.5000000596046448;

  static nlohmann::json receipt(int i) {
    return {{"backend", "tpu"},          {"global_devices", 16},         {"global_mean_gradient", -5.0},
            {"local_devices", 4},        {"owned_input", i + 1.0},       {"process_count", 4},
            {"process_index", i},        {"updated_theta", k_theta}};
  }

  VerifyReport verify() const {
    std::vector<FetchedWorker> workers;
    for (int i = 0; i < 4; ++i) {
      FetchedWorker w;
      w.present = true;
      w.folder = "worker-" + std::to_string(i);
      w.logs = 1;
      w.status_record = FetchedFile{"run-status.rec", "state=succeeded\nstatus=0\n", ""};
      w.artifacts.push_back({"worker-" + std::to_string(i) + ".json", m_receipts[static_cast<std::size_t>(i)].dump(), ""});
      if (i == 0) {
        w.artifacts.push_back({"checkpoint.json", m_checkpoint.dump(), ""});
      }
      workers.push_back(std::move(w));
    }
    return verify_fetched(workers, slice_target(*m_slice), VerifyOptions{VerifyKind::training, false});
  }

  static std::string describe(const VerifyReport& r) {
    std::string out;
    for (const auto& f : r.findings) {
      out += std::to_string(f.worker) + " " + f.field + ": " + f.message + "\n";
    }
    return out;
  }

  const Catalog* m_catalog = &test_support::embedded_catalog();
  const Slice* m_slice = nullptr;
  std::vector<nlohmann::json> m_receipts;
  nlohmann::json m_checkpoint;
};

TEST_F(CourseReceiptsTest, TheLessonsReceiptsVerify) {
  const auto report = verify();
  EXPECT_TRUE(report.ok()) << describe(report);
  EXPECT_EQ(report.form, ReceiptForm::course);
  EXPECT_EQ(report.receipts_checked, 4);
}

struct Tamper {
  const char* name;
  void (*change)(std::vector<nlohmann::json>& receipts, nlohmann::json& checkpoint);
  int worker;
  const char* field;
  const char* text;
};

const Tamper k_tampers[] = {
    {"process_index", [](auto& r, auto&) { r[2]["process_index"] = 1; }, 2, "process_index", "is 1, but this is worker 2's folder"},
    {"process_count", [](auto& r, auto&) { r[1]["process_count"] = 1; }, 1, "process_count", "is 1, but v5litepod-16 has 4"},
    {"local_devices", [](auto& r, auto&) { r[3]["local_devices"] = 8; }, 3, "local_devices", "is 8, but v5litepod-16 has 4"},
    {"global_devices", [](auto& r, auto&) { r[0]["global_devices"] = 4; }, 0, "global_devices", "is 4, but v5litepod-16 has 16"},
    {"owned_input_shared", [](auto& r, auto&) { r[3]["owned_input"] = 1.0; }, 3, "owned_input", "also owned by worker 0"},
    {"owned_input_formula", [](auto& r, auto&) { r[1]["owned_input"] = 7.0; }, 1, "owned_input", "process_index + 1"},
    {"local_only_reduction", [](auto& r, auto&) { r[2]["global_mean_gradient"] = -6.0; }, 2, "global_mean_gradient", "expected -5"},
    {"updated_theta", [](auto& r, auto&) { r[1]["updated_theta"] = 0.6; }, 1, "updated_theta", "expected 0.5"},
    {"checkpoint_theta", [](auto&, auto& c) { c["theta"] = 0.4; }, 0, "updated_theta", "the checkpoint's theta is 0.4"},
    {"checkpoint_devices", [](auto&, auto& c) { c["global_devices"] = 4; }, 0, "checkpoint.json", "global_devices: is 4"},
    {"checkpoint_theta_type", [](auto&, auto& c) { c["theta"] = "0.5"; }, 0, "checkpoint.json", "theta: is string, expected a number"},
    {"backend_cpu", [](auto& r, auto&) { r[3]["backend"] = "cpu"; }, 3, "backend", "not a TPU result (backend 'cpu')"},
    {"backend_type", [](auto& r, auto&) { r[3]["backend"] = 1; }, 3, "backend", "is an integer, expected a string"},
    {"missing_field", [](auto& r, auto&) { r[0].erase("updated_theta"); }, 0, "updated_theta", "missing (expected a number)"},
    {"discovery_kind", [](auto& r, auto&) { r[1]["kind"] = "discovery"; }, 1, "kind", "topology discovery is not training"},
};

class CourseTamperTest : public CourseReceiptsTest, public ::testing::WithParamInterface<Tamper> {};

TEST_P(CourseTamperTest, EachCheckFailsOnATamperedCopy) {
  GetParam().change(m_receipts, m_checkpoint);
  const auto report = verify();
  bool found = false;
  for (const auto& f : report.findings) {
    found = found || (f.worker == GetParam().worker && f.field == GetParam().field &&
                      f.message.find(GetParam().text) != std::string::npos);
  }
  EXPECT_TRUE(found) << describe(report);
}

INSTANTIATE_TEST_SUITE_P(Verify, CourseTamperTest, ::testing::ValuesIn(k_tampers),
                         [](const ::testing::TestParamInfo<Tamper>& tamper) { return std::string(tamper.param.name); });

TEST_F(CourseReceiptsTest, AMissingWorkerAndAMissingCheckpointAreNamed) {
  std::vector<FetchedWorker> workers(4);
  workers[0].present = true;
  workers[0].logs = 1;
  workers[0].status_record = FetchedFile{"run-status.rec", "state=succeeded\n", ""};
  workers[0].artifacts.push_back({"worker-0.json", m_receipts[0].dump(), ""});
  const auto report = verify_fetched(workers, slice_target(*m_slice), VerifyOptions{});
  EXPECT_EQ(report.findings.size(), 4U) << describe(report); // three folders, one checkpoint
}

TEST_F(CourseReceiptsTest, AnUnreadableReceiptIsAFinding) {
  std::vector<FetchedWorker> workers(1);
  workers[0].present = true;
  workers[0].logs = 1;
  workers[0].status_record = FetchedFile{"run-status.rec", "state=succeeded\n", ""};
  workers[0].artifacts.push_back({"worker-0.json", "", "cannot read receipt 'x': is a directory"});
  const auto report = verify_fetched(workers, slice_target(*m_slice), VerifyOptions{});
  EXPECT_FALSE(report.ok());
  EXPECT_EQ(report.findings[0].message, "cannot read receipt 'x': is a directory");
}

} // namespace
} // namespace tpulaunch
