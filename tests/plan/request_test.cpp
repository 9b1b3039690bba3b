// The plan request and its one validate: the cross-option rules both backends' entry points run,
// by the names the user gave, and a request no backend rewrites.
#include "tpulaunch/plan/request.hpp"

#include <gtest/gtest.h>

#include "support/plan_fixture.hpp"

namespace tpulaunch {
namespace {

class PlanRequestTest : public test_support::PlanFixture {
protected:
  PlanRequest request(const char* slice, int slices = 1) {
    return PlanRequest{Topology{slice != nullptr ? m_catalog->find(slice) : nullptr, slices}, TpuVmPlacement{},
                       m_options, {}, false};
  }
  static std::string error_of(const Status& status) { return status.ok() ? std::string("ok") : status.error().message; }
};

TEST_F(PlanRequestTest, CpuRouteRefusesEveryTpuOnlyFlagByTheNameGiven) {
  PlanRequest cpu = request(nullptr);
  cpu.given = {"--tpu", "--zone", "--slices", "--verify"}; // --zone is a default, not TPU-only
  EXPECT_EQ(error_of(validate(cpu, m_status, RouteKind::cpu)),
            "--tpu, --slices, --verify mean nothing on the CPU route (no --slice); give --slice for a TPU route, "
            "or leave them out");
  cpu.given = {"--zone"};
  EXPECT_EQ(error_of(validate(cpu, m_status, RouteKind::cpu)), "ok");
}

TEST_F(PlanRequestTest, OptionRulesComeBeforeAnyFileIsRead) {
  PlanRequest gke = request("v5litepod-16");
  gke.placement = GkePlacement{"lab", "us-east5-b", "", "default", "example.com/jax:1"};
  gke.given = {"--resume"};
  EXPECT_NE(error_of(validate_options(gke)).find("--resume is not on the GKE route yet"), std::string::npos);
  PlanRequest vm = request("v5litepod-16");
  vm.manifest = true;
  EXPECT_NE(error_of(validate_options(vm)).find("print a GKE route's manifest"), std::string::npos);
}

TEST_F(PlanRequestTest, FlagsThatNameOneChoiceExcludeEachOther) {
  EXPECT_EQ(error_of(check_exclusive_flags({"--create", "--spot", "--internal-ip"})), "ok");
  EXPECT_EQ(error_of(check_exclusive_flags({"--queued", "--tpu", "--create"})),
            "--create and --queued exclude each other: create the TPU VM, or queue for it");
  EXPECT_EQ(error_of(check_exclusive_flags({"--reserved", "--guaranteed"})),
            "--spot, --preemptible, --reserved and --guaranteed exclude each other");
  EXPECT_EQ(error_of(check_exclusive_flags({"--tunnel-through-iap", "--internal-ip"})),
            "at most one of --internal-ip | --tunnel-through-iap can be specified");
  PlanRequest vm = request("v5litepod-16");
  vm.given = {"--spot", "--preemptible"};
  EXPECT_EQ(error_of(validate_options(vm)), "--spot, --preemptible, --reserved and --guaranteed exclude each other");
}

TEST_F(PlanRequestTest, GkeRouteRefusesTpuVmFlags) {
  PlanRequest gke = request("v5litepod-16");
  gke.placement = GkePlacement{"lab", "us-east5-b", "", "default", "example.com/jax:1"};
  gke.options.tpu.clear();
  gke.options.zone.clear();
  gke.given = {"--zone"};
  EXPECT_NE(error_of(validate(gke, m_status, RouteKind::multi_host)).find("--zone names a TPU VM"), std::string::npos);
  gke.given.clear();
  gke.options.form = PlanForm::course;
  EXPECT_NE(error_of(validate(gke, m_status, RouteKind::multi_host)).find("leave --course out"), std::string::npos);
  gke.options.form = PlanForm::full;
  EXPECT_NE(error_of(validate(gke, m_status, RouteKind::multi_host)).find("needs --results"), std::string::npos);
  gke.options.results = "gs://lab-bucket/runs";
  EXPECT_EQ(error_of(validate(gke, m_status, RouteKind::multi_host)), "ok");
}

TEST_F(PlanRequestTest, SlicesGivenAsOneIsRefusedAndNotGivenIsOneSlice) {
  PlanRequest one = request("v5litepod-16");
  EXPECT_EQ(error_of(validate(one, m_status, RouteKind::multi_host)), "ok");
  one.given = {"--slices"};
  EXPECT_NE(error_of(validate(one, m_status, RouteKind::multi_host)).find("--slices 1: expected 2 to"),
            std::string::npos);
}

TEST_F(PlanRequestTest, TheSliceCountLivesInTheTopology) {
  m_options.lifecycle.capacity = Capacity::queued;
  const PlanRequest two = request("v5litepod-16", 2);
  auto plan = tpu_vm_plan(m_status, RouteKind::multi_host, two);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_EQ(plan->target.nodes, 2);
  EXPECT_EQ(plan->workers(), 8);
  // The queued resource is one of N nodes, from the topology's count, not from an option.
  EXPECT_EQ(plan->target.queued_resource, "pod-qr");
}

} // namespace
} // namespace tpulaunch
