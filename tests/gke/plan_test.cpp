#include "tpulaunch/gke/plan.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "support/plan_fixture.hpp"
#include "tpulaunch/util/exit_code.hpp"
#include "tpulaunch/util/sha256.hpp"

namespace tpulaunch::gke {
namespace {

namespace fs = std::filesystem;

// The fixture's reviewed multi-host-qualified "lesson", as a real file the plan reads into its
// ConfigMap, placed on a GKE cluster.
class GkePlanTest : public test_support::PlanFixture {
protected:
  void SetUp() override {
    PlanFixture::SetUp();
    m_file = fs::temp_directory_path() / ("gke-plan-test-" + std::to_string(::getpid()) + ".py");
    std::ofstream(m_file) << "import jax\njax.distributed.initialize()\n";
    m_status.path = m_file.string();
    m_status.actual_sha256 = sha256_hex("import jax\njax.distributed.initialize()\n");
    m_options.tpu.clear();
    m_options.zone.clear();
    m_options.results = "gs://lab-bucket/runs";
    m_where = GkePlacement{"lab-cluster", "us-east5-b", "", "default", "example.com/tpu/jax:1"};
  }
  void TearDown() override { fs::remove(m_file); }

  Result<GkePlan> gke_plan(const char* slice, int slices) {
    return build_gke_plan(m_status, RouteKind::multi_host, Topology{m_catalog->find(slice), slices}, m_where,
                          m_options);
  }

