#!/usr/bin/env bash
# End-to-end cases of the built binary. ctest runs one function per entry: case_<command>__<name>
# becomes cli.<command>.<name> (underscores as dashes). Run one by hand with
#   TPULAUNCH=build/tpulaunch SOURCE_DIR=. bash tests/e2e/cases.sh case_plan__cpu_route
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

TPU_FLAGS=(--tpu my-pod --zone us-west4-a --run-id r1)

# --- plan: routes -----------------------------------------------------------------------------

case_plan__cpu_route() {
  run -C "$COURSE" plan distributed-02
  expect_status 0
  expect_stdout_golden plan-cpu-distributed-02.txt
  expect_stdout_contains "( set -o pipefail; python3 public/exercises/distributed-02.py | tee distributed-02-cpu.txt.partial ) && mv -f distributed-02-cpu.txt.partial distributed-02-cpu.txt"
  expect_stdout_lacks "gcloud compute"   # no TPU command (the clone's path may hold the word)
  run -C "$COURSE" plan distributed-02 --format sh
  expect_status 0
  expect_stdout_contains $'\n( set -o pipefail; python3 public/exercises/distributed-02.py | tee distributed-02-cpu.txt.partial ) && mv -f'
  # The course's own CPU line (its receipt written only when the program succeeded).
  run -C "$COURSE" plan distributed-02 --course
  expect_status 0
  expect_stdout_contains $'\n  ( set -o pipefail; python public/exercises/distributed-02.py | tee distributed-02-cpu.txt.partial )'
}

# A cpu-only script with no jax: its output, its receipt and its exit status through the sh form.
case_plan__cpu_route_keeps_the_receipt_and_the_status() {
  local dir
  dir=$(course_copy plan-cpu-receipt)
  cp "$SOURCE_DIR/tests/e2e/data/echo_args.py" "$dir/public/exercises/echo-args.py"
  "$TPULAUNCH" -C "$dir" review echo-args --class cpu-only --by e2e-tests >/dev/null
  run -C "$dir" plan echo-args --format sh
  expect_status 0
  printf '%s\n' "$out" >"$dir/run.sh"
  status=0
  (cd / && bash "$dir/run.sh" >"$dir/out.txt" 2>"$dir/err.txt") || status=$?
  expect_status 0
  grep -qx "echo-args: wrote ./echo-args.json" "$dir/out.txt" || fail "the program's output is not on stdout"
  cmp -s "$dir/out.txt" "$dir/echo-args-cpu.txt" || fail "the CPU receipt echo-args-cpu.txt is not the program's output"
  echo "kept from the run that worked" >>"$dir/echo-args-cpu.txt"
  run -C "$dir" plan echo-args --env ECHO_EXIT=5 --format sh
  printf '%s\n' "$out" >"$dir/fail.sh"
  status=0
  bash "$dir/fail.sh" >/dev/null 2>&1 || status=$?
  expect_status 5
  # A failed run again leaves the receipt of the run that worked as it was.
  grep -qx "kept from the run that worked" "$dir/echo-args-cpu.txt" ||
    fail "a failed re-run truncated the CPU receipt of the run that worked"
  run -C "$dir" plan echo-args --format json
  expect_stdout_contains '"receipt": "echo-args-cpu.txt"'
}

case_plan__cpu_route_refuses_tpu_options() {
  local extra
  for extra in "--tpu my-pod" "--bootstrap" "--teardown" "--verify logs" "--parallel 2"; do
    # shellcheck disable=SC2086 # word splitting of $extra is intended
    run -C "$COURSE" plan distributed-02 $extra
    expect_status 2
    expect_stdout_empty
    expect_one_error_line
    expect_stderr_contains "nothing on the CPU route"
  done
  # From the environment it is a default, not a request.
  TPU_NAME=env-pod run -C "$COURSE" plan distributed-02
  expect_status 0
}

case_plan__single_host_course_exact() {
  run -C "$COURSE" plan tpu-hello --slice v5litepod-8 --course "${TPU_FLAGS[@]}"
  expect_status 0
  expect_stdout_golden plan-course-tpu-hello-v5litepod-8.txt
  expect_stdout_contains $'\n  gcloud compute tpus tpu-vm scp public/exercises/tpu-hello.py my-pod:~/jax-tpu-lab/ --zone=us-west4-a\n'
  expect_stdout_contains $'\n  gcloud compute tpus tpu-vm ssh my-pod --zone=us-west4-a --command=\'set -o pipefail; JAX_PLATFORMS=tpu ~/jax-tpu-lab/.venv/bin/python ~/jax-tpu-lab/tpu-hello.py | tee ~/jax-tpu-lab/tpu-hello-tpu.txt\'\n'
  expect_stdout_lacks "--worker=all"
}

case_plan__multi_host_course_exact() {
  run -C "$COURSE" plan collective-update --slice v5litepod-16 --course "${TPU_FLAGS[@]}"
  expect_status 0
  expect_stdout_golden plan-course-collective-update-v5litepod-16.txt
  expect_stdout_contains $'\n  gcloud compute tpus tpu-vm scp public/exercises/collective-update.py my-pod:~/jax-tpu-lab/ --zone=us-west4-a --worker=all\n'
  expect_stdout_contains $'\n  gcloud compute tpus tpu-vm ssh my-pod --zone=us-west4-a --worker=all --command=\'set -o pipefail; JAX_PLATFORMS=tpu ~/jax-tpu-lab/.venv/bin/python ~/jax-tpu-lab/collective-update.py | tee ~/jax-tpu-lab/collective-update-tpu.txt\'\n'
  # --worker=all exactly on stage and run, nowhere else.
  local count
  count=$(grep '^  gcloud' <<<"$out" | grep -o -- '--worker=all' | wc -l)
  [[ "$count" == 2 ]] || fail "--worker=all appears $count times, expected 2"
}

case_plan__multi_qualified_on_one_host_runs_single() {
  run -C "$COURSE" plan collective-update --slice v5litepod-8 "${TPU_FLAGS[@]}" --format json
  expect_status 0
  expect_stdout_contains '"route": "single-host"'
  expect_stdout_lacks "--worker=all"
}

case_plan__full_multi_host_golden() {
  run -C "$COURSE" plan collective-update --slice v5litepod-16 "${TPU_FLAGS[@]}"
  expect_status 0
  expect_stdout_golden plan-full-collective-update-v5litepod-16.txt
  run -C "$COURSE" plan collective-update --slice v5litepod-16 "${TPU_FLAGS[@]}" --format sh --bootstrap --teardown
  expect_status 0
  expect_stdout_golden plan-full-collective-update-v5litepod-16.sh
  run -C "$COURSE" plan collective-update --slice v5litepod-16 "${TPU_FLAGS[@]}" --format json --project my-project-1
  expect_status 0
  expect_stdout_golden plan-full-collective-update-v5litepod-16.json
}

case_plan__results_golden() {
  run -C "$COURSE" plan collective-update --slice v5litepod-16 "${TPU_FLAGS[@]}" --results gs://lab-results/course
  expect_status 0
  expect_stdout_golden plan-results-collective-update-v5litepod-16.txt
  run -C "$COURSE" plan collective-update --slice v5litepod-16 "${TPU_FLAGS[@]}" --format sh --bootstrap --teardown \
    --results gs://lab-results/course
  expect_status 0
  expect_stdout_golden plan-results-collective-update-v5litepod-16.sh
}

case_plan__fetch_one_per_worker() {
  run -C "$COURSE" plan collective-update --slice v5litepod-16 "${TPU_FLAGS[@]}" --format json
  expect_status 0
  python3 - "$out" <<'PY' || fail "fetch steps are not one per worker"
import json, sys
plan = json.loads(sys.argv[1])
fetch = [s for s in plan["steps"] if s["name"] == "fetch"]
assert [s["workers"] for s in fetch] == ["0", "1", "2", "3"], fetch
for i, s in enumerate(fetch):
    assert f"--worker={i}" in s["argv"], s["argv"]
    assert s["argv"][-3].endswith(f"/worker-{i}/") or any(a.endswith(f"/worker-{i}/") for a in s["argv"]), s["argv"]
    assert "--worker=all" not in s["argv"]
    assert s["concurrent_group"] == "fetch"
dirs = {a for s in fetch for a in s["argv"] if a.startswith("./tpu-runs/")}
assert dirs == {f"./tpu-runs/my-pod/collective-update/r1/worker-{i}/" for i in range(4)}, dirs
assert plan["multi_host"] is True and plan["route"] == "multi-host"
assert plan["slice"]["global_chips"] == 16 and plan["slice"]["hosts"] == 4
PY
}

case_plan__sh_passes_shellcheck() {
  local dir
  dir=$(workdir plan-shellcheck)
  run -C "$COURSE" plan distributed-02 --format sh # the CPU route takes no TPU options
  expect_status 0
  printf '%s\n' "$out" >"$dir/plan.sh"
  shellcheck "$dir/plan.sh" >&2 || fail "shellcheck found problems in: plan distributed-02 --format sh"
  for args in "tpu-hello --slice v5litepod-8 --course" "collective-update --slice v5litepod-16" \
    "collective-update --slice v5litepod-16 --bootstrap --teardown --parallel 2" "collective-update --slice v5litepod-256" \
    "collective-update --slice v5litepod-16 --teardown --results gs://lab-results/it's" \
    "collective-update --slice v5litepod-8 --results gs://lab-results" "--slice v5litepod-16 --results gs://lab-results/d"; do
    # shellcheck disable=SC2086 # word splitting of $args is intended
    if [[ "$args" == --slice* ]]; then
      run -C "$COURSE" discover $args "${TPU_FLAGS[@]}" --format sh
    else
      run -C "$COURSE" plan $args "${TPU_FLAGS[@]}" --format sh
    fi
    expect_status 0
    printf '%s\n' "$out" >"$dir/plan.sh"
    shellcheck "$dir/plan.sh" >&2 || fail "shellcheck found problems in: $args --format sh"
  done
  for args in "--slice v5litepod-16" "--slice v5litepod-8 --bootstrap --teardown"; do
    # shellcheck disable=SC2086 # word splitting of $args is intended
    run discover $args "${TPU_FLAGS[@]}" --format sh
    expect_status 0
    printf '%s\n' "$out" >"$dir/discover.sh"
    shellcheck "$dir/discover.sh" >&2 || fail "shellcheck found problems in: discover $args --format sh"
  done
}

# Accepted values with characters a shell reads: a course folder and an exercises folder with $,
# quotes and spaces in their names, an interpreter path, --env values and arguments. Every form
# passes shellcheck.
case_plan__odd_values_pass_shellcheck() {
  local dir odd args
  dir=$(workdir "plan-odd-\$HOME 'q' \`x\`")
  cp -R "$COURSE/." "$dir/"
  odd='public/ex $PATH "it'"'"'s" `id`'
  mv "$dir/public/exercises" "$dir/$odd"
  python3 - "$dir/execution-matrix.json" "$odd" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
m["exercises_dir"] = sys.argv[2]
json.dump(m, open(sys.argv[1], "w"), indent=2)
PY
  local -a extra=(--env 'V=$(id) '"'"'q'"'" -- '$HOME' '"x"' $'a\nb')
  for args in "distributed-02 --python /opt/my\$py/python" "tpu-hello --slice v5litepod-8 --course ${TPU_FLAGS[*]}" \
    "collective-update --slice v5litepod-16 --bootstrap --teardown ${TPU_FLAGS[*]}" \
    "collective-update --slice v5litepod-8 --python ~/my\$venv/bin/python ${TPU_FLAGS[*]}"; do
    # shellcheck disable=SC2086 # word splitting of $args is intended
    run -C "$dir" plan $args --format sh "${extra[@]}"
    expect_status 0
    printf '%s\n' "$out" >"$WORK_ROOT/odd-plan.sh"
    shellcheck "$WORK_ROOT/odd-plan.sh" >&2 || fail "shellcheck found problems in: plan $args --format sh (odd folders)"
  done
}

# --- plan: refusals -----------------------------------------------------------------------------

case_plan__cpu_only_on_tpu_refused() {
  run -C "$COURSE" plan distributed-02 --slice v5litepod-8 "${TPU_FLAGS[@]}"
  expect_status 3
  expect_stdout_empty
  expect_stderr_contains "tpulaunch: refused: cpu-only-stays-on-cpu:"
}

case_plan__review_required_refused() {
  run -C "$COURSE" plan sharding-sketch
  expect_status 3
  expect_stdout_empty
  expect_stderr_contains "tpulaunch: refused: review-required: [no-entry] 'sharding-sketch' has no entry"
  run -C "$COURSE" plan sharding-sketch --slice v5litepod-16 "${TPU_FLAGS[@]}" --format json
  expect_status 3
  expect_stdout_contains '"refused": true'
  expect_stdout_contains '"rule": "review-required"'
  expect_stdout_contains '"class": "review-required"'
}

