# Helpers for tests/e2e/cases.sh. Each case runs the built binary ($TPULAUNCH) and asserts its
# exit status, stdout and stderr. UPDATE_GOLDEN=1 rewrites golden files instead of comparing.
set -euo pipefail

: "${TPULAUNCH:?set TPULAUNCH to the built binary}"
: "${SOURCE_DIR:?set SOURCE_DIR to the source tree}"
: "${WORK_ROOT:=${TMPDIR:-/tmp}/tpulaunch-e2e}"
export COURSE="$SOURCE_DIR/examples/course"
GOLDEN="$SOURCE_DIR/tests/golden"
STANDIN="$SOURCE_DIR/tests/gcloud-standin"

failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# A fresh folder for this case.
workdir() {
  local dir="$WORK_ROOT/$1"
  rm -rf "$dir"
  mkdir -p "$dir"
  printf '%s\n' "$dir"
}

# run ARGS...: runs tpulaunch; sets $status, $out (stdout) and $err (stderr).
run() {
  local out_file err_file
  out_file=$(mktemp)
  err_file=$(mktemp)
  status=0
  "$TPULAUNCH" "$@" >"$out_file" 2>"$err_file" </dev/null || status=$?
  out=$(cat "$out_file")
  err=$(cat "$err_file")
  rm -f "$out_file" "$err_file"
}

expect_status() {
  if [[ "$status" != "$1" ]]; then
    fail "exit status $status, expected $1; stderr: $err"
  fi
}

expect_stdout_empty() {
  if [[ -n "$out" ]]; then
    fail "stdout should be empty, got: ${out:0:400}"
  fi
}

expect_stderr_empty() {
  if [[ -n "$err" ]]; then
    fail "stderr should be empty, got: ${err:0:400}"
  fi
}

expect_stdout_contains() {
  if [[ "$out" != *"$1"* ]]; then
    fail "stdout lacks: $1"$'\n'"--- stdout:"$'\n'"$out"
  fi
}

expect_stdout_lacks() {
  if [[ "$out" == *"$1"* ]]; then
    fail "stdout should not contain: $1"
  fi
}

expect_stderr_contains() {
  if [[ "$err" != *"$1"* ]]; then
    fail "stderr lacks: $1"$'\n'"--- stderr:"$'\n'"$err"
  fi
}

# The bad-input contract: exactly one line on stderr, starting "tpulaunch: error: ".
expect_one_error_line() {
  local lines
  lines=$(printf '%s\n' "$err" | wc -l)
  if [[ "$lines" != 1 || "$err" != "tpulaunch: error: "* ]]; then
    fail "expected one 'tpulaunch: error:' line on stderr, got: $err"
  fi
}

