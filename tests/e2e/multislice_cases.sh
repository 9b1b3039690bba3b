#!/usr/bin/env bash
# End-to-end cases of plan --slices (Multislice, docs/multislice.md), against the gcloud stand-in:
# two 4-host slices as one queued resource, one program over both, and one slice failing. ctest
# runs one function per entry, as for cases.sh:
#   TPULAUNCH=build/ci/tpulaunch SOURCE_DIR=. bash tests/e2e/multislice_cases.sh case_multislice__two_slices_one_program
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

TPU_FLAGS=(--tpu my-pod --zone us-west4-a --run-id r1)
PIPE_FLAGS=(--tpu lab-pod --zone us-west4-a --project lab-project-1 --run-id r1)

# ms_calls DIR: the gcloud calls made on this machine, in order, joined by commas.
ms_calls() { local_calls "$1" | tr '\n' ',' | sed 's/,$//'; }

# megascale_seen DIR: "slice worker coordinator count id" for each worker's run record, sorted.
megascale_seen() {
  local s w rec
  for s in 0 1; do
    for w in 0 1 2 3; do
      rec="$1/tpu-runs/lab-pod/standin-lesson/r1/slice-$s/worker-$w/r1/run-status.rec"
      printf '%s %s %s %s %s\n' "$s" "$w" "$(sed -n 's/^megascale_coordinator_address=//p' "$rec")" \
        "$(sed -n 's/^megascale_num_slices=//p' "$rec")" "$(sed -n 's/^megascale_slice_id=//p' "$rec")"
    done
  done
}

# The coordinator is slice 0's worker 0 (its internal address, as tpu-env gives it, with its port).
coordinator_of() {
  GCLOUD_STANDIN_STATE="$1/state" "$STANDIN/gcloud" compute tpus tpu-vm describe lab-pod-0 --zone=us-west4-a \
    --project=lab-project-1 --format='value(networkEndpoints[0].ipAddress)'
}

case_multislice__two_slices_one_program() {
  local dir want s w seen first
  dir=$(bare_course ms-two)
  run -C "$dir" plan standin-lesson --slice v5litepod-16 "${PIPE_FLAGS[@]}" --slices 2 --queued --poll 1s \
    --bootstrap --teardown --format sh
  expect_status 0
  printf '%s\n' "$out" >"$dir/run.sh"
  FAKEJAX_TIMEOUT=60 run_pipeline "$dir" run.sh
  expect_status 0
  expect_stderr_contains "all 8 worker(s) succeeded"
  expect_stdout_contains "verified: training receipts (detailed form) of 8 workers on v5litepod-16"
  [[ "$(ms_calls "$dir")" == "queued-resources describe,queued-resources create,"*"describe,scp,describe,scp,describe,ssh,describe,ssh,describe,describe,ssh,ssh,scp,scp,scp,scp,scp,scp,scp,scp,describe,queued-resources delete" ]] ||
    fail "calls: $(ms_calls "$dir")"
  grep -q '"--node-count=2", "--node-prefix=lab-pod"' "$dir/state/calls.jsonl" ||
    fail "the queued resource was not asked for with --node-count=2 --node-prefix=lab-pod"
  compgen -G "$dir/state/deleted/qr-lab-pod-qr*" >/dev/null || fail "the queued resource still exists"
  # What each worker's program got, as its run guard recorded it: one coordinator, N=2, its slice.
  want=""
  for s in 0 1; do
    for w in 0 1 2 3; do
      want+="$s $w COORD 2 $s"$'\n'
    done
  done
  seen=$(megascale_seen "$dir")
  first=$(head -n 1 <<<"$seen" | cut -d' ' -f3)
  [[ $first =~ ^10\.[0-9.]+:[0-9]+$ ]] || fail "coordinator '$first' is not an internal address with a port"
  [[ "$seen"$'\n' == "${want//COORD/$first}" ]] || fail "MEGASCALE_* values seen: $seen"
  # The program saw them in its environment: every receipt of 8 processes, ids 0-7 by slice.
  for s in 0 1; do
    for w in 0 1 2 3; do
      grep -q "\"process_index\": $((w + 4 * s))" \
        "$dir/tpu-runs/lab-pod/standin-lesson/r1/slice-$s/worker-$w/r1/artifacts/worker-$((w + 4 * s)).json" ||
        fail "slice $s worker $w: no receipt of process $((w + 4 * s))"
    done
  done
}

