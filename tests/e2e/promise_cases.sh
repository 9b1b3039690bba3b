#!/usr/bin/env bash
# End-to-end cases of what a review accepts, what a plan runs and what verify checks: the three
# must agree. A script's review declares what its runs prove (--proves), and verify checks that,
# never a training contract the script never made; an initialize() under a condition is accepted
# by the review in so many words, or no multi-host route takes it, in plan and in check alike; an
# --env value that moves the work off the TPU is refused by the classifier's own table. ctest
# runs one function per entry, as for cases.sh:
#   TPULAUNCH=build/ci/tpulaunch SOURCE_DIR=. bash tests/e2e/promise_cases.sh case_plan__env_that_selects_the_cpu_is_refused_on_a_tpu_route
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

TPU_FLAGS=(--tpu my-pod --zone us-west4-a --run-id r1)
PIPE_FLAGS=(--tpu lab-pod --zone us-west4-a --project lab-project-1 --run-id r1)

# A course's own multi-host program: every marker of a multi-host-qualified review, and no receipt.
own_program() {
  cat >"$1" <<'PY'
"""A course's own multi-host program: it checks its sum and prints it; it writes no receipts."""
import jax
from jax.experimental import multihost_utils

jax.distributed.initialize()
index = jax.process_index()
values = multihost_utils.process_allgather(index + 1)
total = sum(values)
assert total == jax.process_count() * (jax.process_count() + 1) // 2, total
print("process", index, "of", jax.process_count(), "sum", total)
PY
}

# The NUM_HOSTS pattern: every marker, but initialize() only under a condition nothing in
# tpulaunch makes true.
conditional_program() {
  cat >"$1" <<'PY'
import os

import jax
from jax.experimental import multihost_utils

if int(os.environ.get("NUM_HOSTS", "1")) > 1:
    jax.distributed.initialize()
index = jax.process_index()
values = multihost_utils.process_allgather(index + 1)
assert sum(values) > 0
PY
}

# A user's script reviewed multi-host-qualified without --proves: the plan verifies it by its logs
# and every worker's recorded status, the run verifies, the TPU is torn down, and the verdict says
# no training claim was checked (as a training check of the same folder would fail: no receipts).
case_pipeline__undeclared_script_is_verified_by_logs() {
  local dir
  dir=$(standin_course undeclared-logs 4)
  own_program "$dir/public/exercises/own.py"
  run -C "$dir" review own --class multi-host-qualified --by e2e-tests
  expect_status 0
  expect_stdout_contains "proves nothing declared: plan verifies its runs by their logs and every worker's recorded status 0"
  run -C "$dir" classify own
  expect_stdout_contains "reviewed:  multi-host-qualified; proves nothing declared"
  run -C "$dir" classify own --format json
  expect_stdout_contains '"proves": null'
  run -C "$dir" plan own --slice v5litepod-16 "${PIPE_FLAGS[@]}" --bootstrap --teardown
  expect_status 0
  expect_stdout_contains "verify: logs and every worker's recorded status 0; its review declares nothing it proves (review --proves), so no training claim is checked"
  expect_stdout_contains "--kind=logs"
  run -C "$dir" plan own --slice v5litepod-16 "${PIPE_FLAGS[@]}" --format json
  expect_stdout_contains '"verify": "logs"'
  expect_stdout_contains '"proves": null'
  run -C "$dir" plan own --slice v5litepod-16 "${PIPE_FLAGS[@]}" --bootstrap --teardown --format sh
  printf '%s\n' "$out" >"$dir/run.sh"
  run_pipeline "$dir" run.sh
  expect_status 0
  expect_stdout_contains "verified: logs and run records of 4 workers on v5litepod-16 in ./tpu-runs/lab-pod/own/r1; every worker recorded status 0, and no training claim was checked"
  expect_stdout_contains "process 3 of 4 sum 10"
  tpu_deleted "$dir" || fail "teardown did not delete the TPU after a run verified by its logs"
  TPULAUNCH_ALLOW_STANDIN=1 run verify "$dir/tpu-runs/lab-pod/own/r1" --slice v5litepod-16 --kind training
  expect_status 3
  expect_stdout_contains "FAIL worker 0: worker-0.json: missing"
  run verify "$dir/tpu-runs/lab-pod/own/r1" --slice v5litepod-16 --kind logs --format json
  expect_status 0
  expect_stdout_contains '"training_checked": false'
}

