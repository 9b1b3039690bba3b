#pragma once
// SHA-256 (FIPS 180-4) of byte strings. Reviews pin a script by the digest of its exact bytes, so
// this runs on every launch and every CI check. The digest comes from OpenSSL's libcrypto (its
// SHA-NI, AVX2 or SSSE3 code, picked for the CPU at start); docs/architecture.md says why it is
// linked statically and called through SHA256_Init/Update/Final rather than EVP.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace tpulaunch {

// A SHA-256 digest: 32 bytes, most significant first.
using Sha256Digest = std::array<std::uint8_t, 32>;

// The digest of `bytes`.
Sha256Digest sha256(std::string_view bytes);

// Lower-case hex (64 characters) of a digest.
std::string sha256_to_hex(const Sha256Digest& digest);

// Lower-case hex SHA-256 of `bytes`: sha256_to_hex(sha256(bytes)).
std::string sha256_hex(std::string_view bytes);

} // namespace tpulaunch
