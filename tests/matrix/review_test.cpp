#include "tpulaunch/matrix/review.hpp"

#include <gtest/gtest.h>

#include "tpulaunch/matrix/overrides.hpp"
#include "tpulaunch/util/sha256.hpp"

namespace tpulaunch {
namespace {

const char* const k_cpu_source = "import jax\n\nd = jax.devices('cpu')\n";
const char* const k_multi_source =
    "import jax\njax.distributed.initialize()\ni = jax.process_index()\n"
    "s = jax.lax.psum(i, 'x')\nassert s > 0\n";

ReviewRequest request(ScriptClass cls) {
  ReviewRequest r;
  r.id = "lesson";
  r.script_class = cls;
  r.reviewed_by = "alice";
  r.reviewed_at = "2026-12-02T10:00:00Z";
  return r;
}

TEST(Review, RecordsClassDigestReviewerAndEvidence) {
  auto entry = make_review_entry(request(ScriptClass::cpu_only), k_cpu_source, classify_source(k_cpu_source));
  ASSERT_TRUE(entry.ok()) << entry.error().message;
  EXPECT_EQ(entry->class_name, "cpu-only");
  EXPECT_EQ(entry->sha256, sha256_hex(k_cpu_source));
  EXPECT_EQ(entry->reviewed_by, "alice");
  EXPECT_EQ(entry->evidence, nlohmann::json::array({"cpu-selection devices-cpu at line 3"}));
  EXPECT_TRUE(entry->overrides.empty());
}

TEST(Review, TpuClassOverCpuEvidenceNeedsAnOverride) {
  for (const auto cls : {ScriptClass::single_host_compatible, ScriptClass::multi_host_qualified}) {
    auto refused = make_review_entry(request(cls), k_cpu_source, classify_source(k_cpu_source));
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.error().code, ExitCode::refused);
    EXPECT_NE(refused.error().message.find("line 3 (devices-cpu)"), std::string::npos) << refused.error().message;
  }
  auto r = request(ScriptClass::single_host_compatible);
  r.override_reason = "the CPU list is only printed";
  auto entry = make_review_entry(r, k_cpu_source, classify_source(k_cpu_source));
  ASSERT_TRUE(entry.ok());
  ASSERT_EQ(entry->overrides.size(), 1U);
  EXPECT_EQ(entry->overrides[0].rule, "devices-cpu");
  EXPECT_EQ(entry->overrides[0].line, 3U);
  EXPECT_EQ(entry->overrides[0].reason, "the CPU list is only printed");
}

TEST(Review, EvidenceOfACourseFileIsRecordedWithItsFile) {
  // The classification of a lesson whose helper selects CPU devices at its line 3.
  Classification lesson = classify_source(k_cpu_source);
  lesson.evidence.at(0).file = "lesson_helpers.py";
  auto r = request(ScriptClass::single_host_compatible);
  r.files = {MatrixFile{"public/exercises/lesson_helpers.py", std::string(64, 'a'), false}};
  auto refused = make_review_entry(r, "import lesson_helpers\n", lesson);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("lesson_helpers.py line 3 (devices-cpu)"), std::string::npos)
      << refused.error().message;
  r.override_reason = "only under --simulate";
  auto entry = make_review_entry(r, "import lesson_helpers\n", lesson);
  ASSERT_TRUE(entry.ok()) << entry.error().message;
  EXPECT_EQ(entry->files, r.files);
  EXPECT_EQ(entry->evidence, nlohmann::json::array({"cpu-selection devices-cpu at lesson_helpers.py line 3"}));
  ASSERT_EQ(entry->overrides.size(), 1U);
  EXPECT_EQ(entry->overrides[0].file, "lesson_helpers.py");
  EXPECT_EQ(entry->overrides[0].line, 3U);
  // The override covers that row of that file only: the same rule and line of the script is another row.
  EXPECT_TRUE(is_overridden(lesson.evidence[0], &*entry));
  Evidence in_script = lesson.evidence[0];
  in_script.file.clear();
  EXPECT_FALSE(is_overridden(in_script, &*entry));
}

TEST(Review, MultiHostQualifiedNeedsEveryMarker) {
  EXPECT_TRUE(make_review_entry(request(ScriptClass::multi_host_qualified), k_multi_source,
                                classify_source(k_multi_source))
                  .ok());
  const char* const lacking = "import jax\njax.distributed.initialize()\n";
  auto refused = make_review_entry(request(ScriptClass::multi_host_qualified), lacking, classify_source(lacking));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ExitCode::refused);
  EXPECT_NE(refused.error().message.find("per-process data, collective, result check"), std::string::npos)
      << refused.error().message;
  auto r = request(ScriptClass::multi_host_qualified);
  r.override_reason = "a smoke test";
  auto entry = make_review_entry(r, lacking, classify_source(lacking));
  ASSERT_TRUE(entry.ok());
  EXPECT_EQ(entry->overrides.size(), 3U);
  EXPECT_EQ(entry->overrides[0], missing_marker_override("per-process data", "a smoke test"));
  EXPECT_EQ(override_rule_text(entry->overrides[0]), "missing:per-process data");
}

