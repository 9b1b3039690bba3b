#include "tpulaunch/gcloud/gcloud.hpp"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace tpulaunch::gcloud {
namespace {

using Argv = std::vector<std::string>;

const Location k_zone{"us-west4-a", ""};
const Location k_zone_project{"us-west4-a", "my-project"};

TEST(GcloudTest, SshNamesZoneWorkerProjectThenTheCommandAsOneWord) {
  const TpuVmSsh call{"pod", k_zone_project, "all", ShellLine{"echo", "a b"}, Connection::external};
  EXPECT_EQ(tpu_vm_ssh(call).argv(), (Argv{"gcloud", "compute", "tpus", "tpu-vm", "ssh", "pod", "--zone=us-west4-a",
                                           "--worker=all", "--project=my-project", "--command=echo 'a b'"}));
}

TEST(GcloudTest, SshWithoutWorkerOrProjectLeavesThemToGcloud) {
  const TpuVmSsh call{"pod", k_zone, std::nullopt, ShellLine{"true"}, Connection::external};
  EXPECT_EQ(tpu_vm_ssh(call).argv(),
            (Argv{"gcloud", "compute", "tpus", "tpu-vm", "ssh", "pod", "--zone=us-west4-a", "--command=true"}));
}

TEST(GcloudTest, SshOverInternalIpStaysOnTheGaTrack) {
  const TpuVmSsh call{"pod", k_zone, "all", ShellLine{"true"}, Connection::internal_ip};
  EXPECT_EQ(tpu_vm_ssh(call).argv(), (Argv{"gcloud", "compute", "tpus", "tpu-vm", "ssh", "pod", "--zone=us-west4-a",
                                           "--worker=all", "--internal-ip", "--command=true"}));
}

TEST(GcloudTest, SshThroughIapIsOnTheAlphaTrack) {
  const TpuVmSsh call{"pod", k_zone, "all", ShellLine{"true"}, Connection::iap};
  EXPECT_EQ(tpu_vm_ssh(call).argv(), (Argv{"gcloud", "alpha", "compute", "tpus", "tpu-vm", "ssh", "pod",
                                           "--zone=us-west4-a", "--worker=all", "--tunnel-through-iap",
                                           "--command=true"}));
}

TEST(GcloudTest, ScpToTheNodeListsSourcesThenTheRemoteFolder) {
  const TpuVmScp call{{Word(local_path("a.py")), Word(local_path("-b.py"))}, on_node("pod", Word()), false,
                      k_zone_project, "all", Connection::external};
  EXPECT_EQ(tpu_vm_scp(call).argv(), (Argv{"gcloud", "compute", "tpus", "tpu-vm", "scp", "a.py", "./-b.py", "pod:",
                                           "--zone=us-west4-a", "--worker=all", "--project=my-project"}));
}

TEST(GcloudTest, ScpFromTheNodeRecursesBeforeItsPaths) {
  const TpuVmScp call{{on_node("pod", home_path("runs/r1"))}, Word("./out/worker-1/"), true, k_zone, "1",
                      Connection::internal_ip};
  const std::vector<std::string> argv = tpu_vm_scp(call).argv();
  ASSERT_EQ(argv.size(), 11U);
  EXPECT_EQ(argv[5], "--recurse");
  EXPECT_TRUE(argv[6].starts_with("pod:")) << argv[6];
  EXPECT_EQ((Argv(argv.begin() + 7, argv.end())),
            (Argv{"./out/worker-1/", "--zone=us-west4-a", "--worker=1", "--internal-ip"}));
}

TEST(GcloudTest, ScpThroughIapIsOnTheAlphaTrack) {
  const TpuVmScp call{{Word("a.py")}, on_node("pod", Word()), false, k_zone, std::nullopt, Connection::iap};
  EXPECT_EQ(tpu_vm_scp(call).argv(), (Argv{"gcloud", "alpha", "compute", "tpus", "tpu-vm", "scp", "a.py", "pod:",
                                           "--zone=us-west4-a", "--tunnel-through-iap"}));
}

TEST(GcloudTest, LocalPathGuardsOnlyWhatGcloudWouldMisread) {
  EXPECT_EQ(local_path("public/exercises/x.py"), "public/exercises/x.py");
  EXPECT_EQ(local_path("-x.py"), "./-x.py");
  EXPECT_EQ(local_path("host:x.py"), "./host:x.py");
  EXPECT_EQ(local_path("dir/a:b.py"), "dir/a:b.py");
  EXPECT_EQ(local_path("/abs/-x:y"), "/abs/-x:y");
  EXPECT_EQ(local_path("./-x"), "./-x");
}

TEST(GcloudTest, CreateOrdersTypeVersionProvisioningAsyncProject) {
  const TpuVmCreate call{"pod", k_zone_project, "v5litepod-16", "v2-alpha-tpuv5-lite", Provisioning::spot, true};
  EXPECT_EQ(tpu_vm_create(call).argv(),
            (Argv{"gcloud", "compute", "tpus", "tpu-vm", "create", "pod", "--zone=us-west4-a",
                  "--accelerator-type=v5litepod-16", "--version=v2-alpha-tpuv5-lite", "--spot", "--async",
                  "--project=my-project"}));
}

// --internal-ips (workers without external addresses) on both ways of making a TPU, before --project.
TEST(GcloudTest, CreateAndQueueAskForInternalAddressesOnly) {
  TpuVmCreate create{"pod", k_zone_project, "v5litepod-16", "v2", Provisioning::standard, true};
  create.internal_ips = true;
  EXPECT_EQ(tpu_vm_create(create).argv(),
            (Argv{"gcloud", "compute", "tpus", "tpu-vm", "create", "pod", "--zone=us-west4-a",
                  "--accelerator-type=v5litepod-16", "--version=v2", "--async", "--internal-ips",
                  "--project=my-project"}));
  QueuedCreate queue{"pod-qr", "pod", k_zone_project, "v5litepod-16", "v2", Provisioning::spot, "6h", 2};
  queue.internal_ips = true;
  EXPECT_EQ(queued_create(queue).argv(),
            (Argv{"gcloud", "compute", "tpus", "queued-resources", "create", "pod-qr", "--node-count=2",
                  "--node-prefix=pod", "--zone=us-west4-a", "--accelerator-type=v5litepod-16", "--runtime-version=v2",
                  "--spot", "--valid-until-duration=6h", "--internal-ips", "--project=my-project"}));
}

TEST(GcloudTest, CreateSpellsEachProvisioningFlag) {
  const auto last_flag = [](Provisioning provisioning) {
    return tpu_vm_create(TpuVmCreate{"p", k_zone, "t", "v", provisioning, false}).argv().back();
  };
  EXPECT_EQ(last_flag(Provisioning::standard), "--version=v");
  EXPECT_EQ(last_flag(Provisioning::spot), "--spot");
  EXPECT_EQ(last_flag(Provisioning::preemptible), "--preemptible");
  EXPECT_EQ(last_flag(Provisioning::reserved), "--reserved");
  EXPECT_EQ(last_flag(Provisioning::guaranteed), "--guaranteed");
}

TEST(GcloudTest, DescribeAsksForOneFormat) {
  EXPECT_EQ(tpu_vm_describe(TpuVmDescribe{"pod", k_zone_project, "value(state)"}).argv(),
            (Argv{"gcloud", "compute", "tpus", "tpu-vm", "describe", "pod", "--zone=us-west4-a",
                  "--format=value(state)", "--project=my-project"}));
}

TEST(GcloudTest, DeleteNeverAsks) {
  EXPECT_EQ(tpu_vm_delete(TpuVmDelete{"pod", k_zone}).argv(),
            (Argv{"gcloud", "compute", "tpus", "tpu-vm", "delete", "pod", "--zone=us-west4-a", "--quiet"}));
}

TEST(GcloudTest, QueuedCreateNamesItsNode) {
  const QueuedCreate call{"pod-qr", "pod", k_zone_project, "v5litepod-16", "v2", Provisioning::spot, "6h"};
  EXPECT_EQ(queued_create(call).argv(),
            (Argv{"gcloud", "compute", "tpus", "queued-resources", "create", "pod-qr", "--node-id=pod",
                  "--zone=us-west4-a", "--accelerator-type=v5litepod-16", "--runtime-version=v2", "--spot",
                  "--valid-until-duration=6h", "--project=my-project"}));
}

TEST(GcloudTest, QueuedCreateWithoutDeadlineHasNoFlagForIt) {
  const QueuedCreate call{"qr", "pod", k_zone, "v5litepod-8", "v2", Provisioning::standard, ""};
  EXPECT_EQ(queued_create(call).argv(),
            (Argv{"gcloud", "compute", "tpus", "queued-resources", "create", "qr", "--node-id=pod",
                  "--zone=us-west4-a", "--accelerator-type=v5litepod-8", "--runtime-version=v2"}));
}

TEST(GcloudTest, QueuedCreateWithANodeCountNamesItsNodesByPrefix) {
  QueuedCreate call{"pod-qr", "pod", k_zone, "v5litepod-16", "v2", Provisioning::spot, "", 2};
  EXPECT_EQ(queued_create(call).argv(), (Argv{"gcloud", "compute", "tpus", "queued-resources", "create", "pod-qr",
                                              "--node-count=2", "--node-prefix=pod", "--zone=us-west4-a",
                                              "--accelerator-type=v5litepod-16", "--runtime-version=v2", "--spot"}));
  call.node_count = 1; // gcloud refuses --node-count=1: one node is --node-id
  EXPECT_EQ(queued_create(call).argv()[6], "--node-id=pod");
}

TEST(GcloudTest, QueuedDescribeAsksForOneFormat) {
  EXPECT_EQ(queued_describe(QueuedDescribe{"qr", k_zone, "value(state.state)"}).argv(),
            (Argv{"gcloud", "compute", "tpus", "queued-resources", "describe", "qr", "--zone=us-west4-a",
                  "--format=value(state.state)"}));
}

TEST(GcloudTest, QueuedDeleteTakesItsNodeAlong) {
  EXPECT_EQ(queued_delete(QueuedDelete{"qr", k_zone_project}).argv(),
            (Argv{"gcloud", "compute", "tpus", "queued-resources", "delete", "qr", "--zone=us-west4-a", "--force",
                  "--quiet", "--project=my-project"}));
}

TEST(GcloudTest, StorageCopy) {
  EXPECT_EQ(storage_cp(StorageCp{"gs://b/p/r1", "./tpu-runs/pod/x/", true}).argv(),
            (Argv{"gcloud", "storage", "cp", "--recursive", "gs://b/p/r1", "./tpu-runs/pod/x/"}));
  EXPECT_EQ(storage_cp(StorageCp{"a", "gs://b/", false}).argv(), (Argv{"gcloud", "storage", "cp", "a", "gs://b/"}));
}

TEST(GcloudTest, ProvisioningNames) {
  EXPECT_EQ(to_string(Provisioning::standard), "standard");
  EXPECT_EQ(to_string(Provisioning::guaranteed), "guaranteed");
}

} // namespace
} // namespace tpulaunch::gcloud
