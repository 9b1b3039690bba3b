#!/usr/bin/env bash
# results_bench.sh: retrieval that does not grow with the slice. The same generated pipeline
# (`tpulaunch plan --format sh`: preflight, stage, run, retrieval, verify) against the gcloud
# STAND-IN (tests/gcloud-standin; NOT a TPU, NOT real gcloud, NOT Cloud Storage) with a per-call
# delay, for 4, 16 and 64 workers, side by side in one run:
#   fetch    per-worker scp downloads, --parallel 8 (the default)
#   fetch-N  per-worker scp downloads, --parallel N (every download at once)
#   results  --results gs://BUCKET/PREFIX: each worker uploads at the end of the run call, one
#            local `gcloud storage cp --recursive` brings every worker's folder back
# For each: the wall time, the number of gcloud processes started on this machine (calls.jsonl
# lines without "worker"), and the three-call floor. Measures only: always exits 0.
#
#   bench/results_bench.sh [TPULAUNCH]      (default: $TPULAUNCH or build/ci/tpulaunch)
#
# Environment: DELAY (seconds per gcloud call, local and on workers, default 1), REPEATS (3;
# LARGE_REPEATS, 2, above 16 workers), WORKERS ("4 16 64"; 256 runs on a v5p-2048), MODES (the
# modes to run, e.g. "fetch results"; default all that differ at that size), BENCH_WORK
# (/tmp/tpulaunch-bench/results), PYTHON (/usr/bin/python3).
# Issue goal: with --results, 64 workers within 1.3x of the three-call floor, and 3 local gcloud
# processes at every size.
#
# floor = 3 x DELAY (stage, run, one download) + what the workers do inside the run call beyond
# its own delay (the program, and with --results each worker's upload, which runs on the VMs, not
# here), measured from that run's call log. The "program-only floor" leaves the upload out: the
# strict figure, which a design with a separate upload call could not beat either.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${1:-${TPULAUNCH:-$ROOT/build/ci/tpulaunch}}
BIN=$(cd "$(dirname "$BIN")" 2>/dev/null && pwd)/$(basename "$BIN")
PYTHON=${PYTHON:-/usr/bin/python3}
DELAY=${DELAY:-1}
REPEATS=${REPEATS:-3}
LARGE_REPEATS=${LARGE_REPEATS:-2}
WORKERS=${WORKERS:-"4 16 64"}
WORK=${BENCH_WORK:-/tmp/tpulaunch-bench/results}
STANDIN=$ROOT/tests/gcloud-standin
PLAN_FLAGS=(--tpu lab-pod --zone us-west4-a --project lab-project-1)
BUCKET=lab-results

# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
bench_needs results_bench

mkdir -p "$WORK"
: >"$WORK/results.tsv"
echo "results_bench: $BIN against the gcloud STAND-IN (not a TPU, not Cloud Storage), delay ${DELAY}s per gcloud call"
echo "               $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at the start,"
echo "               repeats=$REPEATS ($LARGE_REPEATS above 16 workers), workers: $WORKERS"