// The NUM_HOSTS pattern: every marker is there, but initialize() runs only under a condition
// nothing in tpulaunch makes true; the review must say what does, and the entry keeps it by the call.
const char* const k_conditional_source =
    "import os\nimport jax\nif int(os.environ.get('NUM_HOSTS', '1')) > 1:\n    jax.distributed.initialize()\n"
    "i = jax.process_index()\ns = jax.lax.psum(i, 'x')\nassert s > 0\n";

TEST(Review, AConditionalInitializeNeedsItsConditionAccepted) {
  const Classification c = classify_source(k_conditional_source);
  ASSERT_NE(conditional_initialize(c), nullptr);
  auto refused = make_review_entry(request(ScriptClass::multi_host_qualified), k_conditional_source, c);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ExitCode::refused);
  EXPECT_NE(refused.error().message.find("at line 4 only under a condition"), std::string::npos)
      << refused.error().message;
  EXPECT_NE(refused.error().message.find("needs --initialize-condition REASON"), std::string::npos);
  // --override is no way around it: an override accepts evidence, not a condition.
  auto r = request(ScriptClass::multi_host_qualified);
  r.override_reason = "trust me";
  EXPECT_EQ(make_review_entry(r, k_conditional_source, c).error().code, ExitCode::refused);
  r = request(ScriptClass::multi_host_qualified);
  r.initialize_condition = "the course's launcher sets NUM_HOSTS on every host";
  auto entry = make_review_entry(r, k_conditional_source, c);
  ASSERT_TRUE(entry.ok()) << entry.error().message;
  ASSERT_TRUE(entry->initialize_condition.has_value());
  EXPECT_EQ(entry->initialize_condition->line, 4U);
  EXPECT_EQ(entry->initialize_condition->reason, r.initialize_condition);
  EXPECT_NE(entry->initialize_condition->condition.find("if int(os.environ.get('NUM_HOSTS', '1')) > 1:"),
            std::string::npos)
      << entry->initialize_condition->condition;
  EXPECT_EQ(unaccepted_condition(c, &*entry), nullptr);
  EXPECT_EQ(unaccepted_condition(c, nullptr), conditional_initialize(c));
}

TEST(Review, AConditionAcceptedWhereThereIsNoneIsAUsageError) {
  auto r = request(ScriptClass::multi_host_qualified);
  r.initialize_condition = "why not";
  auto entry = make_review_entry(r, k_multi_source, classify_source(k_multi_source));
  ASSERT_FALSE(entry.ok());
  EXPECT_EQ(entry.error().code, ExitCode::usage);
  EXPECT_NE(entry.error().message.find("runs unconditionally"), std::string::npos) << entry.error().message;
  r = request(ScriptClass::single_host_compatible);
  r.initialize_condition = "why not";
  EXPECT_EQ(make_review_entry(r, "import jax\n", classify_source("import jax\n")).error().code, ExitCode::usage);
}

TEST(Review, ProvesIsRecordedAndNeverForACpuOnlyScript) {
  auto r = request(ScriptClass::multi_host_qualified);
  auto undeclared = make_review_entry(r, k_multi_source, classify_source(k_multi_source));
  ASSERT_TRUE(undeclared.ok());
  EXPECT_FALSE(undeclared->proves.has_value());
  r.proves = Proves::training;
  auto entry = make_review_entry(r, k_multi_source, classify_source(k_multi_source));
  ASSERT_TRUE(entry.ok()) << entry.error().message;
  EXPECT_EQ(entry->proves, Proves::training);
  auto cpu = request(ScriptClass::cpu_only);
  cpu.proves = Proves::logs;
  auto refused = make_review_entry(cpu, k_cpu_source, classify_source(k_cpu_source));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ExitCode::usage);
  EXPECT_NE(refused.error().message.find("--proves logs"), std::string::npos) << refused.error().message;
}

TEST(Review, AnOverrideWithNothingToOverrideIsAUsageError) {
  auto r = request(ScriptClass::cpu_only);
  r.override_reason = "why not";
  auto entry = make_review_entry(r, k_cpu_source, classify_source(k_cpu_source));
  ASSERT_FALSE(entry.ok());
  EXPECT_EQ(entry.error().code, ExitCode::usage);
}

TEST(Review, ReviewerAndNoteAreOneLineOfText) {
  auto r = request(ScriptClass::cpu_only);
  r.reviewed_by = "";
  EXPECT_EQ(make_review_entry(r, "", classify_source("")).error().code, ExitCode::usage);
  r.reviewed_by = "a\nb";
  EXPECT_EQ(make_review_entry(r, "", classify_source("")).error().code, ExitCode::usage);
  r.reviewed_by = "alice";
  r.note = std::string(3000, 'x');
  EXPECT_EQ(make_review_entry(r, "", classify_source("")).error().code, ExitCode::usage);
}

TEST(Review, UtcTimestampFormat) {
  const std::string now = utc_now_iso8601();
  ASSERT_EQ(now.size(), 20U);
  EXPECT_EQ(now[4], '-');
  EXPECT_EQ(now[10], 'T');
  EXPECT_EQ(now.back(), 'Z');
}

} // namespace
} // namespace tpulaunch
