#!/usr/bin/env bash
# plan_bench.sh: `tpulaunch plan` as a whole process (built-in catalog), side by side with the
# course's planning function in Python run as a script (interpreter start included;
# bench/course_plan_reference.py): wall time (hyperfine) and instructions (callgrind, which is
# deterministic on a noisy machine, so a regression shows). Measures only: always exits 0.
#
#   bench/plan_bench.sh [TPULAUNCH]          (default: $TPULAUNCH or build/ci/tpulaunch)
#
# Environment: PYTHON (default /usr/bin/python3: the real interpreter, not a pyenv shim),
# RUNS (300), WARMUP (20), BENCH_OUT (/tmp/tpulaunch-bench/plan: hyperfine JSON exports).
# Issue goals: median <= 2 ms and >= 12x faster than the Python function; the JSON plan of the
# 4-host slice in <= 3.0 M instructions (issue 35: nlohmann's own dump, no JSON writer of our own;
# issue 24 had set 2.5 M). Issue 16's 1.5 M and >= 30x fewer instructions than the Python function
# went with those budgets: the ratio is reported, not judged. Without valgrind the instruction
# counts are skipped.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${1:-${TPULAUNCH:-$ROOT/build/ci/tpulaunch}}
PYTHON=${PYTHON:-/usr/bin/python3}
RUNS=${RUNS:-300}
WARMUP=${WARMUP:-20}
OUT=${BENCH_OUT:-/tmp/tpulaunch-bench/plan}
COURSE=$ROOT/examples/course
REF=$ROOT/bench/course_plan_reference.py

# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
bench_needs plan_bench hyperfine
mkdir -p "$OUT"

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

# Instructions of one run of "$@" (callgrind's total), or "" without valgrind.
instructions() {
  command -v valgrind >/dev/null || return 0
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 >/dev/null |
    sed -n 's/.*Collected : *\([0-9]*\).*/\1/p'
}
: >"$OUT/instructions.tsv"
for entry in "${CASES[@]}"; do
  name=${entry%%|*}
  args=${entry#*|}
  # shellcheck disable=SC2086 # the arguments are words on purpose
  printf '%s\t%s\t%s\t%s\n' "$name" "$(instructions "$BIN" -C "$COURSE" plan $args)" \
    "$(instructions "$PYTHON" "$REF" -C "$COURSE" plan $args)" \
    "$(instructions "$PYTHON" -I -S "$REF" -C "$COURSE" plan $args)" >>"$OUT/instructions.tsv"
done

"$PYTHON" - "$OUT" "${CASES[@]}" <<'PY'
import json, os, sys
out, cases = sys.argv[1], [c.split("|", 1)[0] for c in sys.argv[2:]]
ms = lambda s: s * 1000.0
counts = {}
for line in open(os.path.join(out, "instructions.tsv")).read().splitlines():
    name, *values = line.split("\t")
    counts[name] = [int(v) if v else None for v in values]
mi = lambda n: "{:.2f} M".format(n / 1e6) if n else "-"
print()
print("| case | program | median ms | mean ms | min ms | python/tpulaunch (median) | instructions | python/tpulaunch (instructions) |")
print("|---|---|---:|---:|---:|---:|---:|---:|")
verdicts = []
for case in cases:
    path = os.path.join(out, case + ".json")
    if not os.path.exists(path):
        continue
    results = {r["command"]: r for r in json.load(open(path))["results"]}
    base = results["tpulaunch"]["median"]
    ins = dict(zip(("tpulaunch", "python3", "python3 -I -S"), counts.get(case, [None, None, None])))
    for name in ("tpulaunch", "python3", "python3 -I -S"):
        r = results[name]
        ratio = "" if name == "tpulaunch" else "{:.1f}x".format(r["median"] / base)
        iratio = "" if name == "tpulaunch" or not ins[name] or not ins["tpulaunch"] else "{:.1f}x".format(ins[name] / ins["tpulaunch"])
        print("| {} | {} | {:.2f} | {:.2f} | {:.2f} | {} | {} | {} |".format(
            case, name, ms(r["median"]), ms(r["mean"]), ms(r["min"]), ratio, mi(ins[name]), iratio))
    lean = results["python3 -I -S"]["median"] / base
    verdict = "{}: median {:.2f} ms ({} 2 ms); {:.1f}x the lean python3 -I -S ({} 12x)".format(
        case, ms(base), "meets" if ms(base) <= 2.0 else "MISSES", lean, "meets" if lean >= 12 else "MISSES")
    if ins["tpulaunch"] and ins["python3 -I -S"]:
        fewer = ins["python3 -I -S"] / ins["tpulaunch"]
        verdict += "; {} instructions{}, {:.0f}x fewer than the lean python3 -I -S".format(
            mi(ins["tpulaunch"]),
            (" (" + ("meets" if ins["tpulaunch"] <= 3.0e6 else "MISSES") + " 3.0 M)") if case == "multi-host-json" else "",
            fewer)
    verdicts.append(verdict)
print()
print("goals (median <= 2 ms and >= 12x python; multi-host-json <= 3.0 M instructions):")
for v in verdicts:
    print("  " + v)
PY
exit 0
