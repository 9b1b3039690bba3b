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
  # create --async, then one describe per poll until READY (the stand-in's default: CREATING twice).
  [[ "$(life_calls "$dir")" == "create,describe,describe,describe,ssh,scp,ssh,scp,scp,scp,scp,delete" ]] ||
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
  [[ "$(life_calls "$dir")" == "queued-resources create,queued-resources describe,queued-resources describe,queued-resources describe,queued-resources describe,ssh,scp,ssh,scp,scp,scp,scp,queued-resources delete" ]] ||
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
  [[ "$(life_calls "$dir")" == "queued-resources create,queued-resources describe,queued-resources describe,queued-resources delete" ]] ||
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
  expect_stderr_contains "tpulaunch: worker 3: never started (no run record came back from it)"
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
  FAKEJAX_LOCAL_DEVICES=8 GCLOUD_STANDIN_TPU_HOLDER=0 run_pipeline "$dir" run.sh
  expect_status 94
  expect_stderr_contains "t1v-n-standin0-w-0: the TPU is busy: pid "
  expect_stderr_contains "stale-train.py"
  expect_stderr_contains "rerun with --kill-stale to end them"
  expect_stderr_contains "tpulaunch: worker 0: never started: the TPU is busy"
  run -C "$dir" plan standin-lesson --slice v5litepod-8 --tpu lab-pod --zone us-west4-a --project lab-project-1 --run-id r2 \
    --kill-stale --grace 2s --format sh
  expect_status 0
  printf '%s\n' "$out" >"$dir/run2.sh"
  FAKEJAX_LOCAL_DEVICES=8 GCLOUD_STANDIN_TPU_HOLDER=0 run_pipeline "$dir" run2.sh
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
  expect_stderr_contains "tpulaunch: error: lab-pod was PREEMPTED during the pipeline: it was preempted, this is not a failure of the program"
  expect_stderr_contains "deleting it (--teardown), as it still holds quota"
  [[ "$err" != *"the run failed with status"* ]] || fail "a preemption was reported as a failed program"
  tpu_deleted "$dir" || fail "the preempted TPU was not deleted"
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
