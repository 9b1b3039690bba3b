#!/usr/bin/env bash
# End-to-end cases of a sealed run, against the gcloud stand-in: a run is a key (script and run
# id) with its own folder on every worker, its own staged files, its own TPU (the mark a created
# TPU carries) and its own receipts. ctest runs one function per entry, as for cases.sh:
#   TPULAUNCH=build/ci/tpulaunch SOURCE_DIR=. bash tests/e2e/sealed_cases.sh case_sealed__two_scripts_one_run_id
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PIPE_FLAGS=(--tpu lab-pod --zone us-west4-a --project lab-project-1 --run-id r1)

# home DIR WORKER: the stand-in worker's home folder.
home() { printf '%s\n' "$1/state/tpus/lab-pod/worker-$2/home"; }

# plan_sh DIR NAME PLAN-ARGS...: the sh form of a plan, written to DIR/NAME.
plan_sh() {
  local dir=$1 name=$2
  shift 2
  run -C "$dir" plan "$@" --format sh
  expect_status 0
  printf '%s\n' "$out" >"$dir/$name"
}

# paste DIR PLAN-ARGS...: the text form's commands, pasted into bash line by line in DIR.
paste_plan() {
  local dir=$1
  shift
  run -C "$dir" plan "$@"
  expect_status 0
  sed -n '/^commands:$/,/^$/p' <<<"$out" | grep '^  [^#]' | sed 's/^  //' >"$dir/pasted.txt"
  status=0
  (cd "$dir" && env PATH="$STANDIN:$SOURCE_DIR/tests/e2e/bin:$PATH" GCLOUD_STANDIN_STATE="$dir/state" \
    CLOUDSDK_CORE_PROJECT=lab-project-1 TPULAUNCH_ALLOW_STANDIN=1 bash -s <"$dir/pasted.txt" >"$dir/paste.out" \
    2>"$dir/paste.err") || status=$?
  out=$(cat "$dir/paste.out")
  err=$(cat "$dir/paste.err")
}

# Two scripts planned with one run id on one TPU: each has its own folder on every worker and
# here, each verifies its own results, and a worker folder of one copied into the other's run is
# named as the other run's, never verified.
case_sealed__two_scripts_one_run_id() {
  local dir i
  dir=$(standin_course sealed-two 4)
  cp "$dir/public/exercises/standin-lesson.py" "$dir/public/exercises/standin-other.py"
  "$TPULAUNCH" -C "$dir" review standin-other --class multi-host-qualified --proves training --by e2e-tests >/dev/null ||
    fail "the second lesson could not be reviewed"
  plan_sh "$dir" one.sh standin-lesson --slice v5litepod-16 "${PIPE_FLAGS[@]}" --bootstrap
  plan_sh "$dir" two.sh standin-other --slice v5litepod-16 "${PIPE_FLAGS[@]}"
  run_pipeline "$dir" one.sh
  expect_status 0
  run_pipeline "$dir" two.sh
  expect_status 0
  expect_stdout_contains "verified: training receipts (detailed form) of 4 workers on v5litepod-16"
  for i in 0 1 2 3; do
    [[ -f "$(home "$dir" "$i")/jax-tpu-lab/runs/standin-lesson/r1/run-status.rec" &&
      -f "$(home "$dir" "$i")/jax-tpu-lab/runs/standin-other/r1/run-status.rec" ]] ||
      fail "worker $i does not hold both runs in their own folders"
  done
  # Worker 2's folder of the other run, where this run's should be.
  rm -rf "$dir/tpu-runs/lab-pod/standin-lesson/r1/worker-2"
  cp -r "$dir/tpu-runs/lab-pod/standin-other/r1/worker-2" "$dir/tpu-runs/lab-pod/standin-lesson/r1/worker-2"
  cp -r "$dir/tpu-runs/lab-pod/standin-lesson/r1/worker-3" "$dir/tpu-runs/lab-pod/standin-lesson/r1/worker-4"
  TPULAUNCH_ALLOW_STANDIN=1 run verify "$dir/tpu-runs/lab-pod/standin-lesson/r1" --slice v5litepod-16
  expect_status 3
  expect_stdout_contains "belongs to run standin-other/r1"
  expect_stdout_contains "a folder of a worker this run does not have"
  ! grep -q '^verified:' <<<"$out" || fail "another run's results verified"
}

