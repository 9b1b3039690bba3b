#!/usr/bin/env bash
# End-to-end cases of the life of a job on a slice, against the gcloud stand-in: creating the TPU
# or queueing for it, a program that hangs past --timeout, a worker that never starts, a TPU
# that another process holds, a spot TPU preempted mid-run, and the golden plan that asks for all
# of it. ctest runs one function per entry, as for cases.sh:
#   TPULAUNCH=build/ci/tpulaunch SOURCE_DIR=. bash tests/e2e/life_cases.sh case_life__create_then_ready
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

TPU_FLAGS=(--tpu my-pod --zone us-west4-a --run-id r1)
PIPE_FLAGS=(--tpu lab-pod --zone us-west4-a --project lab-project-1 --run-id r1)

# life_calls DIR: the gcloud calls made on this machine, in order, joined by commas.
life_calls() { local_calls "$1" | tr '\n' ',' | sed 's/,$//'; }

case_life__create_then_ready() {
  local dir
  dir=$(bare_course life-create)
  run -C "$dir" plan standin-lesson --slice v5litepod-16 "${PIPE_FLAGS[@]}" --create --poll 1s --bootstrap --teardown \
    --format sh
  expect_status 0
  printf '%s\n' "$out" >"$dir/run.sh"
  run_pipeline "$dir" run.sh
  expect_status 0
  expect_stderr_contains "wait: TPU VM lab-pod is CREATING"
  expect_stderr_contains "wait: TPU VM lab-pod is READY"
  expect_stdout_contains "verified: training receipts (detailed form) of 4 workers on v5litepod-16"
  # create --async, then one describe per poll until READY (the stand-in's default: CREATING twice);
  # then each step on the TPU checks its mark first (one describe), the fetches excepted.
  [[ "$(life_calls "$dir")" == "describe,create,describe,describe,describe,describe,scp,describe,ssh,describe,ssh,scp,scp,scp,scp,describe,delete" ]] ||
    fail "calls: $(life_calls "$dir")"
  grep -q '"--accelerator-type=v5litepod-16", "--version=v2-alpha-tpuv5-lite", "--async"' "$dir/state/calls.jsonl" ||
    fail "create did not name the slice and the catalog's runtime version"
  tpu_deleted "$dir" || fail "teardown did not delete the created TPU"
}

case_life__queued_resource_becomes_active() {
  local dir
  dir=$(bare_course life-queued)
  run -C "$dir" plan standin-lesson --slice v5litepod-16 "${PIPE_FLAGS[@]}" --queued --spot --poll 1s --bootstrap \
    --teardown --format sh
  expect_status 0
  printf '%s\n' "$out" >"$dir/run.sh"
  run_pipeline "$dir" run.sh
  expect_status 0
  expect_stderr_contains "wait: queued resource lab-pod-qr is WAITING_FOR_RESOURCES"
  expect_stderr_contains "wait: queued resource lab-pod-qr is PROVISIONING"
  expect_stderr_contains "wait: queued resource lab-pod-qr is ACTIVE"
  [[ "$(life_calls "$dir")" == "queued-resources describe,queued-resources create,queued-resources describe,queued-resources describe,queued-resources describe,queued-resources describe,describe,scp,describe,ssh,describe,ssh,scp,scp,scp,scp,describe,queued-resources delete" ]] ||
    fail "calls: $(life_calls "$dir")"
  grep -q '"--force", "--quiet"' "$dir/state/calls.jsonl" || fail "the queued resource was not deleted with --force"
  compgen -G "$dir/state/deleted/qr-lab-pod-qr*" >/dev/null || fail "the queued resource still exists"
}

case_life__queued_resource_that_fails_is_deleted() {
  local dir
  dir=$(bare_course life-queued-failed)
  run -C "$dir" plan standin-lesson --slice v5litepod-16 "${PIPE_FLAGS[@]}" --queued --poll 1s --teardown --format sh
  printf '%s\n' "$out" >"$dir/run.sh"
  GCLOUD_STANDIN_QR_STATES=WAITING_FOR_RESOURCES:1,FAILED run_pipeline "$dir" run.sh
  expect_status 90
  expect_stderr_contains "tpulaunch: error: queued resource lab-pod-qr is FAILED, which never becomes ACTIVE; deleting it so that it stops holding quota"
  [[ "$err" != *"left running"* ]] || fail "a deleted queued resource was reported as left running"
  [[ "$(life_calls "$dir")" == "queued-resources describe,queued-resources create,queued-resources describe,queued-resources describe,queued-resources delete" ]] ||
    fail "calls: $(life_calls "$dir")"
  compgen -G "$dir/state/deleted/qr-lab-pod-qr*" >/dev/null || fail "the failed queued resource still holds quota"
}

