#include "tpulaunch/runs/resume.hpp"

#include <gtest/gtest.h>

namespace tpulaunch {
namespace {

// A preempted spot run of advanced/lesson on two created slices of v5litepod-16.
RunView preempted_run() {
  RunView run;
  run.folder = "./tpu-runs/lab-pod/advanced/lesson/r1";
  run.tpu = "lab-pod";
  run.state = RunState::preempted;
  run.plan.script = "advanced/lesson";
  run.plan.run_id = "r1";
  run.plan.slice = "v5litepod-16";
  run.plan.slices = 2;
  run.plan.zone = "us-west4-a";
  run.plan.project = "proj";
  run.plan.capacity = "create";
  run.plan.provisioning = "spot";
  run.plan.checkpoint_dir = "gs://b/ckpt";
  run.plan.script_sha256 = std::string(64, 'a');
  return run;
}

TEST(Resume, FillsWhatWasNotGivenFromThePlanRecord) {
  ResumeFields fields;
  fields.run_id = "r2";
  ASSERT_TRUE(resume_from(fields, preempted_run(), "advanced/lesson"));
  EXPECT_EQ(fields.slice, "v5litepod-16");
  EXPECT_EQ(fields.tpu, "lab-pod");
  EXPECT_EQ(fields.zone, "us-west4-a");
  EXPECT_EQ(fields.project, "proj");
  EXPECT_EQ(fields.checkpoint_dir, "gs://b/ckpt");
  EXPECT_EQ(fields.slices, 2);
  EXPECT_TRUE(fields.create);
  EXPECT_FALSE(fields.queued);
  EXPECT_TRUE(fields.spot);
  EXPECT_FALSE(fields.preemptible);
}

TEST(Resume, KeepsWhatWasGivenWhenItAgrees) {
  ResumeFields fields;
  fields.slice = "v5litepod-16";
  fields.zone = "us-east5-a"; // not one a resumed run keeps: the user's
  fields.slices = 3;
  fields.run_id = "r2";
  ASSERT_TRUE(resume_from(fields, preempted_run(), "advanced/lesson"));
  EXPECT_EQ(fields.zone, "us-east5-a");
  EXPECT_EQ(fields.slices, 3);
}

TEST(Resume, AGivenValueThatDiffersNamesBoth) {
  struct Case {
    std::string ResumeFields::*field;
    std::string given;
    std::string said; // what the message must hold
  };
  for (const Case& c : {Case{&ResumeFields::slice, "v6e-8", "--slice v6e-8 is not the resumed run's (v5litepod-16)"},
                        Case{&ResumeFields::tpu, "other", "--tpu other is not the resumed run's (lab-pod)"},
                        Case{&ResumeFields::checkpoint_dir, "gs://x",
                             "--checkpoint-dir gs://x is not the resumed run's (gs://b/ckpt)"}}) {
    ResumeFields fields;
    fields.run_id = "r2";
    fields.*c.field = c.given;
    const Status status = resume_from(fields, preempted_run(), "advanced/lesson");
    ASSERT_FALSE(status) << c.said;
    EXPECT_EQ(status.error().code, ExitCode::usage);
    EXPECT_NE(status.error().message.find(c.said), std::string::npos) << status.error().message;
  }
}

TEST(Resume, ANewRunOfTheSameScriptWithItsOwnId) {
  ResumeFields same_id;
  same_id.run_id = "r1";
  const Status reused = resume_from(same_id, preempted_run(), "advanced/lesson");
  ASSERT_FALSE(reused);
  EXPECT_NE(reused.error().message.find("the new run needs a new run id"), std::string::npos);

  ResumeFields other;
  const Status other_script = resume_from(other, preempted_run(), "basics/lesson");
  ASSERT_FALSE(other_script);
  EXPECT_NE(other_script.error().message.find("that run is of script advanced/lesson, not basics/lesson"),
            std::string::npos);
}

TEST(Resume, ASucceededRunIsNotResumed) {
  RunView run = preempted_run();
  run.state = RunState::succeeded;
  ResumeFields fields;
  const Status status = resume_from(fields, run, "advanced/lesson");
  ASSERT_FALSE(status);
  EXPECT_EQ(status.error().code, ExitCode::refused);
}

TEST(Resume, QueuedGivenKeepsTheRecordsCreateOut) {
  ResumeFields fields;
  fields.queued = true;
  ASSERT_TRUE(resume_from(fields, preempted_run(), "advanced/lesson"));
  EXPECT_FALSE(fields.create);
  EXPECT_TRUE(fields.queued);
}

TEST(Resume, TheScriptMustBeTheSameByteForByte) {
  const RunView run = preempted_run();
  EXPECT_TRUE(same_script(run, std::string(64, 'a')));
  const Status changed = same_script(run, std::string(64, 'b'));
  ASSERT_FALSE(changed);
  EXPECT_EQ(changed.error().code, ExitCode::refused);
  EXPECT_NE(changed.error().message.find("its sha256 was aaaaaaaaaaaaaaaa, now bbbbbbbbbbbbbbbb"), std::string::npos);
  RunView old = run;
  old.plan.script_sha256.clear();
  const Status unknown = same_script(old, std::string(64, 'a'));
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code, ExitCode::config);
}

} // namespace
} // namespace tpulaunch
