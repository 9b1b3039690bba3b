#!/usr/bin/env bash
# Installs what tpulaunch needs to build and test, from Debian packages only, and nothing that is
# already there. Safe to run again. Needs root (or sudo) when something is missing.
set -euo pipefail

packages=(
  g++ cmake ninja-build make         # toolchain
  libcli11-dev nlohmann-json3-dev libfmt-dev libspdlog-dev   # libraries, found with find_package
  libssl-dev                         # libcrypto (SHA-256), linked statically
  googletest libgtest-dev            # unit tests
  shellcheck python3                 # e2e tests: generated scripts are shellchecked; the gcloud stand-in is python3
  openssh-server openssh-client      # real-gcloud tests: one real sshd per worker, gcloud's ssh and scp
  iproute2 procps                    # real-gcloud tests: a loopback-only network namespace; process tools
  clang libclang-rt-14-dev           # fuzzing (libFuzzer) and sanitizers
  clang-tidy                         # lint: the function-size check (tests/function_size.sh)
  hyperfine valgrind                 # benchmarks (wall time; callgrind instruction counts)
  google-cloud-cli kubectl           # real-gcloud and real-kubectl tests: the real clients (Google's apt
                                     # repository, packages.cloud.google.com/apt, provides both)
)

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "setup: all ${#packages[@]} packages are installed" >&2
  exit 0
fi

echo "setup: installing ${missing[*]}" >&2
sudo=()
if ((EUID != 0)); then
  sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup: done" >&2
