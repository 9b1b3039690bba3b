#!/usr/bin/env bash
# End-to-end cases of `tpulaunch runs` and `plan --resume`, against a fixture and the gcloud
# stand-in: the runs kept here are listed and shown from their records alone, status, attach and
# clean are plans whose one ssh call reaches the run guard on every worker, and a spot run
# preempted mid-way is resumed and finished with both runs' records kept. ctest runs one function
# per entry, as for cases.sh:
#   TPULAUNCH=build/ci/tpulaunch SOURCE_DIR=. bash tests/e2e/runs_cases.sh case_runs__list_and_show_golden
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

FIXTURE="$SOURCE_DIR/tests/e2e/data/runs"
PIPE_FLAGS=(--tpu lab-pod --zone us-west4-a --project lab-project-1)

# home DIR WORKER: the stand-in worker's home folder.
home() { printf '%s\n' "$1/state/tpus/lab-pod/worker-$2/home"; }

# review_lesson DIR: the stand-in lesson reviewed again as it is now.
review_lesson() {
  "$TPULAUNCH" -C "$1" review standin-lesson --class multi-host-qualified --by e2e-tests --proves training >/dev/null ||
    fail "review failed"
}

# runs_sh DIR NAME RUNS-ARGS...: `tpulaunch runs ... --format sh` from DIR, run against the stand-in.
runs_sh() {
  local dir=$1 name=$2
  shift 2
  run -C "$dir" runs "$@" --format sh
  expect_status 0
  printf '%s\n' "$out" >"$dir/$name"
  run_pipeline "$dir" "$name"
}

# A preempted run and the run that resumed it, from their records alone: the list (text and JSON)
# names each state and the chain, show names every worker, and the status plan is one ssh call
# into the run's staged guard. Bad RUN values are one error line each.
case_runs__list_show_and_status_golden() {
  run -C "$FIXTURE" runs list
  expect_status 0
  expect_stdout_golden runs-list.txt
  run -C "$FIXTURE" runs list --format json
  expect_status 0
  expect_stdout_golden runs-list.json
  run -C "$FIXTURE" runs show r1
  expect_status 0
  expect_stdout_golden runs-show-r1.txt
  run -C "$FIXTURE" runs show ./tpu-runs/lab-pod/standin-lesson/r2 --format json
  expect_status 0
  expect_stdout_golden runs-show-r2.json
  run -C "$FIXTURE" runs status r1
  expect_status 0
  expect_stdout_golden runs-status-r1.txt
  run -C "$FIXTURE" runs clean r1 --format sh
  expect_status 0
  expect_stdout_golden runs-clean-r1.sh
  run -C "$FIXTURE" runs show r9
  expect_status 4
  expect_one_error_line
  expect_stderr_contains "no run 'r9' below ./tpu-runs"
  run -C "$FIXTURE" runs show
  expect_status 2
  expect_one_error_line
  expect_stderr_contains "runs show needs RUN"
  run -C "$FIXTURE" runs list --format sh
  expect_status 2
  expect_one_error_line
  expect_stderr_contains "runs list prints text or json, not sh"
}

