// The one digest writer both backends use: each value with its length, so no value reads as another.
#include <gtest/gtest.h>

#include "tpulaunch/plan/digest.hpp"
#include "tpulaunch/util/sha256.hpp"

namespace tpulaunch {
namespace {

TEST(DigestWriter, WritesEachValueWithItsLengthBelowTheFormLine) {
  DigestWriter digest("tpulaunch-plan 1");
  digest.add("script", "train");
  digest.add("arg", "");
  EXPECT_EQ(digest.sha256(), sha256_hex("tpulaunch-plan 1\nscript 5:train\narg 0:\n"));
}

TEST(DigestWriter, KeepsValuesThatShareTheirTextApart) {
  DigestWriter one("f");
  one.add("arg", "a b");
  DigestWriter two("f");
  two.add("arg", "a");
  two.add("arg", "b");
  EXPECT_NE(one.sha256(), two.sha256());
}

} // namespace
} // namespace tpulaunch
