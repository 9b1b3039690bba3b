#!/usr/bin/env bash
# Every test: install what is missing, build with warnings as errors, run the whole ctest suite,
# then the same suite under AddressSanitizer + UndefinedBehaviorSanitizer, then each fuzz target
# for a bounded time. FUZZ_SECONDS (default 60) sets the per-target fuzzing time; 0 skips it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/setup.sh

echo "== build and test (ci preset)" >&2
cmake --preset ci >/dev/null
cmake --build --preset ci
ctest --preset ci

echo "== build and test under ASan + UBSan (asan preset)" >&2
cmake --preset asan >/dev/null
cmake --build --preset asan
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --preset asan

if [[ -x scripts/fuzz.sh && "${FUZZ_SECONDS:-60}" != 0 ]]; then
  echo "== fuzz each target for ${FUZZ_SECONDS:-60} s" >&2
  bash scripts/fuzz.sh "${FUZZ_SECONDS:-60}"
fi
