#include "tpulaunch/sha256.hpp"

#include <algorithm>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#define TPULAUNCH_SHA_NI 1
#else
#define TPULAUNCH_SHA_NI 0
#endif

namespace tpulaunch {
namespace {

constexpr std::array<std::uint32_t, 8> k_initial_state{
    0x6a09e667U, 0xbb67ae85U, 0x3c6ef372U, 0xa54ff53aU, 0x510e527fU, 0x9b05688cU, 0x1f83d9abU, 0x5be0cd19U,
};

// alignas(16) so the SHA-NI path can load four round constants with one aligned load.
alignas(16) constexpr std::array<std::uint32_t, 64> k_round{
    0x428a2f98U, 0x71374491U, 0xb5c0fbcfU, 0xe9b5dba5U, 0x3956c25bU, 0x59f111f1U, 0x923f82a4U, 0xab1c5ed5U,
    0xd807aa98U, 0x12835b01U, 0x243185beU, 0x550c7dc3U, 0x72be5d74U, 0x80deb1feU, 0x9bdc06a7U, 0xc19bf174U,
    0xe49b69c1U, 0xefbe4786U, 0x0fc19dc6U, 0x240ca1ccU, 0x2de92c6fU, 0x4a7484aaU, 0x5cb0a9dcU, 0x76f988daU,
    0x983e5152U, 0xa831c66dU, 0xb00327c8U, 0xbf597fc7U, 0xc6e00bf3U, 0xd5a79147U, 0x06ca6351U, 0x14292967U,
    0x27b70a85U, 0x2e1b2138U, 0x4d2c6dfcU, 0x53380d13U, 0x650a7354U, 0x766a0abbU, 0x81c2c92eU, 0x92722c85U,
    0xa2bfe8a1U, 0xa81a664bU, 0xc24b8b70U, 0xc76c51a3U, 0xd192e819U, 0xd6990624U, 0xf40e3585U, 0x106aa070U,
    0x19a4c116U, 0x1e376c08U, 0x2748774cU, 0x34b0bcb5U, 0x391c0cb3U, 0x4ed8aa4aU, 0x5b9cca4fU, 0x682e6ff3U,
    0x748f82eeU, 0x78a5636fU, 0x84c87814U, 0x8cc70208U, 0x90befffaU, 0xa4506cebU, 0xbef9a3f7U, 0xc67178f2U,
};

constexpr std::uint32_t rotr(std::uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

std::uint32_t load_be32(const unsigned char* p) {
  return (static_cast<std::uint32_t>(p[0]) << 24) | (static_cast<std::uint32_t>(p[1]) << 16) |
         (static_cast<std::uint32_t>(p[2]) << 8) | static_cast<std::uint32_t>(p[3]);
}

void portable_blocks(std::uint32_t* state, const unsigned char* blocks, std::size_t count) {
  std::uint32_t w[64];
  for (std::size_t block = 0; block < count; ++block) {
    const unsigned char* p = blocks + block * 64;
    for (int i = 0; i < 16; ++i) {
      w[i] = load_be32(p + 4 * i);
    }
    for (int i = 16; i < 64; ++i) {
      const std::uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
      const std::uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    std::uint32_t a = state[0];
    std::uint32_t b = state[1];
    std::uint32_t c = state[2];
    std::uint32_t d = state[3];
    std::uint32_t e = state[4];
    std::uint32_t f = state[5];
    std::uint32_t g = state[6];
    std::uint32_t h = state[7];
    for (int i = 0; i < 64; ++i) {
      const std::uint32_t s1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
      const std::uint32_t ch = (e & f) ^ (~e & g);
      const std::uint32_t t1 = h + s1 + ch + k_round[static_cast<std::size_t>(i)] + w[i];
      const std::uint32_t s0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
      const std::uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
      const std::uint32_t t2 = s0 + maj;
      h = g;
      g = f;
      f = e;
      e = d + t1;
      d = c;
      c = b;
      b = a;
      a = t1 + t2;
    }
    state[0] += a;
    state[1] += b;
    state[2] += c;
    state[3] += d;
    state[4] += e;
    state[5] += f;
    state[6] += g;
    state[7] += h;
  }
}

#if TPULAUNCH_SHA_NI

// The SHA-NI rounds keep the state as the register pair ABEF/CDGH and process four rounds per
// message vector. The loop over the 16 groups is fully unrolled by the compiler (constant trip
// count), so the rotating message registers stay in xmm registers.
__attribute__((target("sha,sse4.1"))) void sha_ni_blocks(std::uint32_t* state, const unsigned char* blocks,
                                                         std::size_t count) {
  const __m128i byte_swap = _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);

  __m128i tmp = _mm_loadu_si128(reinterpret_cast<const __m128i*>(state));
  __m128i state1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(state + 4));
  tmp = _mm_shuffle_epi32(tmp, 0xB1);          // CDAB
  state1 = _mm_shuffle_epi32(state1, 0x1B);    // EFGH
  __m128i state0 = _mm_alignr_epi8(tmp, state1, 8); // ABEF
  state1 = _mm_blend_epi16(state1, tmp, 0xF0); // CDGH

  for (std::size_t block = 0; block < count; ++block) {
    const unsigned char* p = blocks + block * 64;
    const __m128i abef_save = state0;
    const __m128i cdgh_save = state1;
    __m128i msg[4];

#pragma GCC unroll 16
    for (int group = 0; group < 16; ++group) {
      const int cur = group & 3;
      if (group < 4) {
        msg[cur] = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * group)), byte_swap);
      }
      __m128i m = _mm_add_epi32(msg[cur], _mm_load_si128(reinterpret_cast<const __m128i*>(&k_round[static_cast<std::size_t>(4 * group)])));
      state1 = _mm_sha256rnds2_epu32(state1, state0, m);
      if (group >= 3 && group <= 14) {
        // Finish the schedule of the next message vector: W[t] needs W[t-7] (alignr) and msg2.
        const int next = (group + 1) & 3;
        const int prev = (group + 3) & 3;
        msg[next] = _mm_add_epi32(msg[next], _mm_alignr_epi8(msg[cur], msg[prev], 4));
        msg[next] = _mm_sha256msg2_epu32(msg[next], msg[cur]);
      }
      m = _mm_shuffle_epi32(m, 0x0E);
      state0 = _mm_sha256rnds2_epu32(state0, state1, m);
      if (group >= 1 && group <= 12) {
        const int prev = (group + 3) & 3;
        msg[prev] = _mm_sha256msg1_epu32(msg[prev], msg[cur]);
      }
    }