# A spot TPU the plan created is preempted mid-run (and deleted, --teardown); the pipeline records
# it, so runs list says preempted without a TPU. plan --resume makes a new run: the same slice,
# TPU, checkpoint folder, and spot capacity created again; a changed script is refused. The
# resumed run finishes; both runs' folders and records are kept, and the list shows the chain.
case_runs__spot_run_preempted_then_resumed() {
  local dir
  dir=$(bare_course runs-resume)
  run -C "$dir" plan standin-lesson --slice v5litepod-16 "${PIPE_FLAGS[@]}" --run-id r1 --create --spot --poll 1s \
    --bootstrap --teardown --checkpoint-dir gs://lab-ckpt/train/ --format sh
  expect_status 0
  expect_stdout_contains "TPU_CHECKPOINT_DIR=gs://lab-ckpt/train (--checkpoint-dir"
  printf '%s\n' "$out" >"$dir/r1.sh"
  LESSON_HANG_WORKER=0 GCLOUD_STANDIN_PREEMPT_AFTER=2 run_pipeline "$dir" r1.sh
  expect_status 92
  tpu_deleted "$dir" || fail "the preempted TPU was not deleted"
  grep -qx 'outcome=preempted' "$dir/tpu-runs/lab-pod/standin-lesson/r1/pipeline.rec" ||
    fail "the pipeline did not record the preemption: $(cat "$dir/tpu-runs/lab-pod/standin-lesson/r1/pipeline.rec")"
  run -C "$dir" runs list
  expect_status 0
  expect_stdout_contains "preempted: lab-pod was PREEMPTED"

  cp "$dir/public/exercises/standin-lesson.py" "$dir/kept.py"
  printf '# changed\n' >>"$dir/public/exercises/standin-lesson.py"
  review_lesson "$dir"
  run -C "$dir" plan standin-lesson --resume r1
  expect_status 3
  expect_stderr_contains "--resume r1: script standin-lesson changed since that run"
  cp "$dir/kept.py" "$dir/public/exercises/standin-lesson.py"
  review_lesson "$dir"
  run -C "$dir" plan standin-lesson --resume r1 --slice v5litepod-8
  expect_status 2
  expect_one_error_line
  expect_stderr_contains "--resume r1: --slice v5litepod-8 is not the resumed run's (v5litepod-16)"

  run -C "$dir" plan standin-lesson --resume r1 --run-id r2 --poll 1s --bootstrap --teardown --format sh
  expect_status 0
  printf '%s\n' "$out" >"$dir/r2.sh"
  grep -q -- "--create" <<<"$out" || fail "the resumed plan did not create its capacity again"
  grep -q -- "--spot" <<<"$out" || fail "the resumed plan's capacity is not spot"
  grep -q -- "--resumes r1" <<<"$out" || fail "the resumed plan does not link its run to r1"
  grep -q -- "TPU_CHECKPOINT_DIR=gs://lab-ckpt/train" <<<"$out" || fail "the checkpoint folder was not kept"
  run_pipeline "$dir" r2.sh
  expect_status 0
  expect_stdout_contains "verified"
  grep -qx 'resumes=r1' "$dir/tpu-runs/lab-pod/standin-lesson/r2/plan.rec" || fail "r2's plan record lacks resumes=r1"
  [[ -f "$dir/tpu-runs/lab-pod/standin-lesson/r1/plan.rec" ]] || fail "r1's records were not kept"
  run -C "$dir" runs list --format json
  expect_status 0
  python3 - "$out" <<'PY' || fail "runs list --format json: $out"
import json, sys
runs = {r["run_id"]: r for r in json.loads(sys.argv[1])["runs"]}
assert runs["r1"]["state"] == "preempted" and runs["r1"]["resumed_by"] == ["r2"], runs["r1"]
assert runs["r2"]["state"] == "succeeded" and runs["r2"]["resumes"] == "r1", runs["r2"]
assert runs["r2"]["checkpoint_dir"] == "gs://lab-ckpt/train" and runs["r2"]["workers_fetched"] == 4, runs["r2"]
PY
}

