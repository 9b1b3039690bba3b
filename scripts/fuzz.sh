#!/usr/bin/env bash
# Builds the libFuzzer targets (ASan + UBSan, clang) and runs each for SECONDS (default 60) on a
# private copy of its seed corpus under fuzz/corpus/<corpus>/ (the committed corpus is never
# written), FUZZ_JOBS targets at a time (default 2: the two cores of the machines this runs on).
# Exits non-zero on any crash, leak, timeout, out-of-memory or sanitizer report; the reproducing
# inputs are kept under $FUZZ_OUT (printed at the end).
#
#   scripts/fuzz.sh [SECONDS]
#   FUZZ_BUILD_DIR=/tmp/fuzz-build FUZZ_TARGETS="json matrix" FUZZ_JOBS=1 scripts/fuzz.sh 30
#
# Targets: catalog, matrix, json (the strict JSON reader alone), json_diff (the reader against
# nlohmann::json::parse, on the json seeds) and python.
set -euo pipefail

seconds=${1:-60}
if ! [[ "$seconds" =~ ^[0-9]+$ ]] || ((seconds < 1)); then
  echo "usage: scripts/fuzz.sh [SECONDS]   (SECONDS: a positive integer, default 60)" >&2
  exit 2
fi
if ! [[ "${FUZZ_JOBS:-2}" =~ ^[1-9][0-9]*$ ]]; then
  echo "fuzz: FUZZ_JOBS must be a positive integer, not '${FUZZ_JOBS}'" >&2
  exit 2
fi
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${FUZZ_BUILD_DIR:-$root/build/fuzz}
targets=${FUZZ_TARGETS:-catalog matrix json json_diff python verify}
fuzz_jobs=${FUZZ_JOBS:-2}
out=${FUZZ_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/tpulaunch-fuzz.XXXXXX")}
mkdir -p "$out"

# The same settings as the `fuzz` preset in CMakePresets.json, into a folder that can be chosen.
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
  -DTPULAUNCH_FUZZ=ON -DBUILD_TESTING=OFF >"$out/configure.log"
cmake --build "$build" --target fuzz_targets -j "${FUZZ_BUILD_JOBS:-2}" >"$out/build.log"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

# The seed corpus of a target: its own folder, except where targets share seeds.
corpus_of() {
  case "$1" in
  json_diff) echo json ;;
  *) echo "$1" ;;
  esac
}

# run_target TARGET: fuzzes one target; writes $out/TARGET/summary, and $out/TARGET/failed when
# it failed. Runs in the background, so it reports through files, not variables.
run_target() {
  local target=$1 binary seeds dict corpus artifacts log status execs rate units
  binary="$build/fuzz/${target}_fuzz"
  seeds="$root/fuzz/corpus/$(corpus_of "$target")"
  dict="$root/fuzz/json.dict"
  [[ "$target" == python ]] && dict="$root/fuzz/python.dict"
  mkdir -p "$out/$target"
  if [[ ! -x "$binary" || ! -d "$seeds" ]]; then
    echo "fuzz: no target or corpus for '$target'" >&2
    echo "$target: no target or corpus" >"$out/$target/summary"
    : >"$out/$target/failed"
    return 0
  fi
  corpus="$out/$target/corpus"
  artifacts="$out/$target/artifacts"
  mkdir -p "$corpus" "$artifacts"
  cp -R "$seeds/." "$corpus/"
  if [[ "$target" == python ]]; then
    # The repository's own Python (the example course, the gcloud stand-in and its fake JAX, the
    # remote programs) seeds the Python target as it is now, instead of committed copies that drift.
    local file
    while IFS= read -r -d '' file; do
      cp "$file" "$corpus/repo-$(printf '%s' "${file#"$root"/}" | tr '/' '-')"
    done < <(find "$root/examples" "$root/tests/gcloud-standin" "$root/src/remote" -name '*.py' -type f -print0)
  fi
  log="$out/$target/fuzz.log"
  echo "fuzz: $target for ${seconds}s (log: $log)" >&2
  status=0
  "$binary" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -dict="$dict" -artifact_prefix="$artifacts/" "$corpus" >"$log" 2>&1 || status=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  rate=$(sed -n 's/.*exec\/s: *\([0-9]*\).*/\1/p' "$log" | tail -n 1)
  units=$(find "$corpus" -type f | wc -l)
  printf '%-9s status %-3s %10s execs %8s exec/s %6s corpus files\n' "$target" "$status" "${execs:-?}" \
    "${rate:-?}" "$units" >"$out/$target/summary"
  if ((status != 0)) || [[ -n "$(ls -A "$artifacts")" ]] ||
    grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:|SUMMARY: UndefinedBehaviorSanitizer' "$log"; then
    echo "fuzz: $target FAILED (status $status); inputs in $artifacts; tail of the log:" >&2
    tail -n 40 "$log" >&2
    : >"$out/$target/failed"
  fi
}

# At most $fuzz_jobs targets at once; `wait -n` frees a slot as soon as any of them ends.
running=0
for target in $targets; do
  if ((running >= fuzz_jobs)); then
    wait -n || true
    running=$((running - 1))
  fi
  run_target "$target" &
  running=$((running + 1))
done
wait

failed=()
summary=()
for target in $targets; do
  summary+=("$(cat "$out/$target/summary" 2>/dev/null || echo "$target: no summary")")
  if [[ -e "$out/$target/failed" || ! -e "$out/$target/summary" ]]; then
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
