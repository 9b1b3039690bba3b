#include "tpulaunch/error.hpp"

#include <gtest/gtest.h>

namespace tpulaunch {
namespace {

TEST(Error, CountedWritesTheNounInTheRightNumber) {
  EXPECT_EQ(counted(1, "worker"), "1 worker");
  EXPECT_EQ(counted(0, "worker"), "0 workers");
  EXPECT_EQ(counted(4, "worker"), "4 workers");
  EXPECT_EQ(counted(1, "entry", "entries"), "1 entry");
  EXPECT_EQ(counted(3, "entry", "entries"), "3 entries");
}

TEST(Error, PrintableShowsControlBytesAsEscapes) {
  EXPECT_EQ(printable("a\nb"), "a\\x0ab");
}

} // namespace
} // namespace tpulaunch
