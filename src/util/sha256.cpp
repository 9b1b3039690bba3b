#include "tpulaunch/util/sha256.hpp"

// SHA256_Init/Update/Final are deprecated in OpenSSL 3 in favour of EVP, whose set-up costs a
// fresh process about 1.2 M instructions (more than a whole plan) against about 2 k here; the block
// functions are the same code EVP's default provider runs. docs/architecture.md has the figures.
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>

namespace tpulaunch {

static_assert(SHA256_DIGEST_LENGTH == std::tuple_size_v<Sha256Digest>);

Sha256Digest sha256(std::string_view bytes) {
  Sha256Digest digest{};
  SHA256_CTX context;
  SHA256_Init(&context);
  SHA256_Update(&context, bytes.data(), bytes.size());
  SHA256_Final(digest.data(), &context);
  return digest;
}

std::string sha256_to_hex(const Sha256Digest& digest) {
  static constexpr char k_digits[] = "0123456789abcdef";
  std::string out(digest.size() * 2, '0');
  for (std::size_t i = 0; i < digest.size(); ++i) {
    out[2 * i] = k_digits[digest[i] >> 4];
    out[2 * i + 1] = k_digits[digest[i] & 0x0F];
  }
  return out;
}

std::string sha256_hex(std::string_view bytes) { return sha256_to_hex(sha256(bytes)); }

} // namespace tpulaunch