# The plan names the folder it was made in and the binary that made it, as absolute paths; golden
# files hold them as @COURSE@ and @TPULAUNCH@, so they do not depend on where the tree is.
golden_text() {
  local text=$1 course tpulaunch
  course=$(cd "$COURSE" && pwd -P)
  tpulaunch=$(readlink -f "$TPULAUNCH")
  text=${text//"$tpulaunch"/@TPULAUNCH@}
  printf '%s\n' "${text//"$course"/@COURSE@}"
}

# A refusal: exactly one line on stderr, starting "tpulaunch: refused: ".
expect_one_refusal_line() {
  local lines
  lines=$(printf '%s\n' "$err" | wc -l)
  if [[ "$lines" != 1 || "$err" != "tpulaunch: refused: "* ]]; then
    fail "expected one 'tpulaunch: refused:' line on stderr, got: $err"
  fi
}

expect_stdout_golden() {
  local file="$GOLDEN/$1"
  if [[ "${UPDATE_GOLDEN:-}" == 1 ]]; then
    golden_text "$out" >"$file"
    return
  fi
  if [[ ! -f "$file" ]]; then
    fail "golden file $file is missing (run with UPDATE_GOLDEN=1 to create it)"
    return
  fi
  if ! diff -u "$file" <(golden_text "$out") >&2; then
    fail "stdout differs from $file"
  fi
}

# A copy of the example course in a fresh folder, for cases that change it.
course_copy() {
  local dir
  dir=$(workdir "$1")
  cp -R "$COURSE/." "$dir/"
  printf '%s\n' "$dir"
}

# run_from DIR ARGS...: as run, started in DIR.
run_from() {
  local from=$1 out_file err_file
  shift
  out_file=$(mktemp)
  err_file=$(mktemp)
  status=0
  (cd "$from" && "$TPULAUNCH" "$@" >"$out_file" 2>"$err_file" </dev/null) || status=$?
  out=$(cat "$out_file")
  err=$(cat "$err_file")
  rm -f "$out_file" "$err_file"
}

finish() {
  if ((failures > 0)); then
    echo "$failures check(s) failed" >&2
    exit 1
  fi
}

# --- the gcloud stand-in ---------------------------------------------------------------------

# standin_course NAME SLICE_HOSTS [STANDIN_CREATE_ARGS...]: a course with the stand-in lesson reviewed as
# multi-host-qualified (proving training receipts), a stand-in TPU "lab-pod" with that many workers, and the environment
# the generated script needs. Prints the course folder. Nothing here is a TPU. The TPU is a
# fresh VM (no ~/jax-tpu-lab, no venv); GCLOUD_STANDIN_PREPARED=1 before the call asks for one
# prepared by the course's set-up.
standin_course() {
  local dir
  dir=$(bare_course "$1")
  GCLOUD_STANDIN_STATE="$dir/state" "$STANDIN/gcloud" standin create lab-pod --zone=us-west4-a --workers="$2" \
    --project=lab-project-1 "${@:3}" >/dev/null
  printf '%s\n' "$dir"
}

# bare_course NAME: the stand-in course without a TPU (for plans that create one or queue for it).
bare_course() {
  local dir
  dir=$(workdir "$1")
  mkdir -p "$dir/public/exercises" "$dir/state"
  cp "$STANDIN/lesson_standin.py" "$dir/public/exercises/standin-lesson.py"
  printf '{"version": 1, "exercises_dir": "public/exercises", "scripts": {}}\n' >"$dir/execution-matrix.json"
  "$TPULAUNCH" -C "$dir" review standin-lesson --class multi-host-qualified --by e2e-tests --proves training >/dev/null
  printf '%s\n' "$dir"
}

# run_pipeline DIR SCRIPT: runs a generated sh script against the stand-in in DIR; sets $status,
# $out, $err. tpulaunch, the stand-in gcloud and a stand-in ssh-add come first on PATH.
run_pipeline() {
  local dir=$1 script=$2 bin
  bin=$(dirname "$TPULAUNCH")
  status=0
  (cd "$dir" && env PATH="$STANDIN:$SOURCE_DIR/tests/e2e/bin:$bin:$PATH" GCLOUD_STANDIN_STATE="$dir/state" \
    CLOUDSDK_CORE_PROJECT=lab-project-1 TPULAUNCH_ALLOW_STANDIN=1 bash "$script" >"$dir/pipeline.out" \
    2>"$dir/pipeline.err" </dev/null) || status=$?
  out=$(cat "$dir/pipeline.out")
  err=$(cat "$dir/pipeline.err")
}

# The argv of every gcloud call the stand-in saw, one JSON array per line.
standin_calls() {
  python3 -c 'import json,sys
for line in open(sys.argv[1]):
    print(json.dumps(json.loads(line)["argv"]))' "$1/state/calls.jsonl"
}

# local_calls DIR: the gcloud calls made on the user's machine (calls.jsonl lines without
# "worker"), one per line (an alpha track call as its GA one): the tpu-vm verb ("ssh", "create"), "queued-resources VERB", or
# "storage cp".
local_calls() {
  python3 -c 'import json, sys
for line in open(sys.argv[1]):
    c = json.loads(line)
    if "worker" not in c:
        a = c["argv"][1:] if c["argv"][:1] == ["alpha"] else c["argv"]
        print(" ".join(a[:2]) if a[0] == "storage" else (" ".join(a[2:4]) if a[2] == "queued-resources" else a[3]))' \
    "$1/state/calls.jsonl"
}

# True when the stand-in TPU lab-pod in DIR was deleted.
tpu_deleted() {
  [[ ! -e "$1/state/tpus/lab-pod" ]] && compgen -G "$1/state/deleted/lab-pod*" >/dev/null
}
