#!/usr/bin/env bash
# End-to-end cases of every form's promises (issue 35 §3): JSON that refuses, by name, a value it
# cannot carry; the sh form's notes; pasted text that runs what sh runs; check's JSON for every
# outcome; messages in tpulaunch's words; verify's stand-in warning for logs. ctest runs one
# function per entry, as for cases.sh:
#   TPULAUNCH=build/ci/tpulaunch SOURCE_DIR=. bash tests/e2e/forms_cases.sh case_plan__json_refuses_values_that_are_not_utf8
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

TPU_FLAGS=(--tpu my-pod --zone us-west4-a --run-id r1)
PIPE_FLAGS=(--tpu lab-pod --zone us-west4-a --project lab-project-1 --run-id r1)

expect_stderr_lacks() {
  if [[ "$err" == *"$1"* ]]; then
    fail "stderr should not contain: $1"$'\n'"--- stderr:"$'\n'"$err"
  fi
}

# --format json with a value that is not UTF-8: one error line naming where the value stands in
# the JSON, the value and its byte (exit 2, nothing on stdout); text and sh carry the same value.
case_plan__json_refuses_values_that_are_not_utf8() {
  local place value
  for place in env args python; do
    local -a extra=()
    case $place in
      env) extra=(--env SEED=$'caf\xe9') value='/env/SEED: '\''caf\xe9'\'' is not UTF-8 (byte 0xe9 at offset 3)' ;;
      args) extra=(-- --steps $'1\xff0') value='/args/1: '\''1\xff0'\'' is not UTF-8 (byte 0xff at offset 1)' ;;
      python) extra=(--python $'/opt/py\xc3/bin/python') value='/python: '\''/opt/py\xc3/bin/python'\'' is not UTF-8 (byte 0xc3 at offset 7)' ;;
    esac
    run -C "$COURSE" plan collective-update --slice v5litepod-16 "${TPU_FLAGS[@]}" --format json "${extra[@]}"
    expect_status 2
    expect_stdout_empty
    expect_one_error_line
    expect_stderr_contains "tpulaunch: error: --format json cannot carry the value at $value, and JSON text is UTF-8"
    for format in text sh; do
      run -C "$COURSE" plan collective-update --slice v5litepod-16 "${TPU_FLAGS[@]}" --format "$format" "${extra[@]}"
      expect_status 0
    done
  done
  # The folder the plan is made in (its commands start there).
  local dir
  dir=$(workdir "forms-json-folder")/$'caf\xe9'
  mkdir -p "$dir" && cp -R "$COURSE/." "$dir/"
  run -C "$dir" plan distributed-02 --format json
  expect_status 2
  expect_stdout_empty
  expect_one_error_line
  expect_stderr_contains "--format json cannot carry the value at /directory: '"
  expect_stderr_contains "caf\\xe9' is not UTF-8 (byte 0xe9 at offset "
  run -C "$dir" plan distributed-02 --format sh
  expect_status 0
}

# verify, classify and check: the same refusal; classify reports the file it cannot carry on its
# own line and the others on stdout.
case_verify__json_refuses_a_folder_that_is_not_utf8() {
  local dir
  dir=$(workdir "forms-json-verify")/$'run-\xe9'
  mkdir -p "$dir"
  run verify "$dir" --slice v5litepod-8 --format json
  expect_status 2
  expect_stdout_empty
  expect_one_error_line
  expect_stderr_contains "--format json cannot carry the value at /folder: '"
  run verify "$dir" --slice v5litepod-8
  expect_status 3
  expect_stdout_contains "not verified"
}

case_classify__json_reports_a_file_name_that_is_not_utf8_on_its_own_line() {
  local dir
  dir=$(workdir "forms-json-classify")
  printf 'import jax\nprint(jax.devices())\n' >"$dir/good.py"
  printf 'import jax\n' >"$dir/"$'caf\xe9.py'
  run classify "$dir" --format json
  expect_status 2
  expect_one_error_line
  expect_stderr_contains "caf\\xe9.py: --format json cannot carry the value at /path: '"
  expect_stdout_contains '"path": "'"$dir"'/good.py"'
  expect_stdout_lacks 'caf'
  python3 -c 'import json, sys; d = json.load(sys.stdin); sys.exit(len(d["files"]) != 1)' <<<"$out" ||
    fail "stdout is not one file's JSON: $out"
  run classify "$dir"
  expect_status 0
}

