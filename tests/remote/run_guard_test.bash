#!/usr/bin/env bash
# Behaviour of the run guard (src/remote/run_guard/) as it ships (`tpulaunch guard --write`, with
# the tpulaunch given as the first argument), run the way the bootstrap and run steps run it (bash
# FILE --guard-sha256 HEX ...) from a run's stage folder, on this machine: HOME is a folder of the
# test (the worker's home), a fake root (TPULAUNCH_GUARD_ROOT) stands for the worker's /dev and
# /tmp, real processes hold its files, and curl and gcloud are small fakes on PATH (the metadata
# server, Cloud Storage). Prints "N passed, 0 failed".
#
# Programs are single-quoted on purpose: their $VARS expand in the program's shell.
# shellcheck disable=SC2016
set -u -o pipefail

WORK=$(mktemp -d "${TMPDIR:-/tmp}/run-guard-test.XXXXXX")
export HOME=$WORK/home
GUARD_TEXT=$WORK/guard.sh
"$1" guard --write "$GUARD_TEXT" || exit 1
GUARD_SHA=$(sha256sum "$GUARD_TEXT" | cut -d' ' -f1)
PLAN=$(printf 'plan one' | sha256sum | cut -d' ' -f1)
OTHER_PLAN=$(printf 'plan two' | sha256sum | cut -d' ' -f1)
SCRIPT=lesson
RUN=r1
holders=()
cleanup() {
  local pid
  for pid in "${holders[@]}"; do
    kill -KILL "$pid" 2>/dev/null
  done
  pkill -KILL -f "$WORK/" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT

# The metadata server and Cloud Storage: curl answers the worker number (3), tpu-env (FAKE_TPU_ENV)
# and the mark (FAKE_MARK, 404 when unset); gcloud records its arguments and exits FAKE_GCLOUD_EXIT.
mkdir -p "$WORK/bin"
cat >"$WORK/bin/curl" <<'CURL'
#!/bin/sh
case "$*" in
  "-sSf -m 10 -H Metadata-Flavor: Google http://metadata.google.internal/computeMetadata/v1/instance/attributes/agent-worker-number") echo 3 ;;
  *"/attributes/tpu-env") printf '%s\n' "${FAKE_TPU_ENV:-}" ;;
  *"/attributes/tpulaunch_run") [ -n "${FAKE_MARK:-}" ] || exit 22; echo "$FAKE_MARK" ;;
  *) exit 22 ;;
esac
CURL
printf '#!/bin/sh\nprintf "%%s\\n" "$@" >"%s/gcloud-args"\nexit "${FAKE_GCLOUD_EXIT:-0}"\n' "$WORK" >"$WORK/bin/gcloud"
chmod +x "$WORK/bin/curl" "$WORK/bin/gcloud"
export PATH="$WORK/bin:$PATH"

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

run_dir() { printf '%s' "$HOME/jax-tpu-lab/runs/$SCRIPT/$RUN"; }

# reset: a fresh fake root (four vfio and four accel devices) and a fresh run (fresh_run).
reset() {
  rm -rf "$WORK/root"
  mkdir -p "$WORK/root/dev/vfio" "$WORK/root/tmp"
  for i in 0 1 2 3; do
    : >"$WORK/root/dev/vfio/$i"
    : >"$WORK/root/dev/accel$i"
  done
  fresh_run
}

# fresh_run: no run folders, and the stage folder of plan PLAN as the stage step leaves it: the
# guard, a start token, code/lesson.py.
fresh_run() {
  rm -rf "$HOME"
  stage "$PLAN"
}

# stage DIGEST: the stage folder of that plan.
stage() {
  local dir
  dir="$(run_dir)/staged-${1:0:16}"
  mkdir -p "$dir/code"
  cp "$GUARD_TEXT" "$dir/tpulaunch-run-guard.sh"
  echo "0123456789abcdef0123456789abcdef" >"$dir/start"
  printf 'print(1)\n' >"$dir/code/lesson.py"
  LESSON_SHA=$(sha256sum "$dir/code/lesson.py" | cut -d' ' -f1)
}