case_life__worker_hanging_past_the_timeout_is_named() {
  local dir i
  dir=$(standin_course life-timeout 4)
  run -C "$dir" plan standin-lesson --slice v5litepod-16 "${PIPE_FLAGS[@]}" --bootstrap --timeout 6s --grace 1s --format sh
  printf '%s\n' "$out" >"$dir/run.sh"
  LESSON_HANG_WORKER=2:stubborn run_pipeline "$dir" run.sh
  expect_status 124
  expect_stderr_contains "tpulaunch: worker 2: still running when killed: it ran past --timeout 6s and ended with SIGKILL"
  expect_stderr_contains "tpulaunch: worker 0: succeeded"
  for i in 0 1 2 3; do
    [[ -f "$dir/tpu-runs/lab-pod/standin-lesson/r1/worker-$i/r1/artifacts/worker-$i.json" ]] ||
      fail "worker $i's receipt was not fetched after the timeout"
  done
}

case_life__worker_that_never_starts_is_named() {
  local dir
  dir=$(standin_course life-unreachable 4)
  run -C "$dir" plan standin-lesson --slice v5litepod-16 "${PIPE_FLAGS[@]}" --bootstrap --timeout 5s --grace 1s --format sh
  printf '%s\n' "$out" >"$dir/run.sh"
  # The bootstrap reaches every worker; then worker 3 stops answering ssh, before the run.
  sed -i 's/^step .run: /export GCLOUD_STANDIN_SSH_FAIL_WORKERS=3; &/' "$dir/run.sh"
  run_pipeline "$dir" run.sh
  [[ "$status" != 0 ]] || fail "a worker that never started must fail the pipeline"
  # Nothing came back from it, so nothing says whether it started: the summary says just that.
  expect_stderr_contains "tpulaunch: worker 3: no run record came back from it"
  # The others wait for worker 3 in initialization until --timeout (or their own rendezvous
  # deadline, on a loaded machine) ends them; each is named with what happened to it.
  expect_stderr_contains "tpulaunch: worker 0: "
  [[ "$err" != *"tpulaunch: worker 0: succeeded"* ]] || fail "worker 0 cannot have succeeded without worker 3"
}

case_life__busy_tpu_refused_then_freed_with_kill_stale() {
  local dir
  dir=$(standin_course life-busy 1)
  run -C "$dir" plan standin-lesson --slice v5litepod-8 "${PIPE_FLAGS[@]}" --bootstrap --format sh
  printf '%s\n' "$out" >"$dir/run.sh"
  # A process of an earlier run still holds worker 0's devices and libtpu's lock.
  GCLOUD_STANDIN_TPU_HOLDER=0 run_pipeline "$dir" run.sh
  expect_status 94
  expect_stderr_contains "t1v-n-standin0-w-0: the TPU is busy: pid "
  expect_stderr_contains "stale-train.py"
  expect_stderr_contains "rerun with --kill-stale to end them"
  expect_stderr_contains "tpulaunch: worker 0: never started: the TPU is busy"
  run -C "$dir" plan standin-lesson --slice v5litepod-8 --tpu lab-pod --zone us-west4-a --project lab-project-1 --run-id r2 \
    --kill-stale --grace 2s --format sh
  expect_status 0
  printf '%s\n' "$out" >"$dir/run2.sh"
  GCLOUD_STANDIN_TPU_HOLDER=0 run_pipeline "$dir" run2.sh
  expect_status 0
  expect_stderr_contains "--kill-stale: sending SIGTERM to pid "
  expect_stdout_contains "verified: training receipts (detailed form) of 1 worker on v5litepod-8"
}

case_life__preempted_spot_tpu_is_reported_and_deleted() {
  local dir
  dir=$(standin_course life-preempted 4 --spot)
  run -C "$dir" plan standin-lesson --slice v5litepod-16 "${PIPE_FLAGS[@]}" --spot --bootstrap --teardown --format sh
  printf '%s\n' "$out" >"$dir/run.sh"
  LESSON_HANG_WORKER=0 GCLOUD_STANDIN_PREEMPT_AFTER=2 run_pipeline "$dir" run.sh
  expect_status 92
  expect_stderr_contains "tpulaunch: error: lab-pod was PREEMPTED during the pipeline: this is not a failure of the program"
  expect_stderr_contains "deleting it (--teardown), as it still holds quota"
  [[ "$err" != *"the run failed with status"* ]] || fail "a preemption was reported as a failed program"
  tpu_deleted "$dir" || fail "the preempted TPU was not deleted"
}

