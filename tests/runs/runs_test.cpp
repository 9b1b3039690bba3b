#include "tpulaunch/runs/runs.hpp"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "tpulaunch/catalog/catalog.hpp"
#include "tpulaunch/runs/calls.hpp"
#include "tpulaunch/shell/shell.hpp"

namespace tpulaunch {
namespace {

namespace fs = std::filesystem;

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

// A scratch ./tpu-runs with one run of `hosts`-host slice v5litepod-16 (4 hosts).
class RunsTest : public ::testing::Test {
protected:
  void SetUp() override {
    root = fs::temp_directory_path() / ("tpulaunch-runs-test-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root);
  }
  void TearDown() override { fs::remove_all(root); }

  fs::path add_run(const std::string& run_id, long long written, const std::string& extra = "") {
    const fs::path dir = root / "lab-pod" / "advanced" / "lesson" / run_id;
    write(dir / "plan.rec", "record=tpulaunch-plan 1\nscript=advanced/lesson\nrun-id=" + run_id + "\nplan=" +
                                std::string(64, 'a') + "\nslice=v5litepod-16\nslices=1\nstart=" + std::string(32, 'b') +
                                "\nwritten=" + std::to_string(written) + "\nzone=us-west4-a\n" + extra);
    return dir;
  }
  static void add_worker(const fs::path& dir, const std::string& run_id, int worker, const std::string& state,
                         int exit) {
    write(dir / ("worker-" + std::to_string(worker)) / run_id / "run-status.rec",
          "record=tpulaunch-run-status 2\nscript=advanced/lesson\nrun-id=" + run_id + "\nplan=" + std::string(64, 'a') +
              "\nstart=" + std::string(32, 'b') + "\nworker=" + std::to_string(worker) + "\nstate=" + state +
              "\nsummary=" + state + " here\nexit=" + std::to_string(exit) + "\n");
  }
  std::vector<RunView> list() {
    std::vector<std::string> warnings;
    auto runs = list_runs(root.string(), load_embedded_catalog().value(), warnings);
    EXPECT_TRUE(warnings.empty()) << warnings.front();
    return runs;
  }

  fs::path root;
};

TEST_F(RunsTest, EveryWorkerRecordHereDecidesTheStateFirstFailureInWorkerOrder) {
  const fs::path dir = add_run("r1", 100);
  for (int worker = 0; worker < 4; ++worker) {
    add_worker(dir, "r1", worker, worker == 2 ? "failed" : "succeeded", worker == 2 ? 3 : 0);
  }
  auto runs = list();
  ASSERT_EQ(runs.size(), 1U);
  EXPECT_EQ(runs[0].tpu, "lab-pod");
  EXPECT_EQ(runs[0].fetched(), 4);
  EXPECT_EQ(runs[0].state, RunState::failed);
  EXPECT_NE(runs[0].state_text.find("failed with status 3 (worker-2"), std::string::npos) << runs[0].state_text;
  add_worker(dir, "r1", 2, "succeeded", 0);
  EXPECT_EQ(list()[0].state, RunState::succeeded);
}

TEST_F(RunsTest, APreemptionThePipelineSawWinsAndNothingHereIsNeverFetched) {
  const fs::path dir = add_run("r1", 100);
  add_run("r2", 50);
  add_worker(dir, "r1", 0, "interrupted", 143);
  write(dir / "pipeline.rec",
        "record=tpulaunch-pipeline 1\nexit=92\noutcome=preempted\ndetail=lab-pod was PREEMPTED\n");
  auto runs = list();
  ASSERT_EQ(runs.size(), 2U);
  EXPECT_EQ(runs[0].plan.run_id, "r2"); // written first
  EXPECT_EQ(runs[0].state, RunState::never_fetched);
  EXPECT_EQ(runs[1].state, RunState::preempted);
  EXPECT_EQ(runs[1].state_text, "preempted: lab-pod was PREEMPTED");
}

TEST_F(RunsTest, ThePipelineRecordTellsWhenWorkersRecordsDidNotComeBack) {
  const fs::path dir = add_run("r1", 100);
  write(dir / "pipeline.rec", "record=tpulaunch-pipeline 1\nexit=124\noutcome=timed-out\n");
  EXPECT_EQ(list()[0].state, RunState::timed_out);
  write(dir / "pipeline.rec", "record=tpulaunch-pipeline 1\nexit=130\noutcome=interrupted\n");
  EXPECT_EQ(list()[0].state, RunState::interrupted);
  write(dir / "pipeline.rec", "record=tpulaunch-pipeline 1\nexit=1\noutcome=failed\n");
  EXPECT_EQ(list()[0].state_text, "failed with status 1");
  write(dir / "pipeline.rec", "record=something-else\noutcome=preempted\n");
  EXPECT_EQ(list()[0].state, RunState::never_fetched);
}

TEST_F(RunsTest, AnotherRunsRecordInAWorkerFolderIsNotThisRuns) {
  const fs::path dir = add_run("r1", 100);
  add_worker(dir, "r1", 0, "succeeded", 0);
  write(dir / "worker-0" / "r1" / "run-status.rec",
        "record=tpulaunch-run-status 2\nscript=other\nrun-id=r1\nplan=" + std::string(64, 'a') + "\nstate=succeeded\n");
  EXPECT_EQ(list()[0].fetched(), 0);
}

TEST_F(RunsTest, AResumingRunIsLinkedBothWaysAndFoundById) {
  add_run("r1", 100);
  add_run("r2", 200, "resumes=r1\n");
  auto runs = list();
  ASSERT_EQ(runs.size(), 2U);
  EXPECT_EQ(runs[0].resumed_by, std::vector<std::string>{"r2"});
  EXPECT_EQ(runs[1].plan.resumes, "r1");
  EXPECT_NE(render_runs_list_text(runs).find("r2 (resumes r1)"), std::string::npos);
  const Catalog catalog = load_embedded_catalog().value();
  auto found = find_run(root.string(), "r2", catalog);
  ASSERT_TRUE(found.ok()) << found.error().message;
  EXPECT_EQ(found->plan.resumes, "r1");
  EXPECT_EQ(find_run(root.string(), "r9", catalog).error().code, ExitCode::config);
  add_run("r1", 300).string();
  fs::create_directories(root / "other-pod");
  fs::copy(root / "lab-pod", root / "other-pod", fs::copy_options::recursive);
  EXPECT_EQ(find_run(root.string(), "r1", catalog).error().code, ExitCode::usage);
}

TEST_F(RunsTest, StatusAttachAndCleanAreOneSshCallIntoTheStagedGuard) {
  add_run("r1", 100, "project=lab-project-1\n");
  const RunView run = list().front();
  auto plan = runs_plan(run, RunsCall::attach, {});
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  ASSERT_EQ(plan->remote.size(), 1U);
  const std::vector<std::string> argv = plan->remote[0].argv();
  const std::string line = to_shell(plan->remote[0]);
  EXPECT_NE(line.find("tpu-vm ssh lab-pod --zone=us-west4-a --worker=all --project=lab-project-1"), std::string::npos)
      << line;
  EXPECT_NE(line.find("jax-tpu-lab/runs/advanced/lesson/r1/staged-aaaaaaaaaaaaaaaa/tpulaunch-run-guard.sh"),
            std::string::npos);
  EXPECT_NE(line.find("--attach"), std::string::npos);
  auto clean = runs_plan(run, RunsCall::clean, {});
  ASSERT_TRUE(clean.ok());
  EXPECT_NE(render_runs_sh(*clean).find("read -r -p"), std::string::npos);
  RunView no_zone = run;
  no_zone.plan.zone.clear();
  EXPECT_EQ(runs_plan(no_zone, RunsCall::status, {}).error().code, ExitCode::usage);
}

TEST_F(RunsTest, ACreatedTpuIsReachedOnlyThroughItsMarkAndTheRecordedConnection) {
  add_run("r1", 100, "capacity=create\nconnection=internal-ip\n");
  const RunView run = list().front();
  for (const RunsCall call : {RunsCall::status, RunsCall::attach, RunsCall::clean}) {
    auto plan = runs_plan(run, call, {});
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    const std::string line = to_shell(plan->remote[0]);
    EXPECT_NE(line.find("--mark aaaaaaaaaaaaaaaa"), std::string::npos) << line;
    EXPECT_NE(line.find(" --internal-ip"), std::string::npos) << line;
  }
  RunsCallOptions iap;
  iap.connection = gcloud::Connection::iap;
  const std::string given = to_shell(runs_plan(run, RunsCall::status, iap)->remote[0]);
  EXPECT_NE(given.find("--tunnel-through-iap"), std::string::npos) << given;
  EXPECT_EQ(given.find("--internal-ip"), std::string::npos) << given;
  // A TPU the run's plan did not create carries no mark to check.
  add_run("r2", 200);
  for (const RunView& other : list()) {
    if (other.plan.run_id == "r2") {
      const std::string line = to_shell(runs_plan(other, RunsCall::status, {})->remote[0]);
      EXPECT_EQ(line.find("--mark"), std::string::npos) << line;
      EXPECT_EQ(line.find("--internal-ip"), std::string::npos) << line;
    }
  }
}

} // namespace
} // namespace tpulaunch