# Staging writes nothing outside the run's folder: a user's own files in the worker's home stay as
# they were; a helper an earlier run left in ~/jax-tpu-lab/ is never imported; a lesson that
# imports two packages (each with an __init__.py) is planned, staged and run.
case_sealed__home_files_stale_helpers_and_two_packages() {
  local dir i h
  dir=$(standin_course sealed-home 4)
  for p in pkg_a pkg_b; do
    mkdir -p "$dir/public/exercises/$p"
    printf 'NAME = "%s"\n' "$p" >"$dir/public/exercises/$p/__init__.py"
  done
  { printf 'import pkg_a\nimport pkg_b\nassert (pkg_a.NAME, pkg_b.NAME) == ("pkg_a", "pkg_b")\n'
    printf 'try:\n    import stale_helper\nexcept ImportError:\n    pass\nelse:\n    raise SystemExit("a stale helper was imported")\n'
    cat "$STANDIN/lesson_standin.py"; } >"$dir/public/exercises/standin-lesson.py"
  "$TPULAUNCH" -C "$dir" review standin-lesson --class multi-host-qualified --proves training --by e2e-tests >/dev/null ||
    fail "the lesson could not be reviewed"
  for i in 0 1 2 3; do
    h=$(home "$dir" "$i")
    mkdir -p "$h/jax-tpu-lab/public/exercises"
    printf '# the user'\''s own mesh.py\n' >"$h/mesh.py"
    printf '# the user'\''s own __init__.py\n' >"$h/__init__.py"
    # Where an earlier run (or another course) left helpers: next to the old staging place, and
    # beside where this lesson's course path would put it.
    printf 'raise SystemExit("stale")\n' >"$h/jax-tpu-lab/stale_helper.py"
    printf 'raise SystemExit("stale")\n' >"$h/jax-tpu-lab/public/exercises/stale_helper.py"
    printf 'NAME = "stale"\n' >"$h/jax-tpu-lab/pkg_a.py"
  done
  plan_sh "$dir" run.sh standin-lesson --slice v5litepod-16 "${PIPE_FLAGS[@]}" --bootstrap
  run_pipeline "$dir" run.sh
  expect_status 0
  expect_stdout_contains "verified: training receipts (detailed form) of 4 workers on v5litepod-16"
  for i in 0 1 2 3; do
    h=$(home "$dir" "$i")
    [[ "$(cat "$h/mesh.py")" == "# the user's own mesh.py" && "$(cat "$h/__init__.py")" == "# the user's own __init__.py" ]] ||
      fail "worker $i: a file in the home folder changed"
    [[ -f "$h/jax-tpu-lab/stale_helper.py" && -f "$h/jax-tpu-lab/pkg_a.py" ]] || fail "worker $i: a file outside the run's folder was removed"
  done
}

