#!/usr/bin/env bash
# plan_bench.sh: wall time of `tpulaunch plan` as a whole process (embedded catalog), side by
# side with the course's planning function in Python run as a script (interpreter start
# included; bench/course_plan_reference.py). Measures only: always exits 0.
#
#   bench/plan_bench.sh [TPULAUNCH]          (default: $TPULAUNCH or build/ci/tpulaunch)
#
# Environment: PYTHON (default /usr/bin/python3: the real interpreter, not a pyenv shim),
# RUNS (300), WARMUP (20), BENCH_OUT (/tmp/tpulaunch-bench/plan: hyperfine JSON exports).
# Issue goal: median <= 2 ms, and >= 10x faster than the Python function.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${1:-${TPULAUNCH:-$ROOT/build/ci/tpulaunch}}
PYTHON=${PYTHON:-/usr/bin/python3}
RUNS=${RUNS:-300}
WARMUP=${WARMUP:-20}
OUT=${BENCH_OUT:-/tmp/tpulaunch-bench/plan}
COURSE=$ROOT/examples/course
REF=$ROOT/bench/course_plan_reference.py

if [[ ! -x "$BIN" ]]; then
  echo "plan_bench: no tpulaunch binary at $BIN (build it, or pass its path)" >&2
  exit 0
fi
if ! command -v hyperfine >/dev/null; then
  echo "plan_bench: hyperfine is not installed" >&2
  exit 0
fi
mkdir -p "$OUT"
# -N (no intermediate shell) exists since hyperfine 1.13; Debian bookworm has 1.15.
shell_flag=()
if hyperfine --help 2>/dev/null | grep -q -- '^ *-N'; then
  shell_flag=(-N)
fi

TPU_ARGS="--slice v5litepod-16 --tpu my-pod --zone us-west4-a --run-id r1"
# name | plan arguments (same for both programs)
CASES=(
  "multi-host-text|collective-update $TPU_ARGS"
  "multi-host-json|collective-update $TPU_ARGS --format json"
  "multi-host-sh|collective-update $TPU_ARGS --format sh"
  "cpu-route-text|distributed-02"
)

echo "plan_bench: $BIN"
echo "            python: $PYTHON ($("$PYTHON" -c 'import sys; print(sys.version.split()[0])'))"
echo "            $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), runs=$RUNS warmup=$WARMUP"
for entry in "${CASES[@]}"; do
  name=${entry%%|*}
  args=${entry#*|}
  # Sanity: both must succeed before they are timed.
  # shellcheck disable=SC2086 # the arguments are words on purpose
  if ! "$BIN" -C "$COURSE" plan $args >/dev/null 2>&1; then
    echo "plan_bench: tpulaunch plan $args failed; skipping $name" >&2
    continue
  fi
  # shellcheck disable=SC2086
  if ! "$PYTHON" "$REF" -C "$COURSE" plan $args >/dev/null 2>&1; then
    echo "plan_bench: the Python reference failed on $args; skipping $name" >&2
    continue
  fi
  echo "--- $name: plan $args" >&2
  hyperfine "${shell_flag[@]}" --style basic --output=pipe --warmup "$WARMUP" --runs "$RUNS" \
    --export-json "$OUT/$name.json" \
    -n tpulaunch "$BIN -C $COURSE plan $args" \
    -n python3 "$PYTHON $REF -C $COURSE plan $args" \
    -n "python3 -I -S" "$PYTHON -I -S $REF -C $COURSE plan $args" >&2 || true
done

"$PYTHON" - "$OUT" "${CASES[@]}" <<'PY'
import json, os, sys
out, cases = sys.argv[1], [c.split("|", 1)[0] for c in sys.argv[2:]]
ms = lambda s: s * 1000.0
print()
print("| case | program | median ms | mean ms | min ms | python/tpulaunch (median) |")
print("|---|---|---:|---:|---:|---:|")
verdicts = []
for case in cases:
    path = os.path.join(out, case + ".json")
    if not os.path.exists(path):
        continue
    results = {r["command"]: r for r in json.load(open(path))["results"]}
    base = results["tpulaunch"]["median"]
    for name in ("tpulaunch", "python3", "python3 -I -S"):
        r = results[name]
        ratio = "" if name == "tpulaunch" else "{:.1f}x".format(r["median"] / base)
        print("| {} | {} | {:.2f} | {:.2f} | {:.2f} | {} |".format(
            case, name, ms(r["median"]), ms(r["mean"]), ms(r["min"]), ratio))
    lean = results["python3 -I -S"]["median"] / base
    verdicts.append("{}: median {:.2f} ms ({} 2 ms); {:.1f}x the lean python3 -I -S ({} 10x)".format(
        case, ms(base), "meets" if ms(base) <= 2.0 else "MISSES", lean, "meets" if lean >= 10 else "MISSES"))
print()
print("goal (median <= 2 ms, >= 10x python):")
for v in verdicts:
    print("  " + v)
PY
exit 0