    state0 = _mm_add_epi32(state0, abef_save);
    state1 = _mm_add_epi32(state1, cdgh_save);
  }

  tmp = _mm_shuffle_epi32(state0, 0x1B);       // FEBA
  state1 = _mm_shuffle_epi32(state1, 0xB1);    // DCHG
  state0 = _mm_blend_epi16(tmp, state1, 0xF0); // DCBA
  state1 = _mm_alignr_epi8(state1, tmp, 8);    // HGFE
  _mm_storeu_si128(reinterpret_cast<__m128i*>(state), state0);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(state + 4), state1);
}

// CPUID directly rather than __builtin_cpu_supports("sha"), which clang does not know.
bool detect_sha_ni() {
  unsigned eax = 0;
  unsigned ebx = 0;
  unsigned ecx = 0;
  unsigned edx = 0;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) {
    return false;
  }
  const bool ssse3 = (ecx & (1U << 9)) != 0;
  const bool sse41 = (ecx & (1U << 19)) != 0;
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) == 0) {
    return false;
  }
  const bool sha = (ebx & (1U << 29)) != 0;
  return ssse3 && sse41 && sha;
}

#else

bool detect_sha_ni() { return false; }

#endif

// Detected once: the answer cannot change while the process runs.
bool hardware_available() {
  static const bool available = detect_sha_ni();
  return available;
}

} // namespace

Sha256::Sha256(Sha256Backend backend) : m_blocks(portable_blocks) {
#if TPULAUNCH_SHA_NI
  if (backend == Sha256Backend::automatic && hardware_available()) {
    m_blocks = sha_ni_blocks;
  }
#else
  (void)backend;
#endif
  reset();
}

void Sha256::reset() {
  m_state = k_initial_state;
  m_buffered = 0;
  m_total = 0;
}

void Sha256::update(std::string_view bytes) {
  const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
  std::size_t size = bytes.size();
  m_total += size;
  if (m_buffered > 0) {
    const std::size_t take = std::min(size, m_buffer.size() - m_buffered);
    std::memcpy(m_buffer.data() + m_buffered, data, take);
    m_buffered += take;
    data += take;
    size -= take;
    if (m_buffered < m_buffer.size()) {
      return;
    }
    m_blocks(m_state.data(), m_buffer.data(), 1);
    m_buffered = 0;
  }
  // Whole blocks go straight from the caller's memory: no copy on the hot path.
  const std::size_t whole = size / 64;
  if (whole > 0) {
    m_blocks(m_state.data(), data, whole);
    data += whole * 64;
    size -= whole * 64;
  }
  if (size > 0) {
    std::memcpy(m_buffer.data(), data, size);
    m_buffered = size;
  }
}

Sha256Digest Sha256::finish() {
  const std::uint64_t bit_length = m_total * 8;
  std::array<unsigned char, 128> tail{};
  std::memcpy(tail.data(), m_buffer.data(), m_buffered);
  tail[m_buffered] = 0x80;
  // One block if the 0x80 byte and the 8-byte length fit after the data, else two.
  const std::size_t tail_size = m_buffered + 1 + 8 <= 64 ? 64 : 128;
  for (int i = 0; i < 8; ++i) {
    tail[tail_size - 1 - static_cast<std::size_t>(i)] = static_cast<unsigned char>(bit_length >> (8 * i));
  }
  m_blocks(m_state.data(), tail.data(), tail_size / 64);

  Sha256Digest digest{};
  for (std::size_t i = 0; i < 8; ++i) {
    digest[4 * i] = static_cast<std::uint8_t>(m_state[i] >> 24);
    digest[4 * i + 1] = static_cast<std::uint8_t>(m_state[i] >> 16);
    digest[4 * i + 2] = static_cast<std::uint8_t>(m_state[i] >> 8);
    digest[4 * i + 3] = static_cast<std::uint8_t>(m_state[i]);
  }
  reset();
  return digest;
}

bool sha256_hardware_available() { return hardware_available(); }

std::string_view sha256_implementation_name() { return hardware_available() ? "sha-ni" : "portable"; }

std::string sha256_to_hex(const Sha256Digest& digest) {
  static constexpr char k_digits[] = "0123456789abcdef";
  std::string out(digest.size() * 2, '0');
  for (std::size_t i = 0; i < digest.size(); ++i) {
    out[2 * i] = k_digits[digest[i] >> 4];
    out[2 * i + 1] = k_digits[digest[i] & 0x0F];
  }
  return out;
}

std::string sha256_hex(std::string_view bytes) {
  Sha256 hasher;
  hasher.update(bytes);
  return sha256_to_hex(hasher.finish());
}

std::string sha256_hex_portable(std::string_view bytes) {
  Sha256 hasher(Sha256Backend::portable);
  hasher.update(bytes);
  return sha256_to_hex(hasher.finish());
}

} // namespace tpulaunch