# A pasted --create plan for a name another user's TPU holds: the name check says so, create
# fails, and every later line checks the mark first, so nothing reaches that TPU. The sh form
# stops at the name check (89).
case_sealed__pasted_create_over_a_taken_name() {
  local dir
  dir=$(bare_course sealed-taken)
  GCLOUD_STANDIN_STATE="$dir/state" "$STANDIN/gcloud" standin create lab-pod --zone=us-west4-a --workers=4 \
    --project=lab-project-1 --metadata=tpulaunch_run=0123456789abcdef >/dev/null
  paste_plan "$dir" standin-lesson --slice v5litepod-16 "${PIPE_FLAGS[@]}" --create --poll 1s --bootstrap
  expect_stderr_contains "tpulaunch: error: a TPU named lab-pod exists already (state READY)"
  [[ "$(local_calls "$dir" | sort -u | tr '\n' ',')" == "create,describe," ]] ||
    fail "pasted lines reached the other TPU: $(local_calls "$dir" | tr '\n' ',')"
  [[ ! -e "$(home "$dir" 0)/jax-tpu-lab" ]] || fail "something was staged on the other user's TPU"
  ! grep -q '^verified:' <<<"$out" || fail "a pasted plan verified on someone else's TPU"
  # Another run id: the paste made r1's folder here.
  plan_sh "$dir" run.sh standin-lesson --slice v5litepod-16 --tpu lab-pod --zone us-west4-a --project lab-project-1 \
    --run-id r2 --create --poll 1s --bootstrap
  rm -f "$dir/state/calls.jsonl"
  run_pipeline "$dir" run.sh
  expect_status 89
  [[ "$(local_calls "$dir" | tr '\n' ',')" == "describe," ]] || fail "calls: $(local_calls "$dir" | tr '\n' ',')"
}

# A plan pasted twice (the same run id): the second paste runs nothing again and never verifies the
# first paste's results as its own.
case_sealed__repasted_plan_never_verifies_the_first() {
  local dir
  dir=$(standin_course sealed-repaste 4)
  paste_plan "$dir" standin-lesson --slice v5litepod-16 "${PIPE_FLAGS[@]}" --bootstrap
  expect_stdout_contains "verified: training receipts (detailed form) of 4 workers on v5litepod-16"
  paste_plan "$dir" standin-lesson --slice v5litepod-16 "${PIPE_FLAGS[@]}" --bootstrap
  ! grep -q '^verified:' <<<"$out" || fail "the second paste verified the first paste's results"
  expect_stdout_contains "comes from an earlier start of this plan"
  expect_stderr_contains "ran here already with this plan"
  local i
  for i in 0 1 2 3; do
    [[ "$(cat "$(home "$dir" "$i")"/jax-tpu-lab/runs/standin-lesson/r1/standin-lesson-tpu-*.txt | grep -c "^\[process $i/4\] host")" == 1 ]] ||
      fail "worker $i ran the program more than once"
  done
}

# --timeout: what the program printed before it was stopped is in the fetched log.
case_sealed__timeout_keeps_the_output() {
  local dir log
  dir=$(standin_course sealed-timeout 4)
  plan_sh "$dir" run.sh standin-lesson --slice v5litepod-16 "${PIPE_FLAGS[@]}" --bootstrap --timeout 8s --grace 1s
  LESSON_HANG_WORKER=1 run_pipeline "$dir" run.sh
  expect_status 124
  log=$(compgen -G "$dir/tpu-runs/lab-pod/standin-lesson/r1/worker-1/r1/standin-lesson-tpu-*.txt")
  grep -q "^\[process 1/4\] host" "$log" || fail "worker 1's log lacks what it printed before the timeout: $(head -c 300 "$log")"
}

# A TPU the plan created, without --teardown: every exit says it is still running and billing,
# and how to delete it, on success and on failure.
case_sealed__created_tpu_without_teardown_is_named_on_every_exit() {
  local dir
  dir=$(bare_course sealed-billing)
  plan_sh "$dir" run.sh standin-lesson --slice v5litepod-16 "${PIPE_FLAGS[@]}" --create --poll 1s --bootstrap
  run_pipeline "$dir" run.sh
  expect_status 0
  expect_stdout_contains "verified"
  expect_stderr_contains "lab-pod is still running (and billing)"
  expect_stderr_contains "gcloud compute tpus tpu-vm delete lab-pod --zone=us-west4-a --quiet --project=lab-project-1"
  dir=$(bare_course sealed-billing-fail)
  plan_sh "$dir" run.sh standin-lesson --slice v5litepod-16 "${PIPE_FLAGS[@]}" --create --poll 1s --bootstrap
  LESSON_FAIL_WORKER=2 run_pipeline "$dir" run.sh
  [[ "$status" != 0 ]] || fail "a failing worker must fail the pipeline"
  expect_stderr_contains "lab-pod is still running (and billing)"
  expect_stderr_contains "gcloud compute tpus tpu-vm delete lab-pod --zone=us-west4-a --quiet --project=lab-project-1"
}

