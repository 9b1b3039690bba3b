#!/usr/bin/env bash
# retrieval_bench.sh: retrieval at any scale (issue 37 §3), in one run:
#   1. the gcloud STAND-IN (tests/gcloud-standin: NOT a TPU, NOT real gcloud, NOT Cloud Storage)
#      at DELAY seconds per gcloud call (default 1): the whole pipeline for 16, 64 and 256 workers,
#      per-worker fetch (--parallel 8) against --results (one download), through results_bench.sh;
#   2. the REAL gcloud (tests/real-gcloud: gcloud on PATH against a loopback TPU API and one real
#      sshd per worker, root needed; skipped with a reason otherwise): 8 workers' retrieval, the
#      plan's per-worker fetch commands all at once and one alone, and its one bucket download
#      (`gcloud storage cp --recursive` from the loopback Cloud Storage API, fakestorage.py: NOT
#      Cloud Storage), wall seconds and the CPU seconds of every process they started.
# Measures only: always exits 0.
#
#   bench/retrieval_bench.sh [TPULAUNCH]      (default: $TPULAUNCH or build/ci/tpulaunch)
#
# Environment: DELAY (1), WORKERS ("16 64 256"), REPEATS (1), BENCH_WORK (/tmp/tpulaunch-bench).
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${1:-${TPULAUNCH:-$ROOT/build/ci/tpulaunch}}
BIN=$(cd "$(dirname "$BIN")" 2>/dev/null && pwd)/$(basename "$BIN")
WORK=${BENCH_WORK:-/tmp/tpulaunch-bench}

echo "retrieval_bench: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?'), $(date -u +%Y-%m-%dT%H:%MZ)"
echo
echo "== 1. stand-in, ${DELAY:-1} s per gcloud call =="
repeats=${REPEATS:-1}
DELAY=${DELAY:-1} WORKERS=${WORKERS:-"16 64 256"} MODES="fetch results" REPEATS=$repeats \
  LARGE_REPEATS=$repeats BENCH_WORK="$WORK/retrieval" bash "$ROOT/bench/results_bench.sh" "$BIN"

echo
echo "== 2. real gcloud $(gcloud version 2>/dev/null | sed -n 's/^Google Cloud SDK //p'), 8 loopback workers =="
mkdir -p "$WORK/real-gcloud"
TPULAUNCH=$BIN SOURCE_DIR=$ROOT WORK_ROOT="$WORK/real-gcloud" \
  bash "$ROOT/tests/real-gcloud/cases.sh" measure_retrieval 2>"$WORK/real-gcloud.err" |
  awk '$1 == "per-worker" {printf "  per-worker, %d download(s) at once: %.2f s wall, %.2f s CPU (%.2f s CPU per download)\n", $2, $3, $4, $4 / $2}
       $1 == "bucket" {printf "  bucket, one download of %d workers'"'"' folders: %.2f s wall, %.2f s CPU\n", $2, $3, $4}'
status=${PIPESTATUS[0]}
if ((status == 77)); then
  echo "  skipped: $(grep -m1 '^SKIP' "$WORK/real-gcloud.err")"
elif ((status != 0)); then
  echo "  failed (status $status): see $WORK/real-gcloud.err"
fi
exit 0
