// The one override rule (overrides.hpp): what review records, plan and check honour, and a
// marker that cannot be overridden is honoured by none of them.
#include "tpulaunch/matrix/overrides.hpp"

#include <gtest/gtest.h>

#include "tpulaunch/matrix/review.hpp"
#include "tpulaunch/route/router.hpp"

namespace tpulaunch {
namespace {

constexpr const char* k_no_initialize =
    "import jax\nx = jax.process_index()\ny = jax.lax.psum(1, 'i')\nassert y\n";

MatrixEntry entry_with(std::vector<EvidenceOverride> overrides) {
  MatrixEntry entry;
  entry.id = "s";
  entry.class_name = "multi-host-qualified";
  entry.script_class = ScriptClass::multi_host_qualified;
  entry.overrides = std::move(overrides);
  return entry;
}

TEST(Overrides, EvidenceIsCoveredByItsRuleAndLineOnly) {
  const auto c = classify_source("import jax\n\njax.devices('cpu')\n");
  ASSERT_EQ(c.evidence.size(), 1U);
  const MatrixEntry exact = entry_with({{"devices-cpu", 3, "only printed"}});
  const MatrixEntry other_line = entry_with({{"devices-cpu", 2, "only printed"}});
  const MatrixEntry other_rule = entry_with({{"local-devices-cpu", 3, "only printed"}});
  EXPECT_TRUE(is_overridden(c.evidence[0], &exact));
  EXPECT_FALSE(is_overridden(c.evidence[0], &other_line));
  EXPECT_FALSE(is_overridden(c.evidence[0], &other_rule));
  EXPECT_FALSE(is_overridden(c.evidence[0], nullptr));
  EXPECT_TRUE(unoverridden(c.of_category(Category::cpu_selection), &exact).empty());
  EXPECT_EQ(unoverridden(c.of_category(Category::cpu_selection), &other_line).size(), 1U);
}

TEST(Overrides, InitializeCannotBeOverriddenOtherMarkersCan) {
  const auto c = classify_source(k_no_initialize);
  const MatrixEntry hand_written = entry_with({missing_marker_override("initialize", "the launcher does it")});
  const auto unmet = unmet_markers(c, &hand_written);
  ASSERT_EQ(unmet.size(), 1U);
  EXPECT_EQ(unmet[0]->name, "initialize");
  EXPECT_FALSE(unmet[0]->not_overridable.empty());

  const auto lacking = classify_source("import jax\njax.distributed.initialize()\n");
  const MatrixEntry recorded = entry_with({missing_marker_override("per-process data", "smoke test"),
                                           missing_marker_override("collective", "smoke test"),
                                           missing_marker_override("result check", "smoke test")});
  EXPECT_TRUE(unmet_markers(lacking, &recorded).empty());
  EXPECT_EQ(unmet_markers(lacking, nullptr).size(), 3U);
}

TEST(Overrides, ReviewRefusesWhatPlanWouldNotHonour) {
  ReviewRequest request;
  request.id = "s";
  request.script_class = ScriptClass::multi_host_qualified;
  request.reviewed_by = "alice";
  request.override_reason = "initialize is done by the launcher";
  const auto entry = make_review_entry(request, k_no_initialize, classify_source(k_no_initialize));
  ASSERT_FALSE(entry.ok());
  EXPECT_EQ(entry.error().code, ExitCode::refused);
  EXPECT_NE(entry.error().message.find("an override cannot stand in for initialize"), std::string::npos)
      << entry.error().message;
}

TEST(Overrides, PlanHonoursExactlyWhatReviewRecords) {
  const std::string source = "import jax\njax.distributed.initialize()\njax.devices('cpu')\n";
  ReviewRequest request;
  request.id = "s";
  request.script_class = ScriptClass::single_host_compatible;
  request.reviewed_by = "alice";
  request.override_reason = "the CPU list is only printed";
  const auto classification = classify_source(source);
  auto entry = make_review_entry(request, source, classification);
  ASSERT_TRUE(entry.ok());
  Slice one_host;
  one_host.name = "v5litepod-8";
  one_host.hosts = 1;
  one_host.chips_per_host = 8;
  ScriptStatus status;
  status.id = "s";
  status.state = ReviewState::reviewed;
  status.entry = &*entry;
  EXPECT_TRUE(decide(RouteRequest{&status, &one_host, &classification}).allowed());
  // The same review without its override: plan refuses, counting the rows it shows.
  MatrixEntry bare = *entry;
  bare.overrides.clear();
  status.entry = &bare;
  const auto refused = decide(RouteRequest{&status, &one_host, &classification});
  ASSERT_FALSE(refused.allowed());
  EXPECT_EQ(refused.refusal->rule, "source-selects-cpu");
  EXPECT_NE(refused.refusal->reason.find("(1 finding)"), std::string::npos) << refused.refusal->reason;
  EXPECT_EQ(refused.refusal->evidence.size(), 1U);
}

TEST(Overrides, ReReviewReplacesReasonAndNoteButKeepsUnknownFields) {
  Matrix matrix;
  MatrixEntry old;
  old.id = "s";
  old.reason = "old reason";
  old.note = "old note";
  old.extra["path"] = "public/exercises/s.py";
  matrix.scripts["s"] = old;
  MatrixEntry fresh;
  fresh.id = "s";
  fresh.note = "new note";
  record_review(matrix, fresh);
  const MatrixEntry& got = matrix.scripts.at("s");
  EXPECT_EQ(got.reason, "");
  EXPECT_EQ(got.note, "new note");
  EXPECT_EQ(got.extra["path"], "public/exercises/s.py");
}

// A conditional initialize() counts only when no call of it always runs, and an acceptance covers
// the call at its recorded line and file, nothing else.
TEST(Overrides, AConditionIsAcceptedAtItsCallOnly) {
  const char* const guarded = "import jax\nif flag:\n    jax.distributed.initialize()\n";
  const char* const also_plain =
      "import jax\nif flag:\n    jax.distributed.initialize()\njax.distributed.initialize()\n";
  EXPECT_EQ(conditional_initialize(classify_source("import jax\njax.distributed.initialize()\n")), nullptr);
  EXPECT_EQ(conditional_initialize(classify_source(also_plain)), nullptr);
  EXPECT_EQ(conditional_initialize(classify_source("import jax\n")), nullptr);
  const auto c = classify_source(guarded);
  const Evidence* call = conditional_initialize(c);
  ASSERT_NE(call, nullptr);
  EXPECT_EQ(call->line, 3U);
  MatrixEntry entry = entry_with({});
  EXPECT_EQ(unaccepted_condition(c, &entry), call);
  entry.initialize_condition = InitializeCondition{3, "", "inside `if flag:`", "flag is set on every host"};
  EXPECT_EQ(unaccepted_condition(c, &entry), nullptr);
  entry.initialize_condition->line = 2;
  EXPECT_EQ(unaccepted_condition(c, &entry), call);
  entry.initialize_condition->line = 3;
  entry.initialize_condition->file = "helpers.py";
  EXPECT_EQ(unaccepted_condition(c, &entry), call);
}

TEST(Overrides, DescribedInWordsAMissingMarkerHasNoLine) {
  EXPECT_EQ(describe_override({"devices-cpu", 16, "r"}), "devices-cpu at line 16");
  const std::string missing = describe_override(missing_marker_override("per-process data", "r"));
  EXPECT_EQ(missing, "no per-process data evidence anywhere in the source (missing:per-process data)");
  EXPECT_EQ(missing.find("line 0"), std::string::npos);
}

} // namespace
} // namespace tpulaunch
