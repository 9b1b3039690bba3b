#include "tpulaunch/run/records.hpp"

#include <gtest/gtest.h>

namespace tpulaunch {
namespace {

PlanRecord sample() { return {"advanced/lesson", "r1", std::string(64, 'a'), "v5litepod-16", 2, std::string(32, 'b'), 42}; }

TEST(Records, ARecordIsKeyValueLinesInOrderAndTheFirstValueCounts) {
  const Record record = parse_record("record=x 1\nstate=running\nno equals sign\nstate=later\nsummary=a=b\n");
  EXPECT_EQ(record.value("record"), "x 1");
  EXPECT_EQ(record.value("state"), "running");
  EXPECT_EQ(record.value("summary"), "a=b");
  EXPECT_FALSE(record.get("detail"));
  EXPECT_EQ(record.value("detail"), "");
  EXPECT_EQ(format_record(parse_record("a=1\nb=\n")), "a=1\nb=\n");
}

TEST(Records, APlanRecordReadsBackAsWritten) {
  const std::string text = format_record(to_record(sample()));
  EXPECT_EQ(text.substr(0, text.find('\n')), "record=tpulaunch-plan 1");
  auto read = parse_plan_record(text, "plan.rec");
  ASSERT_TRUE(read.ok()) << read.error().message;
  EXPECT_EQ(read->script, "advanced/lesson");
  EXPECT_EQ(read->run_id, "r1");
  EXPECT_EQ(read->plan_sha256, std::string(64, 'a'));
  EXPECT_EQ(read->slice, "v5litepod-16");
  EXPECT_EQ(read->slices, 2);
  EXPECT_EQ(read->start, std::string(32, 'b'));
  EXPECT_EQ(read->written, 42);
}

TEST(Records, ANotAPlanRecordIsAConfigErrorNamingTheFile) {
  const std::string good = format_record(to_record(sample()));
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"record=tpulaunch-plan 1", "record=tpulaunch-run-status 2"},
           {"script=advanced/lesson", "script=../x"},
           {"run-id=r1", "run-id=-r"},
           {"plan=" + std::string(64, 'a'), "plan=abc"},
           {"start=" + std::string(32, 'b'), "start=" + std::string(32, 'B')},
           {"slices=2", "slices=0"},
           {"written=42", "written=4x"}}) {
    std::string text = good;
    text.replace(text.find(from), from.size(), to);
    auto read = parse_plan_record(text, "run/plan.rec");
    ASSERT_FALSE(read.ok()) << to;
    EXPECT_EQ(read.error().code, ExitCode::config);
    EXPECT_EQ(read.error().message.rfind("run/plan.rec: not a tpulaunch plan record", 0), 0U) << read.error().message;
  }
}

} // namespace
} // namespace tpulaunch

namespace tpulaunch {
namespace {

TEST(Records, WhatResumeAndRunsReadIsWrittenOnlyWhenSetAndReadsBack) {
  PlanRecord plan{"lesson", "r2", std::string(64, 'a'), "v5litepod-16", 1, std::string(32, 'b'), 42};
  EXPECT_EQ(format_record(to_record(plan)).find("zone="), std::string::npos); // an older record's shape
  plan.tpu = "lab-pod";
  plan.zone = "us-west4-a";
  plan.capacity = "create";
  plan.provisioning = "spot";
  plan.checkpoint_dir = "gs://b/ckpt";
  plan.resumes = "r1";
  plan.script_sha256 = std::string(64, 'c');
  auto read = parse_plan_record(format_record(to_record(plan)), "plan.rec");
  ASSERT_TRUE(read.ok()) << read.error().message;
  EXPECT_EQ(read->tpu, "lab-pod");
  EXPECT_EQ(read->zone, "us-west4-a");
  EXPECT_EQ(read->project, "");
  EXPECT_EQ(read->capacity, "create");
  EXPECT_EQ(read->provisioning, "spot");
  EXPECT_EQ(read->checkpoint_dir, "gs://b/ckpt");
  EXPECT_EQ(read->resumes, "r1");
  EXPECT_EQ(read->script_sha256, std::string(64, 'c'));
  EXPECT_EQ(read->connection, ""); // external: not written
  plan.connection = "tunnel-through-iap";
  EXPECT_EQ(parse_plan_record(format_record(to_record(plan)), "plan.rec")->connection, "tunnel-through-iap");
  plan.connection = "telnet";
  EXPECT_FALSE(parse_plan_record(format_record(to_record(plan)), "plan.rec").ok());
  plan.connection.clear();
  plan.resumes = "../r1";
  EXPECT_FALSE(parse_plan_record(format_record(to_record(plan)), "plan.rec").ok());
}

} // namespace
} // namespace tpulaunch
