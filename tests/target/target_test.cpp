#include "tpulaunch/target/target.hpp"

#include <algorithm>

#include <gtest/gtest.h>

#include "support/plan_fixture.hpp"
#include "tpulaunch/receipts/verify.hpp"
#include "tpulaunch/shell/shell.hpp"

namespace tpulaunch {
namespace {

using test_support::embedded_catalog;

const Slice& slice_of(const char* name) {
  const Slice* slice = embedded_catalog().find(name);
  EXPECT_NE(slice, nullptr) << name;
  return *slice;
}

TEST(Target, ProcessesAndDevicesCountEveryHostOfEveryNode) {
  const Slice& pod = slice_of("v5litepod-16"); // 4 hosts x 4 chips
  Target target = slice_target(pod);
  EXPECT_EQ(target.hosts(), pod.hosts);
  EXPECT_EQ(target.processes(), pod.hosts);
  EXPECT_EQ(target.devices(), pod.device_count());
  target.nodes = 3; // what Multislice will ask: three nodes of the same slice
  EXPECT_EQ(target.hosts(), pod.hosts);
  EXPECT_EQ(target.processes(), 3 * pod.hosts);
  EXPECT_EQ(target.devices(), 3 * pod.device_count());
}

TEST(Target, NodesAreTheTpuAloneOrNumberedBySlice) {
  Target target;
  target.tpu = "pod";
  EXPECT_FALSE(target.multislice());
  EXPECT_EQ(target.node(0), "pod");
  target.nodes = 3;
  EXPECT_TRUE(target.multislice());
  EXPECT_EQ(target.node(0), "pod-0");
  EXPECT_EQ(target.node(2), "pod-2");
}

TEST(Target, TheCpuRouteHasNoProcesses) {
  Target target;
  target.nodes = 2;
  EXPECT_EQ(target.hosts(), 0);
  EXPECT_EQ(target.processes(), 0);
  EXPECT_EQ(target.devices(), 0);
}

TEST(Target, OnlySpotAndPreemptibleMayBePreempted) {
  Target target;
  for (const auto& [provisioning, preemptible] :
       {std::pair{Provisioning::standard, false}, std::pair{Provisioning::spot, true},
        std::pair{Provisioning::preemptible, true}, std::pair{Provisioning::reserved, false},
        std::pair{Provisioning::guaranteed, false}}) {
    target.provisioning = provisioning;
    EXPECT_EQ(target.preemptible(), preemptible) << to_string(provisioning);
  }
}

TEST(Target, CapacityNameIsTheQueuedResourceOnlyWhenQueued) {
  Target target;
  target.tpu = "pod";
  target.queued_resource = "pod-qr";
  target.capacity = Capacity::create;
  EXPECT_EQ(target.capacity_name(), "pod");
  target.capacity = Capacity::queued;
  EXPECT_EQ(target.capacity_name(), "pod-qr");
  EXPECT_EQ(to_string(Capacity::queued), "queued");
}

TEST(Target, LocationIsZoneAndProject) {
  Target target;
  target.zone = "us-central1-a";
  target.project = "my-project-1";
  const gcloud::Location at = target.location();
  EXPECT_EQ(at.zone, "us-central1-a");
  EXPECT_EQ(at.project, "my-project-1");
}

// The planner resolves the user's options into the plan's Target, and builds its calls from it.
class TargetPlanTest : public test_support::PlanFixture {};

TEST_F(TargetPlanTest, AnExistingTpuKeepsTheNamesAndTheCatalogsRuntime) {
  m_options.project = "my-project-1";
  const Plan p = plan("v4-32", RouteKind::multi_host);
  EXPECT_EQ(p.target.tpu, "pod");
  EXPECT_EQ(p.target.zone, "us-central1-a");
  EXPECT_EQ(p.target.project, "my-project-1");
  ASSERT_NE(p.target.slice, nullptr);
  EXPECT_EQ(p.target.slice->name, "v4-32");
  EXPECT_EQ(p.target.capacity, Capacity::existing);
  EXPECT_EQ(p.target.runtime_version, p.target.slice->runtime_version);
  EXPECT_EQ(p.target.queued_resource, "");
  EXPECT_EQ(p.workers(), p.target.processes());
}

TEST_F(TargetPlanTest, QueuedTargetNamesItsResourceAndRuntime) {
  m_options.lifecycle.capacity = Capacity::queued;
  m_options.lifecycle.provisioning = Provisioning::spot;
  m_options.lifecycle.queued_resource = "my-qr";
  m_options.lifecycle.runtime_version = "v2-alpha-tpuv5";
  const Plan p = plan("v5litepod-16", RouteKind::multi_host);
  EXPECT_EQ(p.target.capacity, Capacity::queued);
  EXPECT_EQ(p.target.provisioning, Provisioning::spot);
  EXPECT_EQ(p.target.queued_resource, "my-qr");
  EXPECT_EQ(p.target.runtime_version, "v2-alpha-tpuv5");
  EXPECT_TRUE(p.preemptible());
  // Every capacity step asks about the target's queued resource, not the node.
  for (const Step& step : p.steps) {
    if (step.kind == StepKind::name_check || step.kind == StepKind::wait || step.kind == StepKind::release) {
      EXPECT_NE(to_shell(step.line).find("queued-resources"), std::string::npos) << step.name();
      EXPECT_NE(to_shell(step.line).find(" my-qr "), std::string::npos) << step.name();
    }
  }
}

TEST_F(TargetPlanTest, FlagsThatDoNotGoTogetherAreRefusedBeforeAnyTarget) {
  m_options.lifecycle.provisioning = Provisioning::guaranteed;
  m_options.lifecycle.capacity = Capacity::create;
  auto result = build_plan(m_status, RouteKind::multi_host, m_catalog->find("v5litepod-16"), m_options);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.error().message.find("--guaranteed"), std::string::npos) << result.error().message;
}

// --internal-ips is asked for when the TPU is made: on the create (or queue) call only, and refused
// for an existing TPU, whose addresses the plan cannot change.
TEST_F(TargetPlanTest, InternalAddressesOnlyAreAskedForWhenTheTpuIsMade) {
  m_options.lifecycle.internal_ips = true;
  auto existing = build_plan(m_status, RouteKind::multi_host, m_catalog->find("v5litepod-16"), m_options);
  ASSERT_FALSE(existing.ok());
  EXPECT_NE(existing.error().message.find("--internal-ips"), std::string::npos) << existing.error().message;
  EXPECT_NE(existing.error().message.find("--create or --queued"), std::string::npos) << existing.error().message;
  for (const Capacity capacity : {Capacity::create, Capacity::queued}) {
    m_options.lifecycle.capacity = capacity;
    const Plan p = plan("v5litepod-16", RouteKind::multi_host);
    EXPECT_TRUE(p.target.internal_ips);
    int with_flag = 0;
    for (const Step& step : p.steps) {
      const auto argv = step.line.argv();
      if (std::find(argv.begin(), argv.end(), "--internal-ips") != argv.end()) {
        ++with_flag;
        EXPECT_TRUE(step.kind == StepKind::create || step.kind == StepKind::queue) << step.name();
      }
    }
    EXPECT_EQ(with_flag, 1);
  }
}

TEST_F(TargetPlanTest, TheCpuRouteHasATargetWithoutASlice) {
  auto cpu = build_plan(m_status, RouteKind::cpu, nullptr, PlanOptions{});
  ASSERT_TRUE(cpu.ok()) << cpu.error().message;
  EXPECT_EQ(cpu->target.slice, nullptr);
  EXPECT_EQ(cpu->workers(), 0);
}

// verify counts the target's processes: a second node doubles the worker folders it expects.
TEST(TargetVerify, VerifyExpectsOneWorkerFolderPerProcess) {
  const Slice& pod = slice_of("v5litepod-16");
  Target target = slice_target(pod);
  target.nodes = 2;
  const VerifyReport report = verify_fetched({}, target, VerifyOptions{VerifyKind::logs, false});
  EXPECT_EQ(report.workers, 2 * pod.hosts);
  ASSERT_EQ(report.findings.size(), static_cast<std::size_t>(2 * pod.hosts));
  EXPECT_EQ(report.findings.back().worker, 2 * pod.hosts - 1);
  EXPECT_EQ(report.findings.back().field, "folder");
}

} // namespace
} // namespace tpulaunch