# guard ARGS... -- PROGRAM...: the run guard of plan PLAN (GUARD_PLAN to name another) with these
# arguments; sets rc, and out/err files.
guard() {
  local plan=${GUARD_PLAN:-$PLAN}
  rc=0
  TPULAUNCH_GUARD_ROOT="$WORK/root" bash "$(run_dir)/staged-${plan:0:16}/tpulaunch-run-guard.sh" \
    --guard-sha256 "$GUARD_SHA" --plan "$plan" --script "$SCRIPT" --run-id "$RUN" "$@" \
    >"$WORK/out" 2>"$WORK/err" </dev/null || rc=$?
}

# run_guard ARGS... -- PROGRAM...: guard with the staged file checked and python being bash.
run_guard() { guard --file "$LESSON_SHA" lesson.py "$@"; }

# field KEY: the value of KEY in the run record.
field() { sed -n "s/^$1=//p" "$(run_dir)/run-status.rec" 2>/dev/null; }
log() { cat "$(run_dir)/$SCRIPT-tpu-$(hostname).txt" 2>/dev/null; }

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
  for ((tries = 0; tries < 100; tries++)); do
    if (($(find "/proc/$pid/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l) >= 3 + $#)); then
      return
    fi
    sleep 0.05
  done
}

# alive PID: running and not a zombie.
alive() { [[ -e /proc/$1 ]] && ! sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | grep -q '^Z'; }

# wait_file FILE: until it exists (10 s at most).
wait_file() {
  local i
  for ((i = 0; i < 200; i++)); do [[ -s $1 ]] && return 0; sleep 0.05; done
  return 1
}

# --- a program that ends ----------------------------------------------------------------------
reset
run_guard --python bash -- -c 'echo "out $TPU_RUN_DIR $PWD ${PYTHONPATH-unset} $PYTHONUNBUFFERED"; echo err >&2'
expected="out $(run_dir)/artifacts $(run_dir)/staged-${PLAN:0:16}/code unset 1"
if ((rc == 0)) && [[ $(field state) == succeeded && $(field status) == 0 && $(field exit) == 0 ]] &&
  [[ $(field record) == "tpulaunch-run-status 2" && $(field script) == "$SCRIPT" && $(field run-id) == "$RUN" ]] &&
  [[ $(field plan) == "$PLAN" && $(field start) == 0123456789abcdef0123456789abcdef && $(field worker) == 3 ]] &&
  [[ $(field host) == "$(hostname)" && -n $(field started) && -n $(field ended) && $(field summary) == succeeded ]] &&
  grep -qxF "$expected" "$WORK/out" && log | grep -qxF "$expected" && log | grep -qxF err && [[ -d $(run_dir)/artifacts ]]
then
  ok "success: exit 0; the record names the run key, plan, start token and worker; the program runs in code/ with TPU_RUN_DIR, unbuffered, no PYTHONPATH; log and stdout both get its output"
else bad "success" "rc=$rc state=$(field state) out=$(cat "$WORK/out")"; fi

reset
run_guard --env PYTHONPATH=/opt/lib --env PYTHONUNBUFFERED= --python bash -- -c 'echo "$PYTHONPATH|$PYTHONUNBUFFERED|"'
if ((rc == 0)) && grep -qxF '/opt/lib||' "$WORK/out"; then ok "an --env PYTHONPATH or PYTHONUNBUFFERED is the user's to set"
else bad "--env over the defaults" "rc=$rc out=$(cat "$WORK/out")"; fi

reset
run_guard --python bash -- -c 'exit 7'
if ((rc == 7)) && [[ $(field state) == failed && $(field status) == 7 && $(field exit) == 7 && $(field summary) == "failed with status 7" ]]
then ok "failure: the program's own status, recorded"
else bad "failure" "rc=$rc state=$(field state)"; fi

reset
run_guard --python bash -- -c 'exit 255'
if ((rc == 254)) && [[ $(field state) == failed && $(field status) == 255 && $(field exit) == 254 ]]; then
  ok "exit 255 becomes 254 (gcloud would run it again); the record keeps 255"
else bad "exit 255" "rc=$rc status=$(field status)"; fi

reset
guard --bogus -- true
if ((rc == 98)) && grep -qF "unknown argument '--bogus'" "$WORK/err" && [[ ! -e $(run_dir)/run-status.rec ]]; then
  ok "bad arguments: 98, nothing claimed"
else bad "bad arguments" "rc=$rc"; fi

# --- the guard's own digest and place ---------------------------------------------------------
reset
printf '# changed\n' >>"$(run_dir)/staged-${PLAN:0:16}/tpulaunch-run-guard.sh"
run_guard --python bash -- -c 'echo ran'
if ((rc == 97)) && [[ ! -e $(run_dir)/run-status.rec ]] && ! grep -q ran "$WORK/out" &&
  grep -qF "is not the one the plan wrote" "$WORK/err"; then
  ok "a guard whose bytes differ from --guard-sha256: 97, nothing done"
else bad "guard digest" "rc=$rc"; fi
reset
rc=0
bash "$(run_dir)/staged-${PLAN:0:16}/tpulaunch-run-guard.sh" --plan "$PLAN" --script "$SCRIPT" --run-id "$RUN" \
  --python bash -- -c 'echo ran' >"$WORK/out" 2>"$WORK/err" </dev/null || rc=$?
if ((rc == 98)) && [[ ! -e $(run_dir)/run-status.rec ]] && grep -qF -- "--guard-sha256 HEX must come first" "$WORK/err"
then ok "no --guard-sha256: 98, nothing done"
else bad "no guard digest" "rc=$rc"; fi
reset
rc=0
TPULAUNCH_GUARD_ROOT="$WORK/root" bash "$(run_dir)/staged-${PLAN:0:16}/tpulaunch-run-guard.sh" --guard-sha256 "$GUARD_SHA" \
  --plan "$PLAN" --script other --run-id "$RUN" --python bash -- -c 'echo ran' >"$WORK/out" 2>"$WORK/err" </dev/null || rc=$?
if ((rc == 98)) && grep -qF "it is not in the stage folder of run other/$RUN" "$WORK/err" &&
  [[ ! -e $HOME/jax-tpu-lab/runs/other ]]; then
  ok "a guard called for another run than the one whose stage folder holds it: 98, nothing done"
else bad "guard place" "rc=$rc"; fi

# --- the staged files --------------------------------------------------------------------------
reset
printf 'print(2)\n' >"$(run_dir)/staged-${PLAN:0:16}/code/lesson.py"
run_guard --python bash -- -c 'echo ran'
if ((rc == 97)) && [[ $(field state) == digest-mismatch && -z $(field started) && $(field exit) == 97 ]] &&
  ! grep -q ran "$WORK/out" && grep -qF "does not match the sha256 the plan pinned" "$WORK/err"; then
  ok "a staged file that differs from its digest: 97, never started"
else bad "digest mismatch" "rc=$rc state=$(field state)"; fi
reset
guard --file "$LESSON_SHA" lesson.py --file "$LESSON_SHA" common/mesh.py --python bash -- -c 'echo ran'
if ((rc == 98)) && [[ $(field state) == stage-missing ]] && grep -qF "code/common/mesh.py is not in" "$WORK/err"; then
  ok "a staged file that is not there: 98, stage-missing"
else bad "missing staged file" "rc=$rc state=$(field state)"; fi
reset
printf 'x = 1\n' >"$(run_dir)/staged-${PLAN:0:16}/code/stale_helper.py"
run_guard --python bash -- -c 'echo ran'
if ((rc == 98)) && [[ $(field state) == stage-missing ]] && grep -qF "holds 2 files, and the plan staged 1" "$WORK/err"; then
  ok "a file in code/ the plan did not stage: 98, never started"
else bad "extra staged file" "rc=$rc state=$(field state)"; fi

# --- the run is a key: one program per worker, ever --------------------------------------------
reset
run_guard --python bash -- -c 'echo start >>"$TPU_RUN_DIR/starts"; echo first'
before=$(cat "$(run_dir)/run-status.rec")
run_guard --python bash -- -c 'echo start >>"$TPU_RUN_DIR/starts"; echo second'
if ((rc == 0)) && [[ $(cat "$(run_dir)/run-status.rec") == "$before" ]] && [[ $(wc -l <"$(run_dir)/artifacts/starts") == 1 ]] &&
  grep -qF "ran here already with this plan: succeeded" "$WORK/err"; then
  ok "a second start of an ended run with the same plan replays its status; the program never runs twice"
else bad "replay" "rc=$rc"; fi
stage "$OTHER_PLAN"
GUARD_PLAN=$OTHER_PLAN guard --file "$LESSON_SHA" lesson.py --python bash -- -c 'echo third'
if ((rc == 93)) && [[ $(cat "$(run_dir)/run-status.rec") == "$before" ]] &&
  grep -qF "ran here already with another plan (${PLAN:0:16}, this one is ${OTHER_PLAN:0:16})" "$WORK/err"; then
  ok "the same run key with another plan: 93, saying whose run it is; nothing in the record changed"
else bad "another plan" "rc=$rc"; fi

# A dropped connection: the call that started the run dies; the program runs on, and a second
# start (gcloud's retry) re-attaches, follows the log and returns the program's status.
reset
TPULAUNCH_GUARD_ROOT="$WORK/root" bash "$(run_dir)/staged-${PLAN:0:16}/tpulaunch-run-guard.sh" --guard-sha256 "$GUARD_SHA" \
  --plan "$PLAN" --script "$SCRIPT" --run-id "$RUN" --file "$LESSON_SHA" lesson.py --python bash -- \
  -c 'echo start >>"$TPU_RUN_DIR/starts"; echo $$ >"$TPU_RUN_DIR/pid"; sleep 2; echo "done late"; exit 5' \
  >"$WORK/out1" 2>"$WORK/err1" </dev/null &
first=$!
wait_file "$(run_dir)/artifacts/pid"
kill -KILL "$first"
wait "$first" 2>/dev/null
program=$(<"$(run_dir)/artifacts/pid")
alive_after_drop=no
alive "$program" && alive_after_drop=yes
run_guard --python bash -- -c 'echo start >>"$TPU_RUN_DIR/starts"; exit 0'
if [[ $alive_after_drop == yes ]] && ((rc == 5)) && grep -qxF "done late" "$WORK/out" &&
  [[ $(wc -l <"$(run_dir)/artifacts/starts") == 1 && $(field state) == failed && $(field exit) == 5 ]] &&
  grep -qF "following its log" "$WORK/err"; then
  ok "the call that started a run dies (a dropped connection): the program runs on; a second start re-attaches and returns its status"
else bad "re-attach" "rc=$rc alive after drop: $alive_after_drop out=$(cat "$WORK/out")"; fi

# A signal to the call after the program started: it leaves, the program runs on.
reset
TPULAUNCH_GUARD_ROOT="$WORK/root" bash "$(run_dir)/staged-${PLAN:0:16}/tpulaunch-run-guard.sh" --guard-sha256 "$GUARD_SHA" \
  --plan "$PLAN" --script "$SCRIPT" --run-id "$RUN" --file "$LESSON_SHA" lesson.py --python bash -- \
  -c 'echo $$ >"$TPU_RUN_DIR/pid"; sleep 2' >"$WORK/out1" 2>"$WORK/err1" </dev/null &
first=$!
wait_file "$(run_dir)/artifacts/pid"
sleep 0.3
kill -HUP "$first"
rc=0
wait "$first" || rc=$?
program=$(<"$(run_dir)/artifacts/pid")
if ((rc == 129)) && alive "$program" && [[ $(field state) == running ]]; then
  sleep 2.5
  if [[ $(field state) == succeeded && $(field exit) == 0 ]]; then
    ok "SIGHUP to the call after the program started: the call leaves (129), the program runs on and succeeds"
  else bad "SIGHUP after start: the end" "state=$(field state)"; fi
else bad "SIGHUP after start" "rc=$rc state=$(field state)"; fi

# A signal to the call before the program started: it never starts.
reset
hold stubborn "$WORK/root/dev/vfio/0"
holder=${holders[-1]}
TPULAUNCH_GUARD_ROOT="$WORK/root" bash "$(run_dir)/staged-${PLAN:0:16}/tpulaunch-run-guard.sh" --guard-sha256 "$GUARD_SHA" \
  --plan "$PLAN" --script "$SCRIPT" --run-id "$RUN" --file "$LESSON_SHA" lesson.py --devices vfio --kill-stale \
  --grace 2 --python bash -- -c 'echo ran >"$TPU_RUN_DIR/ran"' >"$WORK/out1" 2>"$WORK/err1" </dev/null &
first=$!
wait_file "$(run_dir)/guard.log" # the supervisor is at work: the run is claimed
kill -HUP "$first"
rc=0
wait "$first" || rc=$?
if ((rc == 129)) && [[ $(field state) == interrupted && $(field summary) == "never started: interrupted: "* ]] &&
  [[ ! -e $(run_dir)/artifacts/ran ]]; then
  ok "SIGHUP to the call before the program started: it never starts (never started: interrupted)"
else bad "SIGHUP before start" "rc=$rc state=$(field state) summary=$(field summary)"; fi

# --stop: a running program is ended; a run not started yet never starts.
reset
TPULAUNCH_GUARD_ROOT="$WORK/root" bash "$(run_dir)/staged-${PLAN:0:16}/tpulaunch-run-guard.sh" --guard-sha256 "$GUARD_SHA" \
  --plan "$PLAN" --script "$SCRIPT" --run-id "$RUN" --file "$LESSON_SHA" lesson.py --python bash -- \
  -c 'echo $$ >"$TPU_RUN_DIR/pid"; sleep 30' >"$WORK/out1" 2>"$WORK/err1" </dev/null &
first=$!
wait_file "$(run_dir)/artifacts/pid"
guard --stop "slice 1 failed first"
stop_rc=$rc
rc=0
wait "$first" || rc=$?
if ((stop_rc == 0 && rc == 143)) && [[ $(field state) == stopped && $(field summary) == "stopped while running: slice 1 failed first" ]] &&
  ! alive "$(<"$(run_dir)/artifacts/pid")"; then
  ok "--stop: the running program is ended, the run records stopped, its call returns 143"
else bad "--stop while running" "stop=$stop_rc rc=$rc state=$(field state) summary=$(field summary)"; fi
reset
guard --stop "slice 0 failed first"
run_guard --python bash -- -c 'echo ran'
if ((rc == 143)) && [[ $(field state) == stopped ]] && ! grep -q ran "$WORK/out"; then
  ok "--stop before the run call: the run never starts there, and the late run call replays 143"
else bad "--stop first" "rc=$rc state=$(field state)"; fi

# --- the mark of capacity the plan created ----------------------------------------------------
reset
FAKE_MARK=0123456789abcdef run_guard --mark 0123456789abcdef --python bash -- -c 'echo ran'
if ((rc == 0)) && grep -qxF ran "$WORK/out"; then ok "--mark: a VM that carries it runs"
else bad "--mark present" "rc=$rc"; fi
reset
FAKE_MARK=fedcba9876543210 run_guard --mark 0123456789abcdef --python bash -- -c 'echo ran'
second=$rc
run_guard --mark 0123456789abcdef --python bash -- -c 'echo ran'
if ((second == 88 && rc == 88)) && [[ ! -e $(run_dir)/run-status.rec ]] && ! grep -q ran "$WORK/out" &&
  grep -qF "does not carry this plan's mark (metadata tpulaunch_run=0123456789abcdef; it has '')" "$WORK/err"; then
  ok "--mark: a VM with another mark, or none, is not touched (88, no record)"
else bad "--mark absent" "rc=$second/$rc"; fi
FAKE_MARK=fedcba9876543210 guard --mark 0123456789abcdef --bootstrap
if ((rc == 88)) && [[ ! -e $HOME/jax-tpu-lab/.venv ]]; then ok "--bootstrap checks the mark first"
else bad "--bootstrap mark" "rc=$rc"; fi

# --- bootstrap --------------------------------------------------------------------------------
reset
cat >"$WORK/bin/python3" <<'PY'
#!/bin/sh
[ "$1 $2" = "-m venv" ] || exit 2
mkdir -p "$3/bin"
printf '#!/bin/sh\necho "pip $*" >>"%s/pip-calls"\nexit "${FAKE_PIP_EXIT:-0}"\n' "$3" >"$3/bin/python"
chmod +x "$3/bin/python"
PY
chmod +x "$WORK/bin/python3"
guard --bootstrap
if ((rc == 0)) && [[ $(cat "$HOME/jax-tpu-lab/.venv/pip-calls") == "pip -m pip install --quiet --upgrade jax[tpu]" ]] &&
  [[ ! -e $(run_dir)/run-status.rec ]]; then
  ok "--bootstrap: ~/jax-tpu-lab/.venv and pip install jax[tpu], no run claimed"
else bad "--bootstrap" "rc=$rc"; fi
FAKE_PIP_EXIT=255 guard --bootstrap
if ((rc == 254)); then ok "--bootstrap: pip's 255 becomes 254"; else bad "--bootstrap 255" "rc=$rc"; fi
rm -f "$WORK/bin/python3"

# --- --timeout --------------------------------------------------------------------------------
reset
run_guard --timeout 1 --grace 5 --python bash -- -c 'echo started; sleep 30; echo never'
if ((rc == 124)) && [[ $(field state) == timed-out && $(field signal) == TERM && $(field status) == 124 ]] &&
  [[ $(field summary) == "still running when killed: it ran past --timeout 1s and ended with SIGTERM" ]] &&
  log | grep -qxF started && ! log | grep -q never && grep -qF "ran past --timeout 1s" "$WORK/err"; then
  ok "timeout: SIGTERM ends it, status 124, recorded as timed-out; the log has what it printed"
else bad "timeout" "rc=$rc state=$(field state) signal=$(field signal)"; fi

reset
run_guard --timeout 1 --grace 1 --python bash -- -c 'trap "" TERM; echo stubborn; while :; do sleep 0.2; done'
if ((rc == 124)) && [[ $(field state) == timed-out && $(field signal) == KILL ]]; then
  ok "timeout: a program that ignores SIGTERM gets SIGKILL after the grace period"
else bad "timeout with SIGKILL" "rc=$rc signal=$(field signal)"; fi

reset
run_guard --python bash -- -c 'sleep 60 & echo $! >"$TPU_RUN_DIR/child"; exit 0'
child=$(<"$(run_dir)/artifacts/child")
if ((rc == 0)) && ! alive "$child"; then ok "what the program leaves in its process group is ended with it"
else bad "leftover child" "rc=$rc child $child alive"; fi

# --- a busy TPU -------------------------------------------------------------------------------
reset
: >"$WORK/root/tmp/libtpu_lockfile"
hold "$WORK/root/dev/vfio/0" "$WORK/root/tmp/libtpu_lockfile"
holder=${holders[-1]}
run_guard --devices vfio --python bash -- -c 'echo ran'
if ((rc == 94)) && [[ $(field state) == busy && -z $(field started) ]] && ! grep -q ran "$WORK/out" &&
  grep -qF "pid $holder (stale-train.py 120)" "$WORK/err" && [[ $(field detail) == *"pid $holder"* ]] &&
  [[ $(field summary) == "never started: the TPU is busy: held by pid $holder (stale-train.py 120)" ]] &&
  alive "$holder" && [[ -e $WORK/root/tmp/libtpu_lockfile ]]; then
  ok "busy: 94, the holder named with its command line, nothing killed, nothing run"
else bad "busy" "rc=$rc state=$(field state)"; fi

fresh_run
run_guard --devices accel --python bash -- -c 'echo ran'
if ((rc == 94)) && grep -qF "pid $holder" "$WORK/err"; then
  ok "busy: a holder of the lock counts whatever the device kind"
else bad "busy through the lock" "rc=$rc"; fi

fresh_run
run_guard --devices vfio --kill-stale --grace 5 --python bash -- -c 'echo ran'
if ((rc == 0)) && grep -qxF ran "$WORK/out" && ! alive "$holder" && [[ ! -e $WORK/root/tmp/libtpu_lockfile ]] &&
  grep -qF "sending SIGTERM to pid $holder" "$WORK/err"; then
  ok "--kill-stale: SIGTERM ends the holder, the lock is removed, the program runs"
else bad "--kill-stale" "rc=$rc holder alive: $(alive "$holder" && echo yes)"; fi

reset
hold stubborn "$WORK/root/dev/accel2"
holder=${holders[-1]}
run_guard --devices accel --kill-stale --grace 1 --python bash -- -c 'echo ran'
if ((rc == 0)) && ! alive "$holder" && grep -qF "pid $holder is still running after 1s: SIGKILL" "$WORK/err"; then
  ok "--kill-stale: a holder that ignores SIGTERM gets SIGKILL after the grace period"
else bad "--kill-stale SIGKILL" "rc=$rc"; fi

reset
hold "$WORK/root/dev/accel1"
holder=${holders[-1]}
run_guard --devices vfio --python bash -- -c 'echo ran'
if ((rc == 0)) && alive "$holder"; then ok "--devices vfio does not count a holder of /dev/accel*"
else bad "device kinds" "rc=$rc"; fi
fresh_run
run_guard --python bash -- -c 'echo ran'
if ((rc == 94)); then ok "--devices any (the default) counts both kinds"
else bad "device kinds: any" "rc=$rc"; fi
kill -KILL "$holder"

reset
: >"$WORK/root/tmp/libtpu_lockfile"
run_guard --python bash -- -c 'echo ran'
if ((rc == 94)) && [[ $(field detail) == "stale lock $WORK/root/tmp/libtpu_lockfile" ]] &&
  [[ -e $WORK/root/tmp/libtpu_lockfile ]]; then
  ok "a stale lock (nobody holds it): 94 without --kill-stale, the lock kept"
else bad "stale lock" "rc=$rc detail=$(field detail)"; fi
fresh_run
run_guard --kill-stale --python bash -- -c 'echo ran'
if ((rc == 0)) && [[ ! -e $WORK/root/tmp/libtpu_lockfile ]] && grep -qF "removing the stale lock" "$WORK/err"; then
  ok "a stale lock with --kill-stale: removed, the program runs"
else bad "stale lock with --kill-stale" "rc=$rc"; fi

# A fresh TPU VM: no interpreter at the path. Nothing runs, 96, one line naming host, path and fix.
reset
run_guard --python "$WORK/no venv/bin/python" -- x.py
if ((rc == 96)) && [[ $(field state) == no-python ]] &&
  grep -qF "no Python interpreter at $WORK/no venv/bin/python; run the plan with --bootstrap, or choose one with --python PATH" "$WORK/err"; then
  ok "no interpreter: 96, state no-python, the host, the path and the fix named"
else bad "no interpreter" "rc=$rc state=$(field state)"; fi

# --env values reach the program as they are; a bad name is the guard's usage error.
reset
run_guard --env 'A=x y' --env 'B=$HOME `id`' --env 'C=' --python bash -- -c 'printf "%s|%s|%s" "$A" "$B" "${C-unset}" >"$TPU_RUN_DIR/env"'
if ((rc == 0)) && [[ $(<"$(run_dir)/artifacts/env") == 'x y|$HOME `id`|' ]]; then ok "--env: values reach the program intact"
else bad "--env" "rc=$rc env=$(cat "$(run_dir)/artifacts/env" 2>/dev/null)"; fi
reset
run_guard --env '1X=y' --python bash -- -c 'echo ran'
if ((rc == 98)); then ok "--env with a bad name: 98"; else bad "--env bad name" "rc=$rc"; fi

# --upload: the worker's index from the metadata server, then gcloud storage cp of the run folder,
# whatever the program's status; a failed upload turns a success into 95 and is named.
reset
run_guard --upload 'gs://b/it s' --python bash -- -c 'echo ran'
if ((rc == 0)) && [[ $(tr '\n' ' ' <"$WORK/gcloud-args") == "storage cp --recursive $(run_dir) gs://b/it s/worker-3/ " ]]; then
  ok "--upload: gcloud storage cp --recursive RUN_DIR URL/worker-<index>/"
else bad "--upload" "rc=$rc args=$(tr '\n' ' ' <"$WORK/gcloud-args" 2>/dev/null)"; fi
reset
FAKE_GCLOUD_EXIT=1 run_guard --upload gs://b --python bash -- -c 'echo ran'
if ((rc == 95)) && grep -qF "worker 3 (" "$WORK/err" && grep -qF "could not upload its results" "$WORK/err" &&
  [[ $(field summary) == "succeeded, but its upload failed: the results stay on the worker in $(run_dir)" ]]; then
  ok "--upload failing after a success: 95, the worker named, the results said to stay on it"
else bad "--upload failing" "rc=$rc summary=$(field summary)"; fi
reset
FAKE_GCLOUD_EXIT=1 run_guard --upload gs://b --python bash -- -c 'exit 7'
if ((rc == 7)); then ok "--upload failing after a failure: the program's status stays"
else bad "--upload failing after a failure" "rc=$rc"; fi
reset
rm -f "$WORK/gcloud-args"
run_guard --upload gs://b --python "$WORK/none" -- x.py
if ((rc == 96)) && [[ -f $WORK/gcloud-args ]]; then ok "--upload: a worker that never started still uploads its record"
else bad "--upload after never starting" "rc=$rc"; fi

# --slices N --slice-id S: the MEGASCALE_* values of the metadata tpu-env, checked, exported for
# the program and recorded; values that are not this slice's stop the run (98) before it starts.
megascale_env() {
  printf '%s\n' "ACCELERATOR_TYPE: 'v5litepod-16'" "MEGASCALE_COORDINATOR_ADDRESS: '10.0.0.2:8080'" \
    "MEGASCALE_NUM_SLICES: '2'" "MEGASCALE_SLICE_ID: '$1'"
}
reset
FAKE_TPU_ENV=$(megascale_env 1) run_guard --slices 2 --slice-id 1 --python bash -- -c 'echo "$MEGASCALE_COORDINATOR_ADDRESS $MEGASCALE_NUM_SLICES $MEGASCALE_SLICE_ID"'
if ((rc == 0)) && [[ $(cat "$WORK/out") == "10.0.0.2:8080 2 1" ]] && [[ $(field megascale_slice_id) == 1 ]] &&
  [[ $(field megascale_coordinator_address) == 10.0.0.2:8080 ]] && [[ $(field megascale_num_slices) == 2 ]]; then
  ok "--slices: tpu-env's MEGASCALE_* values exported for the program and recorded"
else bad "--slices" "rc=$rc out=$(cat "$WORK/out")"; fi
reset
FAKE_TPU_ENV=$(megascale_env 0) run_guard --slices 2 --slice-id 1 --python bash -- -c 'echo ran'
if ((rc == 98)) && [[ $(field state) == megascale-mismatch ]] && ! grep -q ran "$WORK/out"; then
  ok "--slices: a tpu-env of another slice stops the run (98) before it starts"
else bad "--slices mismatch" "rc=$rc state=$(field state)"; fi

# --- a supervisor slow to start, or gone before it recorded itself ------------------------------
# A bash first on PATH that runs FAKE_SUPERVISE (shell code) before it becomes the supervisor (the
# guard starts it as `setsid bash FILE ... --supervise ...`), and is plain bash otherwise.
mkdir -p "$WORK/slow-bin"
printf '#!/bin/sh
case " $* " in *" --supervise "*) eval "${FAKE_SUPERVISE:-:}" ;; esac
exec %s "$@"
' \
  "$(command -v bash)" >"$WORK/slow-bin/bash"
chmod +x "$WORK/slow-bin/bash"
reset
# On a loaded VM (or 256 stand-in workers on 2 cores) the supervisor took more than 30 s to record
# itself, and the call that launched it said "lost" (98) while the program then ran on, unwatched.
SECONDS=0
PATH="$WORK/slow-bin:$PATH" FAKE_SUPERVISE='sleep 32' run_guard --python bash -- -c 'echo ran'
if ((rc == 0 && SECONDS >= 32)) && [[ $(field state) == succeeded ]] && grep -qxF ran "$WORK/out"; then
  ok "a supervisor that takes 32 s to start: the call that launched it waits for it (no 98, no run left unwatched)"
else bad "slow supervisor" "rc=$rc after ${SECONDS}s state=$(field state)"; fi
reset
SECONDS=0
PATH="$WORK/slow-bin:$PATH" FAKE_SUPERVISE='exit 1' run_guard --python bash -- -c 'echo ran'
if ((rc == 98 && SECONDS < 20)) && [[ $(field state) == lost ]] &&
  grep -qF "the start that claimed it never started its supervisor" "$WORK/err" && ! grep -q ran "$WORK/out"; then
  ok "a supervisor gone before it recorded itself: lost (98) as soon as it is gone, not after a wait"
else bad "supervisor gone at once" "rc=$rc after ${SECONDS}s state=$(field state)"; fi
reset
# A record already ended (a waiting call marked the run lost): a supervisor that starts late never
# runs the program.
printf '%s\n' "record=tpulaunch-run-status 2" "script=$SCRIPT" "run-id=$RUN" "plan=$PLAN" "state=lost" "exit=98" \
  >"$(run_dir)/run-status.rec"
run_guard --supervise --python bash -- -c 'echo ran >"$HOME/late"'
if [[ ! -e $HOME/late && $(field state) == lost ]]; then
  ok "a supervisor that starts after its run was marked lost never runs the program"
else bad "late supervisor" "rc=$rc state=$(field state)"; fi

printf '%d passed, %d failed\n' "$passed" "$failed"
((failed == 0))