# --results with --slices: each slice's workers upload below slice-<s>/ in the bucket, and one
# download brings all 8 back into the same folders the per-worker fetch makes. On this machine:
# per slice one stage and one run call, then the one download (and the queued resource's calls).
case_multislice__results_through_one_bucket() {
  local dir s w calls
  dir=$(bare_course ms-results)
  GCLOUD_STANDIN_STATE="$dir/state" "$STANDIN/gcloud" standin create-bucket lab-results >/dev/null
  run -C "$dir" plan standin-lesson --slice v5litepod-16 "${PIPE_FLAGS[@]}" --slices 2 --queued --poll 1s \
    --bootstrap --teardown --results gs://lab-results/course --format sh
  expect_status 0
  printf '%s\n' "$out" >"$dir/run.sh"
  FAKEJAX_TIMEOUT=60 run_pipeline "$dir" run.sh
  expect_status 0
  expect_stdout_contains "verified: training receipts (detailed form) of 8 workers on v5litepod-16"
  for s in 0 1; do
    for w in 0 1 2 3; do
      [[ -f "$dir/tpu-runs/lab-pod/standin-lesson/r1/slice-$s/worker-$w/r1/artifacts/worker-$((w + 4 * s)).json" ]] ||
        fail "slice $s worker $w: its receipt did not come back through the bucket"
      [[ -d "$dir/state/gcs/lab-results/course/lab-pod/standin-lesson/r1/slice-$s/worker-$w/r1" ]] ||
        fail "slice $s worker $w: not in the bucket under slice-$s/worker-$w/"
    done
  done
  calls=$(ms_calls "$dir")
  # Each step on a slice checks its mark first (describe); one download brings every worker back.
  [[ "$calls" == *"describe,describe,ssh,ssh,storage cp,describe,queued-resources delete" ]] || fail "calls: $calls"
  [[ "$calls" != *"scp,scp,scp"* ]] || fail "a per-worker fetch was made: $calls"
}

case_multislice__one_slice_fails() {
  local dir
  dir=$(bare_course ms-fail)
  run -C "$dir" plan standin-lesson --slice v5litepod-16 "${PIPE_FLAGS[@]}" --slices 2 --queued --poll 1s \
    --bootstrap --teardown --format sh
  expect_status 0
  printf '%s\n' "$out" >"$dir/run.sh"
  LESSON_FAIL_NODE=lab-pod-1 FAKEJAX_TIMEOUT=60 run_pipeline "$dir" run.sh
  expect_status 7
  expect_stderr_contains "tpulaunch: error: slice 1 (node lab-pod-1) failed with status 7"
  expect_stderr_contains "lab-pod-qr is still running (and billing)"
  # Every worker of both slices was fetched; the queued resource is kept.
  local s w
  for s in 0 1; do
    for w in 0 1 2 3; do
      [[ -f "$dir/tpu-runs/lab-pod/standin-lesson/r1/slice-$s/worker-$w/r1/run-status.rec" ]] ||
        fail "slice $s worker $w was not fetched"
    done
  done
  [[ "$(ms_calls "$dir")" != *"queued-resources delete"* ]] || fail "the queued resource was deleted after a failure"
  # The coordinator every worker got is slice 0's worker 0, found by the runtime, never guessed.
  local coordinator seen
  coordinator=$(coordinator_of "$dir")
  seen=$(megascale_seen "$dir" | cut -d' ' -f3 | sort -u)
  [[ -n $coordinator && $seen == "$coordinator:"* && $seen != *$'\n'* ]] ||
    fail "coordinator: workers saw '$seen', lab-pod-0 worker 0 is '$coordinator'"
}

