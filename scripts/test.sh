#!/usr/bin/env bash
# Every test: install what is missing, build with warnings as errors, run the whole ctest suite,
# then the same suite under AddressSanitizer + UndefinedBehaviorSanitizer, then the tests that run
# the thread pool under ThreadSanitizer, then each fuzz target for a bounded time. FUZZ_SECONDS (default 60) sets the per-target fuzzing time; 0 skips it.
# Each phase ends with a line saying how long it took, and a summary of all of them closes the run.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

timings=()
# phase NAME COMMAND...: runs one phase and records its wall time (for the reader, never asserted).
phase() {
  local name=$1 start=$SECONDS
  shift
  "$@"
  timings+=("$(printf '%-32s %4d s' "$name" $((SECONDS - start)))")
  echo "== $name: $((SECONDS - start)) s" >&2
}

phase "setup" bash scripts/setup.sh

echo "== build and test (ci preset)" >&2
phase "configure (ci)" cmake --preset ci >/dev/null
phase "build (ci)" cmake --build --preset ci
phase "ctest (ci)" ctest --preset ci

echo "== build and test under ASan + UBSan (asan preset)" >&2
phase "configure (asan)" cmake --preset asan >/dev/null
phase "build (asan)" cmake --build --preset asan
phase "ctest (asan)" env ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --preset asan

echo "== the thread pool under ThreadSanitizer (tsan preset)" >&2
phase "configure (tsan)" cmake --preset tsan >/dev/null
phase "build (tsan)" cmake --build --preset tsan
phase "ctest (tsan)" env TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 ctest --preset tsan

if [[ -x scripts/fuzz.sh && "${FUZZ_SECONDS:-60}" != 0 ]]; then
  echo "== fuzz each target for ${FUZZ_SECONDS:-60} s" >&2
  phase "fuzz (build and run)" bash scripts/fuzz.sh "${FUZZ_SECONDS:-60}"
fi

echo "== time per phase (wall)" >&2
printf '  %s\n' "${timings[@]}" >&2
