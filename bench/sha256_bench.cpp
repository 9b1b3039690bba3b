// sha256_bench: SHA-256 throughput of the core's tpulaunch::sha256 (libcrypto's block functions,
// SHA256_Init/Update/Final) side by side with libcrypto's EVP interface, in one process, on the
// message sizes tpulaunch hashes: a short file, an average course script (5.7 kB), a large one
// (1 MB). Prints the best of REPEATS runs of each in MB/s (1 MB = 10^6 bytes). Measures only.
// OPENSSL_ia32cap=":~0x20000000" hides SHA-NI from libcrypto, to see the code other CPUs run.
// (The hand-written implementation this replaced was measured with this program at e487ecf.)
//
//   sha256_bench [REPEATS]            (default 7)
//
// EVP runs with the digest fetched once and one context reused, its best case.
// bench/sha256_startup.sh measures what each interface costs a fresh process.
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "tpulaunch/util/sha256.hpp"

namespace {

template <typename F> double best_seconds(int repeats, F&& f) {
  double best = 1e9;
  for (int i = 0; i < repeats; ++i) {
    const auto start = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return best;
}

struct Size {
  const char* name;
  std::size_t bytes;
  std::size_t count; // messages per run: about 64 MB each
};

} // namespace

int main(int argc, char** argv) {
  const int repeats = argc > 1 ? std::max(1, std::atoi(argv[1])) : 7;
  OPENSSL_init_crypto(OPENSSL_INIT_NO_LOAD_CONFIG, nullptr);
  EVP_MD* evp_sha256 = EVP_MD_fetch(nullptr, "SHA2-256", nullptr);
  EVP_MD_CTX* evp = EVP_MD_CTX_new();
  if (evp_sha256 == nullptr || evp == nullptr) {
    std::fprintf(stderr, "sha256_bench: EVP_MD_fetch(SHA2-256) failed\n");
    return 1;
  }

  std::mt19937_64 rng(42);
  std::string data(1U << 20, '\0');
  for (auto& c : data) {
    c = static_cast<char>(rng() & 0x7F);
  }
  const Size sizes[] = {{"100 B", 100, 640000}, {"5.7 kB", 5700, 11200}, {"1 MB", 1U << 20, 64}};

  std::printf("sha256_bench: best of %d, MB/s; %s\n\n", repeats, OpenSSL_version(OPENSSL_VERSION));
  std::printf("| message | tpulaunch::sha256 (SHA256_*) | libcrypto EVP | SHA256_* / EVP |\n");
  std::printf("|---|---:|---:|---:|\n");
  unsigned char sink = 0;
  for (const Size& size : sizes) {
    const std::string_view message(data.data(), size.bytes);
    const double mb = static_cast<double>(size.bytes * size.count) / 1e6;
    const double core = best_seconds(repeats, [&] {
      for (std::size_t i = 0; i < size.count; ++i) {
        sink ^= tpulaunch::sha256(message)[0];
      }
    });
    const double evp_s = best_seconds(repeats, [&] {
      unsigned char md[EVP_MAX_MD_SIZE];
      unsigned int length = 0;
      for (std::size_t i = 0; i < size.count; ++i) {
        EVP_DigestInit_ex2(evp, evp_sha256, nullptr);
        EVP_DigestUpdate(evp, message.data(), message.size());
        EVP_DigestFinal_ex(evp, md, &length);
        sink ^= md[0];
      }
    });
    std::printf("| %s | %.0f | %.0f | %.2fx |\n", size.name, mb / core, mb / evp_s, evp_s / core);
  }
  EVP_MD_CTX_free(evp);
  EVP_MD_free(evp_sha256);
  return sink == 0x100 ? 1 : 0; // never true; keeps the digests alive
}