# check's JSON carries no value that is not UTF-8 either: its error document quotes it as messages do.
case_check__json_refuses_a_matrix_path_that_is_not_utf8() {
  local dir
  dir=$(workdir "forms-json-check")/$'c\xe9'
  mkdir -p "$dir" && cp -R "$COURSE/." "$dir/"
  run check --matrix "$dir/execution-matrix.json" --format json
  expect_status 2
  expect_one_error_line
  expect_stderr_contains "--format json cannot carry the value at /matrix: '"
  python3 -c 'import json, sys; d = json.load(sys.stdin); f = d["findings"][0]
sys.exit(not (d["ok"] is False and f["kind"] == "usage" and "\\xe9" in d["matrix"] and "/matrix" in f["message"]))' <<<"$out" ||
    fail "not the error document: $out"
}

# check --format json prints a JSON document for every outcome, with the exit codes the table
# gives: clean (0), findings (3), a malformed matrix (4, its line in the finding), no matrix at
# all (4), a bad --route (2).
case_check__json_prints_a_document_for_every_outcome() {
  local dir empty
  dir=$(course_copy "forms-check-json-outcomes")
  empty=$(workdir "forms-check-json-empty")
  local -a outcomes=("0|-C $dir check --format json --route collective-update@v5litepod-16"
    "3|-C $dir check --format json --strict"
    "2|-C $dir check --format json --route tpu-hello@v5e-99"
    "4|-C $empty check --format json"
    "4|-C $dir check --format json --matrix broken.json")
  printf '{"version": 1,\n "scripts": {,}}\n' >"$dir/broken.json"
  local entry want
  for entry in "${outcomes[@]}"; do
    want=${entry%%|*}
    # shellcheck disable=SC2086 # the arguments are words on purpose
    run ${entry#*|}
    expect_status "$want"
    python3 -c 'import json, sys
d = json.load(sys.stdin)
assert set(d) == {"ok", "matrix", "scripts", "entries", "errors", "warnings", "findings"}, d
assert d["ok"] == (sys.argv[1] == "0"), d
assert d["errors"] == len([f for f in d["findings"] if f["severity"] == "error"]), d
' "$want" <<<"$out" || fail "exit $want: stdout is not check's document: $out"
    if [[ $want == 2 || $want == 4 ]]; then
      expect_one_error_line
    fi
  done
  run -C "$dir" check --format json --matrix broken.json
  python3 -c 'import json, sys; f = json.load(sys.stdin)["findings"][0]
sys.exit(not (f["kind"] == "config" and f["path"] == "broken.json" and f["line"] == 2 and f["column"] > 0))' <<<"$out" ||
    fail "the config error's finding lacks its file and line: $out"
}

# --format github: an annotation carries line= whenever its message names a line, in words too
# ("at line 10"), and points at the file it names ("at helper.py line 5").
case_check__github_annotations_carry_the_line_the_message_names() {
  local dir
  dir=$(course_copy "forms-check-github-line")
  mkdir "$dir/.git"
  run -C "$dir" check --format github --route distributed-02@v5litepod-8
  expect_status 3
  expect_stdout_contains "::error file=public/exercises/distributed-02.py,line=10,title=tpulaunch route-refused::route distributed-02@v5litepod-8 refused by cpu-only-stays-on-cpu: 'distributed-02' is cpu-only (it selects CPU devices at line 10 "
  printf 'import jax\n\n\ndef pick():\n    return jax.devices("cpu")\n' >"$dir/public/exercises/helper.py"
  printf 'from helper import pick\npick()\n' >"$dir/public/exercises/picker.py"
  python3 - "$dir/execution-matrix.json" <<'PY'
import json, sys
path = sys.argv[1]
m = json.load(open(path))
m["helpers"] = ["public/exercises/helper.py"]
json.dump(m, open(path, "w"), indent=2)
PY
  "$TPULAUNCH" -C "$dir" review picker --class cpu-only --by e2e-tests >/dev/null
  run -C "$dir" check --format github --route picker@v5litepod-8
  expect_status 3
  expect_stdout_contains "::error file=public/exercises/helper.py,line=5,title=tpulaunch route-refused::route picker@v5litepod-8 refused by cpu-only-stays-on-cpu: 'picker' is cpu-only (it selects CPU devices at helper.py line 5 "
}

# review writes JSON (the matrix): a --by or --note that is not UTF-8 is refused before the
# matrix is touched.
case_review__values_that_are_not_utf8_are_refused() {
  local dir before
  dir=$(course_copy "forms-review-utf8")
  before=$(cat "$dir/execution-matrix.json")
  run -C "$dir" review distributed-02 --class cpu-only --by $'r\xe9viewer'
  expect_status 2
  expect_one_error_line
  expect_stderr_contains "--by 'r\\xe9viewer': byte 0xe9 at offset 1 is not UTF-8"
  [[ "$(cat "$dir/execution-matrix.json")" == "$before" ]] || fail "the matrix changed"
  run -C "$dir" review distributed-02 --class cpu-only --by reviewer --note $'ok\xff'
  expect_status 2
  expect_stderr_contains "--note 'ok\\xff': byte 0xff at offset 2 is not UTF-8"
}

# A long source line with a non-ASCII character where the evidence text is cut (200 bytes): the
# cut keeps the character whole, so the JSON still carries it.
case_classify__json_carries_a_long_line_cut_inside_a_character() {
  local dir prefix
  dir=$(workdir "forms-json-evidence-cut")
  prefix=$(printf 'x%.0s' $(seq 1 199))
  printf 'import jax\njax.devices("cpu")  # %s\xc3\xa9 and more\n' "${prefix:0:177}" >"$dir/long.py"
  run classify "$dir/long.py" --format json
  expect_status 0
  python3 -c 'import json, sys; d = json.load(sys.stdin); t = d["files"][0]["evidence"][0]["text"]; sys.exit(not t.endswith("..."))' <<<"$out" ||
    fail "the evidence text was not cut and carried: $out"
}

# echo_course NAME: a copy of the example course with echo-args, a cpu-only script that prints
# its arguments and $NOTE exactly (repr), reviewed.
echo_course() {
  local dir
  dir=$(course_copy "$1")
  cat >"$dir/public/exercises/echo-args.py" <<'PY'
import os
import sys

print(repr(sys.argv[1:]), repr(os.environ.get("NOTE")))
PY
  "$TPULAUNCH" -C "$dir" review echo-args --class cpu-only --by e2e-tests >/dev/null
  printf '%s\n' "$dir"
}

# The commands section of a text-form plan as a person copies it: every line between
# "commands:" and the notes (or the end), indentation and all.
pasted_commands() {
  sed -n '/^commands:$/,/^notes:$/p' <<<"$1" | sed -e '1d' -e '/^notes:$/d'
}

# Values that hold newlines (and lines that start with spaces) reach the program exactly when the
# text form is pasted, as when the sh form runs: the text form indents where a command starts,
# never inside a quoted value.
case_plan__pasted_text_keeps_multi_line_values_exact() {
  local dir
  dir=$(echo_course "forms-paste-multiline")
  local -a values=(--env NOTE=$'first\n  second\n\tthird' -- $'a\nb' $'  two\n    four' 'plain')
  run -C "$dir" plan echo-args "${values[@]}"
  expect_status 0
  expect_stdout_contains $'\'a\nb\''
  pasted_commands "$out" >"$dir/pasted.txt"
  [[ $(head -c 2 "$dir/pasted.txt") == "  " ]] || fail "the commands are not indented where they start"
  (cd "$dir" && bash -s <"$dir/pasted.txt" >"$dir/pasted.out" 2>&1) || fail "the pasted commands failed: $(cat "$dir/pasted.out")"
  mv "$dir/echo-args-cpu.txt" "$dir/pasted-receipt.txt"
  run -C "$dir" plan echo-args --format sh "${values[@]}"
  expect_status 0
  printf '%s\n' "$out" >"$dir/run.sh"
  (cd /tmp && bash "$dir/run.sh" >"$dir/sh.out" 2>&1) || fail "the sh form failed: $(cat "$dir/sh.out")"
  local want
  want="['a\\nb', '  two\\n    four', 'plain'] 'first\\n  second\\n\\tthird'"
  [[ "$(cat "$dir/echo-args-cpu.txt")" == "$want" ]] || fail "sh gave: $(cat "$dir/echo-args-cpu.txt")"
  [[ "$(cat "$dir/pasted-receipt.txt")" == "$want" ]] || fail "the paste gave: $(cat "$dir/pasted-receipt.txt")"
}

# Pasted into a person's shell, the CPU route's run line leaves no `set -o pipefail` behind, and
# still gives the program's status (not tee's): a failed program replaces no receipt.
case_plan__pasted_cpu_route_leaves_the_shell_as_it_was() {
  local dir
  dir=$(echo_course "forms-paste-pipefail")
  run -C "$dir" plan echo-args -- ok
  expect_status 0
  expect_stdout_contains "  ( set -o pipefail; python3 public/exercises/echo-args.py ok | tee "
  pasted_commands "$out" >"$dir/pasted.txt"
  printf '%s\n' '[[ -o pipefail ]] && echo "pipefail: on" || echo "pipefail: off"' >>"$dir/pasted.txt"
  (cd "$dir" && bash -s <"$dir/pasted.txt" >"$dir/pasted.out" 2>&1) || fail "the paste failed: $(cat "$dir/pasted.out")"
  grep -qx "pipefail: off" "$dir/pasted.out" || fail "the paste left pipefail set: $(cat "$dir/pasted.out")"
  grep -qx "\['ok'\] None" "$dir/echo-args-cpu.txt" || fail "the receipt: $(cat "$dir/echo-args-cpu.txt")"
  # A program that fails: its status reaches the shell, and the last good receipt stays.
  printf 'import sys\nprint("partial output")\nsys.exit(3)\n' >>"$dir/public/exercises/echo-args.py"
  "$TPULAUNCH" -C "$dir" review echo-args --class cpu-only --by e2e-tests >/dev/null
  run -C "$dir" plan echo-args -- ok
  pasted_commands "$out" >"$dir/pasted.txt"
  printf '%s\n' 'echo "status: $?"' >>"$dir/pasted.txt"
  (cd "$dir" && bash -s <"$dir/pasted.txt" >"$dir/pasted.out" 2>&1)
  grep -qx "status: 3" "$dir/pasted.out" || fail "the failed program's status was lost: $(cat "$dir/pasted.out")"
  grep -qx "\['ok'\] None" "$dir/echo-args-cpu.txt" || fail "a failed run replaced the receipt"
}

# An empty --python (or --tpu, --run-id) is a mistake, not the default: a usage error naming it.
case_plan__empty_python_is_a_usage_error() {
  local flag
  for flag in --python --tpu --run-id; do
    local -a tpu=(--tpu my-pod)
    [[ $flag != --tpu ]] || tpu=()
    run -C "$COURSE" plan collective-update --slice v5litepod-16 "${tpu[@]}" --zone us-west4-a "$flag" ''
    expect_status 2
    expect_stdout_empty
    expect_one_error_line
    expect_stderr_contains "tpulaunch: error: $flag: the value is empty: give one, or leave the option out for its default"
  done
  # The CPU route too, where --python names this machine's interpreter; `--python=` and a --python
  # last on the line give it no value at all (CLI11 said "1 required PATH missing").
  run -C "$COURSE" plan distributed-02 --python ''
  expect_status 2
  expect_one_error_line
  expect_stderr_contains "--python: the value is empty"
  for last in --python= --python; do
    run -C "$COURSE" plan distributed-02 "$last"
    expect_status 2
    expect_stdout_empty
    expect_one_error_line
    expect_stderr_contains "tpulaunch: error: --python was given no value: give one, or leave the option out for its default"
  done
  run -C "$COURSE" plan distributed-02 --slice=
  expect_stderr_contains "tpulaunch: error: --slice was given no value"
}

# A flag that takes one value, given twice, is named with both values in tpulaunch's words (not
# CLI11's "At Most 1 required but received 2"), for a command's flag and a global one alike.
case_plan__repeated_single_value_flag_says_so() {
  run -C "$COURSE" plan collective-update --slice v5litepod-16 --slice v5litepod-32 --tpu my-pod --zone us-west4-a
  expect_status 2
  expect_stdout_empty
  expect_one_error_line
  expect_stderr_contains "tpulaunch: error: --slice was given 2 times ('v5litepod-16', 'v5litepod-32'), and it takes one value: give it once"
  expect_stderr_lacks "At Most"
  run -C "$COURSE" --matrix a.json --matrix b.json plan distributed-02
  expect_status 2
  expect_one_error_line
  expect_stderr_contains "--matrix was given 2 times ('a.json', 'b.json')"
  run -C "$COURSE" review distributed-02 --class cpu-only --class=cpu-only --by me
  expect_status 2
  expect_one_error_line
  expect_stderr_contains "--class was given 2 times"
  # A flag that takes several (--env) still may be repeated.
  run -C "$COURSE" plan distributed-02 --env A=1 --env B=2
  expect_status 0
}

# Counts read as English: one host, one chip, one JAX device, one process.
case_plan__counts_read_as_english() {
  run -C "$COURSE" plan tpu-hello --slice v5litepod-1 --tpu my-pod --zone us-west4-a --run-id r1
  expect_status 0
  expect_stdout_contains "v5litepod-1 is 1 host x 1 chip; the script runs on worker 0 with 1 JAX device"$'\n'
  run -C "$COURSE" plan tpu-hello --slice v5litepod-8 --tpu my-pod --zone us-west4-a --run-id r1
  expect_stdout_contains "v5litepod-8 is 1 host x 8 chips; the script runs on worker 0 with 8 JAX devices"
  run -C "$COURSE" discover --slice v5litepod-1 --tpu my-pod --zone us-west4-a
  expect_status 0
  expect_stdout_contains "expected on v5litepod-1: 1 process, each with 1 local and 1 global JAX device"$'\n'
  run slice v5litepod-1
  expect_stdout_contains "idle if only worker 0 runs: 0 chips"
  run slice v6e-8
  expect_stdout_lacks "1 chips"
}

# verify --kind logs says when the logs come from the stand-in's fake JAX, as the other kinds do:
# a warning with the test seam, a finding without it.
case_verify__logs_from_the_stand_in_say_so() {
  local dir
  dir=$(standin_course forms-verify-logs 4)
  run -C "$dir" plan standin-lesson --slice v5litepod-16 "${PIPE_FLAGS[@]}" --bootstrap --verify logs --format sh
  expect_status 0
  printf '%s\n' "$out" >"$dir/run.sh"
  run_pipeline "$dir" run.sh
  expect_status 0
  expect_stdout_contains "verified: logs and run records of 4 workers on v5litepod-16"
  expect_stdout_contains "STAND-IN: these logs come from the gcloud stand-in's fake JAX; this is NOT a TPU result"
  TPULAUNCH_ALLOW_STANDIN=1 run verify "$dir/tpu-runs/lab-pod/standin-lesson/r1" --slice v5litepod-16 --kind logs --format json
  expect_status 0
  python3 -c 'import json, sys; d = json.load(sys.stdin); sys.exit(not (d["standin"] and not d["tpu_result"] and d["ok"]))' <<<"$out" ||
    fail "the JSON does not say stand-in: $out"
  run verify "$dir/tpu-runs/lab-pod/standin-lesson/r1" --slice v5litepod-16 --kind logs
  expect_status 3
  expect_stdout_contains "worker-0.json: backend: not a TPU result (backend 'standin')"
}

# The stand-in is the hard case (issue 35 §4): a lesson whose initialize() runs only when NUM_HOSTS
# says so is routed --worker=all, and on the stand-in, as on a TPU, its processes then form no job:
# the run fails (bounded by FAKEJAX_TIMEOUT) saying initialize() was not called, where before it
# "succeeded". With NUM_HOSTS set the same plan runs and verifies.
case_pipeline__stand_in_fails_a_multi_host_run_without_initialize() {
  local dir
  dir=$(standin_course forms-no-initialize 4)
  python3 - "$dir/public/exercises/standin-lesson.py" <<'PY'
import sys
path = sys.argv[1]
text = open(path).read()
call = "    jax.distributed.initialize()\n"
assert text.count(call) == 1, "the lesson's initialize() line moved"
text = text.replace(call, '    if int(os.environ.get("NUM_HOSTS", "1")) > 1:\n    ' + call)
open(path, "w").write(text)
PY
  # The review acknowledges the condition (issue 35 §2), as a reviewer who trusts NUM_HOSTS would.
  "$TPULAUNCH" -C "$dir" review standin-lesson --class multi-host-qualified --proves training --by e2e-tests \
    --initialize-condition "the launcher sets NUM_HOSTS" >/dev/null ||
    fail "the conditional lesson could not be reviewed"
  run -C "$dir" plan standin-lesson --slice v5litepod-16 "${PIPE_FLAGS[@]}" --bootstrap --format sh
  expect_status 0
  printf '%s\n' "$out" >"$dir/run.sh"
  FAKEJAX_TIMEOUT=2 run_pipeline "$dir" run.sh
  [[ $status != 0 ]] || fail "a multi-host run that never initializes succeeded on the stand-in"
  expect_stdout_lacks "verified:"
  grep -rq "jax.distributed.initialize() was not called" "$dir/tpu-runs/lab-pod/standin-lesson/r1" ||
    fail "no worker's log says initialize() was not called: $(cat "$dir"/tpu-runs/lab-pod/standin-lesson/r1/worker-0/r1/*.txt 2>&1)"
  # Each process saw itself alone, as JAX without initialize() does: process 0 of 1.
  grep -q "^\[process 0/1\] host .*-w-3 " "$dir"/tpu-runs/lab-pod/standin-lesson/r1/worker-3/r1/*.txt ||
    fail "worker 3 did not see itself as process 0 of 1"
  run -C "$dir" plan standin-lesson --slice v5litepod-16 --tpu lab-pod --zone us-west4-a --project lab-project-1 --run-id r2 --env NUM_HOSTS=4 --format sh
  expect_status 0
  printf '%s\n' "$out" >"$dir/run2.sh"
  run_pipeline "$dir" run2.sh
  expect_status 0
  expect_stdout_contains "verified: training receipts (detailed form) of 4 workers on v5litepod-16"
}

# The fake jax's devices per host come from the accelerator type the stand-in node was made with
# (catalog/slices.json's devices_per_host), no longer 4 whatever the slice: a lesson's receipts on a
# v5litepod-8 (8 a host) and a v3-32 (two TensorCores a chip: 8 a host, 32 in all) verify as they
# are, with no FAKEJAX_LOCAL_DEVICES.
case_pipeline__stand_in_devices_follow_the_accelerator_type() {
  local dir slice workers local_devices
  for slice in v5litepod-8:1:8 v3-32:4:8 v5litepod-16:4:4; do
    IFS=: read -r slice workers local_devices <<<"$slice"
    dir=$(standin_course "forms-devices-$slice" "$workers" --accelerator-type="$slice")
    run -C "$dir" plan standin-lesson --slice "$slice" "${PIPE_FLAGS[@]}" --bootstrap --format sh
    expect_status 0
    printf '%s\n' "$out" >"$dir/run.sh"
    run_pipeline "$dir" run.sh
    expect_status 0
    expect_stdout_contains "of $workers worker"
    expect_stdout_contains "on $slice in"
    grep -q "devices $local_devices local / $((local_devices * workers)) global" \
      "$dir"/tpu-runs/lab-pod/standin-lesson/r1/worker-0/r1/*.txt ||
      fail "$slice: worker 0 did not see $local_devices local devices"
  done
}

if [[ $# -ne 1 ]] || ! declare -F "$1" >/dev/null; then
  echo "usage: forms_cases.sh case_<command>__<name>" >&2
  exit 2
fi
"$1"
finish
