#include "tpulaunch/gke/manifest.hpp"

#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "support/test_catalog.hpp"

namespace tpulaunch::gke {
namespace {

const Slice& slice(const char* name) {
  const Slice* found = test_support::embedded_catalog().find(name);
  EXPECT_NE(found, nullptr) << name;
  return *found;
}

// The values a plan would hand the builder, for the slice `name` and `slices` slices.
JobSetSpec lesson_spec(const char* name, int slices) {
  return JobSetSpec{.name = "lesson-r1",
                    .name_space = "default",
                    .slice = &slice(name),
                    .slices = slices,
                    .image = "us-docker.pkg.dev/example/tpu/jax:0.4.35",
                    .argv = {"bash", "/tpulaunch/pod.sh", "collective-update"},
                    .env = {{"JAX_PLATFORMS", "tpu"}, {"PYTHONUNBUFFERED", "1"}},
                    .config_map = "lesson-r1-files",
                    .mount_path = "/tpulaunch",
                    .labels = {{"app.kubernetes.io/managed-by", "tpulaunch"}, {"tpulaunch/run-id", "r1"}}};
}

// The expected document in tests/gke/expected/FILE, reviewed by hand against docs/gke.md; the
// builder's output must be it byte for byte (dump(2), as kubectl is given it).
void expect_document(const nlohmann::ordered_json& built, const std::string& file) {
  std::ifstream in(std::string(TPULAUNCH_SOURCE_DIR) + "/tests/gke/expected/" + file, std::ios::binary);
  std::stringstream expected;
  expected << in.rdbuf();
  ASSERT_TRUE(in) << "cannot read tests/gke/expected/" << file;
  EXPECT_EQ(built.dump(2) + "\n", expected.str()) << file;
}

const nlohmann::ordered_json& job_of(const nlohmann::ordered_json& jobset) {
  return jobset["spec"]["replicatedJobs"][0]["template"]["spec"];
}

const nlohmann::ordered_json& pod_of(const nlohmann::ordered_json& jobset) {
  return job_of(jobset)["template"]["spec"];
}

TEST(GkeManifest, V5litepod16IsFourPodsOfFourChipsOnOneNodePool) {
  auto built = jobset_manifest(lesson_spec("v5litepod-16", 1));
  ASSERT_TRUE(built.ok()) << built.error().message;
  const auto& j = *built;
  EXPECT_EQ(j["apiVersion"], "jobset.x-k8s.io/v1alpha2");
  EXPECT_EQ(j["kind"], "JobSet");
  EXPECT_EQ(j["spec"]["replicatedJobs"].size(), 1U);
  EXPECT_EQ(j["spec"]["replicatedJobs"][0]["replicas"], 1);
  EXPECT_EQ(job_of(j)["parallelism"], 4);
  EXPECT_EQ(job_of(j)["completions"], 4);
  EXPECT_EQ(job_of(j)["backoffLimit"], 0);
  EXPECT_EQ(pod_of(j)["restartPolicy"], "Never");
  EXPECT_EQ(pod_of(j)["nodeSelector"]["cloud.google.com/gke-tpu-accelerator"], "tpu-v5-lite-podslice");
  EXPECT_EQ(pod_of(j)["nodeSelector"]["cloud.google.com/gke-tpu-topology"], "4x4");
  EXPECT_EQ(pod_of(j)["containers"][0]["resources"]["limits"]["google.com/tpu"], 4);
  EXPECT_EQ(j["metadata"]["annotations"]["alpha.jobset.sigs.k8s.io/exclusive-topology"], "cloud.google.com/gke-nodepool");
  expect_document(j, "jobset-v5litepod-16.json");
}

TEST(GkeManifest, V6e16TwoSlicesIsTwoReplicasOfFourPods) {
  auto built = jobset_manifest(lesson_spec("v6e-16", 2));
  ASSERT_TRUE(built.ok()) << built.error().message;
  EXPECT_EQ((*built)["spec"]["replicatedJobs"][0]["replicas"], 2);
  EXPECT_EQ(job_of(*built)["parallelism"], 4);
  EXPECT_EQ(pod_of(*built)["nodeSelector"]["cloud.google.com/gke-tpu-accelerator"], "tpu-v6e-slice");
  expect_document(*built, "jobset-v6e-16-x2.json");
}

TEST(GkeManifest, Tpu7x128IsSixteenPodsOfFourChips) {
  auto built = jobset_manifest(lesson_spec("tpu7x-128", 1));
  ASSERT_TRUE(built.ok()) << built.error().message;
  EXPECT_EQ(job_of(*built)["parallelism"], 16);
  EXPECT_EQ(job_of(*built)["completions"], 16);
  EXPECT_EQ(pod_of(*built)["nodeSelector"]["cloud.google.com/gke-tpu-accelerator"], "tpu7x");
  EXPECT_EQ(pod_of(*built)["nodeSelector"]["cloud.google.com/gke-tpu-topology"], "4x4x4");
  EXPECT_EQ(pod_of(*built)["containers"][0]["resources"]["limits"]["google.com/tpu"], 4);
  expect_document(*built, "jobset-tpu7x-128.json");
}

// An 8-chip v5e is one VM on the TPU VM API but two 4-chip nodes on GKE: two pods.
TEST(GkeManifest, EightChipV5eIsTwoPods) {
  auto built = jobset_manifest(lesson_spec("v5litepod-8", 1));
  ASSERT_TRUE(built.ok()) << built.error().message;
  EXPECT_EQ(job_of(*built)["parallelism"], 2);
  EXPECT_EQ(pod_of(*built)["nodeSelector"]["cloud.google.com/gke-tpu-topology"], "2x4");
}

TEST(GkeManifest, RefusesWhatKubernetesOrGkeWouldNotTake) {
  struct Case {
    void (*change)(JobSetSpec&);
    std::string message;
  };
  const Case cases[] = {
      {[](JobSetSpec& s) { s.slice = &slice("v3-8"); }, "slice 'v3-8' has no GKE facts in the catalog"},
      {[](JobSetSpec& s) { s.slices = 0; }, "a JobSet needs at least one slice, not 0"},
      {[](JobSetSpec& s) { s.name = "Lesson"; }, "JobSet name 'Lesson' is not a DNS-1035 label"},
      {[](JobSetSpec& s) { s.name = "l" + std::string(55, 'x'); },
       "makes pod host names such as 'l" + std::string(55, 'x') + "-slice-0-3' longer than 63 characters"},
      {[](JobSetSpec& s) { s.name_space = "my_ns"; }, "namespace 'my_ns' is not a DNS-1123 label"},
      {[](JobSetSpec& s) { s.mount_path = "tpulaunch"; }, "mount path 'tpulaunch' is not an absolute path"},
      {[](JobSetSpec& s) { s.argv.clear(); }, "a JobSet needs an image and a command"},
      {[](JobSetSpec& s) { s.env.emplace_back("1BAD", "x"); }, "environment name '1BAD' is not one Kubernetes takes"},
      {[](JobSetSpec& s) { s.labels.emplace_back("run id", "x"); }, "label key 'run id' is not a Kubernetes label key"},
      {[](JobSetSpec& s) { s.labels.emplace_back("run", "-x"); }, "label value '-x' is not a Kubernetes label value"},
  };
  for (const Case& c : cases) {
    JobSetSpec spec = lesson_spec("v5litepod-16", 1);
    c.change(spec);
    auto built = jobset_manifest(spec);
    ASSERT_FALSE(built.ok()) << c.message;
    EXPECT_EQ(built.error().code, ExitCode::usage) << c.message;
    EXPECT_NE(built.error().message.find(c.message), std::string::npos) << built.error().message;
  }
}

TEST(GkeManifest, PodHostNamesFollowJobSetsDnsNames) {
  EXPECT_EQ(pod_hostname("lesson-r1", 0, 3), "lesson-r1-slice-0-3");
  EXPECT_EQ(pod_hostname("lesson-r1", 1, 0), "lesson-r1-slice-1-0");
}

TEST(GkeConfigMap, HoldsEachFileUnderItsName) {
  auto built = config_map_manifest({.name = "lesson-r1-files",
                                    .name_space = "default",
                                    .files = {{"pod.sh", "echo hi\n"}, {"collective-update.py", "import jax\n"}},
                                    .labels = {{"tpulaunch/run-id", "r1"}}});
  ASSERT_TRUE(built.ok()) << built.error().message;
  expect_document(*built, "configmap-lesson-r1.json");
}

TEST(GkeConfigMap, RefusesBadKeysBinaryFilesAndTooMuch) {
  auto built = config_map_manifest({.name = "files", .name_space = "default", .files = {{"a/b.py", "x"}}, .labels = {}});
  ASSERT_FALSE(built.ok());
  EXPECT_NE(built.error().message.find("file name 'a/b.py' is not a ConfigMap key"), std::string::npos)
      << built.error().message;
  built = config_map_manifest(
      {.name = "files", .name_space = "default", .files = {{"data.bin", std::string("\xff\x00", 2)}}, .labels = {}});
  ASSERT_FALSE(built.ok());
  EXPECT_EQ(built.error().code, ExitCode::usage);
  EXPECT_NE(built.error().message.find("data.bin"), std::string::npos) << built.error().message;
  built = config_map_manifest(
      {.name = "files", .name_space = "default", .files = {{"big.txt", std::string(1024U * 1024U, 'a')}}, .labels = {}});
  ASSERT_FALSE(built.ok());
  EXPECT_NE(built.error().message.find("more than the 1 MiB (1048576 bytes)"), std::string::npos)
      << built.error().message;
  built = config_map_manifest({.name = "Files", .name_space = "default", .files = {}, .labels = {}});
  ASSERT_FALSE(built.ok());
  EXPECT_NE(built.error().message.find("ConfigMap name 'Files' is not a DNS-1123 label"), std::string::npos);
}

} // namespace
} // namespace tpulaunch::gke
