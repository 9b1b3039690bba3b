#!/usr/bin/env bash
# check_bench.sh: `tpulaunch check` over synthetic courses of 1,000 and 10,000 scripts
# (bench/make_synthetic_course.py), side by side with `grep -c` for the same names over the
# same files, plus peak RSS of both sizes. Measures only: always exits 0.
#
#   bench/check_bench.sh [TPULAUNCH]         (default: $TPULAUNCH or build/ci/tpulaunch)
#
# Environment: PYTHON (/usr/bin/python3), RUNS (10), WARMUP (2), SIZES ("1000 10000"),
# BENCH_WORK (/tmp/tpulaunch-bench/check: the courses, reused while the generator is unchanged),
# CLASSIFIER_BENCH, CHECK_PROFILE (paths of the bench/ binaries; default: next to TPULAUNCH).
# Goal: 10,000 scripts in at most 1.5x grep -c's wall time in the same run (issue 24; issue 16 §3
# aimed at 1.0x) on a 2-core machine, with check on every core (--jobs, default: the cores) beside
# --jobs 1 (the single-threaded path), peak RSS <= 32 MB. Figures are warm page cache (warmup
# runs first).
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${1:-${TPULAUNCH:-$ROOT/build/ci/tpulaunch}}
PYTHON=${PYTHON:-/usr/bin/python3}
RUNS=${RUNS:-10}
WARMUP=${WARMUP:-2}
SIZES=${SIZES:-"1000 10000"}
WORK=${BENCH_WORK:-/tmp/tpulaunch-bench/check}
GEN=$ROOT/bench/make_synthetic_course.py
CLASSIFIER_BENCH=${CLASSIFIER_BENCH:-$(dirname "$BIN")/bench/classifier_bench}

# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
bench_needs check_bench hyperfine
mkdir -p "$WORK"

# The names the classifier's rule table looks for (src/classify/classifier_matchers.hpp): every
# identifier or string key a rule can match on. grep counts lines containing any of them as
# fixed strings (-F), in the C locale (its fastest mode). It does not tokenize, resolve imports,
# skip strings/comments or hash anything: it is a floor for reading the same bytes.
NAMES=(devices local_devices default_device backend jax_platforms jax_platform_name JAX_PLATFORMS
  JAX_PLATFORM_NAME XLA_FLAGS xla_force_host_platform_device_count jax_num_cpu_devices distributed
  initialize process_index process_count make_array_from_process_local_data
  make_array_from_single_device_arrays psum pmean pmax pmin all_gather psum_scatter ppermute
  all_to_all shard_map process_allgather host_local_array_to_global_array sync_global_devices
  assert raise default_backend platform)
printf '%s\n' "${NAMES[@]}" >"$WORK/names.txt"

# Peak RSS in KiB of one run of "$@" (GNU time if present, else getrusage of the child).
peak_rss_kib() {
  if [[ -x /usr/bin/time ]]; then
    /usr/bin/time -f '%M' -o "$WORK/rss.txt" "$@" >/dev/null 2>&1
    tail -n 1 "$WORK/rss.txt"
  else
    "$PYTHON" -c 'import resource, subprocess, sys
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)' "$@"
  fi
}
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