# --proves training is recorded, shown by classify and plan, and makes verify check the receipts.
case_review__proves_is_recorded_and_shown() {
  local dir
  dir=$(course_copy review-proves)
  own_program "$dir/public/exercises/own.py"
  run -C "$dir" review own --class multi-host-qualified --by e2e-tests --proves training
  expect_status 0
  expect_stdout_contains "  proves training: plan verifies its runs with --verify training"
  grep -q '"proves": "training"' "$dir/execution-matrix.json" || fail "the matrix does not record proves"
  run -C "$dir" classify own
  expect_stdout_contains "reviewed:  multi-host-qualified; proves training (plan verifies --verify training)"
  run -C "$dir" plan own --slice v5litepod-16 "${TPU_FLAGS[@]}"
  expect_stdout_contains "verify: training, as its review declares it proves training"
  expect_stdout_contains "--kind=training"
  run -C "$dir" plan own --slice v5litepod-16 "${TPU_FLAGS[@]}" --verify logs
  expect_stdout_contains "verify: logs (--verify; its review declares it proves training)"
  # The example course keeps its lessons' contracts.
  run -C "$dir" plan multihost_collective --slice v5litepod-16 "${TPU_FLAGS[@]}" --format json
  expect_stdout_contains '"proves": "training"'
  expect_stdout_contains '"verify": "training"'
  # A cpu-only script runs where nothing is verified, and a KIND is one of three.
  run -C "$dir" review distributed-02 --class cpu-only --by e2e-tests --proves logs
  expect_status 2
  expect_one_error_line
  run -C "$dir" review own --class multi-host-qualified --by e2e-tests --proves receipts
  expect_status 2
}

# The review must accept an initialize() under a condition in so many words; until it does, no
# multi-host route takes the script, in plan and in check --route alike; once it does, the plan's
# notes say so (text and JSON), and a 1-host route never needed it.
case_review__conditional_initialize_needs_its_condition_accepted() {
  local dir
  dir=$(course_copy conditional-init)
  conditional_program "$dir/public/exercises/cond.py"
  run -C "$dir" classify cond
  expect_stdout_contains "note: conditional: it runs only inside \`if int(os.environ.get(\"NUM_HOSTS\", \"1\")) > 1:\` (line 6)"
  cp "$dir/execution-matrix.json" "$dir/before.json"
  run -C "$dir" review cond --class multi-host-qualified --by e2e-tests
  expect_status 3
  expect_stderr_contains "tpulaunch: refused: 'cond' calls jax.distributed.initialize() at line 7 only under a condition"
  expect_stderr_contains "needs --initialize-condition REASON"
  cmp -s "$dir/execution-matrix.json" "$dir/before.json" || fail "a refused review changed the matrix"
  run -C "$dir" review cond --class multi-host-qualified --by e2e-tests --initialize-condition "the course's launcher exports NUM_HOSTS on every host"
  expect_status 0
  expect_stdout_contains "initialize condition accepted at line 7: the course's launcher exports NUM_HOSTS on every host"
  grep -q '"initialize_condition"' "$dir/execution-matrix.json" || fail "the matrix does not record the acceptance"
  run -C "$dir" plan cond --slice v5litepod-16 "${TPU_FLAGS[@]}" --env NUM_HOSTS=4
  expect_status 0
  expect_stdout_contains "'cond' calls jax.distributed.initialize() at line 7 only under a condition"
  expect_stdout_contains "its review accepted that: \"the course's launcher exports NUM_HOSTS on every host\""
  expect_stdout_contains "tpulaunch sets none of the values that condition reads"
  expect_stdout_contains "        NUM_HOSTS=4 (--env)"
  run -C "$dir" plan cond --slice v5litepod-16 "${TPU_FLAGS[@]}" --format json
  expect_stdout_contains "its review accepted that: \\\"the course's launcher exports NUM_HOSTS on every host\\\""
  run -C "$dir" check --route cond@v5litepod-16
  expect_status 0
  # An entry that does not accept the condition (written before this version, or by hand).
  python3 - "$dir/execution-matrix.json" <<'PY'
import json, sys
path = sys.argv[1]
matrix = json.load(open(path))
del matrix["scripts"]["cond"]["initialize_condition"]
open(path, "w").write(json.dumps(matrix, indent=2) + "\n")
PY
  run -C "$dir" plan cond --slice v5litepod-16 "${TPU_FLAGS[@]}"
  expect_status 3
  expect_stdout_empty
  expect_stderr_contains "tpulaunch: refused: initialize-under-condition: 'cond' calls jax.distributed.initialize() at line 7 only under a condition"
  run -C "$dir" check --route cond@v5litepod-16
  expect_status 3
  expect_stdout_contains "route cond@v5litepod-16 refused by initialize-under-condition"
  expect_stdout_contains "is reviewed multi-host-qualified but calls jax.distributed.initialize() only under a condition its review did not accept"
  run -C "$dir" plan cond --slice v5litepod-8 "${TPU_FLAGS[@]}"
  expect_status 0
}

