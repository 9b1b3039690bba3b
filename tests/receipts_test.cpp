#include "tpulaunch/receipts.hpp"

#include <filesystem>
#include <fstream>
#include <memory>

#include <gtest/gtest.h>

#include "test_catalog.hpp"
#include <nlohmann/json.hpp>

namespace tpulaunch {
namespace {

namespace fs = std::filesystem;

// Builds a fetched run folder as the full-form pipeline leaves it:
// <run>/worker-<i>/<run-id>/{<id>-tpu-<host>.txt, artifacts/{worker-<i>.json, checkpoint.json}}.
class ReceiptsTest : public ::testing::Test {
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
  }
  VerifyReport verify(VerifyKind kind = VerifyKind::training) {
    auto result = verify_run(m_run.string(), *m_slice, VerifyOptions{kind, false});
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
};

TEST_F(ReceiptsTest, ACompleteRunVerifies) {
  const auto report = verify();
  EXPECT_TRUE(report.ok()) << (report.findings.empty() ? "" : report.findings[0].message);
  EXPECT_EQ(report.receipts_checked, 4);
  EXPECT_EQ(report.logs_found, 4);
}

TEST_F(ReceiptsTest, EachFailureNamesTheWorkerAndTheField) {
  auto r = receipt(2);
  r["process_count"] = 1;
  r["device_count"] = 4;
  write_worker(2, r);
  const auto report = verify();
  EXPECT_TRUE(has(report, 2, "process_count", "is 1, but v5litepod-16 has 4"));
  EXPECT_TRUE(has(report, 2, "device_count"));
  EXPECT_EQ(report.findings.size(), 2U);
}

TEST_F(ReceiptsTest, AMissingWorkerIsAFailure) {
  fs::remove_all(m_run / "worker-3");
  EXPECT_TRUE(has(verify(), 3, "folder", "nothing was fetched"));
}

TEST_F(ReceiptsTest, NonTpuBackendIsNotATpuResult) {
  auto r = receipt(1);
  r["backend"] = "cpu";
  write_worker(1, r);
  EXPECT_TRUE(has(verify(), 1, "backend", "not a TPU result (backend 'cpu')"));
  r["backend"] = "standin";
  write_worker(1, r);
  EXPECT_TRUE(has(verify(), 1, "backend", "not a TPU result"));
  auto allowed = verify_run(m_run.string(), *m_slice, VerifyOptions{VerifyKind::training, true});
  ASSERT_TRUE(allowed.ok());
  EXPECT_TRUE(allowed->ok());
  EXPECT_TRUE(allowed->standin);
}

TEST_F(ReceiptsTest, OwnedInputsMustBeDistinct) {
  auto r = receipt(3);
  r["owned_inputs"] = {0, 7};
  write_worker(3, r);
  EXPECT_TRUE(has(verify(), 3, "owned_inputs", "also owned by worker 0"));
}

TEST_F(ReceiptsTest, WorkersMustAgreeOnTheResult) {
  auto r = receipt(1);
  r["global_mean_gradient"] = -2.4;
  r["params_after"] = {0.74};
  write_worker(1, r);
  const auto report = verify();
  EXPECT_TRUE(has(report, 1, "global_mean_gradient"));
  EXPECT_TRUE(has(report, 1, "params_after"));
}

TEST_F(ReceiptsTest, CheckpointComesFromProcessZeroOnly) {
  fs::copy_file(artifacts(0) / "checkpoint.json", artifacts(2) / "checkpoint.json");
  EXPECT_TRUE(has(verify(), 2, "checkpoint.json", "only process 0"));
  fs::remove(artifacts(0) / "checkpoint.json");
  EXPECT_TRUE(has(verify(), 0, "checkpoint.json", "missing"));
}

TEST_F(ReceiptsTest, CheckpointMustAgreeWithTheReceipts) {
  write_json(artifacts(0) / "checkpoint.json", {{"kind", "checkpoint"}, {"written_by", 0}, {"process_count", 4},
                                                {"params", {0.5}}, {"global_mean_gradient", -2.5}});
  EXPECT_TRUE(has(verify(), 0, "checkpoint.json", "params disagree"));
}

TEST_F(ReceiptsTest, OneLogPerHost) {
  fs::remove(content(1) / "lesson-tpu-host-1.txt");
  std::ofstream(content(2) / "second.txt") << "x";
  const auto report = verify();
  EXPECT_TRUE(has(report, 1, "log", "no stdout log"));
  EXPECT_TRUE(has(report, 2, "log", "2 logs"));
}

TEST_F(ReceiptsTest, DiscoveryReceiptsAreNeverTrainingReceipts) {
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

TEST_F(ReceiptsTest, ATrainingReceiptIsNotADiscoveryReceipt) {
  // A file named like a discovery receipt but holding a training receipt is refused by its kind.
  write_json(artifacts(0) / "discovery-0.json", receipt(0));
  EXPECT_TRUE(has(verify(VerifyKind::discovery), 0, "kind", "a training receipt, but a discovery receipt was asked for"));
  EXPECT_TRUE(has(verify(VerifyKind::discovery), 1, "discovery-1.json", "a training receipt is not a discovery receipt"));
}

TEST_F(ReceiptsTest, MalformedReceiptIsAFindingWithItsPosition) {
  std::ofstream(artifacts(1) / "worker-1.json") << "{\"kind\": \"training\",\n \"kind\": 1}";
  const auto report = verify();
  EXPECT_TRUE(has(report, 1, "worker-1.json", ":2:2: duplicate key \"kind\""));
}

TEST_F(ReceiptsTest, AMissingFolderIsAConfigError) {
  auto result = verify_run((m_run / "nope").string(), *m_slice, VerifyOptions{});
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, ExitCode::config);
}

} // namespace
} // namespace tpulaunch
