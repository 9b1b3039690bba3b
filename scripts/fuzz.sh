#!/usr/bin/env bash
# Builds the libFuzzer targets (ASan + UBSan, clang) and runs each for SECONDS (default 60) on a
# private copy of its seed corpus under fuzz/corpus/<target>/ (the committed corpus is never
# written). Exits non-zero on any crash, leak, timeout, out-of-memory or sanitizer report; the
# reproducing inputs are kept under $FUZZ_OUT (printed at the end).
#
#   scripts/fuzz.sh [SECONDS]
#   FUZZ_BUILD_DIR=/tmp/fuzz-build FUZZ_TARGETS="json matrix" scripts/fuzz.sh 30
set -euo pipefail

seconds=${1:-60}
if ! [[ "$seconds" =~ ^[0-9]+$ ]] || ((seconds < 1)); then
  echo "usage: scripts/fuzz.sh [SECONDS]   (SECONDS: a positive integer, default 60)" >&2
  exit 2
fi
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${FUZZ_BUILD_DIR:-$root/build/fuzz}
targets=${FUZZ_TARGETS:-catalog matrix json python verify}
out=${FUZZ_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/tpulaunch-fuzz.XXXXXX")}
mkdir -p "$out"

# The same settings as the `fuzz` preset in CMakePresets.json, into a folder that can be chosen.
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
  -DTPULAUNCH_FUZZ=ON -DBUILD_TESTING=OFF >"$out/configure.log"
cmake --build "$build" --target fuzz_targets -j "${FUZZ_BUILD_JOBS:-2}" >"$out/build.log"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

failed=()
summary=()
for target in $targets; do
  binary="$build/fuzz/${target}_fuzz"
  seeds="$root/fuzz/corpus/$target"
  dict="$root/fuzz/json.dict"
  [[ "$target" == python ]] && dict="$root/fuzz/python.dict"
  if [[ ! -x "$binary" || ! -d "$seeds" ]]; then
    echo "fuzz: no target or corpus for '$target'" >&2
    failed+=("$target")
    continue
  fi
  corpus="$out/$target/corpus"
  artifacts="$out/$target/artifacts"
  mkdir -p "$corpus" "$artifacts"
  cp -R "$seeds/." "$corpus/"
  log="$out/$target/fuzz.log"
  echo "fuzz: $target for ${seconds}s (log: $log)" >&2
  status=0
  "$binary" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -dict="$dict" -artifact_prefix="$artifacts/" "$corpus" >"$log" 2>&1 || status=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  rate=$(sed -n 's/.*exec\/s: *\([0-9]*\).*/\1/p' "$log" | tail -n 1)
  units=$(find "$corpus" -type f | wc -l)
  summary+=("$(printf '%-8s status %-3s %10s execs %8s exec/s %6s corpus files' "$target" "$status" "${execs:-?}" \
    "${rate:-?}" "$units")")
  if ((status != 0)) || [[ -n "$(ls -A "$artifacts")" ]] ||
    grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:|SUMMARY: UndefinedBehaviorSanitizer' "$log"; then
    echo "fuzz: $target FAILED (status $status); inputs in $artifacts; tail of the log:" >&2
    tail -n 40 "$log" >&2
    failed+=("$target")
  fi
done

printf '%s\n' "${summary[@]}" >&2
echo "fuzz: logs, corpora and any reproducing inputs are in $out" >&2
if ((${#failed[@]} > 0)); then
  echo "fuzz: FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz: no crash, leak, timeout or sanitizer report in: $targets" >&2