echo "check_bench: $BIN"
echo "             $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), runs=$RUNS warmup=$WARMUP, warm page cache"
echo "             grep: $(grep --version | head -n 1), LC_ALL=C grep -c -r -F -f names.txt (${#NAMES[@]} names)"
gen_stamp=$(sha256sum "$GEN" | cut -c1-16)
: >"$WORK/summary.tsv"
for n in $SIZES; do
  course=$WORK/course-$n
  if [[ "$(cat "$course/.stamp" 2>/dev/null)" != "$gen_stamp" ]]; then
    rm -rf "$course"
    "$PYTHON" "$GEN" "$course" --scripts "$n" >&2 || { echo "check_bench: generator failed" >&2; exit 0; }
    echo "$gen_stamp" >"$course/.stamp"
  fi
  bytes=$(cat "$course"/public/exercises/*.py | wc -c)
  matrix_bytes=$(wc -c <"$course/execution-matrix.json")
  "$BIN" -C "$course" check >"$WORK/check-$n.out" 2>&1
  status=$?
  echo "--- $n scripts, $bytes bytes; check exits $status: $(tail -n 1 "$WORK/check-$n.out")" >&2
  LC_ALL=C hyperfine "${shell_flag[@]}" --style basic --output=pipe -i --warmup "$WARMUP" --runs "$RUNS" \
    --export-json "$WORK/hyperfine-$n.json" \
    -n "tpulaunch check" "$BIN -C $course check" \
    -n "tpulaunch check --jobs 1" "$BIN -C $course check --jobs 1" \
    -n "grep -c" "grep -c -r -F -f $WORK/names.txt $course/public/exercises" >&2
  rss=() grss=() mrss=()
  for _ in 1 2 3; do
    rss+=("$(peak_rss_kib "$BIN" -C "$course" check)")
    # `plan` of one script loads the same matrix and reads one file: the matrix's share of the peak.
    mrss+=("$(peak_rss_kib "$BIN" -C "$course" plan lesson-00000 --format json)")
    grss+=("$(LC_ALL=C peak_rss_kib grep -c -r -F -f "$WORK/names.txt" "$course/public/exercises")")
  done
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$n" "$bytes" "$matrix_bytes" "$(median "${rss[@]}")" "$(median "${grss[@]}")" \
    "$(median "${mrss[@]}")" >>"$WORK/summary.tsv"
done

"$PYTHON" - "$WORK" <<'PY'
import json, os, sys
work = sys.argv[1]
rows = [line.split("\t") for line in open(os.path.join(work, "summary.tsv")).read().splitlines()]
print()
print("| scripts | corpus MB | matrix MB | check median s | check CPU s | check --jobs 1 median s | grep -c median s | grep CPU s | check/grep | check --jobs 1/grep | check MB/s | grep MB/s | check peak RSS MB | grep peak RSS MB | plan (matrix load) peak RSS MB |")
print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
res = {}
for n, nbytes, mbytes, rss, grss, mrss in rows:
    r = {x["command"]: x for x in json.load(open(os.path.join(work, "hyperfine-%s.json" % n)))["results"]}
    c, c1, g = r["tpulaunch check"], r["tpulaunch check --jobs 1"], r["grep -c"]
    mb = int(nbytes) / 1e6
    res[int(n)] = (c["median"], int(rss) / 1024)
    print("| {} | {:.1f} | {:.1f} | {:.3f} | {:.3f} | {:.3f} | {:.3f} | {:.3f} | {:.2f}x | {:.2f}x | {:.0f} | {:.0f} | {:.1f} | {:.1f} | {:.1f} |".format(
        n, mb, int(mbytes) / 1e6, c["median"], c["user"] + c["system"], c1["median"], g["median"],
        g["user"] + g["system"], c["median"] / g["median"], c1["median"] / g["median"],
        mb / c["median"], mb / g["median"], int(rss) / 1024, int(grss) / 1024, int(mrss) / 1024))
print()
if 10000 in res:
    t, m = res[10000]
    r = {x["command"]: x for x in json.load(open(os.path.join(work, "hyperfine-10000.json")))["results"]}
    ratio = t / r["grep -c"]["median"]
    print("goal, 10,000 scripts: {:.3f} s wall; {:.2f}x grep -c ({} 1.5x); peak RSS {:.1f} MB ({} 32 MB)".format(
        t, ratio, "meets" if ratio <= 1.5 else "MISSES", m, "meets" if m <= 32 else "MISSES"))
if 1000 in res and 10000 in res:
    (t1, m1), (t2, m2) = res[1000], res[10000]
    print("scaling 1,000 -> 10,000 scripts: time x{:.1f} (linear: x10), peak RSS x{:.2f} ({:.1f} -> {:.1f} MB; "
          "independent of size: x1.0)".format(t2 / t1, m2 / m1, m1, m2))
print("(CPU s = mean user + system time per run; wall > CPU means the process waited for a core.)")
PY

CHECK_PROFILE=${CHECK_PROFILE:-$(dirname "$BIN")/bench/check_profile}
largest=${SIZES##* }
if [[ -x "$CHECK_PROFILE" && -d "$WORK/course-$largest" ]]; then
  echo
  echo "where the time goes ($CHECK_PROFILE, in-process, wall):"
  "$CHECK_PROFILE" "$WORK/course-$largest" 3
fi

if [[ ! -x "$CHECK_PROFILE" || ! -x "$CLASSIFIER_BENCH" ]]; then
  echo
  echo "check_bench: no $CHECK_PROFILE or $CLASSIFIER_BENCH: the bench/ programs build only on request" \
    "(cmake --preset ci -DTPULAUNCH_BENCHMARKS=ON && cmake --build --preset ci)" >&2
fi
if [[ -x "$CLASSIFIER_BENCH" ]]; then
  echo
  echo "classifier micro-benchmark ($CLASSIFIER_BENCH, best of 5, in-process):"
  "$CLASSIFIER_BENCH" | sed 's/^/  /'
fi
exit 0