  fs::path m_file;
  GkePlacement m_where;
};

std::vector<std::string> names(const GkePlan& plan) {
  std::vector<std::string> out;
  for (const Step& step : plan.steps) {
    out.emplace_back(to_string(step.kind));
  }
  return out;
}

TEST_F(GkePlanTest, StepsInOrderWithTeardownOnlyAfterVerify) {
  m_options.teardown = true;
  auto plan = gke_plan("v5litepod-16", 1);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_EQ(names(*plan), (std::vector<std::string>{"prepare", "name-check", "write", "stage", "wait", "fetch", "fetch",
                                                    "fetch", "fetch", "collect", "verify", "teardown"}));
  EXPECT_EQ(plan->steps.back().when, StepWhen::verify_succeeded);
  for (const Step& step : plan->steps) {
    EXPECT_EQ(concurrent_group(step), step.kind == StepKind::fetch ? "fetch" : "") << to_string(step.kind);
  }
  m_options.teardown = false;
  auto kept = gke_plan("v5litepod-16", 1);
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(names(*kept).back(), "verify");
}

// A failed step stops the script with the message and status its builder states (the JobSet kept
// and named where it exists); every pod's log is fetched whatever the others did, and reported
// after all of them. Nothing on GKE asks about a TPU-VM preemption or makes TPU capacity.
TEST_F(GkePlanTest, EveryStepStatesWhatItsFailureDoes) {
  m_options.teardown = true;
  auto plan = gke_plan("v6e-16", 2);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  for (const Step& step : plan->steps) {
    EXPECT_FALSE(step.check_preemption) << to_string(step.kind);
    EXPECT_FALSE(step.makes_capacity) << to_string(step.kind);
    if (step.kind == StepKind::fetch) {
      EXPECT_EQ(step.group, StepGroup::fetch);
      EXPECT_EQ(step.on_failure, OnFailure::report_after_all);
      EXPECT_FALSE(step.failure_exit);
      continue;
    }
    EXPECT_EQ(step.group, StepGroup::none) << to_string(step.kind);
    EXPECT_EQ(step.on_failure, OnFailure::stop) << to_string(step.kind);
    ASSERT_TRUE(step.failure_exit) << to_string(step.kind);
    const FailureExit& exit = *step.failure_exit;
    switch (step.kind) {
    case StepKind::name_check:
      EXPECT_EQ(exit.status, to_int(PipelineStatus::name_taken));
      EXPECT_NE(exit.message.find(plan->jobset), std::string::npos) << exit.message;
      break;
    case StepKind::wait:
      EXPECT_EQ(exit.status, to_int(ExitCode::failure));
      EXPECT_NE(exit.message.find("kubectl get jobset " + plan->jobset), std::string::npos) << exit.message;
      break;
    case StepKind::verify:
      EXPECT_EQ(exit.status, to_int(ExitCode::refused));
      EXPECT_NE(exit.message.find("kept for inspection"), std::string::npos) << exit.message;
      break;
    default:
      EXPECT_EQ(exit.status, to_int(ExitCode::failure)) << to_string(step.kind);
      EXPECT_EQ(exit.message, "the " + std::string(to_string(step.kind)) + " step failed: " + step.summary);
    }
  }
}

TEST_F(GkePlanTest, MultisliceIsOneReplicaPerSliceAndOneLogPerPod) {
  auto plan = gke_plan("v6e-16", 2);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  const auto& jobset = plan->manifest["items"][1];
  EXPECT_EQ(jobset["kind"], "JobSet");
  EXPECT_EQ(jobset["spec"]["replicatedJobs"][0]["replicas"], 2);
  const std::vector<std::string> steps = names(*plan);
  EXPECT_EQ(std::count(steps.begin(), steps.end(), "fetch"), 2 * plan->pods_per_slice());
  EXPECT_EQ(plan->topology.devices(), 32);
}

TEST_F(GkePlanTest, TheConfigMapCarriesTheScriptPinnedByItsDigest) {
  auto plan = gke_plan("tpu7x-128", 1);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  const auto& config_map = plan->manifest["items"][0];
  EXPECT_EQ(config_map["data"]["file-0"], "import jax\njax.distributed.initialize()\n");
  const std::string argv = plan->manifest["items"][1].dump();
  EXPECT_NE(argv.find(m_status.actual_sha256), std::string::npos);
  EXPECT_NE(argv.find(plan->plan_sha256), std::string::npos);
  std::ofstream(m_file) << "import os\n"; // changed after the review: refused, not shipped
  EXPECT_FALSE(gke_plan("tpu7x-128", 1).ok());
}

TEST_F(GkePlanTest, TpuVmOptionsAndAMissingBucketAreUsageErrors) {
  m_options.lifecycle.capacity = Capacity::create;
  EXPECT_FALSE(gke_plan("v5litepod-16", 1).ok());
  m_options.lifecycle.capacity = Capacity::existing;
  m_options.results.clear();
  auto missing = gke_plan("v5litepod-16", 1);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("--results"), std::string::npos);
  m_options.results = "gs://lab-bucket/runs";
  m_where.cluster = "Lab";
  EXPECT_FALSE(gke_plan("v5litepod-16", 1).ok());
}

// The seam: the TPU-VM backend behind tpu_vm_plan is build_plan, step for step.
TEST_F(GkePlanTest, TheTpuVmBackendIsBuildPlanUnchanged) {
  m_options.tpu = "pod";
  m_options.zone = "us-central1-a";
  const PlanRequest request{Topology{m_catalog->find("v5litepod-16"), 1}, TpuVmPlacement{}, m_options, {}, false};
  auto wrapped = tpu_vm_plan(m_status, RouteKind::multi_host, request);
  auto direct = build_plan(m_status, RouteKind::multi_host, m_catalog->find("v5litepod-16"), m_options);
  ASSERT_TRUE(wrapped.ok() && direct.ok());
  EXPECT_EQ(wrapped->plan_sha256, direct->plan_sha256);
  ASSERT_EQ(wrapped->steps.size(), direct->steps.size());
  for (std::size_t i = 0; i < direct->steps.size(); ++i) {
    EXPECT_EQ(to_shell(wrapped->steps[i].line), to_shell(direct->steps[i].line));
  }
}

// --grace and --timeout reach the pod program, and the pod's termination grace leaves the upload
// time after --grace (docs/gke.md, "The pod program").
TEST_F(GkePlanTest, GraceAndTimeoutReachThePodProgramAndTheTerminationGrace) {
  auto timeout = Duration::parse(ValueKind::timeout, "1h");
  auto grace = Duration::parse(ValueKind::grace, "10s");
  ASSERT_TRUE(timeout.ok() && grace.ok());
  m_options.lifecycle.timeout = *timeout;
  m_options.lifecycle.grace = *grace;
  auto plan = gke_plan("v5litepod-16", 1);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  const auto& pod = plan->manifest["items"][1]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"];
  EXPECT_EQ(pod["terminationGracePeriodSeconds"], 10 + k_upload_seconds);
  const auto& command = pod["containers"][0]["command"];
  const auto at = [&command](std::string_view flag) {
    const auto it = std::find(command.begin(), command.end(), flag);
    return it == command.end() || std::next(it) == command.end() ? std::string() : std::next(it)->get<std::string>();
  };
  EXPECT_EQ(at("--grace"), "10");
  EXPECT_EQ(at("--timeout"), "3600");
  m_options.lifecycle.timeout.reset();
  m_options.lifecycle.grace.reset();
  auto plain = gke_plan("v5litepod-16", 1);
  ASSERT_TRUE(plain.ok());
  const auto& plain_pod =
      plain->manifest["items"][1]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"];
  EXPECT_EQ(plain_pod["terminationGracePeriodSeconds"], k_default_grace_seconds + k_upload_seconds);
  const auto& plain_command = plain_pod["containers"][0]["command"];
  EXPECT_EQ(std::find(plain_command.begin(), plain_command.end(), "--timeout"), plain_command.end());
}

// A pod's log: kubectl logs --follow, or the log its pod program uploaded once the pod is gone;
// the sh form runs them through the TPU-VM route's download pool, not a pool of its own.
TEST_F(GkePlanTest, PodLogsFollowOrComeFromTheBucketThroughTheDownloadPool) {
  auto plan = gke_plan("v5litepod-16", 1);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  const auto fetch = std::find_if(plan->steps.begin(), plan->steps.end(),
                                  [](const Step& step) { return step.kind == StepKind::fetch; });
  ASSERT_NE(fetch, plan->steps.end());
  const std::string command = to_shell(fetch->line);
  EXPECT_NE(command.find("kubectl logs"), std::string::npos) << command;
  EXPECT_NE(command.find("--follow"), std::string::npos) << command;
  EXPECT_NE(command.find("--or gcloud storage cp gs://lab-bucket/runs/lab-cluster/"), std::string::npos) << command;
  EXPECT_NE(command.find("/slice-0/worker-0/log.txt"), std::string::npos) << command;
  const std::string sh = render_gke_sh(*plan);
  EXPECT_NE(sh.find("fetch_start 3 gke_log "), std::string::npos);
  EXPECT_NE(sh.find("\nfetch_wait_all\n"), std::string::npos);
  EXPECT_NE(sh.find("wait -n"), std::string::npos);
  EXPECT_EQ(sh.find("\nwait\n"), std::string::npos);
}

} // namespace
} // namespace tpulaunch::gke