# check --route and plan give one answer for every route: allowed by both, or refused by both with
# the same rule. Every script of the course (reviewed, unreviewed, conditional) on the CPU, a
# 1-host slice and a multi-host one.
case_check__route_and_plan_agree_on_every_route() {
  local dir script slice plan_rule check_rule
  dir=$(course_copy route-agreement)
  conditional_program "$dir/public/exercises/cond.py"
  "$TPULAUNCH" -C "$dir" review cond --class multi-host-qualified --by e2e-tests \
    --initialize-condition "the launcher sets NUM_HOSTS" >/dev/null
  own_program "$dir/public/exercises/own.py"
  "$TPULAUNCH" -C "$dir" review own --class single-host-compatible --by e2e-tests >/dev/null
  python3 - "$dir/execution-matrix.json" <<'PY'
import json, sys
path = sys.argv[1]
matrix = json.load(open(path))
matrix["scripts"]["cond2"] = dict(matrix["scripts"]["cond"])
del matrix["scripts"]["cond2"]["initialize_condition"]
open(path, "w").write(json.dumps(matrix, indent=2) + "\n")
PY
  cp "$dir/public/exercises/cond.py" "$dir/public/exercises/cond2.py"
  local checked=0
  for script in collective-update distributed-02 multihost_collective sharding-sketch tpu-hello cond cond2 own; do
    for slice in cpu v5litepod-8 v5litepod-16; do
      if [[ $slice == cpu ]]; then
        run -C "$dir" plan "$script"
      else
        run -C "$dir" plan "$script" --slice "$slice" "${TPU_FLAGS[@]}"
      fi
      plan_rule=allowed
      [[ $status == 0 ]] || plan_rule=$(printf '%s\n' "$err" | sed -n 's/^tpulaunch: refused: \([a-z-]*\):.*/\1/p' | head -1)
      [[ $status == 0 || $status == 3 ]] || fail "plan $script@$slice: exit $status: $err"
      run -C "$dir" check --route "$script@$slice" --format json
      check_rule=$(printf '%s\n' "$out" | python3 -c '
import json, re, sys
route = sys.argv[1]
for f in json.load(sys.stdin)["findings"]:
    m = re.match(r"route (\S+) refused by ([a-z-]+):", f["message"])
    if m and m.group(1) == route:
        print(m.group(2))
        break
else:
    print("allowed")' "$script@$slice")
      [[ $plan_rule == "$check_rule" ]] || fail "$script@$slice: plan says $plan_rule, check --route says $check_rule"
      checked=$((checked + 1))
    done
  done
  ((checked == 24)) || fail "checked $checked routes, expected 24"
}

# The classifier's table of CPU-selecting environment values is the one plan applies to --env on a
# TPU route; the CPU route takes them; the user's values are shown in the text form's env: header
# and in the JSON.
case_plan__env_that_selects_the_cpu_is_refused_on_a_tpu_route() {
  local value
  for value in JAX_DEFAULT_DEVICE=cpu "XLA_FLAGS=--xla_force_host_platform_device_count=8" JAX_PLATFORM_NAME=cpu \
    JAX_PLATFORMS=cpu,tpu; do
    run -C "$COURSE" plan collective-update --slice v5litepod-16 "${TPU_FLAGS[@]}" --env "$value"
    expect_status 2
    expect_one_error_line
    expect_stdout_empty
    expect_stderr_contains "--env ${value%%=*}="
    expect_stderr_contains "a TPU route refuses a value that moves the work off the TPU"
    run -C "$COURSE" discover --slice v5litepod-16 "${TPU_FLAGS[@]}" --env "$value"
    expect_status 2
  done
  run -C "$COURSE" plan tpu-hello --slice v5litepod-8 "${TPU_FLAGS[@]}" --env JAX_DEFAULT_DEVICE=cpu
  expect_stderr_contains "(env-default-device-cpu: makes a CPU device the default through the environment"
  run -C "$COURSE" plan distributed-02 --env JAX_DEFAULT_DEVICE=cpu --env 'MSG=it'\''s'
  expect_status 0
  expect_stdout_contains "env:    JAX_DEFAULT_DEVICE=cpu MSG='it'\\''s' (--env)"
  run -C "$COURSE" plan collective-update --slice v5litepod-16 "${TPU_FLAGS[@]}" --env SEED=3 --env XLA_FLAGS=--xla_dump_to=/tmp/d
  expect_status 0
  expect_stdout_contains "        SEED=3 XLA_FLAGS=--xla_dump_to=/tmp/d (--env)"
  run -C "$COURSE" plan collective-update --slice v5litepod-16 "${TPU_FLAGS[@]}" --env SEED=3 --format json
  expect_stdout_contains '"env": {'
  expect_stdout_contains '"SEED": "3"'
}

# verify names a missing run record as such (not as a missing log and receipt) and an extra
# worker folder as an error.
case_verify__extra_worker_and_missing_record_are_named() {
  local dir run_dir i
  dir=$(workdir verify-extra-worker)
  run_dir="$dir/tpu-runs/my-pod/own/r1"
  for i in 0 1 2 3 4; do
    mkdir -p "$run_dir/worker-$i/r1/artifacts"
    printf 'process %s\n' "$i" >"$run_dir/worker-$i/r1/own-tpu-host-$i.txt"
    printf 'record=tpulaunch-run-status 1\nstate=succeeded\nstatus=0\nsummary=succeeded\n' >"$run_dir/worker-$i/r1/run-status.rec"
  done
  run verify "$run_dir" --slice v5litepod-16 --kind logs
  expect_status 3
  expect_stdout_contains "FAIL run: worker-4: a folder of a worker this run does not have: the run on v5litepod-16 has 4 processes (worker-0 ... worker-3)"
  rm -rf "$run_dir/worker-4"
  run verify "$run_dir" --slice v5litepod-16 --kind logs
  expect_status 0
  expect_stdout_contains "every worker recorded status 0, and no training claim was checked"
  rm "$run_dir/worker-2/r1/run-status.rec" "$run_dir/worker-2/r1/own-tpu-host-2.txt"
  run verify "$run_dir" --slice v5litepod-16 --kind training
  expect_status 3
  expect_stdout_contains "FAIL worker 2: run-status.rec: missing from"
  [[ $out != *"FAIL worker 2: log"* && $out != *"FAIL worker 2: worker-2.json"* ]] || fail "a missing record was reported as a missing log or receipt: $out"
}

if [[ $# -ne 1 ]] || ! declare -F "$1" >/dev/null; then
  echo "usage: promise_cases.sh case_<command>__<name>" >&2
  exit 2
fi
"$1"
finish
