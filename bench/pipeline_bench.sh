#!/usr/bin/env bash
# pipeline_bench.sh: wall time of a whole generated pipeline (`tpulaunch plan --format sh`)
# against the gcloud STAND-IN (tests/gcloud-standin; NOT a TPU, NOT real gcloud) with a per-call
# delay, for 1, 4, 16 and 64 workers: sequential fetches (--parallel 1), the default bound (8) and
# a bound equal to the worker count, next to the ideal (3 x delay + program time). Measures only:
# always exits 0.
#
#   bench/pipeline_bench.sh [TPULAUNCH]      (default: $TPULAUNCH or build/ci/tpulaunch)
#
# Environment: DELAY (seconds per gcloud call, default 1), REPEATS (3; LARGE_REPEATS, 2, above 16
# workers), WORKERS ("1 4 16 64"),
# BENCH_WORK (/tmp/tpulaunch-bench/pipeline), PYTHON (/usr/bin/python3).
# Issue goal: with the default bound, 64 workers >= 5x faster than sequential; with bound >= the
# worker count, within 1.5x of the three unavoidable calls (stage, run, one wave of fetches).
# The venvs are bootstrapped once per stand-in TPU before timing; the timed pipelines have no
# bootstrap (and no teardown) step: preflight, stage, run, fetches, verify.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${1:-${TPULAUNCH:-$ROOT/build/ci/tpulaunch}}
BIN=$(cd "$(dirname "$BIN")" 2>/dev/null && pwd)/$(basename "$BIN")
PYTHON=${PYTHON:-/usr/bin/python3}
DELAY=${DELAY:-1}
REPEATS=${REPEATS:-3}
LARGE_REPEATS=${LARGE_REPEATS:-2} # for more than 16 workers, to stay under 10 minutes
WORKERS=${WORKERS:-"1 4 16 64"}
WORK=${BENCH_WORK:-/tmp/tpulaunch-bench/pipeline}
STANDIN=$ROOT/tests/gcloud-standin
PLAN_FLAGS=(--tpu lab-pod --zone us-west4-a --project lab-project-1)

# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
bench_needs pipeline_bench

mkdir -p "$WORK"
: >"$WORK/results.tsv"
echo "pipeline_bench: $BIN against the gcloud STAND-IN (not a TPU), delay ${DELAY}s per gcloud call"
echo "                $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), repeats=$REPEATS, workers: $WORKERS"

