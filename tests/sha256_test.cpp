#include "tpulaunch/sha256.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>

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

std::string random_bytes(std::mt19937_64& rng, std::size_t size) {
  std::string out(size, '\0');
  for (auto& c : out) {
    c = static_cast<char>(rng() & 0xFF);
  }
  return out;
}

TEST(Sha256, FipsVectorsMatchAutomaticBackend) {
  for (const auto& v : fips_vectors()) {
    EXPECT_EQ(sha256_hex(v.input), v.digest) << "length " << v.input.size();
  }
}

TEST(Sha256, FipsVectorsMatchPortableBackend) {
  for (const auto& v : fips_vectors()) {
    EXPECT_EQ(sha256_hex_portable(v.input), v.digest) << "length " << v.input.size();
  }
}

TEST(Sha256, ImplementationNameReflectsHardware) {
  EXPECT_EQ(sha256_implementation_name(), sha256_hardware_available() ? "sha-ni" : "portable");
}

TEST(Sha256, IncrementalOddChunksEqualOneShot) {
  std::mt19937_64 rng(42);
  const std::string data = random_bytes(rng, 10007);
  const std::string expected = sha256_hex(data);
  for (std::size_t chunk : {1U, 3U, 7U, 13U, 63U, 64U, 65U, 127U, 1000U}) {
    for (auto backend : {Sha256Backend::automatic, Sha256Backend::portable}) {
      Sha256 hasher(backend);
      for (std::size_t pos = 0; pos < data.size(); pos += chunk) {
        hasher.update(std::string_view(data).substr(pos, chunk));
      }
      EXPECT_EQ(sha256_to_hex(hasher.finish()), expected) << "chunk " << chunk;
    }
  }
}

TEST(Sha256, FinishResetsForTheNextMessage) {
  Sha256 hasher;
  hasher.update("garbage that must not leak into the next digest");
  (void)hasher.finish();
  hasher.update("abc");
  EXPECT_EQ(sha256_to_hex(hasher.finish()), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Sha256, HardwareAndPortableAgreeOnRandomBuffers) {
  std::mt19937_64 rng(7);
  for (std::size_t size = 0; size <= 300; ++size) {
    const std::string data = random_bytes(rng, size);
    ASSERT_EQ(sha256_hex(data), sha256_hex_portable(data)) << "length " << size;
  }
  for (std::size_t size : {4095U, 4096U, 65536U + 17U, 1U << 20}) {
    const std::string data = random_bytes(rng, size);
    ASSERT_EQ(sha256_hex(data), sha256_hex_portable(data)) << "length " << size;
  }
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
