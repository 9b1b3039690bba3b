#include "tpulaunch/receipts/run_folder.hpp"

#include <gtest/gtest.h>

namespace tpulaunch {
namespace {

TEST(RunFolder, WorkerFolderIsNamedByIndex) {
  EXPECT_EQ(worker_folder(0), "worker-0");
  EXPECT_EQ(worker_folder(63), "worker-63");
  EXPECT_EQ(worker_folder_pattern(), "worker-<i>");
}

} // namespace
} // namespace tpulaunch