# A run left running after its pipeline was interrupted (worker 0 hangs; the others ended): runs
# list knows it was interrupted; status reads every worker's record; attach follows worker 0's
# log and, while it does, clean refuses to remove the running run (87) and keeps the local folder;
# attach returns the run's status (124: its --timeout); then clean --yes removes its folders on
# every worker and here.
case_runs__status_attach_clean_on_a_run_left_running() {
  local dir pid i rec attach_pid ended
  dir=$(standin_course runs-attach 4)
  run -C "$dir" plan standin-lesson --slice v5litepod-16 "${PIPE_FLAGS[@]}" --run-id r1 --bootstrap --timeout 25s \
    --grace 1s --format sh
  expect_status 0
  printf '%s\n' "$out" >"$dir/run.sh"
  rec="jax-tpu-lab/runs/standin-lesson/r1/run-status.rec"
  (cd "$dir" && exec setsid env PATH="$STANDIN:$SOURCE_DIR/tests/e2e/bin:$(dirname "$TPULAUNCH"):$PATH" \
    GCLOUD_STANDIN_STATE="$dir/state" CLOUDSDK_CORE_PROJECT=lab-project-1 TPULAUNCH_ALLOW_STANDIN=1 \
    LESSON_HANG_WORKER=0 bash run.sh >"$dir/pipeline.out" 2>"$dir/pipeline.err" </dev/null) &
  pid=$!
  for i in $(seq 1 600); do
    ended=$(cat "$(home "$dir" 1)/$rec" "$(home "$dir" 2)/$rec" "$(home "$dir" 3)/$rec" 2>/dev/null | grep -c '^exit=' || true)
    grep -qs '^state=running' "$(home "$dir" 0)/$rec" && [[ $ended == 3 ]] && break
    sleep 0.1
  done
  [[ $ended == 3 ]] || fail "workers 1-3 did not end"
  kill -INT -- "-$pid" 2>/dev/null || true
  wait "$pid" || true
  grep -qx 'outcome=interrupted' "$dir/tpu-runs/lab-pod/standin-lesson/r1/pipeline.rec" ||
    fail "the pipeline did not record the interruption"
  run -C "$dir" runs list
  expect_stdout_contains "interrupted (the pipeline got status 130"

  runs_sh "$dir" status.sh status r1
  expect_status 0
  expect_stdout_contains "worker 0 (t1v-n-standin0-w-0): running: "
  expect_stdout_contains "worker 1 (t1v-n-standin0-w-1): succeeded: succeeded"
  run -C "$dir" runs attach r1 --format sh
  printf '%s\n' "$out" >"$dir/attach.sh"
  (cd "$dir" && exec env PATH="$STANDIN:$PATH" GCLOUD_STANDIN_STATE="$dir/state" bash attach.sh >"$dir/attach.out" \
    2>"$dir/attach.err" </dev/null) &
  attach_pid=$!
  runs_sh "$dir" clean.sh clean r1 --yes
  expect_status 87
  expect_stderr_contains "is running here"
  [[ -d "$dir/tpu-runs/lab-pod/standin-lesson/r1" ]] || fail "clean removed the local folder of a running run"
  status=0
  wait "$attach_pid" || status=$?
  out=$(cat "$dir/attach.out")
  err=$(cat "$dir/attach.err")
  expect_status 124
  expect_stdout_contains "LESSON_HANG_WORKER=0: hanging on purpose"
  runs_sh "$dir" clean.sh clean r1 --yes
  expect_status 0
  expect_stderr_contains "removed run standin-lesson/r1's folder"
  for i in 0 1 2 3; do
    [[ ! -e "$(home "$dir" "$i")/jax-tpu-lab/runs/standin-lesson/r1" ]] || fail "worker $i's run folder is still there"
  done
  [[ ! -e "$dir/tpu-runs/lab-pod/standin-lesson/r1" ]] || fail "the local run folder is still there"
}

# A Multislice run (two slices) resumed without --slices: the new plan keeps the record's slice
# count, in its routing and in its steps (two nodes, the MEGASCALE_* values), not one slice.
case_runs__resumed_multislice_run_keeps_its_slices() {
  local dir folder
  dir=$(bare_course runs-resume-slices)
  review_lesson "$dir"
  folder="$dir/tpu-runs/lab-pod/standin-lesson/m1"
  mkdir -p "$folder"
  printf '%s\n' "record=tpulaunch-plan 1" "script=standin-lesson" "run-id=m1" "plan=$(printf 'a%.0s' {1..64})" \
    "slice=v5litepod-16" "slices=2" "start=$(printf 'b%.0s' {1..32})" "written=1796548800" "tpu=lab-pod" \
    "zone=us-west4-a" "project=lab-project-1" \
    "script-sha256=$(sha256sum "$dir/public/exercises/standin-lesson.py" | cut -d' ' -f1)" >"$folder/plan.rec"
  run -C "$dir" plan standin-lesson --resume m1 --format json
  expect_status 0
  python3 -c 'import json, sys
plan = json.loads(sys.argv[1])
life = plan["lifecycle"]
assert life["slices"] == 2 and life["nodes"] == ["lab-pod-0", "lab-pod-1"], life
assert plan["resumes"] == "m1", plan["resumes"]' "$out" || fail "the resumed plan lost its slices"
  run -C "$dir" plan standin-lesson --resume m1 --slices 3 --format json
  expect_status 0
  python3 -c 'import json, sys; assert json.loads(sys.argv[1])["lifecycle"]["slices"] == 3' "$out" ||
    fail "--slices given with --resume was not the plan's"
}

if [[ $# -ne 1 ]] || ! declare -F "$1" >/dev/null; then
  echo "usage: runs_cases.sh case_runs__<name>" >&2
  exit 2
fi
"$1"
finish
