// A step's failure and concurrency behaviour is data the builders set (plan.hpp: StepGroup,
// OnFailure, Step::check_preemption, Step::failure_exit, Step::makes_capacity); the renderers only
// print it. These hold each kind of plan to the values its steps must carry.
#include <algorithm>

#include <gtest/gtest.h>

#include "support/plan_fixture.hpp"
#include "tpulaunch/plan/plan.hpp"
#include "tpulaunch/util/exit_code.hpp"

namespace tpulaunch {
namespace {

class OnFailureTest : public test_support::PlanFixture {
protected:
  static std::vector<const Step*> of_kind(const Plan& p, StepKind kind) {
    std::vector<const Step*> out;
    for (const Step& s : p.steps) {
      if (s.kind == kind) {
        out.push_back(&s);
      }
    }
    return out;
  }
  static const Step& first(const Plan& p, StepKind kind) {
    const auto steps = of_kind(p, kind);
    EXPECT_FALSE(steps.empty()) << to_string(kind);
    return steps.empty() ? p.steps.front() : *steps.front();
  }
};

// A spot TPU the plan creates and bootstraps, one host, full form: the copy and the bootstrap
// stop the script but ask about a preemption first, the run keeps its status for after the
// downloads, each download goes on whatever the others did, and only create makes capacity.
TEST_F(OnFailureTest, SingleHostSpotBootstrapRunKeepsItsStatusAndAsksAboutPreemption) {
  m_options.lifecycle.capacity = Capacity::create;
  m_options.lifecycle.provisioning = Provisioning::spot;
  m_options.bootstrap = true;
  const Plan p = plan("v5litepod-8", RouteKind::single_host);
  ASSERT_FALSE(p.steps.empty());
  for (const StepKind kind : {StepKind::stage, StepKind::bootstrap}) {
    const Step& step = first(p, kind);
    EXPECT_EQ(step.on_failure, OnFailure::stop) << to_string(kind);
    EXPECT_TRUE(step.check_preemption) << to_string(kind);
    EXPECT_EQ(step.group, StepGroup::none) << to_string(kind);
  }
  const Step& run = first(p, StepKind::run);
  EXPECT_EQ(run.on_failure, OnFailure::keep_status);
  EXPECT_EQ(run.group, StepGroup::none);
  EXPECT_TRUE(run.check_preemption);
  const Step& fetch = first(p, StepKind::fetch);
  EXPECT_EQ(fetch.on_failure, OnFailure::report_after_all);
  EXPECT_EQ(fetch.group, StepGroup::fetch);
  EXPECT_TRUE(fetch.check_preemption);
  for (const StepKind kind : {StepKind::name_check, StepKind::wait, StepKind::verify}) {
    EXPECT_EQ(first(p, kind).on_failure, OnFailure::stop) << to_string(kind);
    EXPECT_FALSE(first(p, kind).check_preemption) << to_string(kind);
  }
  // The prepare step stops with 93, naming the run folder, when the run ran before.
  const Step& prepare = first(p, StepKind::prepare);
  ASSERT_TRUE(prepare.failure_exit);
  EXPECT_EQ(prepare.failure_exit->status, to_int(PipelineStatus::run_exists));
  EXPECT_NE(prepare.failure_exit->message.find(p.local_run_dir), std::string::npos) << prepare.failure_exit->message;
  // Only the create call makes capacity the script reports as left running from then on.
  for (const Step& step : p.steps) {
    EXPECT_EQ(step.makes_capacity, step.kind == StepKind::create) << step.name();
  }
}

// The release step says when the script reports the TPU as left running: on every way out for
// capacity the plan made without --teardown, only after a failure with it, never for a TPU that
// existed before (a spot one still has a release step, for a preemption).
TEST_F(OnFailureTest, TheReleaseStepSaysWhenTheTpuIsReportedAsLeftRunning) {
  m_options.lifecycle.provisioning = Provisioning::spot;
  m_options.lifecycle.capacity = Capacity::create;
  EXPECT_EQ(first(plan("v5litepod-16", RouteKind::multi_host), StepKind::release).left_running, LeftRunning::always);
  m_options.teardown = true;
  EXPECT_EQ(first(plan("v5litepod-16", RouteKind::multi_host), StepKind::release).left_running,
            LeftRunning::on_failure);
  m_options.teardown = false;
  m_options.lifecycle.capacity = Capacity::queued;
  m_options.lifecycle.provisioning = Provisioning::standard;
  EXPECT_EQ(first(plan("v5litepod-16", RouteKind::multi_host), StepKind::release).left_running, LeftRunning::always);
}

// --course: the course's own lines, with no preemption check defined: nothing asks about one, the
// run still keeps its status and the downloads still go on after a failed one.
TEST_F(OnFailureTest, CourseFormAsksAboutNoPreemption) {
  m_options.form = PlanForm::course;
  const Plan p = plan("v5litepod-16", RouteKind::multi_host);
  ASSERT_FALSE(p.steps.empty());
  EXPECT_TRUE(of_kind(p, StepKind::preemption_check).empty());
  for (const Step& step : p.steps) {
    EXPECT_FALSE(step.check_preemption) << step.name();
    EXPECT_FALSE(step.makes_capacity) << step.name();
  }
  EXPECT_EQ(first(p, StepKind::stage).on_failure, OnFailure::stop);
  EXPECT_EQ(first(p, StepKind::run).on_failure, OnFailure::keep_status);
  const auto fetches = of_kind(p, StepKind::fetch);
  ASSERT_EQ(fetches.size(), 4U);
  for (const Step* fetch : fetches) {
    EXPECT_EQ(fetch->on_failure, OnFailure::report_after_all);
    EXPECT_EQ(fetch->group, StepGroup::fetch);
  }
}

// --slices 2: the runs are one group that starts together, and the first failure stops the
// others (whose stop steps run on that condition); ssh-add's check stops with 1.
TEST_F(OnFailureTest, SlicesRunTogetherAndTheFirstFailureStopsTheOthers) {
  m_slices = 2;
  const Plan p = plan("v5litepod-16", RouteKind::multi_host);
  const auto runs = of_kind(p, StepKind::run);
  ASSERT_EQ(runs.size(), 2U);
  for (const Step* run : runs) {
    EXPECT_EQ(run->group, StepGroup::run);
    EXPECT_EQ(concurrent_group(*run), "run");
    EXPECT_EQ(run->on_failure, OnFailure::stop_the_others);
    EXPECT_TRUE(run->check_preemption);
  }
  EXPECT_EQ(start_of(StepGroup::run), "together");
  const auto stops = of_kind(p, StepKind::stop);
  ASSERT_EQ(stops.size(), 2U);
  for (const Step* stop : stops) {
    EXPECT_EQ(stop->when, StepWhen::other_slice_failed);
    EXPECT_EQ(stop->group, StepGroup::none);
  }
  const Step& preflight = first(p, StepKind::preflight);
  ASSERT_TRUE(preflight.failure_exit);
  EXPECT_EQ(preflight.failure_exit->status, to_int(ExitCode::failure));
  EXPECT_NE(preflight.failure_exit->message.find("ssh-add"), std::string::npos);
}

// --results: the one download from the bucket goes on to its fallback and the report whatever it
// did, and so does each worker's fallback fetch.
TEST_F(OnFailureTest, ResultsCollectAndItsFallbackReportAfterAll) {
  m_options.results = "gs://lab-bucket/runs";
  const Plan p = plan("v5litepod-16", RouteKind::multi_host);
  const Step& collect = first(p, StepKind::collect);
  EXPECT_EQ(collect.on_failure, OnFailure::report_after_all);
  EXPECT_EQ(collect.group, StepGroup::none);
  EXPECT_TRUE(collect.check_preemption);
  const auto fallbacks = of_kind(p, StepKind::fetch);
  ASSERT_FALSE(fallbacks.empty());
  for (const Step* fetch : fallbacks) {
    EXPECT_EQ(fetch->when, StepWhen::not_collected);
    EXPECT_EQ(fetch->group, StepGroup::fetch);
    EXPECT_EQ(fetch->on_failure, OnFailure::report_after_all);
  }
}

// Each value has its own name and sentence, from the one table.
TEST(OnFailure, EveryValueHasItsOwnName) {
  const std::vector<OnFailure> all{OnFailure::stop, OnFailure::keep_status, OnFailure::stop_the_others,
                                   OnFailure::report_after_all};
  std::vector<std::string_view> names;
  for (const OnFailure value : all) {
    EXPECT_FALSE(to_string(value).empty());
    EXPECT_FALSE(describe(value).empty());
    names.push_back(to_string(value));
  }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(std::unique(names.begin(), names.end()), names.end());
}

} // namespace
} // namespace tpulaunch