# One slice of a spot Multislice is preempted: the run fails on both (slice 0 waits for it), and the
# preemption check asks each slice's node, so the preempted one is named (exit 92), not reported
# as a failed program; --teardown deletes the queued resource with every node.
case_multislice__preempted_slice_is_named() {
  local dir
  dir=$(bare_course ms-preempted)
  run -C "$dir" plan standin-lesson --slice v5litepod-16 "${PIPE_FLAGS[@]}" --slices 2 --queued --spot --poll 1s \
    --bootstrap --teardown --format sh
  expect_status 0
  printf '%s\n' "$out" >"$dir/run.sh"
  LESSON_HANG_WORKER=4 GCLOUD_STANDIN_PREEMPT_AFTER=2 GCLOUD_STANDIN_PREEMPT_NODE=lab-pod-1 FAKEJAX_TIMEOUT=20 \
    run_pipeline "$dir" run.sh
  expect_status 92
  expect_stderr_contains "tpulaunch: error: lab-pod-1 was PREEMPTED during the pipeline: this is not a failure of the program"
  expect_stderr_contains "deleting it (--teardown), as it still holds quota"
  [[ "$err" != *"lab-pod-0 was"* ]] || fail "slice 0's node was reported as preempted"
  [[ "$(GCLOUD_STANDIN_STATE="$dir/state" "$STANDIN/gcloud" compute tpus tpu-vm describe lab-pod-0 --zone=us-west4-a \
    --project=lab-project-1 --format='value(state)' 2>/dev/null)" != PREEMPTED ]] || fail "slice 0's node was preempted too"
  compgen -G "$dir/state/deleted/qr-lab-pod-qr*" >/dev/null || fail "the queued resource still exists"
}

case_multislice__golden_queued_spot_teardown() {
  local args=(collective-update --slice v5litepod-16 "${TPU_FLAGS[@]}" --slices 2 --queued --spot --teardown)
  run -C "$COURSE" plan "${args[@]}"
  expect_status 0
  expect_stdout_golden plan-multislice-collective-update-v5litepod-16.txt
  run -C "$COURSE" plan "${args[@]}" --format sh
  expect_status 0
  expect_stdout_golden plan-multislice-collective-update-v5litepod-16.sh
  run -C "$COURSE" plan "${args[@]}" --format json
  expect_status 0
  expect_stdout_golden plan-multislice-collective-update-v5litepod-16.json
}

case_plan__slices_refusals() {
  run -C "$COURSE" plan collective-update --slice v5litepod-16 "${TPU_FLAGS[@]}" --slices 1 --queued
  expect_status 2
  expect_one_error_line
  expect_stderr_contains "--slices 1: expected 2 to 64 slices"
  run -C "$COURSE" plan collective-update --slice v5litepod-16 "${TPU_FLAGS[@]}" --slices 2 --create
  expect_status 2
  expect_one_error_line
  expect_stderr_contains "--slices with --create: tpu-vm create makes one node only"
  run -C "$COURSE" plan collective-update --slice v5litepod-16 "${TPU_FLAGS[@]}" --slices 2 --queued --env MEGASCALE_SLICE_ID=1
  expect_status 2
  expect_one_error_line
  expect_stderr_contains "--env MEGASCALE_SLICE_ID: with --slices tpulaunch sets"
  run -C "$COURSE" plan collective-update --slice v5litepod-16 --tpu "a$(printf 'b%.0s' {1..60})" --zone us-west4-a \
    --slices 12 --queued
  expect_status 2
  expect_one_error_line
  expect_stderr_contains "--slices 12: the last node's name"
  run -C "$COURSE" plan tpu-hello --slice v5litepod-8 "${TPU_FLAGS[@]}" --slices 2 --queued
  expect_status 3
  expect_one_refusal_line
  expect_stderr_contains "multislice-needs-qualified"
}

if [[ $# -ne 1 ]] || ! declare -F "$1" >/dev/null; then
  echo "usage: multislice_cases.sh case_<command>__<name>" >&2
  exit 2
fi
"$1"
finish