case_plan__single_host_on_multi_host_refused() {
  run -C "$COURSE" plan tpu-hello --slice v5litepod-16 "${TPU_FLAGS[@]}"
  expect_status 3
  expect_stdout_empty
  expect_stderr_contains "tpulaunch: refused: multi-host-needs-qualified: v5litepod-16 has 4 hosts"
  expect_stderr_contains "12 chips sit idle"
}

case_plan__tpu_class_needs_slice() {
  run -C "$COURSE" plan tpu-hello
  expect_status 3
  expect_stdout_empty
  expect_stderr_contains "tpulaunch: refused: tpu-class-needs-slice:"
}

case_plan__stale_digest_refused() {
  local dir
  dir=$(course_copy plan-stale)
  echo "print('edited after review')" >>"$dir/public/exercises/tpu-hello.py"
  run -C "$dir" plan tpu-hello --slice v5litepod-8 "${TPU_FLAGS[@]}"
  expect_status 3
  expect_stdout_empty
  expect_stderr_contains "review-required: [stale-digest] 'tpu-hello' changed since it was reviewed"
}

# --- plan: bad input ---------------------------------------------------------------------------

case_plan__malformed_catalog() {
  local dir
  dir=$(workdir plan-bad-catalog)
  printf '{"version": 1, "generations": {}, "slices": [\n  {"name": "x-1",}\n]}\n' >"$dir/bad.json"
  run -C "$COURSE" plan distributed-02 --catalog "$dir/bad.json"
  expect_status 4
  expect_stdout_empty
  expect_one_error_line
  expect_stderr_contains "$dir/bad.json:2:"
  TPULAUNCH_CATALOG="$dir/bad.json" run -C "$COURSE" slices
  expect_status 4
  expect_one_error_line
}

case_plan__malformed_matrix() {
  local dir
  dir=$(course_copy plan-bad-matrix)
  printf '{"version": 1, "exercises_dir": "public/exercises", "scripts": {"a": {"class": "cpu-only"}}}\n' \
    >"$dir/execution-matrix.json"
  run -C "$dir" plan distributed-02
  expect_status 4
  expect_stdout_empty
  expect_one_error_line
  expect_stderr_contains "execution-matrix.json:1:"
  expect_stderr_contains "missing field \"sha256\""
  run -C "$dir" plan distributed-02 --matrix nonexistent.json
  expect_status 4
  expect_one_error_line
}

case_plan__invalid_values_are_usage_errors() {
  for bad in "--tpu My_Pod" "--tpu pod;reboot" "--zone us-central1" "--run-id ../x" "--project x" "--slice v5litepod-61"; do
    # shellcheck disable=SC2086 # word splitting of $bad is intended
    run -C "$COURSE" plan tpu-hello --slice v5litepod-8 --tpu my-pod --zone us-west4-a $bad
    expect_status 2
    expect_stdout_empty
    expect_one_error_line
  done
  run -C "$COURSE" plan tpu-hello --slice v5litepod-61
  expect_stderr_contains "did you mean 'v5litepod-16'?"
  run -C "$COURSE" plan tpu-hello --slice v5litepod-8 --tpu 'pod$(id)' --zone us-west4-a
  expect_stderr_contains "invalid TPU name 'pod\$(id)'"
  run -C "$COURSE" plan tpu-hello --slice v5litepod-8 --zone us-west4-a
  expect_status 2
  expect_stderr_contains "needs --tpu"
  run -C "$COURSE" plan
  expect_status 2
  expect_one_error_line
  run -C "$COURSE" plan tpu-hello --bogus
  expect_status 2
  expect_one_error_line
}

case_plan__environment_defaults() {
  TPU_NAME=env-pod CLOUDSDK_COMPUTE_ZONE=europe-west4-b CLOUDSDK_CORE_PROJECT=env-project-1 \
    run -C "$COURSE" plan tpu-hello --slice v5litepod-8 --course
  expect_status 0
  expect_stdout_contains "scp public/exercises/tpu-hello.py env-pod:~/jax-tpu-lab/ --zone=europe-west4-b --project=env-project-1"
  run -C "$COURSE" plan tpu-hello --slice v5litepod-8 --course "${TPU_FLAGS[@]}"
  expect_stdout_lacks "--project"
}

