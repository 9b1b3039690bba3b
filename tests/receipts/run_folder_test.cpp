#include "tpulaunch/receipts/run_folder.hpp"

#include <gtest/gtest.h>

namespace tpulaunch {
namespace {

TEST(RunFolder, WorkerFolderIsNamedByIndex) {
  EXPECT_EQ(worker_folder(0), "worker-0");
  EXPECT_EQ(worker_folder(63), "worker-63");
  EXPECT_EQ(worker_folder_pattern(), "worker-<i>");
}

TEST(RunFolder, ProcessFolderIsBySliceWithSeveralSlices) {
  EXPECT_EQ(process_folder(5, 4, 1), "worker-5");
  EXPECT_EQ(process_folder(0, 4, 2), "slice-0/worker-0");
  EXPECT_EQ(process_folder(5, 4, 2), "slice-1/worker-1");
  EXPECT_EQ(process_folder(7, 4, 2), "slice-1/worker-3");
}

} // namespace
} // namespace tpulaunch
