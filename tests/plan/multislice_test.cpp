// plan --slices (docs/multislice.md): one queued resource with a node count, or N existing TPUs;
// one stage and run call per slice, the guard told the slice, every worker of every slice fetched.
#include <algorithm>

#include <gtest/gtest.h>

#include "support/plan_fixture.hpp"
#include "tpulaunch/plan/plan.hpp"

namespace tpulaunch {
namespace {

class MultisliceTest : public test_support::PlanFixture {
protected:
  void SetUp() override {
    test_support::PlanFixture::SetUp();
    m_slices = 2;
  }
  Result<Plan> build() { return request_plan("v5litepod-16", RouteKind::multi_host); }
  static std::vector<const Step*> of_kind(const Plan& p, StepKind kind) {
    std::vector<const Step*> out;
    for (const Step& s : p.steps) {
      if (s.kind == kind) {
        out.push_back(&s);
      }
    }
    return out;
  }
  static std::string error_of(const Result<Plan>& r) { return r.ok() ? std::string("ok") : r.error().message; }
};

TEST_F(MultisliceTest, QueuedAsksForANodeCountAndDeletesTheQueuedResource) {
  m_options.lifecycle.capacity = Capacity::queued;
  m_options.teardown = true;
  auto p = build();
  ASSERT_TRUE(p.ok()) << error_of(p);
  EXPECT_EQ(p->target.nodes, 2);
  EXPECT_EQ(p->workers(), 8);
  const auto argv = of_kind(*p, StepKind::queue).front()->line.argv();
  EXPECT_NE(std::find(argv.begin(), argv.end(), "--node-count=2"), argv.end());
  EXPECT_NE(std::find(argv.begin(), argv.end(), "--node-prefix=pod"), argv.end());
  const auto teardown = of_kind(*p, StepKind::teardown).front()->line.argv();
  EXPECT_EQ(teardown[4], "delete");
  EXPECT_EQ(teardown[5], "pod-qr");
}

// A preempted slice fails the run on every slice: the check asks each node, not slice 0's alone.
TEST_F(MultisliceTest, SpotAsksEverySlicesNodeAfterAFailedStep) {
  m_options.lifecycle.capacity = Capacity::queued;
  m_options.lifecycle.provisioning = Provisioning::spot;
  auto p = build();
  ASSERT_TRUE(p.ok()) << error_of(p);
  const auto checks = of_kind(*p, StepKind::preemption_check);
  ASSERT_EQ(checks.size(), 2U);
  for (int s = 0; s < 2; ++s) {
    const Step& check = *checks[static_cast<std::size_t>(s)];
    EXPECT_EQ(check.slice, s);
    EXPECT_EQ(check.when, StepWhen::step_failed);
    const auto argv = check.line.argv();
    EXPECT_EQ(argv[4], "describe");
    EXPECT_EQ(argv[5], "pod-" + std::to_string(s));
  }
}

TEST_F(MultisliceTest, OneStageAndRunPerSliceEachToldItsSlice) {
  auto p = build(); // existing TPUs pod-0 and pod-1
  ASSERT_TRUE(p.ok()) << error_of(p);
  const auto stages = of_kind(*p, StepKind::stage);
  const auto runs = of_kind(*p, StepKind::run);
  ASSERT_EQ(stages.size(), 2U);
  ASSERT_EQ(runs.size(), 2U);
  for (int s = 0; s < 2; ++s) {
    const auto run = runs[static_cast<std::size_t>(s)]->line.argv();
    EXPECT_EQ(run[5], "pod-" + std::to_string(s));
    EXPECT_NE(run.back().find("--slices 2 --slice-id " + std::to_string(s) + " "), std::string::npos) << run.back();
    EXPECT_EQ(runs[static_cast<std::size_t>(s)]->slice, s);
    EXPECT_EQ(concurrent_group(*runs[static_cast<std::size_t>(s)]), "run");
    EXPECT_NE(stages[static_cast<std::size_t>(s)]->line.argv()[7].find("pod-" + std::to_string(s) + ":"),
              std::string::npos);
  }
}

TEST_F(MultisliceTest, EveryWorkerOfEverySliceIsFetchedIntoItsSliceFolder) {
  auto p = build();
  ASSERT_TRUE(p.ok()) << error_of(p);
  const auto fetches = of_kind(*p, StepKind::fetch);
  ASSERT_EQ(fetches.size(), 8U);
  const auto last = fetches.back()->line.argv();
  EXPECT_EQ(last[4], "scp");
  EXPECT_EQ(last[6], "pod-1:~/jax-tpu-lab/runs/lesson/r1");
  EXPECT_EQ(last[7], "./tpu-runs/pod/lesson/r1/slice-1/worker-3/");
  EXPECT_EQ(last.back(), "--worker=3");
  const auto verify = of_kind(*p, StepKind::verify).front()->line.argv();
  EXPECT_NE(std::find(verify.begin(), verify.end(), "--slices=2"), verify.end());
}

TEST_F(MultisliceTest, RefusedCombinations) {
  m_slices = 1;
  EXPECT_NE(error_of(build()).find("--slices 1: expected 2 to"), std::string::npos);
  m_slices = 2;
  m_options.lifecycle.capacity = Capacity::create;
  EXPECT_NE(error_of(build()).find("--slices with --create"), std::string::npos);
  m_options.lifecycle.capacity = Capacity::queued;
  m_options.env = {EnvVar{"MEGASCALE_NUM_SLICES", "3"}};
  EXPECT_NE(error_of(build()).find("--env MEGASCALE_NUM_SLICES"), std::string::npos);
  m_options.env.clear();
  m_options.tpu = std::string(62, 'p'); // pod-9 would be 64 characters
  m_slices = 10;
  EXPECT_NE(error_of(build()).find("the last node's name"), std::string::npos);
  m_options.tpu = "pod";
  m_options.lifecycle.capacity = Capacity::existing;
  m_options.teardown = true;
  EXPECT_NE(error_of(build()).find("--slices with --teardown needs --queued"), std::string::npos);
}

TEST_F(MultisliceTest, ResultsGoBelowEachSliceAndComeBackInOneCall) {
  m_options.lifecycle.capacity = Capacity::queued;
  m_options.results = "gs://bucket/x";
  auto p = build();
  ASSERT_TRUE(p.ok()) << error_of(p);
  const auto runs = of_kind(*p, StepKind::run);
  ASSERT_EQ(runs.size(), 2U);
  for (std::size_t slice = 0; slice < runs.size(); ++slice) {
    const std::string command = runs[slice]->line.argv().back();
    const std::string want = " --upload gs://bucket/x/pod/" + m_status.id + "/" + m_options.run_id + "/slice-" +
                             std::to_string(slice) + " ";
    EXPECT_NE(command.find(want), std::string::npos) << command;
  }
  // Fetches only as the fallback for a worker the one download did not bring.
  for (const Step* fetch : of_kind(*p, StepKind::fetch)) {
    EXPECT_EQ(fetch->when, StepWhen::not_collected);
  }
  ASSERT_EQ(of_kind(*p, StepKind::collect).size(), 1U);
  // Per slice one stage and one run call; one download for every slice's workers.
  EXPECT_EQ(of_kind(*p, StepKind::stage).size(), 2U);
}

} // namespace
} // namespace tpulaunch
