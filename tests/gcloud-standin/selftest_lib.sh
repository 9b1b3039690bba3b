# The shared helpers of the gcloud stand-in's self-test: a scratch state folder, the runner g,
# the checks ok, bad and expect, and home, gone, workers_of. Sourced by selftest.sh (which sets
# HERE) before its parts, not run alone.
# shellcheck shell=bash disable=SC2016,SC2034,SC2154

GCLOUD="$HERE/gcloud"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gcloud-standin-selftest.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
export GCLOUD_STANDIN_STATE="$WORK/state"
unset CLOUDSDK_COMPUTE_ZONE CLOUDSDK_CORE_PROJECT CLOUDSDK_CORE_DISABLE_PROMPTS \
  GCLOUD_STANDIN_DELAY GCLOUD_STANDIN_RETRY_DELAY GCLOUD_STANDIN_SCP_FAIL_WORKERS GCLOUD_STANDIN_SCP_SLOW_WORKERS \
  GCLOUD_STANDIN_SCP_HOLD_WORKERS GCLOUD_STANDIN_NO_AUTH GCLOUD_STANDIN_GCS GCLOUD_STANDIN_GCS_FAIL_WORKERS GCLOUD_STANDIN_WORKER_DELAY \
  LESSON_FAIL_WORKER LESSON_FAIL_NODE FAKEJAX_TIMEOUT FAKEJAX_LOCAL_DEVICES \
  LESSON_HANG_WORKER GCLOUD_STANDIN_NODE_STATES GCLOUD_STANDIN_QR_STATES GCLOUD_STANDIN_PREEMPT_AFTER \
  GCLOUD_STANDIN_TPU_HOLDER GCLOUD_STANDIN_TPU_STALE_LOCK GCLOUD_STANDIN_SSH_FAIL_WORKERS \
  GCLOUD_STANDIN_DROP_WORKERS GCLOUD_STANDIN_DROP_AFTER GCLOUD_STANDIN_DROP_WHEN GCLOUD_STANDIN_PREEMPT_NODE
mkdir "$WORK/cwd" && cd "$WORK/cwd" || exit 1

ZONE=us-central2-b
PROJ=standin-proj
TPU=(compute tpus tpu-vm)
ZP=(--zone="$ZONE" --project="$PROJ")
STATE="$GCLOUD_STANDIN_STATE"
home() { printf '%s/tpus/%s/worker-%s/home' "$STATE" "$1" "$2"; }
# gone PID: the process has ended (a zombie counts: this machine's init may reap late).
gone() { [ ! -e "/proc/$1" ] || sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | grep -q '^Z'; }

passed=0
failed=0
rc=0
ok() { passed=$((passed + 1)); printf 'ok   %s\n' "$1"; }
failed_names=()
bad() {
  failed=$((failed + 1))
  failed_names+=("$1")
  printf 'FAIL %s\n' "$1"
  if [ -n "${2-}" ]; then printf '     %s\n' "$2"; fi
  printf '     --- stdout:\n'; sed 's/^/     | /' "$WORK/out"
  printf '     --- stderr:\n'; sed 's/^/     | /' "$WORK/err"
}

# g ARGS...: runs the stand-in with stdin from /dev/null; sets rc, out, err.
g() { "$GCLOUD" "$@" >"$WORK/out" 2>"$WORK/err" </dev/null; rc=$?; }

# expect NAME RC [STDERR-SUBSTRING [STDOUT-EXACT]]
expect() {
  local name=$1 want_rc=$2 want_err=${3-} want_out=${4-}
  if [ "$rc" -ne "$want_rc" ]; then bad "$name" "exit $rc, wanted $want_rc"; return; fi
  if [ -n "$want_err" ] && ! grep -qF -- "$want_err" "$WORK/err"; then
    bad "$name" "stderr lacks: $want_err"; return
  fi
  if [ $# -ge 4 ] && [ "$(cat "$WORK/out")" != "$want_out" ]; then
    bad "$name" "stdout is not: $want_out"; return
  fi
  ok "$name"
}

# workers_of WORKER_FLAG: the sorted worker indexes a --command runs on.
workers_of() {
  g "${TPU[@]}" ssh pod "${ZP[@]}" --worker="$1" --command='echo $GCLOUD_STANDIN_WORKER'
  sort -n "$WORK/out" | tr '\n' ' ' | sed 's/ $//' >"$WORK/sorted"
}
