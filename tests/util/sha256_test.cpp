#include "tpulaunch/util/sha256.hpp"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace tpulaunch {
namespace {

struct Vector {
  std::string input;
  std::string digest;
};

// FIPS 180-2 appendix B plus the empty message.
std::vector<Vector> fips_vectors() {
  return {
      {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
      {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
      {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
       "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
      {std::string(1000000, 'a'), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"},
  };
}

TEST(Sha256, FipsVectors) {
  for (const auto& v : fips_vectors()) {
    EXPECT_EQ(sha256_hex(v.input), v.digest) << "length " << v.input.size();
  }
}

// Messages of 'a' around the padding boundaries: 55 bytes is the longest that pads into one block,
// 56 the shortest that needs two; the same again one and two blocks on. Digests from Python's
// hashlib, an implementation independent of libcrypto's block functions.
TEST(Sha256, PaddingBoundaries) {
  const std::vector<std::pair<std::size_t, std::string>> cases = {
      {55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"},
      {56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a"},
      {57, "f13b2d724659eb3bf47f2dd6af1accc87b81f09f59f2b75e5c0bed6589dfe8c6"},
      {63, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34"},
      {64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"},
      {65, "635361c48bb9eab14198e76ea8ab7f1a41685d6ad62aa9146d301d4f17eb0ae0"},
      {111, "6374f73208854473827f6f6a3f43b1f53eaa3b82c21c1a6d69a2110b2a79baad"},
      {112, "f54353008a2553262ecdc4a34749563ba0950e8b0fc8652780b0a614b99683c1"},
      {119, "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb"},
      {120, "2f3d335432c70b580af0e8e1b3674a7c020d683aa5f73aaaedfdc55af904c21c"},
      {127, "c57e9278af78fa3cab38667bef4ce29d783787a2f731d4e12200270f0c32320a"},
      {128, "6836cf13bac400e9105071cd6af47084dfacad4e5e302c94bfed24e013afb73e"},
      {129, "c12cb024a2e5551cca0e08fce8f1c5e314555cc3fef6329ee994a3db752166ae"},
  };
  for (const auto& [length, digest] : cases) {
    EXPECT_EQ(sha256_hex(std::string(length, 'a')), digest) << "length " << length;
  }
}

TEST(Sha256, HexSpellsTheDigestBytes) {
  const Sha256Digest digest = sha256("abc");
  EXPECT_EQ(digest[0], 0xba);
  EXPECT_EQ(digest[31], 0xad);
  EXPECT_EQ(sha256_to_hex(digest), sha256_hex("abc"));
}

TEST(Sha256, HexIsLowerCaseAndSixtyFourCharacters) {
  const std::string hex = sha256_hex("tpulaunch");
  ASSERT_EQ(hex.size(), 64U);
  for (char c : hex) {
    EXPECT_TRUE((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')) << c;
  }
}

} // namespace
} // namespace tpulaunch
