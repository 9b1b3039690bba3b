#include "tpulaunch/route/router.hpp"

#include <memory>
#include <set>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "support/test_catalog.hpp"
#include "tpulaunch/matrix/overrides.hpp"

namespace tpulaunch {
namespace {

// A script status and slices built in memory: the router is pure, so no files are needed.
class RouterTest : public ::testing::Test {
protected:
  ScriptStatus reviewed(ScriptClass cls) {
    m_entry.id = "s";
    m_entry.script_class = cls;
    m_entry.class_name = std::string(to_string(cls));
    ScriptStatus status;
    status.id = "s";
    status.path = "ex/s.py";
    status.state = ReviewState::reviewed;
    status.entry = &m_entry;
    return status;
  }

  Decision decide_for(const ScriptStatus& status, const char* slice, const Classification* source = nullptr) {
    const Slice* s = slice == nullptr ? nullptr : m_catalog->find(slice);
    EXPECT_TRUE(slice == nullptr || s != nullptr) << slice;
    return decide(RouteRequest{&status, s, source});
  }

  static std::string rule_of(const Decision& d) { return d.refusal ? d.refusal->rule : std::string("allowed"); }

  const Catalog* m_catalog = &test_support::embedded_catalog();
  MatrixEntry m_entry;
};

TEST_F(RouterTest, ReviewRequiredGetsNoRouteNotEvenCpu) {
  for (const auto state : {ReviewState::no_entry, ReviewState::unknown_class, ReviewState::missing_file,
                           ReviewState::stale_digest}) {
    ScriptStatus status = reviewed(ScriptClass::cpu_only);
    status.state = state;
    EXPECT_EQ(rule_of(decide_for(status, nullptr)), "review-required") << to_string(state);
    EXPECT_EQ(rule_of(decide_for(status, "v5litepod-8")), "review-required") << to_string(state);
  }
}

TEST_F(RouterTest, CpuOnlyGetsTheCpuRouteOnly) {
  const auto status = reviewed(ScriptClass::cpu_only);
  EXPECT_EQ(decide_for(status, nullptr).route, RouteKind::cpu);
  for (const char* slice : {"v5litepod-4", "v5litepod-16", "v6e-1", "v2-8"}) {
    const auto d = decide_for(status, slice);
    EXPECT_EQ(rule_of(d), "cpu-only-stays-on-cpu") << slice;
    EXPECT_NE(d.refusal->reason.find(slice), std::string::npos);
  }
}

TEST_F(RouterTest, SingleHostCompatibleGetsOneHostSlicesOnly) {
  const auto status = reviewed(ScriptClass::single_host_compatible);
  EXPECT_EQ(decide_for(status, "v5litepod-8").route, RouteKind::single_host);
  EXPECT_EQ(decide_for(status, "v4-8").route, RouteKind::single_host);
  EXPECT_EQ(rule_of(decide_for(status, nullptr)), "tpu-class-needs-slice");
  const auto d = decide_for(status, "v5litepod-16");
  EXPECT_EQ(rule_of(d), "multi-host-needs-qualified");
  EXPECT_NE(d.refusal->reason.find("12 chips sit idle"), std::string::npos) << d.refusal->reason;
}

TEST_F(RouterTest, MultiHostSlicesTakeQualifiedScriptsOnly) {
  const auto status = reviewed(ScriptClass::multi_host_qualified);
  EXPECT_EQ(decide_for(status, "v5litepod-16").route, RouteKind::multi_host);
  EXPECT_EQ(decide_for(status, "v6e-256").route, RouteKind::multi_host);
  // On a 1-host slice a qualified script runs as single-host (no --worker=all).
  EXPECT_EQ(decide_for(status, "v5litepod-8").route, RouteKind::single_host);
  EXPECT_EQ(rule_of(decide_for(status, nullptr)), "tpu-class-needs-slice");
}

TEST_F(RouterTest, SeveralSlicesTakeQualifiedScriptsOnly) {
  const auto qualified = reviewed(ScriptClass::multi_host_qualified);
  const Slice* one_host = m_catalog->find("v5litepod-8");
  EXPECT_EQ(decide(RouteRequest{&qualified, one_host, nullptr, 2}).route, RouteKind::multi_host);
  const auto single = reviewed(ScriptClass::single_host_compatible);
  const Decision refused = decide(RouteRequest{&single, one_host, nullptr, 2});
  EXPECT_EQ(rule_of(refused), "multislice-needs-qualified");
  EXPECT_NE(refused.refusal->reason.find("--slices 2"), std::string::npos);
  EXPECT_EQ(decide(RouteRequest{&single, one_host, nullptr, 1}).route, RouteKind::single_host);
}

TEST_F(RouterTest, SourceThatSelectsCpuIsRefusedOnTpuWhateverTheMatrixSays) {
  const auto status = reviewed(ScriptClass::single_host_compatible);
  const Classification source = classify_source("import jax\nd = jax.devices('cpu')\n");
  const auto d = decide_for(status, "v5litepod-8", &source);
  EXPECT_EQ(rule_of(d), "source-selects-cpu");
  ASSERT_EQ(d.refusal->evidence.size(), 1U);
  EXPECT_EQ(d.refusal->evidence[0].line, 2U);
}

TEST_F(RouterTest, AnOverrideForExactlyThatEvidenceAllowsTheRoute) {
  auto status = reviewed(ScriptClass::single_host_compatible);
  const Classification source = classify_source("import jax\nd = jax.devices('cpu')\n");
  m_entry.overrides.push_back(EvidenceOverride{"devices-cpu", 2, "only used for a host-side copy"});
  EXPECT_EQ(decide_for(status, "v5litepod-8", &source).route, RouteKind::single_host);
  // An override for another line does not count.
  m_entry.overrides[0].line = 3;
  EXPECT_EQ(rule_of(decide_for(status, "v5litepod-8", &source)), "source-selects-cpu");
}

TEST_F(RouterTest, MultiHostRouteNeedsDistributedInitializeInTheSource) {
  const auto status = reviewed(ScriptClass::multi_host_qualified);
  const Classification without = classify_source("import jax\nprint(jax.process_index())\n");
  EXPECT_EQ(rule_of(decide_for(status, "v5litepod-16", &without)), "source-lacks-initialize");
  // A 1-host slice does not need it.
  EXPECT_EQ(decide_for(status, "v5litepod-8", &without).route, RouteKind::single_host);
  const Classification with = classify_source("import jax\njax.distributed.initialize()\n");
  EXPECT_EQ(decide_for(status, "v5litepod-16", &with).route, RouteKind::multi_host);
}

TEST_F(RouterTest, RefusalCountsTheEvidenceItShows) {
  const auto status = reviewed(ScriptClass::single_host_compatible);
  const Classification one = classify_source("import jax\nd = jax.devices('cpu')\n");
  const auto d1 = decide_for(status, "v5litepod-8", &one);
  ASSERT_EQ(d1.refusal->evidence.size(), 1U);
  EXPECT_NE(d1.refusal->reason.find("(1 finding)"), std::string::npos) << d1.refusal->reason;
  const Classification two = classify_source("import jax\nd = jax.devices('cpu')\ne = jax.devices('cpu')\n");
  const auto d2 = decide_for(status, "v5litepod-8", &two);
  ASSERT_EQ(d2.refusal->evidence.size(), 2U);
  EXPECT_NE(d2.refusal->reason.find("(2 findings)"), std::string::npos) << d2.refusal->reason;
}

TEST_F(RouterTest, AnOverrideCannotStandInForInitialize) {
  const auto status = reviewed(ScriptClass::multi_host_qualified);
  m_entry.overrides.push_back(missing_marker_override("initialize", "the launcher initializes"));
  const Classification without = classify_source("import jax\nprint(jax.process_index())\n");
  EXPECT_EQ(rule_of(decide_for(status, "v5litepod-16", &without)), "source-lacks-initialize");
}

// NUM_HOSTS is set by nothing tpulaunch does: a multi-host route of a source whose initialize()
// runs only under such a condition is refused until a review accepts that call's condition.
TEST_F(RouterTest, AConditionalInitializeNeedsTheReviewToAcceptItsCondition) {
  const auto status = reviewed(ScriptClass::multi_host_qualified);
  const Classification source = classify_source(
      "import os, jax\nif int(os.environ.get('NUM_HOSTS', '1')) > 1:\n    jax.distributed.initialize()\n");
  const auto d = decide_for(status, "v5litepod-16", &source);
  EXPECT_EQ(rule_of(d), "initialize-under-condition");
  ASSERT_EQ(d.refusal->evidence.size(), 1U);
  EXPECT_EQ(d.refusal->evidence[0].line, 3U);
  EXPECT_NE(d.refusal->reason.find("--initialize-condition REASON"), std::string::npos) << d.refusal->reason;
  // One host needs no other to join, and --slices is several hosts whatever the slice.
  EXPECT_EQ(decide_for(status, "v5litepod-8", &source).route, RouteKind::single_host);
  EXPECT_EQ(rule_of(decide(RouteRequest{&status, m_catalog->find("v5litepod-8"), &source, 2})),
            "initialize-under-condition");
  m_entry.initialize_condition = InitializeCondition{3, "", "", "the launcher sets NUM_HOSTS"};
  EXPECT_EQ(decide_for(status, "v5litepod-16", &source).route, RouteKind::multi_host);
  m_entry.initialize_condition->line = 2; // accepted elsewhere: not this call
  EXPECT_EQ(rule_of(decide_for(status, "v5litepod-16", &source)), "initialize-under-condition");
}

TEST_F(RouterTest, OneOtherHostIsSingular) {
  const auto status = reviewed(ScriptClass::single_host_compatible);
  const auto d = decide_for(status, "v4-16"); // 2 hosts
  ASSERT_EQ(rule_of(d), "multi-host-needs-qualified");
  EXPECT_NE(d.refusal->reason.find("while the other host never starts and 4 chips sit idle"), std::string::npos)
      << d.refusal->reason;
  EXPECT_EQ(d.refusal->reason.find("1 host"), std::string::npos) << d.refusal->reason;
}

TEST_F(RouterTest, SeveralOtherHostsArePlural) {
  const auto status = reviewed(ScriptClass::single_host_compatible);
  const auto d = decide_for(status, "v5litepod-16"); // 4 hosts
  ASSERT_EQ(rule_of(d), "multi-host-needs-qualified");
  EXPECT_NE(d.refusal->reason.find("while the other 3 hosts never start and 12 chips sit idle"), std::string::npos)
      << d.refusal->reason;
}

TEST_F(RouterTest, ReviewRequiredReasonDoesNotRepeatTheRule) {
  for (const auto state : {ReviewState::no_entry, ReviewState::stale_digest}) {
    auto status = reviewed(ScriptClass::single_host_compatible);
    status.state = state;
    const auto d = decide_for(status, "v5litepod-8");
    ASSERT_EQ(rule_of(d), "review-required");
    EXPECT_EQ(d.refusal->reason.find("review-required"), std::string::npos) << d.refusal->reason;
    EXPECT_TRUE(d.refusal->reason.starts_with(fmt::format("[{}] ", to_string(state)))) << d.refusal->reason;
  }
}

TEST_F(RouterTest, CpuOnlyRefusalSaysWhatTheSourceShows) {
  auto status = reviewed(ScriptClass::cpu_only);
  status.source = "import jax\n\njax.devices('cpu')\n";
  const Classification cpu = classify_source(status.source);
  const auto selects = decide_for(status, "v5litepod-8", &cpu);
  ASSERT_EQ(rule_of(selects), "cpu-only-stays-on-cpu");
  EXPECT_NE(selects.refusal->reason.find("it selects CPU devices at line 3 (devices-cpu)"), std::string::npos)
      << selects.refusal->reason;

  status.source = "\n  \n";
  const Classification empty = classify_source(status.source);
  const auto blank = decide_for(status, "v5litepod-8", &empty);
  ASSERT_EQ(rule_of(blank), "cpu-only-stays-on-cpu");
  EXPECT_NE(blank.refusal->reason.find("its file is empty"), std::string::npos) << blank.refusal->reason;
  EXPECT_EQ(blank.refusal->reason.find("selects CPU"), std::string::npos) << blank.refusal->reason;

  status.source = "print('hello')\n";
  const Classification plain = classify_source(status.source);
  const auto none = decide_for(status, "v5litepod-8", &plain);
  EXPECT_NE(none.refusal->reason.find("nothing in its source selects CPU devices"), std::string::npos)
      << none.refusal->reason;
}

TEST_F(RouterTest, CpuRouteIgnoresSourceRules) {
  const auto status = reviewed(ScriptClass::cpu_only);
  const Classification source = classify_source("import jax\njax.devices('cpu')\n");
  EXPECT_EQ(decide_for(status, nullptr, &source).route, RouteKind::cpu);
}

TEST(Router, RulesTableHasUniqueIdsAndSummaries) {
  std::set<std::string_view> ids;
  for (const auto& rule : routing_rules()) {
    EXPECT_TRUE(ids.insert(rule.id).second) << rule.id;
    EXPECT_FALSE(rule.summary.empty()) << rule.id;
  }
  EXPECT_EQ(routing_rules().front().id, "review-required"); // fail closed: checked first
}

} // namespace
} // namespace tpulaunch