for n in $WORKERS; do
  slice=$(slice_for "$n") || { echo "pipeline_bench: no v5e slice with $n workers" >&2; continue; }
  dir=$WORK/w$n
  prepare_standin pipeline_bench "$dir" "$n" || continue
  # Modes with the same effective bound, min(--parallel, N), run the same way (every fetch at
  # once, or one at a time): each is timed once and reported under every mode it stands for.
  modes=()
  declare -A seen=()
  for m in "seq:1" "default:8" "bound:$n"; do
    p=${m#*:}
    eff=$((p < n ? p : n))
    if [[ -z "${seen[$eff]:-}" ]]; then
      seen[$eff]=${m%%:*}
      modes+=("$m")
    fi
  done
  aliases=()
  for m in "seq:1" "default:8" "bound:$n"; do
    p=${m#*:}
    eff=$((p < n ? p : n))
    [[ "${seen[$eff]}" != "${m%%:*}" ]] && aliases+=("${m%%:*}=${seen[$eff]}")
  done
  unset seen
  reps=$REPEATS
  ((n > 16)) && reps=$LARGE_REPEATS
  for ((rep = 1; rep <= reps; rep++)); do
    for m in "${modes[@]}"; do
      mode=${m%%:*} parallel=${m#*:}
      run_id="r$rep-$mode"
      script="run-$run_id.sh"
      "$BIN" -C "$dir" plan standin-lesson --slice "$slice" "${PLAN_FLAGS[@]}" --run-id "$run_id" \
        --parallel "$parallel" --format sh >"$dir/$script"
      before=$(wc -l <"$dir/state/calls.jsonl")
      status=0
      wall=$(run_pipeline "$dir" "$script" "$DELAY" "$n") || status=$?
      # From the stand-in's call log: the run call's duration (minus the delay, the program's own
      # time, for the ideal) and the fetch phase (end of the run call to the end of the last fetch).
      read -r run_call fetch calls < <(tail -n +$((before + 1)) "$dir/state/calls.jsonl" | "$PYTHON" -c '
import json, sys
calls = [json.loads(l) for l in sys.stdin]
runs = [c for c in calls if c["argv"][3] == "ssh"]
fetches = [c for c in calls if c["argv"][3] == "scp" and "--recurse" in c["argv"]]
run = runs[-1] if runs else None
print("%.3f %.3f %d" % (run["t_end"] - run["t_start"] if run else 0.0,
                        max(c["t_end"] for c in fetches) - run["t_end"] if run and fetches else 0.0, len(calls)))')
      for label in "$mode" "${aliases[@]}"; do
        [[ "$label" == "$mode" || "${label#*=}" == "$mode" ]] || continue
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$n" "${label%%=*}" "$parallel" "$wall" "$status" \
          "${run_call:-0}" "${fetch:-0}" "${calls:-0}" >>"$WORK/results.tsv"
      done
      echo "  $n workers, $mode (--parallel $parallel), run $rep: ${wall}s (fetch phase ${fetch:-?}s), exit $status" >&2
      if ((status != 0)); then
        echo "    see $dir/$script.err" >&2
      fi
    done
  done
done

# What one stand-in gcloud call costs beyond its delay (interpreter start, argument parsing, the
# emulated ssh of `true` on worker 0), measured alone: part of every call in the pipelines.
overhead=nan
first=
for n in $WORKERS; do
  [[ -f "$WORK/w$n/state/tpus/lab-pod/config.json" ]] && first=$WORK/w$n && break
done
if [[ -n "$first" ]] && command -v hyperfine >/dev/null; then
  GCLOUD_STANDIN_STATE="$first/state" CLOUDSDK_CORE_PROJECT=lab-project-1 GCLOUD_STANDIN_DELAY=0 \
    hyperfine -N --style none --output=pipe --warmup 2 --runs 15 --export-json "$WORK/standin-call.json" \
    "$STANDIN/gcloud compute tpus tpu-vm ssh lab-pod --zone=us-west4-a --worker=0 --command=true" >/dev/null 2>&1 &&
    overhead=$("$PYTHON" -c 'import json, sys; print("%.3f" % json.load(open(sys.argv[1]))["results"][0]["median"])' \
      "$WORK/standin-call.json")
fi

"$PYTHON" - "$WORK/results.tsv" "$DELAY" "$overhead" <<'PY'
import statistics, sys
rows = [l.split("\t") for l in open(sys.argv[1]).read().splitlines() if l]
delay = float(sys.argv[2])
by = {}
for n, mode, par, wall, status, run_call, fetch, calls in rows:
    by.setdefault((int(n), mode), []).append((float(wall), int(status), float(run_call), float(fetch), int(calls)))
med = lambda xs: statistics.median(xs) if xs else float("nan")
modes = ("seq", "default", "bound")
sizes = sorted({k[0] for k in by})
col = lambda n, mode, i: med([r[i] for r in by.get((n, mode), [])])
print()
print("Whole pipeline (preflight, stage, run, fetches, verify), median wall seconds:")
print()
print("| workers | gcloud calls | runs | sequential | default (8) | bound=N | ideal | seq/default | seq/bound=N | bound=N/ideal | failed |")
print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
verdict = []
for n in sizes:
    seq, dflt, bound = (col(n, m, 0) for m in modes)
    # Program time: the run call minus its delay, median over every run of this size.
    program = med([max(0.0, r[2] - delay) for m in modes for r in by.get((n, m), [])])
    ideal = 3 * delay + program
    failed = sum(1 for m in modes for r in by.get((n, m), []) if r[1] != 0)
    print("| {} | {:.0f} | {} | {:.2f} | {:.2f} | {:.2f} | {:.2f} | {:.1f}x | {:.1f}x | {:.2f}x | {} |".format(
        n, col(n, "bound", 4), len(by.get((n, "bound"), [])), seq, dflt, bound, ideal, seq / dflt, seq / bound,
        bound / ideal, failed))
    if n == max(sizes):
        verdict.append("{} workers, default bound, whole pipeline: {:.1f}x faster than sequential ({} 5x)".format(
            n, seq / dflt, "meets" if seq / dflt >= 5 else "MISSES"))
    verdict.append("{} workers, bound=N: {:.2f}x the ideal ({} 1.5x)".format(
        n, bound / ideal, "meets" if bound / ideal <= 1.5 else "MISSES"))
print()
print("Fetch phase only (end of the run call to the end of the last fetch; what --parallel changes), median s:")
print()
print("| workers | run call s | sequential | default (8) | bound=N | one wave (delay) | seq/default | seq/bound=N |")
print("|---:|---:|---:|---:|---:|---:|---:|---:|")
for n in sizes:
    seq, dflt, bound = (col(n, m, 3) for m in modes)
    runs = med([r[2] for m in modes for r in by.get((n, m), [])])
    print("| {} | {:.2f} | {:.2f} | {:.2f} | {:.2f} | {:.2f} | {:.1f}x | {:.1f}x |".format(
        n, runs, seq, dflt, bound, delay, seq / dflt, seq / bound))
    if n == max(sizes):
        verdict.append("{} workers, default bound, fetch phase: {:.1f}x faster than sequential ({} 5x)".format(
            n, seq / dflt, "meets" if seq / dflt >= 5 else "MISSES"))
print()
print("ideal = 3 x delay ({:.1f} s) + program time (the run call minus its delay). Modes with the same".format(delay))
print("effective bound min(--parallel, N) behave identically and are timed once. Stand-in figures, not TPU ones.")
print("one stand-in gcloud call without delay (python3 start + emulation of ssh --command=true): {} s median".format(sys.argv[3]))
print("goal:")
for v in verdict:
    print("  " + v)
PY
exit 0
