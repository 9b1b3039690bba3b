#!/usr/bin/env bash
# Behaviour of src/remote/run_guard.bash as it ships (`tpulaunch guard --write`, with the tpulaunch
# given as the first argument; the source when none is given), run the way the run step runs it
# (bash FILE --guard-sha256 HEX ...), on this machine: a fake root (the guard's one test seam, TPULAUNCH_GUARD_ROOT) stands for the
# worker's /dev and /tmp, and real processes hold its files. Prints "N passed, 0 failed".
#
# Programs are single-quoted on purpose: their $VARS expand in the program's shell.
# shellcheck disable=SC2016
set -u -o pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/run-guard-test.XXXXXX")
GUARD=$WORK/tpulaunch-run-guard.sh
if (($# > 0)); then
  "$1" guard --write "$GUARD" || exit 1
else
  cp "$HERE/../../src/remote/run_guard.bash" "$GUARD"
fi
GUARD_SHA=$(sha256sum "$GUARD" | cut -d' ' -f1)
holders=()
cleanup() {
  local pid
  for pid in "${holders[@]}"; do
    kill -KILL "$pid" 2>/dev/null
  done
  rm -rf "$WORK"
}
trap cleanup EXIT

passed=0
failed=0
ok() {
  passed=$((passed + 1))
  printf 'ok   %s\n' "$1"
}
bad() {
  failed=$((failed + 1))
  printf 'FAIL %s\n     %s\n' "$1" "${2-}"
  sed 's/^/     | /' "$WORK/err"
}

# A fresh fake root with four vfio devices and four accel devices, and a fresh run folder.
reset() {
  rm -rf "$WORK/root" "$WORK/run"
  mkdir -p "$WORK/root/dev/vfio" "$WORK/root/tmp"
  for i in 0 1 2 3; do
    : >"$WORK/root/dev/vfio/$i"
    : >"$WORK/root/dev/accel$i"
  done
}

# guard ARGS... -- PROGRAM...: runs the guard as a new run in the run folder (the record of the
# call before is removed; the guard refuses a folder that holds one, tested below); sets rc, and
# out/err files.
guard() {
  rc=0
  rm -f "$WORK/run/run-status.rec"
  TPULAUNCH_GUARD_ROOT="$WORK/root" bash "$GUARD" --guard-sha256 "$GUARD_SHA" --run-dir "$WORK/run" \
    --log "$WORK/run/log.txt" "$@" >"$WORK/out" 2>"$WORK/err" </dev/null || rc=$?
}

# field KEY: the value of KEY in the run record.
field() { sed -n "s/^$1=//p" "$WORK/run/run-status.rec" 2>/dev/null; }

# hold [stubborn] FILE...: a process that keeps FILE... open, as a program from an earlier run
# that never ended does; its pid is appended to holders. It is started from a subshell, so it is
# not this shell's child (no job notices, and init reaps it once killed).
hold() {
  local ignore="" pid tries
  if [[ $1 == stubborn ]]; then
    ignore='trap "" TERM;'
    shift
  fi
  pid=$(
    bash -c "$ignore"'fd=3; for f in "$@"; do eval "exec $fd<\"\$f\""; fd=$((fd + 1)); done; exec -a stale-train.py sleep 120' \
      holder "$@" </dev/null >/dev/null 2>&1 &
    echo "$!"
  )
  holders+=("$pid")
  # Wait until it has opened every file.
  for ((tries = 0; tries < 100; tries++)); do
    if (($(find "/proc/$pid/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l) >= 3 + $#)); then
      return
    fi
    sleep 0.05
  done
}

# alive PID: running and not a zombie (this machine's init may reap late).
alive() { [[ -e /proc/$1 ]] && ! sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | grep -q '^Z'; }

# --- a program that ends ----------------------------------------------------------------------
reset
guard --python bash -- -c 'echo "out $TPU_RUN_DIR"; echo err >&2'
if ((rc == 0)) && [[ $(field state) == succeeded && $(field status) == 0 && -n $(field started) && -n $(field ended) ]] &&
  [[ $(field summary) == succeeded ]] &&
  grep -qxF "out $WORK/run/artifacts" "$WORK/run/log.txt" && grep -qxF err "$WORK/run/log.txt" &&
  grep -qxF "out $WORK/run/artifacts" "$WORK/out" && [[ -d $WORK/run/artifacts ]] &&
  [[ $(field record) == "tpulaunch-run-status 1" && $(field host) == "$(hostname)" ]]; then
  ok "success: exit 0, record succeeded, TPU_RUN_DIR exported, log and stdout both get the output"
else bad "success" "rc=$rc state=$(field state)"; fi

reset
guard --python bash -- -c 'exit 7'
if ((rc == 7)) && [[ $(field state) == failed && $(field status) == 7 && $(field summary) == "failed with status 7" ]]; then ok "failure: the program's own status, recorded"
else bad "failure" "rc=$rc state=$(field state)"; fi

reset
guard --python bash -- -c 'exit 255'
if ((rc == 254)) && [[ $(field state) == failed && $(field status) == 255 ]]; then
  ok "exit 255 becomes 254 (gcloud would retry a 255); the record keeps 255"
else bad "exit 255" "rc=$rc status=$(field status)"; fi

reset
guard --bogus -- true
if ((rc == 98)) && grep -qF "unknown argument '--bogus'" "$WORK/err"; then ok "bad arguments: 98"
else bad "bad arguments" "rc=$rc"; fi

# --- the guard's own digest --------------------------------------------------------------------
# A copy that is not the one the plan pinned (stale, changed on the worker) does nothing at all.
reset
cp "$GUARD" "$WORK/changed-guard.sh"
printf '# changed\n' >>"$WORK/changed-guard.sh"
rc=0
bash "$WORK/changed-guard.sh" --guard-sha256 "$GUARD_SHA" --run-dir "$WORK/run" --log "$WORK/run/log.txt" \
  --python bash -- -c 'echo ran' >"$WORK/out" 2>"$WORK/err" </dev/null || rc=$?
if ((rc == 97)) && [[ ! -e $WORK/run ]] && ! grep -q ran "$WORK/out" && grep -qF "is not the one the plan wrote" "$WORK/err"
then ok "a guard whose bytes differ from --guard-sha256: 97, nothing done"
else bad "guard digest" "rc=$rc"; fi
rc=0
bash "$GUARD" --run-dir "$WORK/run" --log "$WORK/run/log.txt" --python bash -- -c 'echo ran' >"$WORK/out" 2>"$WORK/err" \
  </dev/null || rc=$?
if ((rc == 98)) && [[ ! -e $WORK/run ]] && grep -qF -- "--guard-sha256 HEX must come first" "$WORK/err"
then ok "no --guard-sha256: 98, nothing done"
else bad "no guard digest" "rc=$rc"; fi

# --- the staged files' digests -----------------------------------------------------------------
reset
printf 'print(1)\n' >"$WORK/home.py"
digest=$(sha256sum "$WORK/home.py" | cut -d' ' -f1)
guard --stage "$WORK/home.py" "$WORK/staged.py" "$digest" --python bash -- -c 'echo ran'
if ((rc == 0)) && grep -qxF ran "$WORK/out"; then ok "matching digest: the program runs"
else bad "matching digest" "rc=$rc"; fi
reset
printf 'print(2)\n' >"$WORK/home.py"
guard --stage "$WORK/home.py" "$WORK/staged.py" "$digest" --python bash -- -c 'echo ran'
if ((rc == 97)) && [[ $(field state) == digest-mismatch && -z $(field started) ]] && ! grep -q ran "$WORK/out" &&
  grep -qF "does not match the reviewed sha256" "$WORK/err"; then
  ok "digest mismatch: 97, never started"
else bad "digest mismatch" "rc=$rc state=$(field state)"; fi

# --- --timeout --------------------------------------------------------------------------------
reset
guard --timeout 1 --grace 5 --python bash -- -c 'echo started; sleep 30; echo never'
if ((rc == 124)) && [[ $(field state) == timed-out && $(field signal) == TERM && $(field status) == 124 ]] &&
  [[ $(field summary) == "still running when killed: it ran past --timeout 1s and ended with SIGTERM" ]] &&
  grep -qxF started "$WORK/run/log.txt" && ! grep -q never "$WORK/run/log.txt" &&
  grep -qF "ran past --timeout 1s" "$WORK/err"; then
  ok "timeout: SIGTERM ends it, status 124, recorded as timed-out"
else bad "timeout" "rc=$rc state=$(field state) signal=$(field signal)"; fi

reset
guard --timeout 1 --grace 1 --python bash -- -c 'trap "" TERM; echo stubborn; while :; do sleep 0.2; done'
if ((rc == 124)) && [[ $(field state) == timed-out && $(field signal) == KILL ]]; then
  ok "timeout: a program that ignores SIGTERM gets SIGKILL after the grace period"
else bad "timeout with SIGKILL" "rc=$rc signal=$(field signal)"; fi

reset
guard --python bash -- -c 'sleep 60 & echo $! >"$TPU_RUN_DIR/child"; exit 0'
child=$(<"$WORK/run/artifacts/child")
if ((rc == 0)) && ! alive "$child"; then ok "what the program leaves in its process group is ended with it"
else bad "leftover child" "rc=$rc child $child alive"; fi

# The guard interrupted (the ssh connection dropped): the program is ended, the record says so.
reset
TPULAUNCH_GUARD_ROOT="$WORK/root" bash "$GUARD" --guard-sha256 "$GUARD_SHA" --run-dir "$WORK/run" --log "$WORK/run/log.txt" \
  --python bash -- -c 'echo $$ >"$TPU_RUN_DIR/pid"; sleep 60' >"$WORK/out" 2>"$WORK/err" </dev/null &
guard_pid=$!
for ((i = 0; i < 100; i++)); do [[ -s $WORK/run/artifacts/pid ]] && break; sleep 0.05; done
kill -HUP "$guard_pid"
rc=0
wait "$guard_pid" || rc=$?
program=$(<"$WORK/run/artifacts/pid")
if ((rc == 129)) && [[ $(field state) == interrupted && $(field signal) == HUP ]] && ! alive "$program"; then
  ok "SIGHUP to the guard: the program is ended, state interrupted, exit 129"
else bad "interrupted" "rc=$rc state=$(field state) program alive: $(alive "$program" && echo yes)"; fi

# --- a busy TPU -------------------------------------------------------------------------------
reset
: >"$WORK/root/tmp/libtpu_lockfile"
hold "$WORK/root/dev/vfio/0" "$WORK/root/tmp/libtpu_lockfile"
holder=${holders[-1]}
guard --devices vfio --python bash -- -c 'echo ran'
if ((rc == 94)) && [[ $(field state) == busy && -z $(field started) ]] && ! grep -q ran "$WORK/out" &&
  grep -qF "pid $holder (stale-train.py 120)" "$WORK/err" && [[ $(field detail) == *"pid $holder"* ]] &&
  [[ $(field summary) == "never started: the TPU is busy: held by pid $holder (stale-train.py 120)" ]] &&
  alive "$holder" && [[ -e $WORK/root/tmp/libtpu_lockfile ]]; then
  ok "busy: 94, the holder named with its command line, nothing killed, nothing run"
else bad "busy" "rc=$rc state=$(field state)"; fi

guard --devices accel --python bash -- -c 'echo ran'
if ((rc == 94)) && grep -qF "pid $holder" "$WORK/err"; then
  ok "busy: a holder of the lock counts whatever the device kind"
else bad "busy through the lock" "rc=$rc"; fi

guard --devices vfio --kill-stale --grace 5 --python bash -- -c 'echo ran'
if ((rc == 0)) && grep -qxF ran "$WORK/out" && ! alive "$holder" && [[ ! -e $WORK/root/tmp/libtpu_lockfile ]] &&
  grep -qF "sending SIGTERM to pid $holder" "$WORK/err"; then
  ok "--kill-stale: SIGTERM ends the holder, the lock is removed, the program runs"
else bad "--kill-stale" "rc=$rc holder alive: $(alive "$holder" && echo yes)"; fi

reset
hold stubborn "$WORK/root/dev/accel2"
holder=${holders[-1]}
guard --devices accel --kill-stale --grace 1 --python bash -- -c 'echo ran'
if ((rc == 0)) && ! alive "$holder" && grep -qF "pid $holder is still running after 1s: SIGKILL" "$WORK/err"; then
  ok "--kill-stale: a holder that ignores SIGTERM gets SIGKILL after the grace period"
else bad "--kill-stale SIGKILL" "rc=$rc"; fi

reset
hold "$WORK/root/dev/accel1"
holder=${holders[-1]}
guard --devices vfio --python bash -- -c 'echo ran'
if ((rc == 0)) && alive "$holder"; then ok "--devices vfio does not count a holder of /dev/accel*"
else bad "device kinds" "rc=$rc"; fi
guard --python bash -- -c 'echo ran'
if ((rc == 94)); then ok "--devices any (the default) counts both kinds"
else bad "device kinds: any" "rc=$rc"; fi
kill -KILL "$holder"

reset
: >"$WORK/root/tmp/libtpu_lockfile"
guard --python bash -- -c 'echo ran'
if ((rc == 94)) && [[ $(field detail) == "stale lock $WORK/root/tmp/libtpu_lockfile" ]] &&
  [[ -e $WORK/root/tmp/libtpu_lockfile ]]; then
  ok "a stale lock (nobody holds it): 94 without --kill-stale, the lock kept"
else bad "stale lock" "rc=$rc detail=$(field detail)"; fi
guard --kill-stale --python bash -- -c 'echo ran'
if ((rc == 0)) && [[ ! -e $WORK/root/tmp/libtpu_lockfile ]] && grep -qF "removing the stale lock" "$WORK/err"; then
  ok "a stale lock with --kill-stale: removed, the program runs"
else bad "stale lock with --kill-stale" "rc=$rc"; fi

# A fresh TPU VM: no interpreter at the path. Nothing runs, 96, one line naming host, path and fix.
reset
guard --python "$WORK/no venv/bin/python" -- x.py
if ((rc == 96)) && [[ $(field state) == no-python ]] &&
  grep -qF "has no Python interpreter at $WORK/no venv/bin/python; run the plan with --bootstrap, or choose one with --python PATH" "$WORK/err"; then
  ok "no interpreter: 96, state no-python, the host, the path and the fix named"
else bad "no interpreter" "rc=$rc state=$(field state)"; fi

# --env values reach the program as they are; a bad name is the guard's usage error.
reset
guard --env 'A=x y' --env 'B=$HOME `id`' --env 'C=' --python bash -- -c 'printf "%s|%s|%s" "$A" "$B" "${C-unset}" >"$TPU_RUN_DIR/env"'
if ((rc == 0)) && [[ $(<"$WORK/run/artifacts/env") == 'x y|$HOME `id`|' ]]; then ok "--env: values reach the program intact"
else bad "--env" "rc=$rc env=$(cat "$WORK/run/artifacts/env" 2>/dev/null)"; fi
guard --env '1X=y' --python bash -- -c 'echo ran'
if ((rc == 98)); then ok "--env with a bad name: 98"; else bad "--env bad name" "rc=$rc"; fi

# --stage: each copy in the home folder is moved into place, then checked; a second file (a helper
# module the script imports) in a folder of its own.
reset
printf 'print(1)\n' >"$WORK/home.py"
printf 'x = 1\n' >"$WORK/helper.py"
digest=$(sha256sum "$WORK/home.py" | cut -d' ' -f1)
helper_digest=$(sha256sum "$WORK/helper.py" | cut -d' ' -f1)
guard --stage "$WORK/home.py" "$WORK/run/staged.py" "$digest" \
  --stage "$WORK/helper.py" "$WORK/lib/sub/helper.py" "$helper_digest" --python bash -- -c 'echo ran'
if ((rc == 0)) && [[ -f $WORK/run/staged.py && ! -e $WORK/home.py && -f $WORK/lib/sub/helper.py ]]; then
  ok "--stage twice: each moved into place, then checked"
else bad "--stage" "rc=$rc"; fi
guard --stage "$WORK/home.py" "$WORK/run/staged.py" "$digest" --python bash -- -c 'echo ran'
if ((rc == 98)) && [[ $(field state) == stage-missing ]]; then ok "--stage with nothing staged: 98, stage-missing"
else bad "--stage missing" "rc=$rc state=$(field state)"; fi
guard --stage "$WORK/home.py" "$WORK/run/staged.py" not-a-digest --python bash -- -c 'echo ran'
if ((rc == 98)) && grep -qF "64 hex digits" "$WORK/err"; then ok "--stage with a bad digest: 98"
else bad "--stage bad digest" "rc=$rc"; fi

# --upload: the worker's index from the metadata server, then gcloud storage cp of the run folder,
# whatever the program's status; a failed upload turns a success into 95 and is named.
reset
mkdir -p "$WORK/bin"
printf '#!/bin/sh\n[ "$*" = "-sSf -m 10 -H Metadata-Flavor: Google http://metadata.google.internal/computeMetadata/v1/instance/attributes/agent-worker-number" ] || exit 22\necho 3\n' >"$WORK/bin/curl"
printf '#!/bin/sh\nprintf "%%s\\n" "$@" >"%s/gcloud-args"\nexit "${FAKE_GCLOUD_EXIT:-0}"\n' "$WORK" >"$WORK/bin/gcloud"
chmod +x "$WORK/bin/curl" "$WORK/bin/gcloud"
PATH="$WORK/bin:$PATH" guard --upload 'gs://b/it s' --python bash -- -c 'echo ran'
if ((rc == 0)) && [[ $(tr '\n' ' ' <"$WORK/gcloud-args") == "storage cp --recursive $WORK/run gs://b/it s/worker-3/ " ]]; then
  ok "--upload: gcloud storage cp --recursive RUN_DIR URL/worker-<index>/"
else bad "--upload" "rc=$rc args=$(tr '\n' ' ' <"$WORK/gcloud-args" 2>/dev/null)"; fi
FAKE_GCLOUD_EXIT=1 PATH="$WORK/bin:$PATH" guard --upload gs://b --python bash -- -c 'echo ran'
if ((rc == 95)) && grep -qF "worker 3 (" "$WORK/err" && grep -qF "could not upload its results" "$WORK/err"; then
  ok "--upload failing after a success: 95, the worker named"
else bad "--upload failing" "rc=$rc"; fi
FAKE_GCLOUD_EXIT=1 PATH="$WORK/bin:$PATH" guard --upload gs://b --python bash -- -c 'exit 7'
if ((rc == 7)); then ok "--upload failing after a failure: the program's status stays"
else bad "--upload failing after a failure" "rc=$rc"; fi
rm -f "$WORK/gcloud-args"
PATH="$WORK/bin:$PATH" guard --upload gs://b --python "$WORK/none" -- x.py
if ((rc == 96)) && [[ -f $WORK/gcloud-args ]]; then ok "--upload: a worker that never started still uploads its record"
else bad "--upload after never starting" "rc=$rc"; fi

# --slices N --slice-id S: the MEGASCALE_* values of the metadata tpu-env, checked, exported for
# the program and recorded; values that are not this slice's stop the run (98) before it starts.
reset
cat >"$WORK/bin/curl" <<'CURL'
#!/bin/sh
case "$*" in
  *"/attributes/tpu-env") printf "%s\n" "ACCELERATOR_TYPE: 'v5litepod-16'" "MEGASCALE_COORDINATOR_ADDRESS: '10.0.0.2:8080'" \
    "MEGASCALE_NUM_SLICES: '2'" "MEGASCALE_SLICE_ID: '${FAKE_SLICE_ID:-1}'" ;;
  *) exit 22 ;;
esac
CURL
chmod +x "$WORK/bin/curl"
PATH="$WORK/bin:$PATH" guard --slices 2 --slice-id 1 --python bash -- -c 'echo "$MEGASCALE_COORDINATOR_ADDRESS $MEGASCALE_NUM_SLICES $MEGASCALE_SLICE_ID"'
if ((rc == 0)) && [[ $(cat "$WORK/out") == "10.0.0.2:8080 2 1" ]] && [[ $(field megascale_slice_id) == 1 ]] &&
  [[ $(field megascale_coordinator_address) == 10.0.0.2:8080 ]] && [[ $(field megascale_num_slices) == 2 ]]; then
  ok "--slices: tpu-env's MEGASCALE_* values exported for the program and recorded"
else bad "--slices" "rc=$rc out=$(cat "$WORK/out")"; fi
FAKE_SLICE_ID=0 PATH="$WORK/bin:$PATH" guard --slices 2 --slice-id 1 --python bash -- -c 'echo ran'
if ((rc == 98)) && [[ $(field state) == megascale-mismatch ]] && ! grep -q ran "$WORK/out"; then
  ok "--slices: a tpu-env of another slice stops the run (98) before it starts"
else bad "--slices mismatch" "rc=$rc state=$(field state)"; fi

# --- a re-run --------------------------------------------------------------------------------
# A run folder that holds a run record already is refused with 93 and left exactly as it was.
reset
guard --python bash -- -c 'echo first'
before=$(cat "$WORK/run/run-status.rec" "$WORK/run/log.txt")
rc=0
TPULAUNCH_GUARD_ROOT="$WORK/root" bash "$GUARD" --guard-sha256 "$GUARD_SHA" --run-dir "$WORK/run" \
  --log "$WORK/run/log.txt" --python bash -- -c 'echo second' >"$WORK/out" 2>"$WORK/err" </dev/null || rc=$?
if ((rc == 93)) && [[ $(cat "$WORK/run/run-status.rec" "$WORK/run/log.txt") == "$before" ]] &&
  grep -qF "holds a run already" "$WORK/err"; then
  ok "a run folder with a run record: 93, nothing in it changed"
else bad "re-run" "rc=$rc"; fi

printf '%d passed, %d failed\n' "$passed" "$failed"
((failed == 0))