# Ctrl-C while the program runs: the script says it was interrupted (130), names the TPU it
# created as still running, and the workers' programs are not left unattended forever.
case_sealed__ctrl_c_says_interrupted() {
  local dir pid i
  dir=$(bare_course sealed-ctrl-c)
  plan_sh "$dir" run.sh standin-lesson --slice v5litepod-16 "${PIPE_FLAGS[@]}" --create --poll 1s --bootstrap
  (cd "$dir" && exec setsid env PATH="$STANDIN:$SOURCE_DIR/tests/e2e/bin:$(dirname "$TPULAUNCH"):$PATH" \
    GCLOUD_STANDIN_STATE="$dir/state" CLOUDSDK_CORE_PROJECT=lab-project-1 TPULAUNCH_ALLOW_STANDIN=1 \
    LESSON_HANG_WORKER=0 bash run.sh >"$dir/pipeline.out" 2>"$dir/pipeline.err" </dev/null) &
  pid=$!
  for i in $(seq 1 600); do
    grep -qs '^state=running' "$(home "$dir" 0)/jax-tpu-lab/runs/standin-lesson/r1/run-status.rec" && break
    sleep 0.1
  done
  grep -qs '^state=running' "$(home "$dir" 0)/jax-tpu-lab/runs/standin-lesson/r1/run-status.rec" ||
    fail "the run never started"
  sleep 1
  kill -INT -- "-$pid" 2>/dev/null || true
  status=0
  wait "$pid" || status=$?
  err=$(cat "$dir/pipeline.err")
  expect_status 130
  expect_stderr_contains "interrupted"
  expect_stderr_contains "lab-pod is still running (and billing)"
}

# Several slices: the first to fail (here slice 1, whose run guards find its TPU busy on every
# worker) stops the other slice's program, which would otherwise wait for it without end. (One
# refused worker of a slice whose other workers start is not seen here until that slice's call
# ends: gcloud returns when every worker's command has.)
case_sealed__a_slice_refused_by_its_guard_stops_the_others() {
  local dir
  dir=$(bare_course sealed-slices)
  plan_sh "$dir" run.sh standin-lesson --slice v5litepod-16 "${PIPE_FLAGS[@]}" --slices 2 --queued --poll 1s --bootstrap
  GCLOUD_STANDIN_TPU_HOLDER=0,1,2,3 GCLOUD_STANDIN_TPU_HOLDER_NODE=lab-pod-1 FAKEJAX_TIMEOUT=600 run_pipeline "$dir" run.sh
  expect_status 94
  expect_stderr_contains "slice 1 (node lab-pod-1) failed with status 94"
  # Slice 0 ended at once (stopped, or failed as its stop arrived), not after FAKEJAX_TIMEOUT's 600 s
  # (ctest's timeout of this case is shorter) and not by a timeout of its own.
  grep -qsE '^state=(stopped|failed)$' "$dir/tpu-runs/lab-pod/standin-lesson/r1/slice-0/worker-0/r1/run-status.rec" ||
    fail "slice 0 was not stopped: $(cat "$dir/tpu-runs/lab-pod/standin-lesson/r1/slice-0/worker-0/r1/run-status.rec" 2>&1)"
}

if [[ $# -ne 1 ]] || ! declare -F "$1" >/dev/null; then
  echo "usage: sealed_cases.sh case_sealed__<name>" >&2
  exit 2
fi
"$1"
finish
