#pragma once
// SHA-256 (FIPS 180-4) of byte strings. Reviews pin a script by the digest of its exact bytes, so
// this runs on every launch and every CI check: it uses the x86 SHA extensions when the CPU has them
// and a portable implementation otherwise. Both produce identical digests.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tpulaunch {

// Which compression function a Sha256 uses. `automatic` picks SHA-NI when the CPU supports it.
enum class Sha256Backend { automatic, portable };

// A SHA-256 digest: 32 bytes, most significant first.
using Sha256Digest = std::array<std::uint8_t, 32>;

// Incremental SHA-256: feed bytes with update() in any chunking, then finish() once.
// finish() returns the digest and resets the object, so it can hash another message.
class Sha256 {
public:
  // Starts an empty message; `backend` forces the portable path (for tests and benchmarks).
  explicit Sha256(Sha256Backend backend = Sha256Backend::automatic);

  // Appends `bytes` to the message.
  void update(std::string_view bytes);

  // Pads the message, returns its 32-byte digest and starts a new empty message.
  Sha256Digest finish();

private:
  using BlockFunction = void (*)(std::uint32_t* state, const unsigned char* blocks, std::size_t count);

  void reset();

  BlockFunction m_blocks;
  std::array<std::uint32_t, 8> m_state{};
  std::array<unsigned char, 64> m_buffer{};
  std::size_t m_buffered = 0;
  std::uint64_t m_total = 0;
};

// True when the CPU has the SHA extensions and `Sha256Backend::automatic` uses them.
bool sha256_hardware_available();

// "sha-ni" or "portable": the implementation `Sha256Backend::automatic` selects on this CPU.
std::string_view sha256_implementation_name();

// Lower-case hex (64 characters) of a digest.
std::string sha256_to_hex(const Sha256Digest& digest);

// Lower-case hex SHA-256 of `bytes`, using the fastest implementation available.
std::string sha256_hex(std::string_view bytes);

// Same digest, always computed by the portable implementation (lets tests cover both paths).
std::string sha256_hex_portable(std::string_view bytes);

} // namespace tpulaunch