# A UTC timestamp and six random hex digits: three plans made in the same second (a loop) get
# three run ids.
case_plan__default_run_id_is_a_utc_timestamp() {
  local ids=() i
  for i in 1 2 3; do
    run -C "$COURSE" plan tpu-hello --slice v5litepod-8 --tpu my-pod --zone us-west4-a --format json
    expect_status 0
    [[ "$out" =~ \"run_id\":\ \"([0-9]{8}T[0-9]{6}Z-[0-9a-f]{6})\" ]] || fail "run_id is not a UTC timestamp and a suffix"
    ids+=("${BASH_REMATCH[1]}")
  done
  [[ "$(printf '%s\n' "${ids[@]}" | sort -u | wc -l)" == 3 ]] || fail "three plans share a run id: ${ids[*]}"
}

case_plan__script_path_argument() {
  run -C "$COURSE" plan public/exercises/distributed-02.py
  expect_status 0
  expect_stdout_contains "python3 public/exercises/distributed-02.py"
  run -C "$COURSE" plan /etc/passwd.py
  expect_status 2
  expect_one_error_line
}

# --- slices ------------------------------------------------------------------------------------

case_slices__table_and_json() {
  run slices
  expect_status 0
  expect_stdout_contains "v5litepod-16"
  run slices --format json
  expect_status 0
  python3 - "$out" <<'PY' || fail "slices json lacks the course figures"
import json, sys
rows = {s["name"]: s for s in json.loads(sys.argv[1])["slices"]}
for name, hosts, cph, chips, hbm in [("v5litepod-4", 1, 4, 4, 64), ("v5litepod-8", 1, 8, 8, 128),
                                      ("v5litepod-16", 4, 4, 16, 256), ("v6e-16", 4, 4, 16, 512)]:
    r = rows[name]
    assert (r["hosts"], r["chips_per_host"], r["global_chips"], r["total_hbm_gib"]) == (hosts, cph, chips, hbm), r
PY
}

# The built-in catalog is a table generated from catalog/slices.json at build time; --catalog
# parses the same file at run time. Both give the same listing byte for byte in every format,
# except the JSON "catalog" member, which names where the catalog came from.
case_slices__built_in_table_equals_catalog_file() {
  local file="$SOURCE_DIR/catalog/slices.json" format built parsed
  for format in table json svg; do
    run slices --format "$format"
    expect_status 0
    built=$out
    run --catalog "$file" slices --format "$format"
    expect_status 0
    parsed=$out
    if [[ "$format" == json ]]; then
      [[ "$(sed -n 2p <<<"$built")" == '  "catalog": "<embedded catalog/slices.json>",' ]] ||
        fail "the built-in JSON does not name the embedded catalog: $(sed -n 2p <<<"$built")"
      [[ "$(sed -n 2p <<<"$parsed")" == "  \"catalog\": \"$file\"," ]] ||
        fail "the --catalog JSON does not name $file: $(sed -n 2p <<<"$parsed")"
      built=$(sed 2d <<<"$built")
      parsed=$(sed 2d <<<"$parsed")
    fi
    [[ ${#built} -gt 1000 ]] || fail "slices --format $format printed only ${#built} bytes"
    diff -u <(printf '%s\n' "$parsed") <(printf '%s\n' "$built") >&2 ||
      fail "slices --format $format: the built-in table differs from --catalog $file"
  done
}

case_main__help_and_version() {
  run --help
  expect_status 0
  expect_stdout_contains "Exit codes:"
  run --version
  expect_status 0
  expect_stdout_contains "tpulaunch "
  run plan --help
  expect_status 0
  expect_stdout_contains "Examples:"
  run
  expect_status 2
  expect_one_error_line
}

# --- pipelines run against the gcloud stand-in (tests/gcloud-standin; not a TPU) --------------

PIPE_FLAGS=(--tpu lab-pod --zone us-west4-a --project lab-project-1 --run-id r1)

case_pipeline__four_hosts_end_to_end() {
  local dir i
  dir=$(standin_course pipeline-4 4)
  run -C "$dir" plan standin-lesson --slice v5litepod-16 "${PIPE_FLAGS[@]}" --bootstrap --teardown --format sh
  expect_status 0
  printf '%s\n' "$out" >"$dir/run.sh"
  run_pipeline "$dir" run.sh
  expect_status 0
  expect_stdout_contains "verified: training receipts (detailed form) of 4 workers on v5litepod-16"
  expect_stdout_contains "STAND-IN: these receipts come from the gcloud stand-in's fake JAX; this is NOT a TPU result"
  for i in 0 1 2 3; do
    local got="$dir/tpu-runs/lab-pod/standin-lesson/r1/worker-$i/r1"
    [[ -f "$got/artifacts/worker-$i.json" ]] || fail "worker $i's receipt did not come back"
    [[ -f "$got/standin-lesson-tpu-t1v-n-standin0-w-$i.txt" ]] || fail "worker $i's log did not come back"
    [[ ! -e "$got/artifacts/worker-$(((i + 1) % 4)).json" ]] || fail "worker $i's folder holds another worker's receipt"
  done
  [[ -f "$dir/tpu-runs/lab-pod/standin-lesson/r1/worker-0/r1/artifacts/checkpoint.json" ]] || fail "no checkpoint from process 0"
  standin_calls "$dir" >"$dir/calls.txt"
  python3 - "$dir/calls.txt" <<'PY' || fail "gcloud calls are not in the expected order"
import json, sys
calls = [json.loads(l) for l in open(sys.argv[1])]
verbs = [c[3] + ("" if c[3] != "scp" else (":down" if ":" in c[5] else ":up")) for c in calls]
# stage (scp up: the run's stage folder, the run guard and the script in it, in one call),
# bootstrap (ssh, through the staged guard), run (ssh), four fetches (scp down), teardown last
assert verbs[:3] == ["scp:up", "ssh", "ssh"], verbs
assert calls[0][4:7] == ["--recurse", "./tpu-runs/lab-pod/standin-lesson/r1/stage/jax-tpu-lab", "lab-pod:"], calls[0]
assert verbs[3:7] == ["scp:down"] * 4, verbs
assert verbs[7:] == ["delete"], verbs
assert sorted(c[-2] for c in calls[3:7]) == [f"--worker={i}" for i in range(4)], calls[3:7]
assert "--quiet" in calls[7]
PY
  tpu_deleted "$dir" || fail "teardown did not delete the TPU"
}

case_pipeline__one_host_end_to_end() {
  local dir
  dir=$(standin_course pipeline-1 1)
  run -C "$dir" plan standin-lesson --slice v5litepod-8 "${PIPE_FLAGS[@]}" --bootstrap --teardown --format sh
  expect_status 0
  expect_stdout_lacks "--worker=all"
  printf '%s\n' "$out" >"$dir/run.sh"
  run_pipeline "$dir" run.sh
  expect_status 0
  expect_stdout_contains "verified: training receipts (detailed form) of 1 worker on v5litepod-8"
  [[ -f "$dir/tpu-runs/lab-pod/standin-lesson/r1/worker-0/r1/artifacts/worker-0.json" ]] || fail "no receipt"
  tpu_deleted "$dir" || fail "teardown did not delete the TPU"
}

case_pipeline__failing_worker_keeps_the_tpu() {
  local dir i
  dir=$(standin_course pipeline-fail 4)
  run -C "$dir" plan standin-lesson --slice v5litepod-16 "${PIPE_FLAGS[@]}" --bootstrap --teardown --format sh
  printf '%s\n' "$out" >"$dir/run.sh"
  LESSON_FAIL_WORKER=2 run_pipeline "$dir" run.sh
  [[ "$status" != 0 ]] || fail "a failing worker must fail the pipeline"
  expect_stderr_contains "tpulaunch: error: the run failed with status"
  expect_stderr_contains "the TPU is left running"
  for i in 0 1 2 3; do
    ls "$dir/tpu-runs/lab-pod/standin-lesson/r1/worker-$i/r1/"*.txt >/dev/null 2>&1 ||
      fail "worker $i's log was not fetched after the failure"
  done
  ! tpu_deleted "$dir" || fail "the TPU was deleted after a failure"
  ! grep -q '"delete"' "$dir/state/calls.jsonl" || fail "delete was called after a failure"
}

case_pipeline__fetch_failure_still_fetches_the_others() {
  local dir
  dir=$(standin_course pipeline-fetch 4)
  run -C "$dir" plan standin-lesson --slice v5litepod-16 "${PIPE_FLAGS[@]}" --bootstrap --teardown --parallel 2 --format sh
  printf '%s\n' "$out" >"$dir/run.sh"
  GCLOUD_STANDIN_SCP_FAIL_WORKERS=1 run_pipeline "$dir" run.sh
  expect_status 1
  expect_stderr_contains "could not fetch worker(s) 1 of 4"
  for i in 0 2 3; do
    [[ -f "$dir/tpu-runs/lab-pod/standin-lesson/r1/worker-$i/r1/artifacts/worker-$i.json" ]] ||
      fail "worker $i was not fetched because worker 1 failed"
  done
  ! tpu_deleted "$dir" || fail "the TPU was deleted although a fetch failed"
}

# Retrieval at scale (issue 37 §3): above 8 hosts the sh form fetches a slice's workers in one
# loop, not a line each; one worker's failed download names it, and every other worker comes back.
case_pipeline__retrieval_at_scale_one_worker_failing() {
  local dir i
  dir=$(standin_course pipeline-scale 16)
  run -C "$dir" plan standin-lesson --slice v5litepod-64 "${PIPE_FLAGS[@]}" --bootstrap --parallel 16 --format sh
  printf '%s\n' "$out" >"$dir/run.sh"
  [[ "$(grep -c 'fetch_start' "$dir/run.sh")" == 3 ]] || fail "not one fetch line (and the library's two)"
  grep -q 'worker-{0..15}/' "$dir/run.sh" || fail "the download folders are not one word"
  GCLOUD_STANDIN_SCP_FAIL_WORKERS=11 run_pipeline "$dir" run.sh
  expect_status 1
  expect_stderr_contains "could not fetch worker(s) 11 of 16"
  for ((i = 0; i < 16; i++)); do
    ((i == 11)) && continue
    [[ -f "$dir/tpu-runs/lab-pod/standin-lesson/r1/worker-$i/r1/artifacts/worker-$i.json" ]] ||
      fail "worker $i was not fetched because worker 11 failed"
  done
  [[ "$(grep -c '"--worker=' "$dir/state/calls.jsonl")" -ge 16 ]] || fail "not one download per worker"
}

# fetch_events DIR: the stand-in's downloads in the order they began and ended
# (events.jsonl, one line per event as it happened), "start W" or "end W" for worker W.
fetch_events() {
  python3 -c 'import json, sys
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e["argv"][3] == "scp" and ":" in e["argv"][5]:  # downloads: NODE:PATH first
        w = [a for a in e["argv"] if a.startswith("--worker=")][0].split("=")[1]
        print(e["event"], w)' "$1/state/events.jsonl"
}

# expect_fetched DIR WORKER...: each worker's receipt came back into its own folder.
expect_fetched() {
  local dir=$1 i
  shift
  for i in "$@"; do
    [[ -f "$dir/tpu-runs/lab-pod/standin-lesson/r1/worker-$i/r1/artifacts/worker-$i.json" ]] ||
      fail "worker $i was not fetched"
  done
}

# started_before_end DIR A B: true when worker A's fetch began before worker B's fetch ended,
# read from the order of the events, not from clock times.
started_before_end() {
  fetch_events "$1" | awk -v a="$2" -v b="$3" '
    $1 == "start" && $2 == a && s == "" { s = NR }
    $1 == "end" && $2 == b { e = NR }
    END { exit !(s != "" && e != "" && s < e) }'
}

case_pipeline__slow_worker_holds_one_fetch_slot() {
  local dir i
  dir=$(standin_course pipeline-slow 4)
  run -C "$dir" plan standin-lesson --slice v5litepod-16 "${PIPE_FLAGS[@]}" --bootstrap --parallel 2 --format sh
  printf '%s\n' "$out" >"$dir/run.sh"
  # Worker 0's download ends only after the three others have ended; workers 1 and 3 fail. With
  # two slots, the other workers' downloads go through the free slot while worker 0's is running
  # (a scheduler that waited for worker 0 would start them only after the stand-in gives up, 30 s).
  GCLOUD_STANDIN_SCP_HOLD_WORKERS=0:3 GCLOUD_STANDIN_SCP_FAIL_WORKERS=3,1 run_pipeline "$dir" run.sh
  expect_status 1
  expect_stderr_contains "could not fetch worker(s) 1 3 of 4"
  expect_fetched "$dir" 0 2
  started_before_end "$dir" 2 0 && started_before_end "$dir" 3 0 ||
    fail "workers 2 and 3 waited for slow worker 0: $(fetch_events "$dir" | tr '\n' ';')"
}

case_pipeline__downloads_ending_together_each_keep_their_status() {
  local dir i
  dir=$(standin_course pipeline-together 8)
  run -C "$dir" plan standin-lesson --slice v5litepod-32 "${PIPE_FLAGS[@]}" --bootstrap --parallel 3 --format sh
  printf '%s\n' "$out" >"$dir/run.sh"
  # Worker 0's download ends only after the seven others have; four failures end in pairs while it
  # runs and while new downloads start.
  GCLOUD_STANDIN_SCP_HOLD_WORKERS=0:7 GCLOUD_STANDIN_SCP_FAIL_WORKERS=1,2,4,5 run_pipeline "$dir" run.sh
  expect_status 1
  expect_stderr_contains "could not fetch worker(s) 1 2 4 5 of 8"
  expect_fetched "$dir" 0 3 6 7
  started_before_end "$dir" 7 0 || fail "worker 7 waited for slow worker 0: $(fetch_events "$dir" | tr '\n' ';')"
}

case_pipeline__older_bash_waits_for_the_oldest_fetch() {
  local dir i
  dir=$(standin_course pipeline-oldbash 4)
  run -C "$dir" plan standin-lesson --slice v5litepod-16 "${PIPE_FLAGS[@]}" --bootstrap --parallel 2 --format sh
  # What bash < 4.3 (no `wait -n`) runs: the same script with the any-done wait switched off.
  printf '%s\n' "$out" | sed 's/^  fetch_any_done=1 #/  fetch_any_done=0 #/' >"$dir/run.sh"
  grep -q '^  fetch_any_done=0 #' "$dir/run.sh" || fail "the script has no any-done switch to turn off"
  GCLOUD_STANDIN_SCP_SLOW_WORKERS=0:1 GCLOUD_STANDIN_SCP_FAIL_WORKERS=3,1 run_pipeline "$dir" run.sh
  expect_status 1
  expect_stderr_contains "could not fetch worker(s) 1 3 of 4"
  expect_fetched "$dir" 0 2
  ! started_before_end "$dir" 2 0 || fail "oldest-first: worker 2 started before worker 0 ended"
}

# --- --results: every worker uploads to a bucket, one local call brings all back ---------------

RESULTS_URL=gs://lab-results/course
RESULTS_DIR=state/gcs/lab-results/course/lab-pod/standin-lesson/r1

# results_course NAME HOSTS: standin_course plus the stand-in bucket lab-results.
results_course() {
  local dir
  dir=$(standin_course "$1" "$2")
  GCLOUD_STANDIN_STATE="$dir/state" "$STANDIN/gcloud" standin create-bucket lab-results >/dev/null
  printf '%s\n' "$dir"
}

# worker_uploads DIR: "WORKER EXIT" for every gcloud storage call made on a worker, sorted.
worker_uploads() {
  python3 -c 'import json, sys
for line in open(sys.argv[1]):
    c = json.loads(line)
    if "worker" in c and c["argv"][:2] == ["storage", "cp"]:
        print(c["worker"], c["exit"])' "$1/state/calls.jsonl" | sort -n
}

case_pipeline__results_four_hosts_three_local_calls() {
  local dir i
  dir=$(results_course results-4 4)
  run -C "$dir" plan standin-lesson --slice v5litepod-16 "${PIPE_FLAGS[@]}" --bootstrap --teardown --results "$RESULTS_URL" \
    --format sh
  expect_status 0
  printf '%s\n' "$out" >"$dir/run.sh"
  run_pipeline "$dir" run.sh
  expect_status 0
  expect_stdout_contains "verified: training receipts (detailed form) of 4 workers on v5litepod-16"
  for i in 0 1 2 3; do
    [[ -f "$dir/tpu-runs/lab-pod/standin-lesson/r1/worker-$i/r1/artifacts/worker-$i.json" ]] ||
      fail "worker $i's receipt did not come back through the bucket"
    [[ -f "$dir/$RESULTS_DIR/worker-$i/r1/standin-lesson-tpu-t1v-n-standin0-w-$i.txt" ]] ||
      fail "worker $i's log is not in the bucket under worker-$i/r1/"
  done
  # stage, bootstrap, run, the one download, teardown: no per-worker call on this machine.
  [[ "$(local_calls "$dir" | tr '\n' ',')" == "scp,ssh,ssh,storage cp,delete," ]] ||
    fail "local gcloud calls: $(local_calls "$dir" | tr '\n' ',')"
  [[ "$(worker_uploads "$dir" | tr '\n' ',')" == "0 0,1 0,2 0,3 0," ]] ||
    fail "each worker uploads once: $(worker_uploads "$dir" | tr '\n' ',')"
  tpu_deleted "$dir" || fail "teardown did not delete the TPU"
}

case_pipeline__results_failing_worker_still_uploads() {
  local dir i
  dir=$(results_course results-fail 4)
  run -C "$dir" plan standin-lesson --slice v5litepod-16 "${PIPE_FLAGS[@]}" --bootstrap --teardown --results "$RESULTS_URL" \
    --format sh
  printf '%s\n' "$out" >"$dir/run.sh"
  LESSON_FAIL_WORKER=2 run_pipeline "$dir" run.sh
  # Worker 2 exits 7; the others then fail in the collective, and gcloud reports the first
  # non-zero status in worker order.
  expect_status 1
  expect_stdout_contains "LESSON_FAIL_WORKER=2: failing on purpose with status 7"
  expect_stderr_contains "tpulaunch: error: the run failed with status 1"
  expect_stderr_contains "the TPU is left running"
  [[ "$err" != *"no results from worker"* ]] || fail "every worker uploaded, yet one is named missing"
  # Worker 2's program failed; its folder was uploaded all the same and came back with the others.
  [[ -f "$dir/$RESULTS_DIR/worker-2/r1/standin-lesson-tpu-t1v-n-standin0-w-2.txt" ]] ||
    fail "the failing worker's log was not uploaded"
  for i in 0 1 2 3; do
    [[ -f "$dir/tpu-runs/lab-pod/standin-lesson/r1/worker-$i/r1/standin-lesson-tpu-t1v-n-standin0-w-$i.txt" ]] ||
      fail "worker $i's log was not fetched after the failure"
  done
  [[ "$(worker_uploads "$dir" | tr '\n' ',')" == "0 0,1 0,2 0,3 0," ]] ||
    fail "uploads: $(worker_uploads "$dir" | tr '\n' ',')"
  [[ "$(local_calls "$dir" | tr '\n' ',')" == "scp,ssh,ssh,describe,storage cp," ]] ||
    fail "local gcloud calls: $(local_calls "$dir" | tr '\n' ',')"
  ! tpu_deleted "$dir" || fail "the TPU was deleted after a failure"
}

case_pipeline__results_upload_failure_names_the_worker() {
  local dir i
  dir=$(results_course results-upload 4)
  run -C "$dir" plan standin-lesson --slice v5litepod-16 "${PIPE_FLAGS[@]}" --bootstrap --teardown --results "$RESULTS_URL" \
    --format sh
  printf '%s\n' "$out" >"$dir/run.sh"
  # Worker 1's service account cannot write to the bucket; its program succeeds.
  GCLOUD_STANDIN_GCS_FAIL_WORKERS=1 run_pipeline "$dir" run.sh
  expect_status 95
  expect_stderr_contains "tpulaunch: t1v-n-standin0-w-1: error: worker 1 (t1v-n-standin0-w-1) could not upload its results"
  expect_stderr_contains "does not have storage.objects.create access"
  # Worker 1 did not arrive from the bucket: it is fetched from the worker itself (issue 37 §3:
  # per-worker downloads are the fallback), so no worker is missing in the end.
  expect_stderr_contains "tpulaunch: worker(s) 1 of 4 did not arrive from $RESULTS_URL/lab-pod/standin-lesson/r1: fetching them from the workers, one download each"
  [[ "$err" != *"no results from worker"* ]] || fail "worker 1 is named missing although the fallback fetched it"
  expect_stderr_contains "the TPU is left running: TPU lab-pod is still running"
  for i in 0 1 2 3; do
    [[ -f "$dir/tpu-runs/lab-pod/standin-lesson/r1/worker-$i/r1/artifacts/worker-$i.json" ]] ||
      fail "worker $i was not fetched"
  done
  [[ "$(local_calls "$dir" | tr '\n' ',')" == "scp,ssh,ssh,describe,storage cp,scp," ]] ||
    fail "local gcloud calls: $(local_calls "$dir" | tr '\n' ',')"
  [[ "$(worker_uploads "$dir" | tr '\n' ',')" == "0 0,1 1,2 0,3 0," ]] ||
    fail "uploads: $(worker_uploads "$dir" | tr '\n' ',')"
  ! tpu_deleted "$dir" || fail "the TPU was deleted although a worker's results are missing"
  ! grep -q '"delete"' "$dir/state/calls.jsonl" || fail "delete was called"
}

case_pipeline__results_one_host() {
  local dir
  dir=$(results_course results-1 1)
  run -C "$dir" plan standin-lesson --slice v5litepod-8 "${PIPE_FLAGS[@]}" --bootstrap --results gs://lab-results --format sh
  expect_status 0
  printf '%s\n' "$out" >"$dir/run.sh"
  run_pipeline "$dir" run.sh
  expect_status 0
  expect_stdout_contains "verified: training receipts (detailed form) of 1 worker on v5litepod-8"
  [[ -f "$dir/state/gcs/lab-results/lab-pod/standin-lesson/r1/worker-0/r1/artifacts/worker-0.json" ]] ||
    fail "the receipt is not in the bucket"
  [[ -f "$dir/tpu-runs/lab-pod/standin-lesson/r1/worker-0/r1/artifacts/worker-0.json" ]] || fail "no receipt"
}

case_plan__results_url_is_validated() {
  local bad
  for bad in "gs://Lab-Results/x" "gs://lab-results/runs/*" "lab-results" "gs://goog-results" "gs://lab-results/a//b" \
    $'gs://lab-results/a\nb' "gs://192.168.5.4"; do
    run -C "$COURSE" plan collective-update --slice v5litepod-16 "${TPU_FLAGS[@]}" --results "$bad"
    expect_status 2
    expect_stdout_empty
    expect_one_error_line
    expect_stderr_contains "invalid results URL '"
  done
  run -C "$COURSE" plan collective-update --slice v5litepod-16 "${TPU_FLAGS[@]}" --course --results gs://lab-results
  expect_status 2
  expect_stderr_contains "--course emits the course's own commands only; --results needs the full form"
}

case_pipeline__staged_digest_mismatch_refuses_to_run() {
  local dir
  dir=$(standin_course pipeline-digest 4)
  run -C "$dir" plan standin-lesson --slice v5litepod-16 "${PIPE_FLAGS[@]}" --bootstrap --teardown --format sh
  printf '%s\n' "$out" >"$dir/run.sh"
  # The file changes after planning: what gets staged is no longer what was reviewed.
  echo "# changed after the plan was made" >>"$dir/public/exercises/standin-lesson.py"
  run_pipeline "$dir" run.sh
  # The write step checks every file against the plan's digest before anything is copied (the
  # run guard checks them again on each worker: tests/remote/run_guard_test.bash).
  expect_status 3
  expect_stderr_contains "tpulaunch: refused: public/exercises/standin-lesson.py changed since the plan was made"
  [[ ! -s "$dir/state/calls.jsonl" ]] || fail "gcloud was called although the staged file changed"
  ! tpu_deleted "$dir" || fail "the TPU was deleted after a refused run"
}

case_pipeline__preflight_needs_an_ssh_key() {
  local dir
  dir=$(standin_course pipeline-agent 4)
  run -C "$dir" plan standin-lesson --slice v5litepod-16 "${PIPE_FLAGS[@]}" --bootstrap --format sh
  printf '%s\n' "$out" >"$dir/run.sh"
  SSH_ADD_STANDIN_EMPTY=1 run_pipeline "$dir" run.sh
  expect_status 1
  expect_stderr_contains "ssh-add ~/.ssh/google_compute_engine"
  [[ ! -s "$dir/state/calls.jsonl" ]] || fail "gcloud was called although preflight failed"
}

# A fresh TPU VM (the stand-in's default: no ~/jax-tpu-lab, no venv, python3 only) and no
# --bootstrap: the staging copy lands in the home folder, the run stops at once on every worker
# with one line naming the host, the path and the fix, exit status 96, and nothing is retried.
case_pipeline__fresh_vm_without_bootstrap_stops_early() {
  local dir
  dir=$(standin_course pipeline-fresh 4)
  run -C "$dir" plan standin-lesson --slice v5litepod-16 "${PIPE_FLAGS[@]}" --teardown --format sh
  printf '%s\n' "$out" >"$dir/run.sh"
  run_pipeline "$dir" run.sh
  expect_status 96
  for i in 0 1 2 3; do
    # The path as the worker's shell expanded it: its home, then jax-tpu-lab/.venv/bin/python.
    expect_stderr_contains "tpulaunch: t1v-n-standin0-w-$i: error: no Python interpreter at $dir/state/tpus/lab-pod/worker-$i/home/jax-tpu-lab/.venv/bin/python; run the plan with --bootstrap, or choose one with --python PATH"
  done
  expect_stderr_contains "the run failed with status 96"
  expect_stderr_contains "the TPU is left running"
  python3 - "$dir/state" <<'PY' || fail "the stand-in saw more than stage, run, describe and one wave of fetches, or a retry"
import json, sys
calls = [json.loads(l) for l in open(sys.argv[1] + "/calls.jsonl")]
verbs = [c["argv"][3] + (":up" if c["argv"][3] == "scp" and c["argv"][4] != "--recurse" else "") for c in calls]
# After the failed run, one describe tells whether the TPU was preempted (it was not).
assert verbs == ["scp", "ssh", "describe", "scp", "scp", "scp", "scp"], verbs
assert [c["exit"] for c in calls] == [0, 96, 0, 0, 0, 0, 0], [c["exit"] for c in calls]
assert calls[0]["argv"][6] == "lab-pod:", calls[0]["argv"]
runs = [json.loads(l) for l in open(sys.argv[1] + "/runs.jsonl")]
assert all(r["attempt"] == 1 for r in runs), runs
PY
  ! tpu_deleted "$dir" || fail "the TPU was deleted after a failed run"
}

# The same plan on a VM the course's set-up prepared: three gcloud rounds (stage, run, one wave
# of fetches), then verify.
case_pipeline__prepared_vm_without_bootstrap() {
  local dir
  dir=$(GCLOUD_STANDIN_PREPARED=1 standin_course pipeline-prepared 4)
  run -C "$dir" plan standin-lesson --slice v5litepod-16 "${PIPE_FLAGS[@]}" --format sh
  printf '%s\n' "$out" >"$dir/run.sh"
  run_pipeline "$dir" run.sh
  expect_status 0
  expect_stdout_contains "verified: training receipts (detailed form) of 4 workers on v5litepod-16"
  python3 - "$dir/state/calls.jsonl" <<'PY' || fail "not three gcloud rounds"
import json, sys
calls = [json.loads(l)["argv"] for l in open(sys.argv[1])]
assert [c[3] for c in calls] == ["scp", "ssh", "scp", "scp", "scp", "scp"], calls
PY
}

# A script in a subfolder of the exercises folder (id advanced/stand/lesson) keeps its course path
# in the run's stage folder on every worker, on a fresh VM as well; nothing lands in the home
# folder outside ~/jax-tpu-lab/runs/<script>/<run id>/ (and the venv --bootstrap makes), and the logs come back into the script's
# own run folder.
case_pipeline__subfolder_script_is_staged_under_its_path() {
  local dir i home
  dir=$(standin_course pipeline-subfolder 4)
  mkdir -p "$dir/public/exercises/advanced/stand"
  cp "$STANDIN/lesson_standin.py" "$dir/public/exercises/advanced/stand/lesson.py"
  "$TPULAUNCH" -C "$dir" review advanced/stand/lesson --class multi-host-qualified --by e2e-tests --proves training >/dev/null
  run -C "$dir" plan advanced/stand/lesson --slice v5litepod-16 "${PIPE_FLAGS[@]}" --bootstrap --format sh
  expect_status 0
  expect_stdout_contains "--file public/exercises/advanced/stand/lesson.py "
  printf '%s\n' "$out" >"$dir/run.sh"
  run_pipeline "$dir" run.sh
  expect_status 0
  expect_stdout_contains "verified: training receipts (detailed form) of 4 workers on v5litepod-16"
  for i in 0 1 2 3; do
    home=$dir/state/tpus/lab-pod/worker-$i/home
    compgen -G "$home/jax-tpu-lab/runs/advanced/stand/lesson/r1/staged-*/code/public/exercises/advanced/stand/lesson.py" \
      >/dev/null || fail "worker $i has no staged copy under its course path in the run folder"
    # --bootstrap makes the interpreter's venv; staging adds nothing else.
    [[ "$(cd "$home" && find . -mindepth 1 -maxdepth 2 | sort | tr '\n' ' ')" == "./jax-tpu-lab ./jax-tpu-lab/.venv ./jax-tpu-lab/runs " ]] ||
      fail "worker $i's home holds more than the venv and the runs folder: $(cd "$home" && find . -mindepth 1 -maxdepth 2 | tr '\n' ' ')"
    compgen -G "$dir/tpu-runs/lab-pod/advanced/stand/lesson/r1/worker-$i/r1/lesson-tpu-*.txt" >/dev/null ||
      fail "worker $i's log was not fetched into the script's own run folder"
  done
  # The course's own commands copy into ~/jax-tpu-lab/ only: --course refuses such a script.
  run -C "$dir" plan advanced/stand/lesson --slice v5litepod-16 "${PIPE_FLAGS[@]}" --course
  expect_status 2
  expect_one_error_line
  expect_stderr_contains "'advanced/stand/lesson' is in a subfolder of the exercises folder; --course"
}

# --python chooses the interpreter on every worker, quoted like any value.
case_pipeline__python_option_chooses_the_interpreter() {
  local dir
  dir=$(standin_course pipeline-python 1)
  run -C "$dir" plan standin-lesson --slice v5litepod-8 "${PIPE_FLAGS[@]}" --bootstrap --python '~/jax-tpu-lab/.venv/bin/python3' --format sh
  expect_status 0
  expect_stdout_contains " --python ~/jax-tpu-lab/.venv/bin/python3 -- "
  printf '%s\n' "$out" >"$dir/run.sh"
  run_pipeline "$dir" run.sh
  expect_status 0
  expect_stdout_contains "verified: training receipts (detailed form) of 1 worker on v5litepod-8"
  # A fresh VM's python3 has no jax: the run starts, and fails as the program does (not 96).
  run -C "$dir" plan standin-lesson --slice v5litepod-8 --tpu lab-pod --zone us-west4-a --project lab-project-1 --run-id r2 --python python3 --format sh
  printf '%s\n' "$out" >"$dir/run2.sh"
  run_pipeline "$dir" run2.sh
  [[ "$status" != 0 && "$status" != 96 ]] || fail "python3 without jax gave status $status"
  expect_stdout_contains "No module named 'jax'"
}

# With --teardown, a failure after the TPU is in use says so and prints the exact delete command:
# a failed run (after every fetch) and a failed verify.
case_pipeline__teardown_asked_but_a_step_failed_says_the_tpu_is_running() {
  local dir
  dir=$(standin_course pipeline-left 4)
  run -C "$dir" plan standin-lesson --slice v5litepod-16 "${PIPE_FLAGS[@]}" --bootstrap --teardown --format sh
  printf '%s\n' "$out" >"$dir/run.sh"
  LESSON_FAIL_WORKER=1 run_pipeline "$dir" run.sh
  [[ "$status" != 0 ]] || fail "a failing worker must fail the pipeline"
  expect_stderr_contains "tpulaunch: warning: a step failed, so the TPU is left running: TPU lab-pod is still running (and billing). Once you have looked at the results, delete it with: gcloud compute tpus tpu-vm delete lab-pod --zone=us-west4-a --quiet --project=lab-project-1"
  ! tpu_deleted "$dir" || fail "the TPU was deleted after a failure"
  # verify fails (the stand-in's backend is no TPU result without the test seam)
  rm -f "$dir/state/calls.jsonl"
  run -C "$dir" plan standin-lesson --slice v5litepod-16 --tpu lab-pod --zone us-west4-a --project lab-project-1 --run-id r2 --bootstrap --teardown --format sh
  printf '%s\n' "$out" >"$dir/run2.sh"
  status=0
  (cd "$dir" && env PATH="$STANDIN:$SOURCE_DIR/tests/e2e/bin:$PATH" GCLOUD_STANDIN_STATE="$dir/state" \
    bash run2.sh >"$dir/out2" 2>"$dir/err2" </dev/null) || status=$?
  err=$(cat "$dir/err2")
  expect_status 3
  expect_stderr_contains "the TPU is left running: TPU lab-pod is still running (and billing). Once you have looked at the results, delete it with: gcloud compute tpus tpu-vm delete lab-pod --zone=us-west4-a --quiet --project=lab-project-1"
  ! grep -q '"delete"' "$dir/state/calls.jsonl" || fail "delete was called after verify failed"
}

# -C DIR, --matrix FILE and --catalog FILE hold for the whole script, wherever it is started, and
# verify runs the tpulaunch that made the plan even when none is on PATH.
case_pipeline__context_carried_from_another_folder() {
  local dir elsewhere bin
  dir=$(standin_course pipeline-context 4)
  elsewhere=$(workdir pipeline-context-elsewhere)
  mv "$dir/execution-matrix.json" "$dir/course-matrix.json"
  cp "$SOURCE_DIR/catalog/slices.json" "$dir/my-catalog.json"
  run -C "$dir" plan standin-lesson --matrix course-matrix.json --catalog my-catalog.json --slice v5litepod-16 \
    "${PIPE_FLAGS[@]}" --bootstrap --teardown --format sh
  expect_status 0
  expect_stdout_contains "--matrix=$(cd "$dir" && pwd -P)/course-matrix.json --catalog=$(cd "$dir" && pwd -P)/my-catalog.json"
  printf '%s\n' "$out" >"$elsewhere/run.sh"
  bin=$(readlink -f "$TPULAUNCH")
  status=0
  # No tpulaunch on PATH, no $TPULAUNCH, and environment defaults that would break verify if it
  # read them instead of the plan's files.
  (cd "$elsewhere" && env -u TPULAUNCH PATH="$STANDIN:$SOURCE_DIR/tests/e2e/bin:/usr/bin:/bin" \
    GCLOUD_STANDIN_STATE="$dir/state" TPULAUNCH_ALLOW_STANDIN=1 TPULAUNCH_CATALOG=/nonexistent.json \
    TPULAUNCH_MATRIX=/nonexistent.json bash run.sh >"$elsewhere/out" 2>"$elsewhere/err" </dev/null) || status=$?
  out=$(cat "$elsewhere/out")
  err=$(cat "$elsewhere/err")
  expect_status 0
  expect_stderr_contains "tpulaunch's own steps will run $bin (set TPULAUNCH to choose another)"
  expect_stdout_contains "verified: training receipts (detailed form) of 4 workers on v5litepod-16"
  [[ -f "$dir/tpu-runs/lab-pod/standin-lesson/r1/worker-3/r1/artifacts/worker-3.json" ]] ||
    fail "the results did not land in the plan's folder"
  [[ ! -e "$elsewhere/tpu-runs" ]] || fail "the results landed where the script was started"
  tpu_deleted "$dir" || fail "teardown did not run"
}

# The text form, pasted into bash line by line from another folder, does what the sh form does,
# except the teardown: it runs only if verify succeeded, so the text form shows it commented and a
# paste leaves the TPU for the person to delete.
case_pipeline__text_form_pasted_line_by_line() {
  local dir elsewhere
  dir=$(standin_course pipeline-paste 4)
  elsewhere=$(workdir pipeline-paste-elsewhere)
  run -C "$dir" plan standin-lesson --slice v5litepod-16 "${PIPE_FLAGS[@]}" --bootstrap --teardown
  expect_status 0
  # The commands: the indented lines of the "commands:" section that are not comments.
  sed -n '/^commands:$/,/^$/p' <<<"$out" | grep '^  [^#]' | sed 's/^  //' >"$elsewhere/pasted.txt"
  [[ $(wc -l <"$elsewhere/pasted.txt") == 11 ]] || fail "expected 11 commands, got $(wc -l <"$elsewhere/pasted.txt")"
  expect_stdout_contains "  # teardown (only after verify succeeded):"
  status=0
  (cd "$elsewhere" && env PATH="$STANDIN:$SOURCE_DIR/tests/e2e/bin:$PATH" GCLOUD_STANDIN_STATE="$dir/state" \
    CLOUDSDK_CORE_PROJECT=lab-project-1 TPULAUNCH_ALLOW_STANDIN=1 bash -s <"$elsewhere/pasted.txt" >"$elsewhere/out" \
    2>"$elsewhere/err") || status=$?
  out=$(cat "$elsewhere/out")
  err=$(cat "$elsewhere/err")
  expect_status 0
  expect_stdout_contains "verified: training receipts (detailed form) of 4 workers on v5litepod-16"
  for i in 0 1 2 3; do
    [[ -f "$dir/tpu-runs/lab-pod/standin-lesson/r1/worker-$i/r1/artifacts/worker-$i.json" ]] ||
      fail "worker $i's receipt did not come back"
  done
  ! grep -q '"attempt": 2' "$dir/state/runs.jsonl" || fail "a pasted command was retried"
  ! tpu_deleted "$dir" || fail "a pasted plan deleted the TPU"
}

# --env and -- with values a shell reads, through both shell levels to the program on a (stand-in)
# worker, and through the local shell on the CPU route.
case_pipeline__env_and_args_reach_the_script_intact() {
  local dir a b
  dir=$(GCLOUD_STANDIN_PREPARED=1 standin_course pipeline-args 1)
  cp "$SOURCE_DIR/tests/e2e/data/echo_args.py" "$dir/public/exercises/echo-args.py"
  "$TPULAUNCH" -C "$dir" review echo-args --class single-host-compatible --by e2e-tests >/dev/null
  a="x'; touch pwned; echo '\"\$(touch pwned)\" \`touch pwned\` ~ * \$HOME"
  b=$'line one\n  line two\t$((1+1)) \\ \'\\\'\''
  local -a args=("it's" '"$(touch pwned)"' '`touch pwned`' 'a  b' '*' '-v' '--' '~/x' '$HOME' $'l1\nl2' '' "\\'")
  run -C "$dir" plan echo-args --slice v5litepod-8 "${PIPE_FLAGS[@]}" --env "PROBE_A=$a" --env "PROBE_B=$b" --format sh -- "${args[@]}"
  expect_status 0
  printf '%s\n' "$out" >"$dir/run.sh"
  run_pipeline "$dir" run.sh
  expect_status 0
  [[ ! -e "$dir/pwned" && -z $(find "$dir/state" -name pwned) ]] || fail "a value ran a command"
  PROBE_A="$a" PROBE_B="$b" python3 - "$dir/tpu-runs/lab-pod/echo-args/r1/worker-0/r1/artifacts/echo-args.json" "${args[@]}" <<'PY' ||
import json, os, sys
got = json.load(open(sys.argv[1]))
assert got["args"] == sys.argv[2:], (got["args"], sys.argv[2:])
assert got["env"] == {"PROBE_A": os.environ["PROBE_A"], "PROBE_B": os.environ["PROBE_B"]}, got["env"]
PY
    fail "the worker's program did not get the arguments and environment as given"
  # Every form shows them.
  run -C "$dir" plan echo-args --slice v5litepod-8 "${PIPE_FLAGS[@]}" --env "PROBE_A=$a" --format json -- "${args[@]}"
  PROBE_A="$a" python3 - "$out" "${args[@]}" <<'PY' || fail "the json form does not show --env and the arguments"
import json, os, sys
plan = json.loads(sys.argv[1])
assert plan["env"] == {"PROBE_A": os.environ["PROBE_A"]} and plan["args"] == sys.argv[2:], plan
PY
  # The CPU route, run here.
  "$TPULAUNCH" -C "$dir" review echo-args --class cpu-only --by e2e-tests >/dev/null
  run -C "$dir" plan echo-args --env "PROBE_A=$a" --env "PROBE_B=$b" --format sh -- "${args[@]}"
  printf '%s\n' "$out" >"$dir/cpu.sh"
  status=0
  (cd / && bash "$dir/cpu.sh" >/dev/null 2>&1) || status=$?
  expect_status 0
  PROBE_A="$a" PROBE_B="$b" python3 - "$dir/echo-args.json" "${args[@]}" <<'PY' || fail "the CPU route did not pass them intact"
import json, os, sys
got = json.load(open(sys.argv[1]))
assert got["args"] == sys.argv[2:] and got["env"] == {"PROBE_A": os.environ["PROBE_A"], "PROBE_B": os.environ["PROBE_B"]}, got
PY
  [[ ! -e "$dir/pwned" && ! -e /pwned ]] || fail "a value ran a command on the CPU route"
  run -C "$dir" plan echo-args --env "9X=1"
  expect_status 2
  expect_one_error_line
  run -C "$dir" plan echo-args --env "NOEQUALS"
  expect_status 2
  expect_one_error_line
}

case_discover__receipts_are_never_training() {
  local dir
  dir=$(standin_course discover-4 4)
  run -C "$dir" discover --slice v5litepod-16 --tpu lab-pod --zone us-west4-a --project lab-project-1 --run-id d1 --bootstrap --format sh
  expect_status 0
  printf '%s\n' "$out" >"$dir/discover.sh"
  run_pipeline "$dir" discover.sh
  expect_status 0
  expect_stdout_contains "verified: discovery receipts (not training) of 4 workers on v5litepod-16"
  run verify "$dir/tpu-runs/lab-pod/discovery/d1" --slice v5litepod-16 --kind training
  expect_status 3
  expect_stdout_contains "topology discovery is not training"
  run -C "$dir" discover --slice v5litepod-16 --tpu lab-pod --zone us-west4-a
  expect_status 0
  expect_stdout_contains "DISCOVERY RECEIPT ONLY"
  expect_stdout_contains "4 processes, each with 4 local and 16 global JAX devices"
}

case_verify__refuses_stand_in_results_by_default() {
  local dir
  dir=$(standin_course verify-default 4)
  run -C "$dir" plan standin-lesson --slice v5litepod-16 "${PIPE_FLAGS[@]}" --bootstrap --format sh
  printf '%s\n' "$out" >"$dir/run.sh"
  run_pipeline "$dir" run.sh
  expect_status 0
  # Without the test seam, a stand-in backend is reported for what it is.
  run verify "$dir/tpu-runs/lab-pod/standin-lesson/r1" --slice v5litepod-16
  expect_status 3
  expect_stdout_contains "not a TPU result (backend 'standin')"
  run verify "$dir/tpu-runs/lab-pod/standin-lesson/r1" --slice v5litepod-32
  expect_status 3
  expect_stdout_contains "nothing was fetched"
  run verify "$dir/no-such-run" --slice v5litepod-16
  expect_status 4
  expect_one_error_line
  expect_stdout_empty
}

# The course's own multihost_collective.py, byte for byte from the lesson, on four stand-in hosts:
# its receipts (the course form) verify, and each tampered copy of them does not.
case_pipeline__course_multihost_collective_verifies() {
  local dir run_dir
  dir=$(course_copy pipeline-course)
  mkdir -p "$dir/state"
  GCLOUD_STANDIN_STATE="$dir/state" "$STANDIN/gcloud" standin create lab-pod --zone=us-west4-a --workers=4 \
    --project=lab-project-1 >/dev/null
  run -C "$dir" plan multihost_collective --slice v5litepod-16 "${PIPE_FLAGS[@]}" --bootstrap --teardown --format sh
  expect_status 0
  printf '%s\n' "$out" >"$dir/run.sh"
  run_pipeline "$dir" run.sh
  expect_status 0
  expect_stdout_contains "verified: training receipts (course form) of 4 workers on v5litepod-16"
  expect_stdout_contains "STAND-IN: these receipts come from the gcloud stand-in's fake JAX; this is NOT a TPU result"
  tpu_deleted "$dir" || fail "teardown did not delete the TPU after a verified run"
  run_dir="$dir/tpu-runs/lab-pod/multihost_collective/r1"
  [[ -f "$run_dir/worker-0/r1/artifacts/checkpoint.json" ]] || fail "process 0's checkpoint did not come back"
  # Each check fails on a tampered copy: field, new value (JSON), the finding it must cause.
  local tampers=(
    "2 owned_input 1.0 input 1.0 is also owned by worker 0"
    "1 global_mean_gradient -2.0 is -2, expected -5 (-(P + 1) for P = 4 processes)"
    "3 updated_theta 0.2 is 0.2, expected 0.5 (0.1 * (P + 1) for P = 4 processes)"
    "0 process_count 1 is 1, but v5litepod-16 has 4"
    "1 local_devices 8 is 8, but v5litepod-16 has 4"
    "2 global_devices 4 is 4, but v5litepod-16 has 16"
    "3 process_index 2 is 2, but this is worker 3's folder"
    "0 backend \"cpu\" not a TPU result (backend 'cpu')"
  )
  local tamper worker field value expected copy
  for tamper in "${tampers[@]}"; do
    read -r worker field value expected <<<"$tamper"
    copy="$dir/tampered/r1"
    rm -rf "$dir/tampered" && mkdir -p "$dir/tampered" && cp -R "$run_dir" "$copy"
    python3 - "$copy/worker-$worker/r1/artifacts/worker-$worker.json" "$field" "$value" <<'PY'
import json, sys
path, field, value = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
receipt = json.load(open(path))
receipt[field] = value
open(path, "w").write(json.dumps(receipt))
PY
    TPULAUNCH_ALLOW_STANDIN=1 run verify "$copy" --slice v5litepod-16
    expect_status 3
    expect_stdout_contains "FAIL worker $worker: $field: $expected"
  done
  # The checkpoint must hold the theta every replica reports.
  rm -rf "$dir/tampered" && mkdir -p "$dir/tampered" && cp -R "$run_dir" "$copy"
  printf '{"global_devices": 16, "theta": 0.3}\n' >"$copy/worker-0/r1/artifacts/checkpoint.json"
  TPULAUNCH_ALLOW_STANDIN=1 run verify "$copy" --slice v5litepod-16
  expect_status 3
  expect_stdout_contains "FAIL worker 1: updated_theta: is 0.5, but the checkpoint's theta is 0.3"
  # Receipts are untrusted input: a wrong type, a non-object and bad UTF-8 are findings, not crashes.
  printf '{"check": 1}' >"$copy/worker-1/r1/artifacts/worker-1.json"
  printf '[]' >"$copy/worker-2/r1/artifacts/worker-2.json"
  printf '{"backend": "tp\xffu"}' >"$copy/worker-3/r1/artifacts/worker-3.json"
  TPULAUNCH_ALLOW_STANDIN=1 run verify "$copy" --slice v5litepod-16 --format json
  expect_status 3
  expect_stdout_contains '"field": "worker-2.json"'
  expect_stdout_contains "UTF-8"
  [[ "$err" != *"internal error"* ]] || fail "a malformed receipt reached an internal error: $err"
  # One log per host.
  rm -f "$copy"/worker-2/r1/*.txt
  TPULAUNCH_ALLOW_STANDIN=1 run verify "$copy" --slice v5litepod-16
  expect_stdout_contains "FAIL worker 2: log: no stdout log"
}

# --- classify, review, check (the CI gate) -------------------------------------------------------

case_classify__example_course() {
  run -C "$COURSE" classify public/exercises/distributed-02.py public/exercises/collective-update.py tpu-hello --format json
  expect_status 0
  python3 - "$out" <<'PY' || fail "classify json is not what the course's scripts show"
import hashlib, json, sys, os
files = {os.path.basename(f["path"]): f for f in json.loads(sys.argv[1])["files"]}
d = files["distributed-02.py"]
assert d["suggested_class"] == "cpu-only", d
rules = {(e["rule"], e["line"]) for e in d["evidence"]}
assert ("devices-cpu", 16) in rules and ("xla-force-host-devices", 10) in rules, rules
assert all(e["category"] in ("cpu-selection", "multi-host", "backend-assertion") for e in d["evidence"])
c = files["collective-update.py"]
assert c["suggested_class"] == "multi-host-qualified", c
assert {"distributed-initialize", "process-index", "collective", "result-check", "global-barrier"} <= {e["rule"] for e in c["evidence"]}
assert files["tpu-hello.py"]["suggested_class"] == "single-host-compatible"
for name, f in files.items():
    assert f["sha256"] == hashlib.sha256(open(os.path.join(os.environ["COURSE"], "public/exercises", name), "rb").read()).hexdigest()
PY
  run -C "$COURSE" classify public/exercises/distributed-02.py
  expect_status 0
  expect_stdout_contains "public/exercises/distributed-02.py:16:11: cpu-selection [devices-cpu] devices = jax.devices(\"cpu\")"
  expect_stdout_contains "suggested: cpu-only (a suggestion, not a review)"
}

case_classify__missing_file_is_a_config_error() {
  run -C "$COURSE" classify public/exercises/nope.py
  expect_status 4
  expect_stdout_empty
  expect_one_error_line
  expect_stderr_contains "public/exercises/nope.py"
}

case_review__then_edit_makes_plan_refuse_as_stale() {
  local dir
  dir=$(course_copy review-stale)
  run -C "$dir" review sharding-sketch --class single-host-compatible --by alice --note "uses local devices only"
  expect_status 0
  expect_stdout_contains "recorded sharding-sketch as single-host-compatible"
  run -C "$dir" plan sharding-sketch --slice v5litepod-8 "${TPU_FLAGS[@]}"
  expect_status 0
  python3 - "$dir/execution-matrix.json" <<'PY' || fail "review did not record the entry"
import json, sys
e = json.load(open(sys.argv[1]))["scripts"]["sharding-sketch"]
assert e["class"] == "single-host-compatible" and e["reviewed_by"] == "alice" and e["note"] == "uses local devices only"
assert e["reviewed_at"].endswith("Z") and len(e["sha256"]) == 64
PY
  echo "jax.devices('cpu')" >>"$dir/public/exercises/sharding-sketch.py"
  run -C "$dir" plan sharding-sketch --slice v5litepod-8 "${TPU_FLAGS[@]}"
  expect_status 3
  expect_stderr_contains "review-required: [stale-digest] 'sharding-sketch' changed since it was reviewed"
}

case_review__refuses_cpu_evidence_without_override() {
  local dir before
  dir=$(course_copy review-override)
  before=$(sha256sum "$dir/execution-matrix.json")
  run -C "$dir" review distributed-02 --class single-host-compatible --by mallory
  expect_status 3
  expect_stdout_empty
  expect_one_refusal_line
  expect_stderr_contains "selects CPU devices (line 10 (xla-force-host-devices), line 16 (devices-cpu))"
  [[ "$(sha256sum "$dir/execution-matrix.json")" == "$before" ]] || fail "a refused review changed the matrix"
  run -C "$dir" review distributed-02 --class single-host-compatible --by alice --override "the CPU mesh is only built under --simulate"
  expect_status 0
  expect_stdout_contains "override: devices-cpu at line 16"
  # The override covers exactly that evidence, so plan now allows the TPU route.
  run -C "$dir" plan distributed-02 --slice v5litepod-8 "${TPU_FLAGS[@]}"
  expect_status 0
  run -C "$dir" review collective-update --class multi-host-qualified --by alice
  expect_status 0
  run -C "$dir" review tpu-hello --class multi-host-qualified --by alice
  expect_status 3
  expect_stderr_contains "lacks the multi-host markers initialize, per-process data, collective"
}

# In a copy: a review takes the matrix's lock, and other cases copy the shipped course meanwhile.
case_review__bad_class_and_reviewer() {
  local dir
  dir=$(course_copy review-bad-values)
  run -C "$dir" review tpu-hello --class gpu-only --by alice
  expect_status 2
  expect_one_error_line
  run -C "$dir" review tpu-hello --class cpu-only --by $'a\nb'
  expect_status 2
  expect_one_error_line
  run -C "$dir" review tpu-hello --class cpu-only
  expect_status 2
  expect_one_error_line
}

case_review__keeps_key_order_stable() {
  local dir
  dir=$(course_copy review-order)
  run -C "$dir" review distributed-02 --class cpu-only --by alice
  expect_status 0
  cp "$dir/execution-matrix.json" "$dir/first.json"
  run -C "$dir" review tpu-hello --class single-host-compatible --by bob
  expect_status 0
  # The second review changes the tpu-hello entry and nothing else, line for line.
  python3 - "$dir/first.json" "$dir/execution-matrix.json" <<'PY' || fail "a one-entry review changed other lines"
import sys
def without(path, key):
    lines, out, skipping = open(path).read().splitlines(), [], False
    for line in lines:
        if line.startswith(f'    "{key}": {{'):
            skipping = True
        if not skipping:
            out.append(line)
        if skipping and line.startswith("    }"):
            skipping = False
    return out
assert without(sys.argv[1], "tpu-hello") == without(sys.argv[2], "tpu-hello")
PY
  grep -q '"multi-host result-check at line 21"' "$dir/execution-matrix.json" || fail "no evidence summary recorded"
}

case_check__example_course_is_clean() {
  run -C "$COURSE" check
  expect_status 0
  expect_stdout_contains "warning: [unreviewed] 'sharding-sketch' has no matrix entry"
  expect_stdout_contains "check: 5 scripts, 4 entries: 0 errors, 1 warning"
  run -C "$COURSE" check --strict
  expect_status 3
  run -C "$COURSE" check --route distributed-02@cpu --route tpu-hello@v5litepod-8 --route collective-update@v5litepod-16 \
    --route multihost_collective@v5litepod-16
  expect_status 0
}

case_check__exit_codes_and_github_annotations() {
  local dir
  dir=$(course_copy check-gate)
  mkdir "$dir/.git" # annotation paths are relative to the repository root: here, the course
  echo "# edited" >>"$dir/public/exercises/tpu-hello.py"
  run -C "$dir" check --format github --route distributed-02@v5litepod-8
  expect_status 3
  expect_stdout_contains "::error file=public/exercises/tpu-hello.py,title=tpulaunch stale-digest::'tpu-hello' changed since it was reviewed"
  expect_stdout_contains "::error file=public/exercises/distributed-02.py,line=10,title=tpulaunch route-refused::route distributed-02@v5litepod-8 refused by cpu-only-stays-on-cpu"
  expect_stdout_contains "::warning file=public/exercises/sharding-sketch.py,title=tpulaunch unreviewed::"
  run -C "$dir" check --format json
  expect_status 3
  python3 - "$out" <<'PY' || fail "check json lacks the stale finding"
import json, sys
r = json.loads(sys.argv[1])
assert r["ok"] is False and r["errors"] == 1 and r["warnings"] == 1, r
assert r["findings"][0]["kind"] in ("stale-digest", "unreviewed")
assert any(f["kind"] == "stale-digest" and f["script"] == "tpu-hello" for f in r["findings"])
PY
  rm "$dir/public/exercises/distributed-02.py"
  run -C "$dir" check
  expect_status 3
  expect_stdout_contains "error: [missing-file] 'distributed-02' is in the matrix but its file"
  printf '{"version": 1,' >"$dir/execution-matrix.json"
  run -C "$dir" check
  expect_status 4
  expect_one_error_line
  expect_stdout_empty
  run -C "$COURSE" check --route tpu-hello
  expect_status 2
  expect_one_error_line
  run -C "$COURSE" check --route tpu-hello@v9-8
  expect_status 2
  expect_one_error_line
}

# --jobs N reads, hashes and classifies on N threads; the findings, their order and the exit
# status are the same as --jobs 1 (no thread at all), in every format. The course is the
# synthetic one the benchmark uses (stale, unreviewed, contradicting, missing), at 1,300 scripts:
# more than the pool's window (256 per job), so results wait for room and the ring wraps.
case_check__jobs_give_identical_output() {
  local dir format jobs reference
  dir=$(workdir check-jobs)
  python3 "$SOURCE_DIR/bench/make_synthetic_course.py" "$dir" --scripts 1300 >/dev/null 2>&1 ||
    fail "the synthetic course generator failed"
  for format in text json github; do
    run -C "$dir" check --format "$format" --jobs 1
    expect_status 3
    reference="$status"$'\n'"$out"$'\n'"$err"
    if [[ "$format" == text ]]; then
      local kind
      for kind in stale-digest unreviewed contradiction missing-file; do
        expect_stdout_contains "[$kind]"
      done
      expect_stdout_contains "check: 1300 scripts,"
    fi
    for jobs in 2 3 7; do
      run -C "$dir" check --format "$format" --jobs "$jobs"
      [[ "$status"$'\n'"$out"$'\n'"$err" == "$reference" ]] ||
        fail "check --format $format --jobs $jobs differs from --jobs 1"
    done
  done
  run -C "$dir" check --jobs 0
  expect_status 2
  expect_one_error_line
}

case_check__contradiction_between_class_and_evidence() {
  local dir sha
  dir=$(course_copy check-contradiction)
  printf 'import jax\njax.distributed.initialize()\nx = jax.devices("cpu")\n' >"$dir/public/exercises/sneaky.py"
  sha=$(sha256sum "$dir/public/exercises/sneaky.py" | cut -d' ' -f1)
  python3 - "$dir/execution-matrix.json" "$sha" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
m["scripts"]["sneaky"] = {"class": "multi-host-qualified", "sha256": sys.argv[2]}
json.dump(m, open(sys.argv[1], "w"))
PY
  run -C "$dir" check
  expect_status 3
  expect_stdout_contains "public/exercises/sneaky.py:3: error: [contradiction] 'sneaky' is reviewed multi-host-qualified but selects CPU devices here [devices-cpu]"
  run -C "$dir" plan sneaky --slice v5litepod-16 "${TPU_FLAGS[@]}"
  expect_status 3
  expect_stderr_contains "tpulaunch: refused: source-selects-cpu:"
  expect_stderr_contains "public/exercises/sneaky.py:3:5: cpu-selection [devices-cpu]"
}

# --- slice explorer --------------------------------------------------------------------------------

case_slice__answers_the_course_questions() {
  run slice v5litepod-16 --microbatch 8 --state-gib 200 --format json
  expect_status 0
  python3 - "$out" <<'PY' || fail "slice figures are wrong"
import json, sys
s = json.loads(sys.argv[1])
assert (s["local_device_count"], s["device_count"], s["idle_chips_if_only_worker_0"]) == (4, 16, 12), s
assert (s["per_host_batch"], s["global_batch"]) == (32, 128), s
assert s["total_hbm_gib"] == 256 and s["state_fits"] is True
assert s["create_command"] == "gcloud compute tpus tpu-vm create TPU_NAME --zone=ZONE --accelerator-type=v5litepod-16 --version=v2-alpha-tpuv5-lite"
PY
  run slice v6e-16 --state-gib 600
  expect_status 0
  expect_stdout_contains "512 GiB total"
  expect_stdout_contains "does NOT fit"
  run slice v5litepod-61
  expect_status 2
  expect_one_error_line
  expect_stderr_contains "did you mean 'v5litepod-16'?"
}

# TPU7x is in the catalog, reached through GKE only: `slice` shows it with its GKE node pool, and
# the TPU-VM route (plan) refuses it with the reason.
case_slice__tpu7x_is_gke_only_and_the_tpu_vm_route_refuses_it() {
  run slice tpu7x-8
  expect_status 0
  expect_stderr_empty
  expect_stdout_contains "tpu7x-8 (tpu7x, topology 2x2x1; the 8 in the name counts TensorCores, 2 per chip)"
  expect_stdout_contains "  jax.device_count():         8"
  expect_stdout_contains "  runtime version:            -"
  expect_stdout_contains "  API:                        Compute Engine or GKE, not the Cloud TPU VM API: tpulaunch reaches it through GKE only"
  expect_stdout_contains "  GKE:                        1 nodes of tpu7x-standard-4t (4 chips, 8 JAX devices each); gke-tpu-accelerator=tpu7x, gke-tpu-topology=2x2x1"
  expect_stdout_lacks "tpu-vm create"
  run slice tpu7x-128 --format json
  expect_status 0
  python3 - "$out" <<'PY' || fail "slice json lacks tpu7x-128's GKE facts"
import json, sys
s = json.loads(sys.argv[1])
assert s["routes"] == ["gke"] and s["create_command"] is None, s
assert s["gke"] == {"accelerator": "tpu7x", "topology": "4x4x4", "machine_type": "tpu7x-standard-4t", "nodes": 16,
                    "chips_per_node": 4, "devices_per_node": 8}, s["gke"]
PY
  run -C "$COURSE" plan collective-update --slice tpu7x-16 "${TPU_FLAGS[@]}"
  expect_status 3
  expect_stdout_empty
  expect_one_refusal_line
  expect_stderr_contains "slice 'tpu7x-16' is tpu7x, which the Cloud TPU VM API (gcloud compute tpus tpu-vm) does not reach: the Cloud TPU API does not support TPU7x and later: use GKE"
  run -C "$COURSE" plan collective-update --slice tpu7x-12 "${TPU_FLAGS[@]}"
  expect_status 3
  expect_stderr_contains "use GKE"
  run slices
  expect_status 0
  expect_stdout_contains $'\nTPU VM API (gcloud compute tpus tpu-vm): v2, v3, v4, v5e, v5p, v6e\n'
  expect_stdout_contains "not reached by it (provisioned through Compute Engine or GKE; tpulaunch's TPU-VM route refuses them): tpu7x"
  expect_stdout_contains "GKE (cloud.google.com/gke-tpu-accelerator): v4 tpu-v4-podslice, v5e tpu-v5-lite-podslice, v5p tpu-v5p-slice, v6e tpu-v6e-slice, tpu7x tpu7x"
  expect_stdout_contains "v5litepod-8"
  run slices --format json
  python3 - "$out" <<'PY' || fail "slices json does not say which generations the TPU VM API and GKE reach"
import json, sys
doc = json.loads(sys.argv[1])
g = {x["id"]: x for x in doc["generations"]}
assert g["tpu7x"] == {"id": "tpu7x", "api": "compute-engine-or-gke", "tpu_vm_api": False, "devices": "any",
                      "gke_accelerator": "tpu7x"}, g
assert g["v4"]["devices"] == "accel" and g["v5e"]["devices"] == "vfio" and g["v6e"]["tpu_vm_api"] is True, g
assert g["v3"]["gke_accelerator"] is None, g
rows = {s["name"]: s for s in doc["slices"]}
assert rows["v5litepod-8"]["hosts"] == 1 and rows["v5litepod-8"]["gke"]["nodes"] == 2, rows["v5litepod-8"]
assert rows["v5litepod-16"]["routes"] == ["tpu-vm", "gke"] and rows["v3-8"]["routes"] == ["tpu-vm"], rows["v3-8"]
assert rows["tpu7x-16"]["gke"]["nodes"] == 2 and rows["tpu7x-16"]["runtime_version"] == "", rows["tpu7x-16"]
PY
}

case_slices__multi_and_single_host() {
  run slices --multi-host --only v5litepod-4,v5litepod-8,v5litepod-16,v6e-16
  expect_status 0
  expect_stdout_contains "v5litepod-16"
  expect_stdout_contains "v6e-16"
  expect_stdout_lacks "v5litepod-8 "
  run slices --single-host --format json
  expect_status 0
  python3 - "$out" <<'PY' || fail "--single-host lists a multi-host slice"
import json, sys
rows = json.loads(sys.argv[1])["slices"]
assert rows and all(not r["multi_host"] for r in rows)
assert {"v2-8", "v3-8", "v4-8", "v5p-8", "v5litepod-1", "v5litepod-4", "v5litepod-8", "v6e-1", "v6e-4", "v6e-8",
        "tpu7x-2", "tpu7x-8"} == {r["name"] for r in rows}
PY
  run slices --multi-host --single-host
  expect_status 2
  expect_one_error_line
}

# Every generation up to its largest public slice (docs/catalog.md, "Sizes, per generation"), and
# the largest explains itself: hosts are the VMs --worker=all reaches, the name counts TensorCores.
case_slices__largest_public_sizes() {
  run slices --format json
  expect_status 0
  python3 - "$out" <<'PY' || fail "slices json lacks a largest public slice or its figures"
import json, sys
rows = {s["name"]: s for s in json.loads(sys.argv[1])["slices"]}
for name, hosts, chips, devices, hbm in [("v2-512", 64, 256, 512, 16), ("v3-2048", 256, 1024, 2048, 32),
                                         ("v4-4096", 512, 2048, 2048, 32), ("v5litepod-256", 64, 256, 256, 16),
                                         ("v5p-12288", 1536, 6144, 6144, 95), ("v6e-256", 64, 256, 256, 32)]:
    r = rows[name]
    assert (r["hosts"], r["global_chips"], r["device_count"], r["hbm_gib_per_chip"]) == (hosts, chips, devices, hbm), r
    gen = r["generation"]
    assert max(s["global_chips"] for s in rows.values() if s["generation"] == gen) == chips, name
PY
  run slices
  expect_status 0
  expect_stdout_contains "v5p-12288       1536  6144      4    6144      4     95G   583680G  yes        v2-alpha-tpuv5"
  run slice v5p-12288
  expect_status 0
  expect_stdout_contains "v5p-12288 (v5p, topology 16x16x24; the 12288 in the name counts TensorCores, 2 per chip)"
  expect_stdout_contains "  hosts (TPU VMs):            1536  (multi-host: --worker=all)"
  expect_stdout_contains "  global chips:               6144"
  expect_stdout_contains "  jax.device_count():         6144"
  expect_stdout_contains "  HBM:                        95 GiB per chip, 583680 GiB total"
}

# A plan for the largest slice: nothing in the planner stops at 64 hosts. Every worker gets its
# download folder and its download, written once as a loop over the 1536 workers (issue 37 §3:
# no line per worker), and verify is told the slice; the plan says what per-worker retrieval costs.
case_plan__largest_slice_has_every_worker() {
  run -C "$COURSE" plan collective-update --slice v5p-12288 --tpu big-pod --zone us-east5-a --run-id r1
  expect_status 0
  expect_stderr_empty
  expect_stdout_contains "route:  multi-host: v5p-12288 has 1536 hosts x 4 chips = 6144 chips; every worker runs the script (--worker=all), 4 local and 6144 global JAX devices each"
  expect_stdout_contains " ./tpu-runs/big-pod/collective-update/r1/worker-{0..1535}/"$'\n'
  expect_stdout_contains "  for ((w = 0; w < 1536; w++)); do gcloud compute tpus tpu-vm scp --recurse"
  expect_stdout_contains "--zone=us-east5-a --worker=\"\$w\"; done"$'\n'
  expect_stdout_lacks "--worker=1536"
  expect_stdout_contains "no --results: the 1536 workers' results come back in 1536 gcloud calls"
  local fetches
  fetches=$(grep -c '^  # fetch: bring back ' <<<"$out")
  [[ "$fetches" == 1 ]] || fail "expected 1 fetch step, got $fetches"
  expect_stdout_contains "verify ./tpu-runs/big-pod/collective-update/r1 --slice=v5p-12288 --kind=training"
  # The sh form stays small (it was 340 kB with a line per worker).
  run -C "$COURSE" plan collective-update --slice v5p-12288 --tpu big-pod --zone us-east5-a --run-id r1 --format sh
  expect_status 0
  ((${#out} < 20000)) || fail "the v5p-12288 sh plan is ${#out} bytes"
}

# The first line of `slice` says what the number in the name counts.
case_slice__says_what_the_name_counts() {
  run slice v5p-128
  expect_status 0
  expect_stdout_contains "v5p-128 (v5p, topology 4x4x4; the 128 in the name counts TensorCores, 2 per chip)"
  expect_stdout_contains "  global chips:               64"
  run slice v6e-16
  expect_status 0
  expect_stdout_contains "v6e-16 (v6e, topology 4x4; the 16 in the name counts chips)"
  expect_stdout_contains "  hosts (TPU VMs):            4  (multi-host: --worker=all)"
}

case_slices__svg_figure() {
  run slices --format svg --only v5litepod-4,v5litepod-8,v5litepod-16,v6e-16
  expect_status 0
  python3 - "$out" <<'PY' || fail "the SVG is not well-formed or its bars are wrong"
import sys, xml.etree.ElementTree as ET
root = ET.fromstring(sys.argv[1])
ns = "{http://www.w3.org/2000/svg}"
bars = {(r.get("data-slice"), r.get("data-metric")): int(r.get("data-value")) for r in root.iter(ns + "rect") if r.get("class") == "bar"}
expected = {"v5litepod-4": (1, 4, 4), "v5litepod-8": (1, 8, 8), "v5litepod-16": (4, 4, 16), "v6e-16": (4, 4, 16)}
for s, (h, c, g) in expected.items():
    assert bars[(s, "hosts")] == h and bars[(s, "chips_per_host")] == c and bars[(s, "global_chips")] == g, (s, bars)
assert len(bars) == 12
heights = {k: float(r.get("height")) for r in root.iter(ns + "rect") if r.get("class") == "bar" for k in [(r.get("data-slice"), r.get("data-metric"))]}
# Bar heights are proportional to the values.
assert abs(heights[("v6e-16", "global_chips")] / heights[("v6e-16", "hosts")] - 4.0) < 1e-6
texts = " ".join(t.text or "" for t in root.iter(ns + "text"))
assert "accelerator type" in texts and "count" in texts and "global chips" in texts
PY
  run slices --format svg --only v5litepod-4,nope
  expect_status 2
  expect_one_error_line
}

# The exit codes the built binary's --help prints, row for row, are the tables in README.md and
# docs/cli.md: same rows, same order, none missing on either side. (docs_test checks the code's table
# against the docs; this checks what a user of the binary reads, and that no doc keeps a stale row.)
case_docs__help_exit_codes_match_readme() {
  run --help
  expect_status 0
  local help doc path
  help=$(sed -n '/^Exit codes:/,$p' <<<"$out" | grep -E '^  [0-9]+' |
    sed -E 's/^  ([0-9]+) +([a-z]+) +(.*)$/| \1 | \2 | \3 |/')
  [[ $(wc -l <<<"$help") -ge 5 ]] || fail "--help lists fewer than five exit codes: $help"
  for path in README.md docs/cli.md; do
    # The exit-code table only: from its heading to the next one (docs/cli.md has more tables).
    doc=$(sed -n '/^## Exit codes/,/^##* [^E]/p' "$SOURCE_DIR/$path" | grep -E '^\| [0-9]+ \| [a-z]+ \|')
    diff -u <(printf '%s\n' "$doc") <(printf '%s\n' "$help") >&2 ||
      fail "the exit codes of --help differ from the table in $path"
  done
}

case_standin__selftest() {
  bash "$STANDIN/selftest.sh" rest >&2 || fail "the gcloud stand-in's self-test failed"
}

# The self-test's part on a run's mark and a dropped connection, apart (it stands alone), so that
# ctest runs it beside the rest and neither nears the time limit.
case_standin__selftest_mark() {
  bash "$STANDIN/selftest.sh" mark >&2 || fail "the gcloud stand-in's self-test (mark, dropped connection) failed"
}

# --- verbose: -v logs each decision to stderr through spdlog; stdout is unchanged ----------------

# verbose_run NAME ARGS...: runs tpulaunch ARGS and tpulaunch -v ARGS; their stdout must be byte
# for byte the same and their exit codes equal. Leaves `err` = the -v run's stderr and `quiet_err`
# = the plain run's stderr.
verbose_run() {
  local name=$1 dir plain_status=0
  shift
  dir=$(workdir "verbose-$name")
  "$TPULAUNCH" "$@" >"$dir/plain.out" 2>"$dir/plain.err" </dev/null || plain_status=$?
  status=0
  "$TPULAUNCH" -v "$@" >"$dir/verbose.out" 2>"$dir/verbose.err" </dev/null || status=$?
  [[ "$status" == "$plain_status" ]] || fail "-v changed the exit code: $plain_status, with -v $status"
  [[ -s "$dir/plain.out" || "$plain_status" != 0 ]] || fail "the plain run printed nothing on stdout"
  cmp "$dir/plain.out" "$dir/verbose.out" >&2 || fail "-v changed stdout"
  err=$(cat "$dir/verbose.err")
  quiet_err=$(cat "$dir/plain.err")
}

case_verbose__plan_logs_its_decisions() {
  verbose_run plan -C "$COURSE" plan collective-update --slice v5litepod-16 "${TPU_FLAGS[@]}"
  expect_status 0
  [[ -z "$quiet_err" ]] || fail "without -v, plan wrote to stderr: $quiet_err"
  expect_stderr_contains "tpulaunch: debug: catalog: the built-in table, <embedded catalog/slices.json> ("
  expect_stderr_contains "tpulaunch: debug: matrix: execution-matrix.json (4 scripts)"
  expect_stderr_contains "tpulaunch: debug: read matrix 'execution-matrix.json' ("
  expect_stderr_contains "tpulaunch: debug: read script 'public/exercises/collective-update.py' ("
  expect_stderr_contains "tpulaunch: debug: classified public/exercises/collective-update.py: "
  local rule
  for rule in review-required cpu-only-stays-on-cpu tpu-class-needs-slice multi-host-needs-qualified \
    source-selects-cpu source-lacks-initialize; do
    expect_stderr_contains "tpulaunch: debug: route 'collective-update' on v5litepod-16: rule $rule: passes"
  done
  expect_stderr_contains "tpulaunch: debug: route 'collective-update' on v5litepod-16: multi-host"
  # A refused route names the rule that refused it, and the rules after it are not checked.
  verbose_run plan-refused -C "$COURSE" plan tpu-hello --slice v5litepod-16 "${TPU_FLAGS[@]}"
  expect_status 3
  expect_stderr_contains "tpulaunch: debug: route 'tpu-hello' on v5litepod-16: rule multi-host-needs-qualified: refuses"
  [[ "$err" != *"rule source-selects-cpu"* ]] || fail "a rule after the refusing one was checked: $err"
  # --catalog FILE: the file is named as the catalog's source.
  verbose_run plan-catalog -C "$COURSE" --catalog "$SOURCE_DIR/catalog/slices.json" plan distributed-02
  expect_status 0
  expect_stderr_contains "tpulaunch: debug: catalog: the file $SOURCE_DIR/catalog/slices.json ("
  expect_stderr_contains "tpulaunch: debug: route 'distributed-02' on the CPU: cpu"
}

case_verbose__check_logs_each_file() {
  verbose_run check -C "$COURSE" check
  expect_status 0
  expect_stderr_contains "tpulaunch: debug: matrix: execution-matrix.json (4 scripts)"
  local script
  for script in distributed-02 tpu-hello collective-update; do
    expect_stderr_contains "tpulaunch: debug: read script 'public/exercises/$script.py' ("
    expect_stderr_contains "tpulaunch: debug: classified public/exercises/$script.py: "
  done
  # Without -v, check writes nothing extra: every stderr line of the plain run is in the -v run's.
  local line
  while IFS= read -r line; do
    [[ -z "$line" ]] || grep -qxF -- "$line" <<<"$err" || fail "the -v run lacks the plain stderr line: $line"
  done <<<"$quiet_err"
  [[ "$quiet_err" != *"debug:"* ]] || fail "without -v, check logged: $quiet_err"
}

# tpulaunch guard prints the run guard every TPU plan stages: the bytes a plan pins by digest, a
# file shellcheck accepts; --write puts it in place whole (mode 0644), and --sha256 refuses a
# tpulaunch whose guard is not the one the plan pinned, writing nothing.
case_guard__prints_and_writes_the_pinned_program() {
  local dir digest name
  dir=$(workdir guard)
  run guard
  expect_status 0
  expect_stdout_contains "# tpulaunch run guard: what a plan's bootstrap and run steps run on every TPU VM worker."
  printf '%s\n' "$out" >"$dir/printed.sh"
  shellcheck --shell=bash "$dir/printed.sh" || fail "the printed guard does not pass shellcheck"
  digest=$(sha256sum "$dir/printed.sh" | cut -d' ' -f1)
  # The plan names the same file and digest.
  run -C "$COURSE" plan collective-update --slice v5litepod-16 --tpu my-pod --zone us-west4-a --format json
  expect_status 0
  name=$(python3 -c 'import json, re, sys
argv = [s for s in json.loads(sys.argv[1])["steps"] if s["name"] == "run"][0]["argv"]
print(re.search(r"--guard-sha256 ([0-9a-f]{64})", " ".join(argv)).group(1))' "$out")
  [[ $name == "$digest" ]] || fail "the plan pins another guard: $name"
  run guard --write "$dir/written.sh" --sha256 "$digest"
  expect_status 0
  expect_stdout_empty
  cmp -s "$dir/printed.sh" "$dir/written.sh" || fail "--write wrote other bytes than guard prints"
  [[ $(stat -c %a "$dir/written.sh") == 644 ]] || fail "the written guard is not mode 0644"
  run guard --write "$dir/other.sh" --sha256 "$(printf '0%.0s' {1..64})"
  expect_status 3
  expect_one_refusal_line
  expect_stderr_contains "this tpulaunch's run guard has sha256 $digest, not 0000"
  [[ ! -e $dir/other.sh ]] || fail "a refused guard was written"
  run guard --write "$dir/no/such/folder/g.sh"
  expect_status 1
  expect_one_error_line
  expect_stderr_contains "$dir/no/such/folder"
  run guard --discovery
  expect_status 0
  expect_stdout_contains "import jax"
}

# A TPU route sets JAX_PLATFORMS=tpu and says so; a review may record another value (tpu,cpu), which
# the plan then sets and shows, and --env JAX_PLATFORMS is accepted only when it repeats it.
case_plan__jax_platforms_is_tpu_unless_reviewed() {
  local dir
  dir=$(course_copy plan-jax-platforms)
  local -a tpu=(--slice v5litepod-8 --tpu my-pod --zone us-west4-a)
  run -C "$dir" plan tpu-hello "${tpu[@]}"
  expect_status 0
  expect_stdout_contains "env:    JAX_PLATFORMS=tpu (tpulaunch's default on a TPU route), TPU_RUN_DIR=~/jax-tpu-lab/runs/"
  run -C "$dir" plan tpu-hello "${tpu[@]}" --env JAX_PLATFORMS=tpu,cpu
  expect_status 2
  expect_one_error_line
  expect_stderr_contains "--env JAX_PLATFORMS=tpu,cpu: a TPU route sets JAX_PLATFORMS=tpu itself; another value needs a review that records it: tpulaunch review tpu-hello"
  expect_stdout_empty
  run -C "$dir" review tpu-hello --class cpu-only --by e2e --jax-platforms tpu,cpu
  expect_status 2
  expect_stderr_contains "a cpu-only script never runs on a TPU route"
  run -C "$dir" review tpu-hello --class single-host-compatible --by e2e --jax-platforms cpu
  expect_status 2
  expect_stderr_contains "JAX platform list"
  run -C "$dir" review tpu-hello --class single-host-compatible --by e2e --jax-platforms tpu,cpu
  expect_status 0
  expect_stdout_contains "TPU routes set JAX_PLATFORMS=tpu,cpu (in place of tpu)"
  grep -q '"jax_platforms": "tpu,cpu"' "$dir/execution-matrix.json" || fail "the review did not record jax_platforms"
  run -C "$dir" plan tpu-hello "${tpu[@]}" --env JAX_PLATFORMS=tpu,cpu
  expect_status 0
  expect_stdout_contains "env:    JAX_PLATFORMS=tpu,cpu (the script's reviewed value)"
  expect_stdout_contains " --env JAX_PLATFORMS=tpu,cpu --python "
  run -C "$dir" plan tpu-hello "${tpu[@]}" --format json
  python3 -c 'import json,sys; j=json.loads(sys.argv[1]); assert j["jax_platforms"] == {"value": "tpu,cpu", "source": "reviewed"}, j["jax_platforms"]' "$out" ||
    fail "the json form does not say what JAX_PLATFORMS is"
  # A value no review could record, written by hand, is a config error at its position.
  sed -i 's/"jax_platforms": "tpu,cpu"/"jax_platforms": "cpu"/' "$dir/execution-matrix.json"
  run -C "$dir" plan tpu-hello "${tpu[@]}"
  expect_status 4
  expect_one_error_line
  expect_stderr_contains "execution-matrix.json:"
  expect_stderr_contains "JAX platform list"
}

# A lesson that imports course files (a module beside it and a package below it) has them staged
# with it, in the same scp call, each moved into place and digest-checked by the run guard: the
# import works on every worker, and a changed helper makes the script stale (no route).
case_pipeline__helper_modules_are_staged_with_the_script() {
  local dir
  dir=$(standin_course pipeline-helpers 4)
  mkdir -p "$dir/public/exercises/pkg"
  printf 'GREETING = "from lesson_helpers"\n' >"$dir/public/exercises/lesson_helpers.py"
  printf '' >"$dir/public/exercises/pkg/__init__.py"
  printf 'def answer():\n    return 42\n' >"$dir/public/exercises/pkg/util.py"
  { printf 'import lesson_helpers\nfrom pkg.util import answer\nassert answer() == 42, lesson_helpers.GREETING\n'
    cat "$STANDIN/lesson_standin.py"; } >"$dir/public/exercises/standin-lesson.py"
  "$TPULAUNCH" -C "$dir" review standin-lesson --class multi-host-qualified --by e2e-tests --proves training >/dev/null ||
    fail "the lesson could not be reviewed"
  run -C "$dir" plan standin-lesson --slice v5litepod-16 "${PIPE_FLAGS[@]}" --bootstrap --format json
  expect_status 0
  # Each at its course-relative path below the stage folder's code/.
  python3 -c 'import json,sys; s=json.loads(sys.argv[1])["staged"]; p=[x["path"] for x in s]
assert p == ["public/exercises/" + f for f in ("standin-lesson.py", "lesson_helpers.py", "pkg/__init__.py", "pkg/util.py")], p' "$out" ||
    fail "the course files are not staged in place: $out"
  run -C "$dir" plan standin-lesson --slice v5litepod-16 "${PIPE_FLAGS[@]}" --bootstrap --format sh
  expect_status 0
  printf '%s\n' "$out" >"$dir/run.sh"
  run_pipeline "$dir" run.sh
  expect_status 0
  expect_stdout_contains "verified"
  # A changed helper: the review no longer holds.
  printf 'GREETING = "changed"\n' >"$dir/public/exercises/lesson_helpers.py"
  run -C "$dir" plan standin-lesson --slice v5litepod-16 "${PIPE_FLAGS[@]}"
  expect_status 3
  expect_stderr_contains "lesson_helpers.py"
}

if [[ $# -ne 1 ]] || ! declare -F "$1" >/dev/null; then
  echo "usage: cases.sh case_<command>__<name>" >&2
  exit 2
fi
"$1"
finish
