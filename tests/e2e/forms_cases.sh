#!/usr/bin/env bash
# End-to-end cases of every form's promises (issue 35 §3): JSON that refuses, by name, a value it
# cannot carry; the sh form's notes; pasted text that runs what sh runs; check's JSON for every
# outcome; messages in tpulaunch's words; verify's stand-in warning for logs. ctest runs one
# function per entry, as for cases.sh:
#   TPULAUNCH=build/ci/tpulaunch SOURCE_DIR=. bash tests/e2e/forms_cases.sh case_plan__json_refuses_values_that_are_not_utf8
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

TPU_FLAGS=(--tpu my-pod --zone us-west4-a --run-id r1)

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

case_check__json_refuses_a_matrix_path_that_is_not_utf8() {
  local dir
  dir=$(workdir "forms-json-check")/$'c\xe9'
  mkdir -p "$dir" && cp -R "$COURSE/." "$dir/"
  run check --matrix "$dir/execution-matrix.json" --format json
  expect_status 2
  expect_one_error_line
  expect_stderr_contains "--format json cannot carry the value at /matrix: '"
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

if [[ $# -ne 1 ]] || ! declare -F "$1" >/dev/null; then
  echo "usage: forms_cases.sh case_<command>__<name>" >&2
  exit 2
fi
"$1"
finish
