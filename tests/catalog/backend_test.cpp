#include "tpulaunch/catalog/backend.hpp"

#include <gtest/gtest.h>

#include "support/test_catalog.hpp"

namespace tpulaunch {
namespace {

const Catalog& embedded() { return test_support::embedded_catalog(); }

TEST(Backend, TpuVmRouteRefusesTpu7xWithTheReason) {
  auto result = require_slice_for(Backend::tpu_vm, embedded(), "tpu7x-8");
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, ExitCode::refused);
  EXPECT_EQ(result.error().message,
            "slice 'tpu7x-8' is tpu7x, which the Cloud TPU VM API (gcloud compute tpus tpu-vm) does not reach: the "
            "Cloud TPU API does not support TPU7x and later: use GKE (docs/gke.md)");
  // A size the catalog does not list, in any letter case, gets the same reason and no "did you mean".
  result = require_slice_for(Backend::tpu_vm, embedded(), "TPU7X-12");
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, ExitCode::refused);
  EXPECT_NE(result.error().message.find("use GKE"), std::string::npos) << result.error().message;
}

TEST(Backend, GkeRouteTakesTpu7xAndTheGenerationsWithGkeFacts) {
  for (const char* name : {"tpu7x-8", "tpu7x-128", "v5litepod-16", "v6e-16", "v4-8", "v5p-8", "trillium-8"}) {
    auto result = require_slice_for(Backend::gke, embedded(), name);
    ASSERT_TRUE(result.ok()) << name << ": " << result.error().message;
  }
  auto result = require_slice_for(Backend::gke, embedded(), "v3-8");
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, ExitCode::refused);
  EXPECT_EQ(result.error().message, "slice 'v3-8' has no GKE facts in the catalog (accelerator label, machine type, "
                                    "nodes): the GKE route covers the slices of v4, v5e, v5p, v6e, tpu7x "
                                    "(docs/catalog.md)");
}

TEST(Backend, TpuVmRouteTakesEveryOtherSliceAndUnknownNamesStayUsageErrors) {
  for (const auto& slice : embedded().slices()) {
    EXPECT_EQ(reaches(Backend::tpu_vm, slice, embedded()).ok(), slice.generation != "tpu7x") << slice.name;
  }
  auto result = require_slice_for(Backend::tpu_vm, embedded(), "v5litepod-61");
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, ExitCode::usage);
  EXPECT_NE(result.error().message.find("did you mean 'v5litepod-16'?"), std::string::npos) << result.error().message;
}

TEST(Backend, CatalogRequireIsThePlainLookup) {
  auto result = embedded().require("tpu7x-16");
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_EQ((*result)->gke_vms, 2);
  EXPECT_EQ(to_string(Backend::tpu_vm), "tpu-vm");
  EXPECT_EQ(to_string(Backend::gke), "gke");
}

} // namespace
} // namespace tpulaunch
