# Shared by the bench/*.sh scripts. The sourcing script sets ROOT and BIN (and, for the stand-in
# helpers, STANDIN and PLAN_FLAGS). Benchmarks measure only: a missing tool ends them with exit 0.
# shellcheck shell=bash

# bench_needs NAME [hyperfine]: ends the benchmark NAME (exit 0, saying why) when there is no
# tpulaunch binary at $BIN, or, when asked, no hyperfine. With hyperfine, sets `shell_flag` to
# hyperfine's -N (no intermediate shell, since hyperfine 1.13; Debian bookworm has 1.15) when it has it.
bench_needs() {
  if [[ ! -x "$BIN" ]]; then
    echo "$1: no tpulaunch binary at $BIN (build it, or pass its path)" >&2
    exit 0
  fi
  # shellcheck disable=SC2034 # read by the sourcing script
  shell_flag=()
  if [[ ${2:-} == hyperfine ]]; then
    if ! command -v hyperfine >/dev/null; then
      echo "$1: hyperfine is not installed" >&2
      exit 0
    fi
    if hyperfine --help 2>/dev/null | grep -q -- '^ *-N'; then
      # shellcheck disable=SC2034 # read by the sourcing script
      shell_flag=(-N)
    fi
  fi
}

# --- a stand-in course and TPU, and a generated pipeline run against the gcloud STAND-IN
# (tests/gcloud-standin; not a TPU), as tests/e2e/lib.sh does for the tests.

# slice_for N: the v5e slice with N workers (v5p-2048 for 256: no v5e slice has more than 64).
slice_for() {
  case $1 in
  256) echo v5p-2048 ;;
  1) echo v5litepod-8 ;;
  4) echo v5litepod-16 ;;
  8) echo v5litepod-32 ;;
  16) echo v5litepod-64 ;;
  32) echo v5litepod-128 ;;
  64) echo v5litepod-256 ;;
  *) return 1 ;;
  esac
}

# run_pipeline DIR SCRIPT DELAY N: runs a generated script as tests/e2e/lib.sh run_pipeline does;
# prints the wall seconds; returns the script's status.
run_pipeline() {
  local dir=$1 script=$2 delay=$3 n=$4 devices=4 start end status=0
  [[ $n == 1 ]] && devices=8 # v5litepod-8: one host with 8 chips
  start=$EPOCHREALTIME
  (cd "$dir" && env PATH="$STANDIN:$ROOT/tests/e2e/bin:$(dirname "$BIN"):$PATH" GCLOUD_STANDIN_STATE="$dir/state" \
    CLOUDSDK_CORE_PROJECT=lab-project-1 TPULAUNCH_ALLOW_STANDIN=1 GCLOUD_STANDIN_DELAY="$delay" \
    FAKEJAX_LOCAL_DEVICES=$devices bash "$script" >"$script.out" 2>"$script.err" </dev/null) || status=$?
  end=$EPOCHREALTIME
  awk -v a="$start" -v b="$end" 'BEGIN {printf "%.3f\n", b - a}'
  return "$status"
}

# prepare_standin NAME DIR N [BUCKET]: a course with the stand-in lesson reviewed
# multi-host-qualified, a stand-in TPU with N workers (and the stand-in bucket BUCKET), made
# prepared (GCLOUD_STANDIN_PREPARED=1: every worker has ~/jax-tpu-lab/.venv with the fake jax, as
# after a --bootstrap run, without running one: at 256 workers an untimed bootstrap run was a
# third of the benchmark's load on 2 cores). On failure says why (as NAME) and returns 1.
prepare_standin() {
  local name=$1 dir=$2 n=$3 bucket=${4:-}
  rm -rf "$dir"
  mkdir -p "$dir/public/exercises" "$dir/state"
  cp "$STANDIN/lesson_standin.py" "$dir/public/exercises/standin-lesson.py"
  printf '{"version": 1, "exercises_dir": "public/exercises", "scripts": {}}\n' >"$dir/execution-matrix.json"
  if ! "$BIN" -C "$dir" review standin-lesson --class multi-host-qualified --by "$name" --proves training >/dev/null ||
    ! GCLOUD_STANDIN_STATE="$dir/state" GCLOUD_STANDIN_PREPARED=1 "$STANDIN/gcloud" standin create lab-pod --zone=us-west4-a --workers="$n" \
      --project=lab-project-1 >/dev/null ||
    { [[ -n $bucket ]] && ! GCLOUD_STANDIN_STATE="$dir/state" "$STANDIN/gcloud" standin create-bucket "$bucket" >/dev/null; }; then
    echo "$name: could not set up the stand-in course for $n workers" >&2
    return 1
  fi
  : >>"$dir/state/calls.jsonl" # the call log each timed run counts from, empty until its first call
}
