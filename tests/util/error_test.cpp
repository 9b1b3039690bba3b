#include "tpulaunch/util/error.hpp"

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

TEST(Error, MessagePositionReadsTheLeadingFileLineAndColumn) {
  const auto full = message_position("public/exercises/bad.py:1:6: script 'bad' is not UTF-8 text (byte 0xff)");
  ASSERT_TRUE(full.has_value());
  EXPECT_EQ(full->file, "public/exercises/bad.py");
  EXPECT_EQ(full->line, 1U);
  EXPECT_EQ(full->column, 6U);
  const auto line_only = message_position("m.json:12: slice 'x': missing field");
  ASSERT_TRUE(line_only.has_value());
  EXPECT_EQ(line_only->file, "m.json");
  EXPECT_EQ(line_only->line, 12U);
  EXPECT_EQ(line_only->column, 0U);
  // Numbers later in the prose, a line 0 and a message without a position give nothing.
  EXPECT_FALSE(message_position("cannot read matrix 'execution-matrix.json': No such file or directory"));
  EXPECT_FALSE(message_position("route a@b refused: see x.py:3:1: here"));
  EXPECT_FALSE(message_position("m.json:0: nothing at line 0"));
  EXPECT_FALSE(message_position("m.json:3:"));
  EXPECT_FALSE(message_position(""));
}

} // namespace
} // namespace tpulaunch