for n in $WORKERS; do
  slice=$(slice_for "$n") || { echo "results_bench: no v5e slice with $n workers" >&2; continue; }
  dir=$WORK/w$n
  prepare_standin results_bench "$dir" "$n" "$BUCKET" || continue
  modes=(fetch results)
  ((n > 8)) && modes=(fetch fetch-N results) # at 4 workers, --parallel 8 already fetches all at once
  if [[ -n ${MODES:-} ]]; then
    read -r -a modes <<<"$MODES"
  fi
  reps=$REPEATS
  ((n > 16)) && reps=$LARGE_REPEATS
  for ((rep = 1; rep <= reps; rep++)); do
    for mode in "${modes[@]}"; do
      run_id="r$rep-$mode"
      case $mode in
      fetch) extra=(--parallel 8) ;;
      fetch-N) extra=(--parallel "$n") ;;
      results) extra=(--results "gs://$BUCKET/bench") ;;
      esac
      "$BIN" -C "$dir" plan standin-lesson --slice "$slice" "${PLAN_FLAGS[@]}" --run-id "$run_id" "${extra[@]}" \
        --format sh >"$dir/run-$run_id.sh"
      before=$(wc -l <"$dir/state/calls.jsonl")
      status=0
      wall=$(run_pipeline "$dir" "run-$run_id.sh" "$DELAY" "$n") || status=$?
      # From the stand-in's call log of this run: local gcloud processes, the run call's length,
      # the longest upload a worker made inside it, and the retrieval phase (end of the run call
      # to the end of the last local download).
      read -r local_calls run_call upload retrieval < <(tail -n +$((before + 1)) "$dir/state/calls.jsonl" | "$PYTHON" -c '
import json, sys
calls = [json.loads(l) for l in sys.stdin]
local = [c for c in calls if "worker" not in c]
runs = [c for c in local if c["argv"][:4] == ["compute", "tpus", "tpu-vm", "ssh"]]
downloads = [c for c in local if c["argv"][:2] == ["storage", "cp"]
             or (c["argv"][:4] == ["compute", "tpus", "tpu-vm", "scp"] and "--recurse" in c["argv"])]
uploads = [c for c in calls if "worker" in c]
run = runs[-1] if runs else None
print(len(local), "%.3f" % (run["t_end"] - run["t_start"] if run else 0.0),
      "%.3f" % max([c["t_end"] - c["t_start"] for c in uploads] or [0.0]),
      "%.3f" % (max(c["t_end"] for c in downloads) - run["t_end"] if run and downloads else 0.0))')
      printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$n" "$mode" "$wall" "$status" "${local_calls:-0}" "${run_call:-0}" \
        "${upload:-0}" "${retrieval:-0}" >>"$WORK/results.tsv"
      echo "  $n workers, $mode, run $rep: ${wall}s, $local_calls local gcloud calls, exit $status" >&2
      if ((status != 0)); then
        echo "    see $dir/run-$run_id.sh.err" >&2
      fi
    done
  done
done

"$PYTHON" - "$WORK/results.tsv" "$DELAY" "$(cut -d' ' -f1-3 /proc/loadavg)" <<'PY'
import statistics, sys
rows = [l.split("\t") for l in open(sys.argv[1]).read().splitlines() if l]
delay = float(sys.argv[2])
by = {}
for n, mode, wall, status, calls, run_call, upload, retrieval in rows:
    by.setdefault((int(n), mode), []).append(
        dict(wall=float(wall), status=int(status), calls=int(calls), run=float(run_call), upload=float(upload),
             retrieval=float(retrieval)))
med = lambda xs: statistics.median(xs) if xs else float("nan")
sizes = sorted({k[0] for k in by})
print()
print("Whole pipeline (preflight, stage, run, retrieval, verify), median wall seconds; local gcloud processes")
print("from calls.jsonl (lines without \"worker\"):")
print()
print("| workers | mode | runs | local gcloud calls | wall s | retrieval s | floor s | wall / floor | program-only floor s | wall / program-only floor | failed |")
print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
verdict = []
for n in sizes:
    for mode in ("fetch", "fetch-N", "results"):
        rs = by.get((n, mode), [])
        if not rs:
            continue
        wall = med([r["wall"] for r in rs])
        # What the workers do in the run call beyond its own delay, this mode's median.
        remote = med([max(0.0, r["run"] - delay) for r in rs])
        upload = med([r["upload"] for r in rs])
        floor = 3 * delay + remote
        strict = 3 * delay + max(0.0, remote - upload)
        calls = sorted({r["calls"] for r in rs})
        failed = sum(1 for r in rs if r["status"] != 0)
        label = {"fetch": "per-worker fetch, --parallel 8", "fetch-N": "per-worker fetch, --parallel N",
                 "results": "--results (one download)"}[mode]
        print("| {} | {} | {} | {} | {:.2f} | {:.2f} | {:.2f} | {:.2f}x | {:.2f} | {:.2f}x | {} |".format(
            n, label, len(rs), "/".join(map(str, calls)), wall, med([r["retrieval"] for r in rs]), floor,
            wall / floor, strict, wall / strict, failed))
        if mode == "results":
            verdict.append("{} workers, --results: {} local gcloud process(es) ({} 3)".format(
                n, "/".join(map(str, calls)), "meets" if calls == [3] else "MISSES"))
            if n == max(sizes):
                verdict.append("{} workers, --results: {:.2f}x the three-call floor ({} 1.3x); {:.2f}x the "
                               "program-only floor".format(n, wall / floor, "meets" if wall / floor <= 1.3 else "MISSES",
                                                           wall / strict))
    f, r = by.get((n, "fetch")), by.get((n, "results"))
    if f and r:
        verdict.append("{} workers: --results {:.2f} s vs per-worker fetch {:.2f} s ({:.1f}x)".format(
            n, med([x["wall"] for x in r]), med([x["wall"] for x in f]),
            med([x["wall"] for x in f]) / med([x["wall"] for x in r])))
print()
print("floor = 3 x delay ({:.1f} s: stage, run, one download) + the workers' time inside the run call beyond".format(delay))
print("its delay (the program; with --results also each worker's upload, made on the VM); program-only floor:")
print("the same without the upload. Stand-in figures, not TPU or Cloud Storage ones. Load average at the end:",
      sys.argv[3])
print("goal:")
for v in verdict:
    print("  " + v)
PY
exit 0