# text_commands FILE: the commands section of a text-form plan, as a person would paste it.
text_commands() {
  sed -n '/^commands:$/,/^notes:$/p' "$1" | sed -e '1d' -e '$d' -e 's/^  //'
}

# paste_plan DIR FILE: pastes FILE's lines into bash, as a person pastes the text form into a
# terminal: each line runs whatever the one before did. Sets $status, $out, $err.
paste_plan() {
  local dir=$1 file=$2 bin
  bin=$(dirname "$TPULAUNCH")
  status=0
  (cd "$dir" && env PATH="$STANDIN:$SOURCE_DIR/tests/e2e/bin:$bin:$PATH" GCLOUD_STANDIN_STATE="$dir/state" \
    CLOUDSDK_CORE_PROJECT=lab-project-1 TPULAUNCH_ALLOW_STANDIN=1 bash -s <"$file" >"$dir/pipeline.out" \
    2>"$dir/pipeline.err") || status=$?
  out=$(cat "$dir/pipeline.out")
  err=$(cat "$dir/pipeline.err")
}

# Pasting the text form of a --create --teardown plan whose run fails verify: every worker is
# fetched, nothing is deleted (the release and teardown lines are comments), and the TPU is named.
case_life__pasted_create_teardown_never_deletes() {
  local dir
  dir=$(bare_course life-paste-create)
  run -C "$dir" plan standin-lesson --slice v5litepod-16 "${PIPE_FLAGS[@]}" --create --poll 1s --teardown
  expect_status 0
  printf '%s\n' "$out" >"$dir/plan.txt"
  expect_stdout_contains "# teardown (only after verify succeeded): delete the TPU VM"
  expect_stdout_contains $'\n  #   gcloud compute tpus tpu-vm delete lab-pod'
  expect_stdout_contains $'\n  until state=$(gcloud compute tpus tpu-vm describe lab-pod'
  grep -E '^  gcloud compute tpus tpu-vm delete' "$dir/plan.txt" && fail "a delete is a plain line of the text form"
  expect_stdout_contains "the plan bootstraps it"
  text_commands "$dir/plan.txt" >"$dir/paste.txt"
  LESSON_FAIL_WORKER=2 paste_plan "$dir" paste.txt
  [[ "$(life_calls "$dir")" != *delete* ]] || fail "pasting the plan deleted something: $(life_calls "$dir")"
  [[ "$(life_calls "$dir")" == describe,create,describe* ]] || fail "calls: $(life_calls "$dir")"
  [[ -e "$dir/state/tpus/lab-pod" ]] || fail "the TPU is gone"
  local i
  for i in 0 1 3; do
    [[ -f "$dir/tpu-runs/lab-pod/standin-lesson/r1/worker-$i/r1/run-status.rec" ]] || fail "worker $i was not fetched"
  done
  expect_stdout_contains "not verified"
  grep -q "lab-pod is left running" "$dir/plan.txt" || fail "the text form does not name the TPU it keeps"
}

case_life__pasted_queued_teardown_never_deletes() {
  local dir
  dir=$(bare_course life-paste-queued)
  run -C "$dir" plan standin-lesson --slice v5litepod-16 "${PIPE_FLAGS[@]}" --queued --poll 1s --teardown
  expect_status 0
  printf '%s\n' "$out" >"$dir/plan.txt"
  expect_stdout_contains "# release (only if queued resource lab-pod-qr never becomes ACTIVE"
  text_commands "$dir/plan.txt" >"$dir/paste.txt"
  LESSON_FAIL_WORKER=0 paste_plan "$dir" paste.txt
  [[ "$(life_calls "$dir")" != *delete* ]] || fail "pasting the plan deleted something: $(life_calls "$dir")"
  [[ -e "$dir/state/tpus/lab-pod" ]] || fail "the queued resource's TPU is gone"
  [[ -f "$dir/tpu-runs/lab-pod/standin-lesson/r1/worker-3/r1/run-status.rec" ]] || fail "worker 3 was not fetched"
  expect_stdout_contains "not verified"
  expect_stdout_contains "FAIL worker 0: run-status.rec: the worker recorded failed"
}

