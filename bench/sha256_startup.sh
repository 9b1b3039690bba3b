#!/usr/bin/env bash
# sha256_startup.sh: what each way of taking SHA-256 from OpenSSL libcrypto costs a fresh process,
# in instructions (callgrind: deterministic on a noisy machine), side by side in one run. Every
# variant is a tiny C++ program that hashes one 3,130-byte message (the size of the example
# course's collective-update.py, which `plan` hashes) and prints one byte of the digest:
#
#   none              no libcrypto at all (the floor: process start, memset and printf)
#   dynamic-evp       libcrypto.so.3, EVP_Digest(EVP_sha256())        (OpenSSL's recommended API)
#   dynamic-evp-lean  libcrypto.so.3, the leanest EVP set-up: no config file, no cipher or digest
#                     tables, the digest fetched explicitly, one EVP_MD_CTX
#   dynamic-sha256    libcrypto.so.3, SHA256_Init/Update/Final
#   static-evp        libcrypto.a, EVP_Digest(EVP_sha256())
#   static-evp-lean   libcrypto.a, the leanest EVP set-up as above
#   static-sha256     libcrypto.a, SHA256_Init/Update/Final            (what tpulaunch uses)
#
# Measures only: always exits 0. Needs g++, libssl-dev and valgrind.
#
#   bench/sha256_startup.sh
set -uo pipefail

for tool in g++ valgrind; do
  if ! command -v "$tool" >/dev/null; then
    echo "sha256_startup: $tool is not installed" >&2
    exit 0
  fi
done
libcrypto_a=$(g++ -print-file-name=libcrypto.a)
if [[ ! -f "$libcrypto_a" || "$libcrypto_a" == libcrypto.a ]]; then
  libcrypto_a=/usr/lib/x86_64-linux-gnu/libcrypto.a
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/sha256-startup.XXXXXX")
trap 'rm -rf "$work"' EXIT

# variant NAME LINK BODY: writes and builds one program; BODY fills `md` from `msg`.
variant() {
  cat >"$work/$1.cpp" <<EOF
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <cstdio>
#include <cstring>
static char msg[3130];
int main() {
  std::memset(msg, 'x', sizeof msg);
  unsigned char md[64] = {};
  $3
  std::printf("%02x\n", md[0]);
}
EOF
  # shellcheck disable=SC2086 # LINK is a list of words
  g++ -O2 -o "$work/$1" "$work/$1.cpp" $2 2>"$work/$1.log" || echo "sha256_startup: $1 did not build (see $work/$1.log)" >&2
}

evp='unsigned int n = 0; EVP_Digest(msg, sizeof msg, md, &n, EVP_sha256(), nullptr);'
lean='OPENSSL_init_crypto(OPENSSL_INIT_NO_LOAD_CONFIG | OPENSSL_INIT_NO_ADD_ALL_CIPHERS | OPENSSL_INIT_NO_ADD_ALL_DIGESTS, nullptr);
  EVP_MD* sha = EVP_MD_fetch(nullptr, "SHA2-256", nullptr); EVP_MD_CTX* ctx = EVP_MD_CTX_new(); unsigned int n = 0;
  EVP_DigestInit_ex2(ctx, sha, nullptr); EVP_DigestUpdate(ctx, msg, sizeof msg); EVP_DigestFinal_ex(ctx, md, &n);'
low='SHA256_CTX c; SHA256_Init(&c); SHA256_Update(&c, msg, sizeof msg); SHA256_Final(md, &c);'
variants=(none dynamic-evp dynamic-evp-lean dynamic-sha256 static-evp static-evp-lean static-sha256)
variant none "" "md[0] = static_cast<unsigned char>(msg[0]);"
variant dynamic-evp "-lcrypto" "$evp"
variant dynamic-evp-lean "-lcrypto" "$lean"
variant dynamic-sha256 "-lcrypto" "$low"
variant static-evp "$libcrypto_a -pthread -ldl" "$evp"
variant static-evp-lean "$libcrypto_a -pthread -ldl" "$lean"
variant static-sha256 "$libcrypto_a" "$low"

echo "sha256_startup: $(openssl version 2>/dev/null || echo 'OpenSSL'), $(valgrind --version), $(date -u +%Y-%m-%dT%H:%MZ)"
echo
echo "| variant | instructions | over 'none' | binary bytes |"
echo "|---|---:|---:|---:|"
floor=
for name in "${variants[@]}"; do
  [[ -x "$work/$name" ]] || continue
  count=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null "$work/$name" 2>&1 >/dev/null |
    sed -n 's/.*Collected : *\([0-9]*\).*/\1/p')
  floor=${floor:-$count}
  printf '| %s | %s | %s | %s |\n' "$name" "$count" "$((count - floor))" "$(stat -c %s "$work/$name")"
done
exit 0