# A TPU of the name the plan would create belongs to someone else: refused with its state, and
# nothing is created, touched or reported as this plan's.
case_life__create_refuses_a_name_that_exists() {
  local dir
  dir=$(standin_course life-name-taken 4)
  run -C "$dir" plan standin-lesson --slice v5litepod-16 "${PIPE_FLAGS[@]}" --create --poll 1s --teardown --format sh
  printf '%s\n' "$out" >"$dir/run.sh"
  run_pipeline "$dir" run.sh
  expect_status 89
  expect_stderr_contains "tpulaunch: error: a TPU named lab-pod exists already (state READY), and this plan creates it"
  [[ "$err" != *"left running"* ]] || fail "a TPU the plan did not create was reported as its own"
  [[ "$(life_calls "$dir")" == "describe" ]] || fail "calls: $(life_calls "$dir")"
  [[ -e "$dir/state/tpus/lab-pod" ]] || fail "the existing TPU was deleted"
}

# One failed describe during the wait is looked at again, not taken for a verdict.
case_life__wait_looks_again_after_a_failed_describe() {
  local dir
  dir=$(bare_course life-describe-blip)
  run -C "$dir" plan standin-lesson --slice v5litepod-16 "${PIPE_FLAGS[@]}" --queued --poll 1s --teardown --format sh
  printf '%s\n' "$out" >"$dir/run.sh"
  # The first describe is the name check (a failure there reads as "no such name"); the second is
  # the wait's first look.
  GCLOUD_STANDIN_DESCRIBE_FAIL=2 run_pipeline "$dir" run.sh
  expect_status 0
  expect_stderr_contains "wait: could not read the state of queued resource lab-pod-qr (gcloud exited 1); it is kept"
  expect_stderr_contains "wait: queued resource lab-pod-qr is ACTIVE"
  expect_stdout_contains "verified: training receipts"
}

# A saved script run twice: the second run stops before any gcloud call, and the first run's
# results are untouched; with the local folder gone, each worker's run guard refuses instead.
case_life__saved_script_run_twice_is_refused() {
  local dir calls
  dir=$(standin_course life-twice 4)
  run -C "$dir" plan standin-lesson --slice v5litepod-16 "${PIPE_FLAGS[@]}" --bootstrap --format sh
  printf '%s\n' "$out" >"$dir/run.sh"
  run_pipeline "$dir" run.sh
  expect_status 0
  calls=$(wc -l <"$dir/state/calls.jsonl")
  run_pipeline "$dir" run.sh
  expect_status 93
  expect_stderr_contains "could not start the run folder ./tpu-runs/lab-pod/standin-lesson/r1: it exists already (run id r1 ran before"
  [[ "$(wc -l <"$dir/state/calls.jsonl")" == "$calls" ]] || fail "the second run called gcloud"
  # With the local folder moved away, the workers' run guards replay the first run (the same plan
  # ran there: nothing runs again), and verify refuses its records as an earlier start's.
  mv "$dir/tpu-runs" "$dir/first-run"
  run_pipeline "$dir" run.sh
  expect_status 3
  expect_stderr_contains "ran here already with this plan"
  expect_stdout_contains "comes from an earlier start of this plan"
  ! grep -q '^verified:' <<<"$out" || fail "the second start verified the first start's results"
  # The first run's folder, under another name, still verifies.
  run verify "$dir/first-run/lab-pod/standin-lesson/r1" --slice v5litepod-16 --matrix "$dir/execution-matrix.json"
  cp -R "$dir/first-run/lab-pod/standin-lesson/r1" "$dir/copied"
  TPULAUNCH_ALLOW_STANDIN=1 run verify "$dir/copied" --slice v5litepod-16
  expect_status 0
  expect_stdout_contains "verified: training receipts (detailed form) of 4 workers"
}

case_life__golden_queued_spot_timeout_teardown() {
  local args=(collective-update --slice v5litepod-16 "${TPU_FLAGS[@]}" --queued --spot --timeout 2h --teardown)
  run -C "$COURSE" plan "${args[@]}"
  expect_status 0
  expect_stdout_golden plan-queued-collective-update-v5litepod-16.txt
  run -C "$COURSE" plan "${args[@]}" --format sh
  expect_status 0
  expect_stdout_golden plan-queued-collective-update-v5litepod-16.sh
  run -C "$COURSE" plan "${args[@]}" --format json
  expect_status 0
  expect_stdout_golden plan-queued-collective-update-v5litepod-16.json
}

if [[ $# -ne 1 ]] || ! declare -F "$1" >/dev/null; then
  echo "usage: life_cases.sh case_<command>__<name>" >&2
  exit 2
fi
"$1"
finish
