#!/usr/bin/env bash
# Self-test of the gcloud stand-in (tests/gcloud-standin/gcloud): its grammar
# and behaviour against docs/gcloud.md (§1.3, §2.2, §3, §7),
# plus the fake jax and the stand-in lessons.  Prints "N passed, 0 failed" and
# exits non-zero on any failure.  Needs bash and python3 only.
#
# Remote commands are single-quoted on purpose: their $VARS must expand on the
# (stand-in) worker, not here.
# shellcheck disable=SC2016
set -u -o pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
GCLOUD="$HERE/gcloud"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gcloud-standin-selftest.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
export GCLOUD_STANDIN_STATE="$WORK/state"
unset CLOUDSDK_COMPUTE_ZONE CLOUDSDK_CORE_PROJECT CLOUDSDK_CORE_DISABLE_PROMPTS \
  GCLOUD_STANDIN_DELAY GCLOUD_STANDIN_RETRY_DELAY GCLOUD_STANDIN_SCP_FAIL_WORKERS GCLOUD_STANDIN_SCP_SLOW_WORKERS \
  GCLOUD_STANDIN_SCP_HOLD_WORKERS GCLOUD_STANDIN_NO_AUTH GCLOUD_STANDIN_GCS GCLOUD_STANDIN_GCS_FAIL_WORKERS GCLOUD_STANDIN_WORKER_DELAY \
  LESSON_FAIL_WORKER LESSON_FAIL_NODE FAKEJAX_TIMEOUT FAKEJAX_LOCAL_DEVICES \
  LESSON_HANG_WORKER GCLOUD_STANDIN_NODE_STATES GCLOUD_STANDIN_QR_STATES GCLOUD_STANDIN_PREEMPT_AFTER \
  GCLOUD_STANDIN_TPU_HOLDER GCLOUD_STANDIN_TPU_STALE_LOCK GCLOUD_STANDIN_SSH_FAIL_WORKERS
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
bad() {
  failed=$((failed + 1))
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

# ---------------------------------------------------------------- setup
g standin create pod --zone="$ZONE" --workers=4 --project="$PROJ"
expect "standin create: 4-worker pod" 0
g standin create solo --zone="$ZONE" --workers=1
expect "standin create: 1-worker TPU without a project" 0
g standin create pod --zone="$ZONE" --workers=2
expect "standin create: refuses an existing name" 2 "already exists"

# ---------------------------------------------------------------- a fresh TPU VM, or a prepared one (§6)
g "${TPU[@]}" ssh solo --zone="$ZONE" --project="$PROJ" --command='ls -A ~; command -v python3 >/dev/null && echo python3'
expect "a fresh VM: an empty home and python3" 0 "" "python3"
if [ ! -e /usr/bin/python ] && [ ! -e /usr/local/bin/python ] && [ ! -e /bin/python ]; then
  g "${TPU[@]}" ssh solo --zone="$ZONE" --project="$PROJ" --command='command -v python || echo "no python"'
  expect "a fresh VM: no python from the caller's PATH" 0 "" "no python"
fi
GCLOUD_STANDIN_PREPARED=1 g standin create ready --zone="$ZONE" --workers=2
expect "standin create: a prepared 2-worker TPU (GCLOUD_STANDIN_PREPARED=1)" 0
g "${TPU[@]}" ssh ready --zone="$ZONE" --project="$PROJ" --worker=all \
  --command='~/jax-tpu-lab/.venv/bin/python -c "import jax; print(jax.default_backend())"'
expect "a prepared VM: ~/jax-tpu-lab/.venv with the fake jax on every worker" 0 "" "standin
standin"

printf 'print(1)\n' >stage.py
g "${TPU[@]}" scp stage.py ready: --zone="$ZONE" --project="$PROJ" --worker=all
if [ "$rc" -eq 0 ] && [ -f "$(home ready 0)/stage.py" ] && [ -f "$(home ready 1)/stage.py" ]; then
  ok "scp FILE NAME: --worker=all copies into every worker's home (it always exists)"
else bad "scp FILE NAME: --worker=all copies into every worker's home (it always exists)"; fi
g "${TPU[@]}" scp stage.py solo:~/jax-tpu-lab/ --zone="$ZONE" --project="$PROJ"
expect "scp FILE NAME:~/jax-tpu-lab/ on a fresh VM fails: the folder does not exist" 1 "No such file or directory"

# ---------------------------------------------------------------- --worker (§1.3)
for case in "0:0" "all:0 1 2 3" "ALL:0 1 2 3" "aLl:0 1 2 3" "1,3:1 3" "0-2:0 1 2" \
  "3,1-2:1 2 3" "1,,2:1 2" ",3:3" "2,2:2"; do
  flag=${case%%:*} want=${case#*:}
  workers_of "$flag"
  if [ "$rc" -eq 0 ] && [ "$(cat "$WORK/sorted")" = "$want" ]; then
    ok "--worker=$flag selects [$want]"
  else
    bad "--worker=$flag selects [$want]" "exit $rc, got [$(cat "$WORK/sorted")]"
  fi
done
workers_of "3-3"
expect "--worker=3-3 rejected (a<b needed)" 1 \
  'ERROR: (gcloud.compute.tpus.tpu-vm.ssh) Invalid value for [--worker]: found malformed range "3-3".'
workers_of "3-1"
expect "--worker=3-1 rejected" 1 'found malformed range "3-1".'
workers_of "1-2-3"
expect "--worker=1-2-3 rejected" 1 'found malformed range "1-2-3".'
workers_of "x"
expect "--worker=x rejected" 1 "unable to parse worker ID x. Please only use numbers."
workers_of "4"
expect "--worker=4 out of range" 1 \
  "worker index 4 is larger than the valid worker indexes on this TPU VM. Please only use indexes in the range [0, 3], inclusive."
workers_of "0-9"
expect "--worker=0-9 out of range" 1 "worker index 9 is larger"
workers_of ","
expect "--worker=, selects nothing" 1 "no worker specified, or none were parsed from the argument value."
workers_of "a-b"
expect "--worker=a-b crashes gcloud (uncaught int())" 1 "ERROR: gcloud crashed (ValueError)"
g "${TPU[@]}" ssh pod "${ZP[@]}" --command='echo $GCLOUD_STANDIN_WORKER'
expect "--worker defaults to 0" 0 "" "0"

# ---------------------------------------------------------------- ssh rules (§1.3)
g "${TPU[@]}" ssh pod "${ZP[@]}" --worker=all
expect "ssh to several workers without --command rejected" 1 \
  'Invalid value for [--worker]: cannot target multiple workers without the `--command` flag.'
g "${TPU[@]}" ssh pod "${ZP[@]}" --worker=0-1 --command=
expect "an empty --command counts as none" 1 "cannot target multiple workers without the"
g "${TPU[@]}" ssh pod --project="$PROJ" --command=true
expect "--zone required" 1 "The required property [zone] is not currently set."
CLOUDSDK_COMPUTE_ZONE=$ZONE g "${TPU[@]}" ssh pod --project="$PROJ" --command=true
expect "CLOUDSDK_COMPUTE_ZONE stands in for --zone" 0
g "${TPU[@]}" ssh pod --zone="$ZONE" --command=true
expect "--project required" 1 "The required property [project] is not currently set."
g "${TPU[@]}" ssh pod --zone=us-west4-a --project="$PROJ" --command=true
expect "wrong zone is NOT_FOUND" 1 \
  "NOT_FOUND: Resource 'projects/$PROJ/locations/us-west4-a/nodes/pod' was not found"
g "${TPU[@]}" ssh pod --zone="$ZONE" --project=other --command=true
expect "wrong project is NOT_FOUND" 1 "NOT_FOUND: Resource 'projects/other/locations/"
g "${TPU[@]}" ssh nosuch "${ZP[@]}" --command=true
expect "unknown TPU is NOT_FOUND" 1 "ERROR: (gcloud.compute.tpus.tpu-vm.ssh) NOT_FOUND"
GCLOUD_STANDIN_NO_AUTH=1 g "${TPU[@]}" ssh pod "${ZP[@]}" --command=true
expect "no credentials: exit 1 (§7)" 1 "You do not currently have an active account selected."

# per-worker home, HOME, cwd and hostname
all_ok=1
g "${TPU[@]}" ssh pod "${ZP[@]}" --worker=all \
  --command='echo "$GCLOUD_STANDIN_WORKER $PWD $HOME $(hostname)" > ~/who'
for i in 0 1 2 3; do
  h=$(home pod "$i")
  if [ "$(cat "$h/who" 2>/dev/null)" != "$i $h $h t1v-n-standin0-w-$i" ]; then all_ok=0; fi
done
if [ "$rc" -eq 0 ] && [ "$all_ok" -eq 1 ]; then ok "each worker: own home as cwd and HOME, own hostname"
else bad "each worker: own home as cwd and HOME, own hostname"; fi
expect "progress lines go to stderr (§1.3)" 0 "SSH: Attempting to connect to worker 3..."
expect "batch-size line as gcloud 578 prints it" 0 \
  "Using ssh batch size of 1. Attempting to SSH into 1 nodes with a total of 4 workers."

# the remote command reaches the login shell unchanged (split/joined on ' ')
g "${TPU[@]}" ssh pod "${ZP[@]}" --command='printf "%s|" a  "b  c" '\''d'\''; echo'
expect "--command reaches bash -c verbatim (double spaces kept)" 0 "" "a|b  c|d|"

# the remote environment is not the caller's
SELFTEST_SECRET=leak LESSON_KNOB=k g "${TPU[@]}" ssh pod "${ZP[@]}" \
  --command='echo "[${SELFTEST_SECRET-}] [${LESSON_KNOB-}]"'
expect "caller's env stays local; LESSON_* is forwarded" 0 "" "[] [k]"

# concurrency: every worker starts before any finishes
g "${TPU[@]}" ssh pod "${ZP[@]}" --worker=all \
  --command='date +%s.%N > ~/t0; sleep 1; date +%s.%N > ~/t1'
python3 - "$STATE" >"$WORK/conc" 2>&1 <<'EOF'
import sys, pathlib
root = pathlib.Path(sys.argv[1]) / "tpus" / "pod"
t0 = [float((root / f"worker-{i}/home/t0").read_text()) for i in range(4)]
t1 = [float((root / f"worker-{i}/home/t1").read_text()) for i in range(4)]
print("overlap" if max(t0) < min(t1) else "serial")
EOF
if [ "$rc" -eq 0 ] && [ "$(cat "$WORK/conc")" = overlap ]; then ok "ssh --worker=all runs all workers at once"
else bad "ssh --worker=all runs all workers at once" "$(cat "$WORK/conc")"; fi

# exit status: single worker passes through; several: first non-zero in worker order
g "${TPU[@]}" ssh pod "${ZP[@]}" --worker=3 --command='exit 4'
expect "one worker: gcloud exits with the remote status" 4
g "${TPU[@]}" ssh pod "${ZP[@]}" --worker=all \
  --command='exit $(( GCLOUD_STANDIN_WORKER == 1 ? 3 : GCLOUD_STANDIN_WORKER == 3 ? 5 : 0 ))'
expect "several workers: first non-zero in worker order" 3 \
  "##### Command execution on worker 1 failed with exit status 3. Continuing."
expect "several workers: every failure is reported" 3 \
  "##### Command execution on worker 3 failed with exit status 5. Continuing."
g "${TPU[@]}" ssh pod "${ZP[@]}" --worker=2,3 --command='exit 6'
expect "gcloud bug kept: --worker=2,3 loses the failures (IndexError)" 0 \
  "IndexError: list assignment index out of range"

# 255 is an ssh failure: 10 attempts
g "${TPU[@]}" ssh pod "${ZP[@]}" --worker=1 --command='echo x >> ~/tries; exit 255'
tries=$(wc -l <"$(home pod 1)/tries")
attempts=$(grep -c "SSH: Attempting to connect to worker 1..." "$WORK/err")
if [ "$rc" -eq 255 ] && [ "$tries" -eq 10 ] && [ "$attempts" -eq 10 ] &&
  grep -qF "ERROR: (gcloud.compute.tpus.tpu-vm.ssh) [/usr/bin/ssh] exited with return code [255]." "$WORK/err"; then
  ok "remote 255 is retried: 10 attempts, then exit 255"
else bad "remote 255 is retried: 10 attempts, then exit 255" "rc=$rc tries=$tries attempts=$attempts"; fi
rm -f "$(home pod 2)/tries"
g "${TPU[@]}" ssh pod "${ZP[@]}" --worker=all \
  --command='if [ "$GCLOUD_STANDIN_WORKER" = 2 ]; then echo x >> ~/tries; exit 255; fi'
tries=$(wc -l <"$(home pod 2)/tries")
if [ "$rc" -eq 255 ] && [ "$tries" -eq 10 ] && grep -qF "Retrying: SSH command error:" "$WORK/err"; then
  ok "several workers: a 255 worker is retried 10 times, exit 255"
else bad "several workers: a 255 worker is retried 10 times, exit 255" "rc=$rc tries=$tries"; fi
start=$(date +%s%N)
GCLOUD_STANDIN_RETRY_DELAY=0.2 g "${TPU[@]}" ssh solo --zone="$ZONE" --project=any --command='exit 255'
ms=$(( ($(date +%s%N) - start) / 1000000 ))
if [ "$rc" -eq 255 ] && [ "$ms" -ge 1800 ]; then ok "GCLOUD_STANDIN_RETRY_DELAY spaces the attempts"
else bad "GCLOUD_STANDIN_RETRY_DELAY spaces the attempts" "rc=$rc after ${ms} ms"; fi

# ---------------------------------------------------------------- grammar (§7)
g "${TPU[@]}" ssh pod "${ZP[@]}" --commnd=x
expect "unknown flag: exit 2 with did-you-mean" 2 \
  "ERROR: (gcloud.compute.tpus.tpu-vm.ssh) unrecognized arguments: --commnd=x (did you mean '--command'?)"
g "${TPU[@]}" ssh pod "${ZP[@]}" --frobnicate-everything
if [ "$rc" -eq 2 ] && grep -qF "unrecognized arguments: --frobnicate-everything" "$WORK/err" &&
  ! grep -qF "did you mean" "$WORK/err"; then ok "unknown far-off flag: no suggestion"
else bad "unknown far-off flag: no suggestion"; fi
g "${TPU[@]}" ssh pod "${ZP[@]}" --comm=x
expect "abbreviated flags are not accepted" 2 "unrecognized arguments: --comm=x"
g "${TPU[@]}" ssh pod --zone "$ZONE" --project "$PROJ" --worker 2 --command 'echo $GCLOUD_STANDIN_WORKER'
expect "--flag value form" 0 "" "2"
g --project="$PROJ" "${TPU[@]}" ssh --command='echo $GCLOUD_STANDIN_WORKER' pod --zone="$ZONE"
expect "gcloud-wide flag before the group, flags before the positional" 0 "" "0"
g "${TPU[@]}" ssh pod "${ZP[@]}" --zone
expect "flag without its value" 2 "argument --zone: expected one argument"
g "${TPU[@]}" ssh pod "${ZP[@]}" --quiet=yes --command=true
expect "boolean flag with a value" 2 "argument --quiet/-q: ignored explicit argument 'yes'"
g "${TPU[@]}" ssh "${ZP[@]}" --command=true
expect "missing TPU positional" 2 "argument [USER@]TPU: Must be specified."
g "${TPU[@]}" ssh pod extra "${ZP[@]}" --command=true
expect "extra positional is unrecognized" 2 "unrecognized arguments: extra"
g "${TPU[@]}" ssh pod "${ZP[@]}" --strict-host-key-checking=maybe --command=true
expect "--strict-host-key-checking choices" 2 "Invalid choice: 'maybe'"
g "${TPU[@]}" ssh pod "${ZP[@]}" --dry-run
expect "valid but not emulated flag: exit 2, says so" 2 "is not emulated by this stand-in"
g "${TPU[@]}" sssh pod "${ZP[@]}"
expect "mistyped verb" 2 "Invalid choice: 'sssh'."
g "${TPU[@]}" list "${ZP[@]}"
expect "valid verb not emulated" 2 "is not emulated by this stand-in"
g "${TPU[@]}" ssh pod "${ZP[@]}" -- echo hi
expect "SSH_ARGS words become the remote command" 0 "" "hi"
g "${TPU[@]}" ssh pod "${ZP[@]}" --command='echo via-command' -- -o ServerAliveInterval=5
expect "SSH_ARGS ssh options before gcloud's command" 0 "" "via-command"
g "${TPU[@]}" ssh pod "${ZP[@]}" --command=true -- -L 8080:localhost:80
expect "port forwarding is not emulated" 2 "the ssh option -L"
g "${TPU[@]}" --zone="$ZONE" ssh pod --project="$PROJ" --command=true
expect "a command flag before the verb is unrecognized" 2 "unrecognized arguments: --zone=$ZONE"
g compute instances list
expect "other gcloud commands: exit 2, not emulated" 2 "is not emulated"
GCLOUD_STANDIN_DELAY=0.3 g "${TPU[@]}" ssh nosuch "${ZP[@]}" --command=true
python3 -c 'import json,sys; c=json.loads(open(sys.argv[1]).readlines()[-1]); sys.exit(c["t_end"]-c["t_start"] < 0.3)' \
  "$STATE/calls.jsonl"
rc2=$?
if [ "$rc" -eq 1 ] && [ "$rc2" -eq 0 ]; then ok "GCLOUD_STANDIN_DELAY delays every call"
else bad "GCLOUD_STANDIN_DELAY delays every call"; fi
GCLOUD_STANDIN_STATE='' "$GCLOUD" "${TPU[@]}" ssh pod "${ZP[@]}" --command=true >"$WORK/out" 2>"$WORK/err"
rc=$?
expect "GCLOUD_STANDIN_STATE is required" 2 "GCLOUD_STANDIN_STATE is not set"

# ---------------------------------------------------------------- scp (§2.2, §7)
mkdir -p local/dir/sub
echo payload >local/file.txt
echo nested >local/dir/sub/n.txt
g "${TPU[@]}" scp local/file.txt pod:~/lab/ "${ZP[@]}"
expect "upload: remote folder must exist" 1 "scp: ~/lab/: No such file or directory"
expect "a failed scp is retried (10 attempts)" 1 \
  "ERROR: (gcloud.compute.tpus.tpu-vm.scp) [/usr/bin/scp] exited with return code [1]."
if [ "$(grep -c 'SCP: Attempting to connect to worker 0...' "$WORK/err")" -eq 10 ]; then
  ok "scp failure: 10 'SCP: Attempting' lines"
else bad "scp failure: 10 'SCP: Attempting' lines"; fi
g "${TPU[@]}" ssh pod "${ZP[@]}" --worker=all --command='mkdir -p ~/lab'
g "${TPU[@]}" scp local/file.txt pod:~/lab/ "${ZP[@]}" --worker=all
all_ok=1
for i in 0 1 2 3; do
  [ "$(cat "$(home pod "$i")/lab/file.txt" 2>/dev/null)" = payload ] || all_ok=0
done
if [ "$rc" -eq 0 ] && [ "$all_ok" -eq 1 ]; then ok "upload --worker=all: every worker gets a copy"
else bad "upload --worker=all: every worker gets a copy"; fi
rm -r "$(home pod 2)/lab"
g "${TPU[@]}" scp local/file.txt pod:~/lab/ "${ZP[@]}" --worker=all
expect "several workers: an upload failing on one worker exits 255 (gcloud stores 255)" 255 \
  "googlecloudsdk.command_lib.util.ssh.ssh.CommandError: [/usr/bin/scp] exited with return code [1]."
mkdir "$(home pod 2)/lab"
g "${TPU[@]}" scp local/file.txt pod:~/lab/ "${ZP[@]}" --worker=2
g "${TPU[@]}" scp local/dir pod:~/lab/ "${ZP[@]}" --worker=1
expect "a directory needs --recurse" 1 "scp: local/dir: not a regular file"
g "${TPU[@]}" scp --recurse local/dir/ pod:lab "${ZP[@]}" --worker=all
if [ "$rc" -eq 0 ] && [ "$(cat "$(home pod 3)/lab/dir/sub/n.txt" 2>/dev/null)" = nested ]; then
  ok "upload --recurse dir/ into an existing folder makes folder/dir"
else bad "upload --recurse dir/ into an existing folder makes folder/dir"; fi
g "${TPU[@]}" scp local/file.txt pod: "${ZP[@]}" --worker=2
if [ "$rc" -eq 0 ] && [ -f "$(home pod 2)/file.txt" ]; then ok "upload to NAME: lands in the home"
else bad "upload to NAME: lands in the home"; fi

g "${TPU[@]}" ssh pod "${ZP[@]}" --worker=all --command='hostname > ~/lab/who'
mkdir -p out
g "${TPU[@]}" scp pod:~/lab/who out/ "${ZP[@]}" --worker=all
if [ "$rc" -eq 1 ] && [ -z "$(ls -A out)" ] &&
  grep -qxF "ERROR: (gcloud.compute.tpus.tpu-vm.scp) Invalid value for [--worker]: cannot target multiple workers while copying files to client." "$WORK/err"; then
  ok "download --worker=all rejected before any copy"
else bad "download --worker=all rejected before any copy"; fi
g "${TPU[@]}" scp pod:~/lab/who out/w0/ "${ZP[@]}" --worker=0
expect "download: local folder must exist" 1 "scp: out/w0/: No such file or directory"
all_ok=1
for i in 0 1 2 3; do
  mkdir -p "out/w$i"
  g "${TPU[@]}" scp --recurse pod:~/lab "out/w$i/" "${ZP[@]}" --worker="$i"
  [ "$rc" -eq 0 ] && [ "$(cat "out/w$i/lab/who" 2>/dev/null)" = "t1v-n-standin0-w-$i" ] || all_ok=0
done
if [ "$all_ok" -eq 1 ]; then ok "download per worker into separate folders (dir -> out/wI/lab)"
else bad "download per worker into separate folders (dir -> out/wI/lab)"; fi
g "${TPU[@]}" scp pod:lab/who pod:missing.txt out/w2/ "${ZP[@]}" --worker=2
if [ "$rc" -eq 1 ] && [ -f out/w2/who ] && grep -qF "scp: missing.txt: No such file or directory" "$WORK/err"; then
  ok "download of several sources: copies what exists, fails on the rest"
else bad "download of several sources: copies what exists, fails on the rest"; fi
GCLOUD_STANDIN_SCP_FAIL_WORKERS=2 g "${TPU[@]}" scp pod:~/lab/who out/w2/again "${ZP[@]}" --worker=2
expect "GCLOUD_STANDIN_SCP_FAIL_WORKERS: that download fails" 1 "injected failure"
GCLOUD_STANDIN_SCP_FAIL_WORKERS=2 g "${TPU[@]}" scp pod:~/lab/who out/w1/again "${ZP[@]}" --worker=1
expect "GCLOUD_STANDIN_SCP_FAIL_WORKERS: other workers still fetched" 0
GCLOUD_STANDIN_SCP_SLOW_WORKERS=3:0.3 g "${TPU[@]}" scp pod:~/lab/who out/w3/slow "${ZP[@]}" --worker=3
# A sleep lasts at least its time: the attempt's own record spans the extra 0.3 s.
if [ "$rc" -eq 0 ] && [ -f out/w3/slow ] && tail -n 1 "$STATE/runs.jsonl" | python3 -c '
import json, sys
r = json.loads(sys.stdin.read())
sys.exit(0 if r["worker"] == 3 and r["t_end"] - r["t_start"] >= 0.3 else 1)'; then
  ok "GCLOUD_STANDIN_SCP_SLOW_WORKERS: that download takes longer"
else bad "GCLOUD_STANDIN_SCP_SLOW_WORKERS: that download takes longer"; fi
GCLOUD_STANDIN_SCP_SLOW_WORKERS=3:soon g "${TPU[@]}" scp pod:~/lab/who out/w3/slow "${ZP[@]}" --worker=3
expect "GCLOUD_STANDIN_SCP_SLOW_WORKERS: a malformed value is a usage error" 2 "WORKER:SECONDS, not '3:soon'"
# A held download ends only after another worker's download has ended: events.jsonl shows it.
# (In a copy of the state: the two calls overlap, and calls.jsonl is checked below for sequential ones.)
cp -r "$STATE" "$WORK/hold-state"
rm "$WORK/hold-state/events.jsonl" # the held download counts every download the state has seen
GCLOUD_STANDIN_STATE="$WORK/hold-state" GCLOUD_STANDIN_SCP_HOLD_WORKERS=3:1 \
  "$GCLOUD" "${TPU[@]}" scp --recurse pod:~/lab out/w3/held "${ZP[@]}" --worker=3 >/dev/null 2>&1 </dev/null &
held=$!
GCLOUD_STANDIN_STATE="$WORK/hold-state" g "${TPU[@]}" scp --recurse pod:~/lab out/w1/freed "${ZP[@]}" --worker=1
wait "$held"
if [ "$rc" -eq 0 ] && [ -d out/w3/held ] && python3 -c '
import json, sys
ends = [e["argv"][-1] for e in map(json.loads, open(sys.argv[1])) if e["event"] == "end" and "--recurse" in e["argv"]]
sys.exit(0 if ends[-2:] == ["--worker=1", "--worker=3"] else 1)' "$WORK/hold-state/events.jsonl"; then
  ok "GCLOUD_STANDIN_SCP_HOLD_WORKERS: the held download ends after the other one"
else bad "GCLOUD_STANDIN_SCP_HOLD_WORKERS: the held download ends after the other one"; fi
GCLOUD_STANDIN_SCP_HOLD_WORKERS=3 g "${TPU[@]}" scp pod:~/lab/who out/w3/slow "${ZP[@]}" --worker=3
expect "GCLOUD_STANDIN_SCP_HOLD_WORKERS: a malformed value is a usage error" 2 "WORKER:COUNT, not '3'"
g "${TPU[@]}" scp local/file.txt local/copy.txt "${ZP[@]}"
expect "local to local rejected" 1 "Source(s) must be remote when destination is local."
g "${TPU[@]}" scp pod:a pod:b "${ZP[@]}"
expect "remote to remote rejected" 1 "All sources must be local files when destination is remote."
g "${TPU[@]}" scp pod:a solo:b out/ "${ZP[@]}"
expect "two remotes to local rejected" 1 "All sources must refer to the same remote when destination is local."
mkdir -p "odd:name"
echo colon >"odd:name/f"
g "${TPU[@]}" scp ./odd:name/f pod:~/lab/ "${ZP[@]}"
if [ "$rc" -eq 0 ] && [ "$(cat "$(home pod 0)/lab/f" 2>/dev/null)" = colon ]; then
  ok "./a:b is a local path (FromPath regex)"
else bad "./a:b is a local path (FromPath regex)"; fi
g "${TPU[@]}" scp local/file.txt --zone="$ZONE" pod:~/lab/ extra --project="$PROJ"
expect "argparse chunking: positionals split by a flag" 2 "unrecognized arguments: extra"

# ---------------------------------------------------------------- fake jax + lessons
g "${TPU[@]}" scp "$HERE/lesson_standin.py" "$HERE/discover_standin.py" pod:~/lab/ "${ZP[@]}" --worker=all
g "${TPU[@]}" ssh pod "${ZP[@]}" --worker=all \
  --command='python3 -m venv ~/venv && ~/venv/bin/pip install "jax[tpu]"'
expect "python3 -m venv + pip install (installs nothing)" 0 "stand-in: pip install jax[tpu] (nothing installed)"
g "${TPU[@]}" ssh pod "${ZP[@]}" --worker=1 \
  --command='python3 -m venv --clear ~/venv2 && . ~/venv2/bin/activate && python -m pip install -U jax && python -c "import jax; print(jax.default_backend())"'
expect "venv --clear, activate, python -m pip; backend is standin" 0 "stand-in: pip install -U jax" "standin"
g "${TPU[@]}" ssh pod "${ZP[@]}" --command='python3 -c "import jax"'
expect "without the venv there is no jax" 1 "No module named 'jax'"
g "${TPU[@]}" ssh pod "${ZP[@]}" --worker=all \
  --command='cd ~/lab && TPU_RUN_DIR=~/lab/run ~/venv/bin/python discover_standin.py && TPU_RUN_DIR=~/lab/run ~/venv/bin/python lesson_standin.py'
python3 - "$STATE" >"$WORK/check" 2>&1 <<'EOF'
import json, sys, pathlib
root = pathlib.Path(sys.argv[1]) / "tpus" / "pod"
problems = []
for i in range(4):
    run = root / f"worker-{i}/home/lab/run"
    d = json.loads((run / f"discovery-{i}.json").read_text())
    w = json.loads((run / f"worker-{i}.json").read_text())
    if d != {"kind": "discovery", "process_index": i, "process_count": 4, "local_device_count": 4,
             "device_count": 16, "backend": "standin", "hostname": f"t1v-n-standin0-w-{i}"}:
        problems.append(f"discovery-{i}: {d}")
    keys = ["kind", "script", "process_index", "process_count", "local_device_count", "device_count",
            "backend", "hostname", "owned_inputs", "global_mean_gradient", "expected_mean_gradient",
            "params_before", "params_after", "check"]
    if list(w) != keys or w["owned_inputs"] != [4 * i + k for k in range(4)] or w["check"] != "passed" \
            or w["backend"] != "standin" or w["script"] != "lesson_standin":
        problems.append(f"worker-{i}: {w}")
    if (run / "checkpoint.json").exists() != (i == 0):
        problems.append(f"checkpoint on worker {i}: {(run / 'checkpoint.json').exists()}")
    if not (run / "events.jsonl").read_text().strip():
        problems.append(f"no events on worker {i}")
c = json.loads((root / "worker-0/home/lab/run/checkpoint.json").read_text())
if list(c) != ["kind", "written_by", "process_count", "step", "params", "global_mean_gradient"] \
        or c["written_by"] != 0 or c["process_count"] != 4 or c["step"] != 1:
    problems.append(f"checkpoint: {c}")
print("\n".join(problems) or "receipts ok")
EOF
if [ "$rc" -eq 0 ] && [ "$(cat "$WORK/check")" = "receipts ok" ]; then
  ok "lessons on 4 workers: discovery, training and checkpoint receipts"
else bad "lessons on 4 workers: discovery, training and checkpoint receipts" "$(cat "$WORK/check")"; fi
LESSON_FAIL_WORKER=2 g "${TPU[@]}" ssh pod "${ZP[@]}" --worker=all \
  --command='cd ~/lab && TPU_RUN_DIR=~/lab/fail ~/venv/bin/python lesson_standin.py'
if [ "$rc" -eq 1 ] && grep -qF "worker 2 failed with exit status 7" "$WORK/err" &&
  grep -qF "process(es) [2] exited before reaching collective" "$WORK/err" &&
  [ ! -e "$(home pod 2)/lab/fail/worker-2.json" ]; then
  ok "LESSON_FAIL_WORKER=2: exit 7 there, its peers fail, exit = worker 0's"
else bad "LESSON_FAIL_WORKER=2: exit 7 there, its peers fail, exit = worker 0's"; fi
g "${TPU[@]}" ssh pod "${ZP[@]}" --command='cd ~/lab && ~/venv/bin/python lesson_standin.py'
expect "lesson without TPU_RUN_DIR fails clearly" 2 "TPU_RUN_DIR is not set"
FAKEJAX_TIMEOUT=1 g "${TPU[@]}" ssh pod "${ZP[@]}" --worker=1 \
  --command='cd ~/lab && TPU_RUN_DIR=~/lab/one ~/venv/bin/python discover_standin.py'
expect "one worker of four: initialize() times out (all hosts must run)" 1 \
  "Did you run your code on all TPU hosts?"
g "${TPU[@]}" ssh pod "${ZP[@]}" --worker=all \
  --command='~/venv/bin/python -c "import jax; jax.process_index(); jax.distributed.initialize()"'
expect "fake jax: initialize() after a jax call is refused" 1 "must be called before any JAX calls"
g "${TPU[@]}" ssh solo --zone="$ZONE" --project=any \
  --command='python3 -m venv v && v/bin/python -c "import jax; jax.distributed.initialize(); jax.distributed.initialize()"'
expect "fake jax: initialize() twice is refused" 1 "distributed.initialize should only be called once."

# ---------------------------------------------------------------- storage cp / rsync
# A folder stands in for Cloud Storage: gs://BUCKET/NAME is $GCS/BUCKET/NAME. Naming follows
# gcloud 578's copy_task_iterator.py (see README.md).
GCS="$STATE/gcs"
objects() { (cd "$GCS/$1" 2>/dev/null && find . -type f | sed 's|^\./||' | sort | tr '\n' ' ' | sed 's/ $//'); }
g standin create-bucket lab-results
expect "standin create-bucket" 0
g standin create-bucket Lab_Results
expect "standin create-bucket follows the bucket naming rules" 2 "only lowercase letters"
mkdir -p src/run1/artifacts && echo log >src/run1/log.txt && echo r >src/run1/artifacts/w.json
g storage cp --recursive src/run1 gs://lab-results/new
expect "cp -r DIR to a new name: the folder's contents land under that name" 0 \
  "Copying file://src/run1/log.txt to gs://lab-results/new/log.txt"
if [ "$(objects lab-results)" = "new/artifacts/w.json new/log.txt" ]; then
  ok "... as new/log.txt, new/artifacts/w.json"
else
  bad "... as new/log.txt, new/artifacts/w.json" "$(objects lab-results)"
fi
g storage cp -r src/run1 gs://lab-results/new
expect "cp -r DIR to an existing prefix: the folder lands inside it" 0 "to gs://lab-results/new/run1/log.txt"
g storage cp -R src/run1 gs://lab-results/w0/
expect "cp -R DIR to a new name ending in /: inside it, as into a folder" 0 "to gs://lab-results/w0/run1/log.txt"
g storage cp -r src/run1 gs://lab-results/w0/
expect "... and the same again (a retried upload) lands in the same place" 0 "to gs://lab-results/w0/run1/log.txt"
g storage cp src/run1/log.txt gs://lab-results
expect "cp FILE gs://BUCKET: the object is named after the file" 0 "to gs://lab-results/log.txt"
g storage cp src/run1 gs://lab-results/x/
expect "a folder without --recursive is omitted, and then matched nothing" 1 \
  "WARNING: Omitting file://src/run1 because it is a container, and recursion is not enabled."
if grep -qF "The following URLs matched no objects or files:" "$WORK/err"; then
  ok "... with gcloud's error"
else
  bad "... with gcloud's error"
fi
g storage cp -r src/nothing gs://lab-results/x/
expect "a source that matches nothing" 1 "The following URLs matched no objects or files:"
g storage cp -r src/run1 gs://no-such-bucket/x/
expect "a bucket that does not exist" 1 "HTTPError 404: The specified bucket does not exist."
mkdir dl
g storage cp --recursive gs://lab-results/w0 dl
expect "download a prefix into an existing folder: dl/w0/..." 0
if [ -f dl/w0/run1/artifacts/w.json ] && [ -f dl/w0/run1/log.txt ]; then
  ok "... with every object"
else
  bad "... with every object"
fi
g storage cp -r gs://lab-results/w0 nowhere
expect "download of several objects into a folder that does not exist" 1 \
  "Destination URL must name an existing directory. Provided: nowhere."
g storage cp gs://lab-results/log.txt nowhere/
expect "download of one object to a missing folder ending in /" 1 \
  "Destination URL must name an existing directory if it ends with a delimiter. Provided: nowhere/."
mkdir wild
g storage cp -r 'gs://lab-results/w*' 'gs://lab-results/n?w' wild/
expect "wildcards: * and ? in cloud URLs" 0
if [ -f wild/w0/run1/log.txt ] && [ -f wild/new/log.txt ]; then
  ok "... each match keeps its name (several top-level sources)"
else
  bad "... each match keeps its name (several top-level sources)"
fi
g storage cp -r 'gs://lab-results/w*' 'gs://lab-results/zz*' wild/
expect "a wildcard that matches nothing is named, after the others are copied" 1 "gs://lab-results/zz*"
g storage cp gs://lab-results/log.txt 'gs://lab-results/q*/'
expect "a destination wildcard must match exactly one URL" 1 "contains an unexpected wildcard"
g storage cp
expect "cp needs a destination" 2 "argument DESTINATION: Must be specified."
g storage cp gs://lab-results
expect "cp needs a source" 1 "Must have URL arguments if not reading paths from stdin."
g storage cp --storage-class=NEARLINE src/run1/log.txt gs://lab-results
expect "valid but not emulated storage flags: exit 2" 2 "--storage-class is valid gcloud grammar but is not emulated"
g storage cp --recursve src gs://lab-results
expect "mistyped storage flag" 2 "unrecognized arguments: --recursve (did you mean '--recursive'?)"
g storage ls gs://lab-results
expect "other storage verbs are valid but not emulated" 2 "gcloud storage ls\` is valid gcloud but is not emulated"
g storage cpy a b
expect "mistyped storage verb" 2 "Invalid choice: 'cpy'."
GCLOUD_STANDIN_NO_AUTH=1 g storage cp src/run1/log.txt gs://lab-results
expect "storage without credentials" 1 "You do not currently have an active account selected."
g storage rsync -r src/run1 gs://lab-results/synced
expect "rsync -r DIR to a new prefix: the contents, under that name" 0 "to gs://lab-results/synced/artifacts/w.json"
g storage rsync -r src/run1 gs://lab-results/synced
if [ "$rc" -eq 0 ] && ! grep -q Copying "$WORK/err"; then ok "rsync again copies nothing"; else bad "rsync again copies nothing"; fi
g storage rsync src/run1 gs://lab-results/top
if [ "$rc" -eq 0 ] && [ "$(objects lab-results/top)" = "log.txt" ]; then
  ok "rsync without -r: the top level only"
else
  bad "rsync without -r: the top level only" "$(objects lab-results/top)"
fi
echo extra >"$GCS/lab-results/synced/extra.txt"
g storage rsync -r --delete-unmatched-destination-objects src/run1 gs://lab-results/synced
if [ "$rc" -eq 0 ] && [ ! -e "$GCS/lab-results/synced/extra.txt" ]; then
  ok "rsync --delete-unmatched-destination-objects"
else
  bad "rsync --delete-unmatched-destination-objects"
fi
g storage rsync -r gs://lab-results/nope dl/x
expect "rsync from a container that does not exist" 1 "Did not find existing container at: gs://lab-results/nope"

# On a worker: the metadata server names the worker, and the TPU's own gcloud uploads.
META=http://metadata.google.internal/computeMetadata/v1/instance/attributes/agent-worker-number
g "${TPU[@]}" ssh pod "${ZP[@]}" --worker=all --command="printf '%s\n' \"\$(curl -sSf -H 'Metadata-Flavor: Google' $META)\""
if [ "$rc" -eq 0 ] && [ "$(sort -n "$WORK/out" | tr '\n' ' ')" = "0 1 2 3 " ]; then
  ok "a worker's metadata server answers agent-worker-number with its index"
else
  bad "a worker's metadata server answers agent-worker-number with its index"
fi
g "${TPU[@]}" ssh pod "${ZP[@]}" --worker=2 --command="curl -sSf $META"
expect "... only with Metadata-Flavor: Google (else 403)" 22 "The requested URL returned error: 403"
g "${TPU[@]}" ssh pod "${ZP[@]}" --worker=2 --command="curl -sS https://storage.googleapis.com/"
expect "... and a worker reaches no other host" 6 "Could not resolve host: storage.googleapis.com"
UPLOAD='w=$(curl -sSf -H "Metadata-Flavor: Google" '"$META"') && mkdir -p run && echo "$w" >run/w.txt && gcloud storage cp -r run "gs://lab-results/up/worker-$w/"'
GCLOUD_STANDIN_GCS_FAIL_WORKERS=1 g "${TPU[@]}" ssh pod "${ZP[@]}" --worker=all --command="$UPLOAD"
expect "an upload refused on worker 1 (GCLOUD_STANDIN_GCS_FAIL_WORKERS)" 1 \
  "does not have storage.objects.create access to the Google Cloud Storage object"
if [ "$(objects lab-results/up)" = "worker-0/run/w.txt worker-2/run/w.txt worker-3/run/w.txt" ]; then
  ok "... while workers 0, 2 and 3 upload with the TPU's gcloud"
else
  bad "... while workers 0, 2 and 3 upload" "$(objects lab-results/up)"
fi
python3 - "$STATE/calls.jsonl" >"$WORK/check" 2>&1 <<'EOF'
import json, sys
calls = [json.loads(line) for line in open(sys.argv[1])]
on_workers = [c for c in calls if "worker" in c]
ups = [c for c in on_workers if c["argv"][:2] == ["storage", "cp"] and "gs://lab-results/up/" in c["argv"][-1]]
ok = (sorted((c["worker"], c["exit"]) for c in ups) == [(0, 0), (1, 1), (2, 0), (3, 0)]
      and all(c["tpu"] == "pod" for c in ups)
      and all(sorted(c) == ["argv", "exit", "t_end", "t_start"] for c in calls if "worker" not in c))
print("calls ok" if ok else "bad: {}".format(ups))
EOF
if [ "$(cat "$WORK/check")" = "calls ok" ]; then
  ok "calls.jsonl marks the calls made on a worker (tpu, worker)"
else
  bad "calls.jsonl marks the calls made on a worker (tpu, worker)" "$(cat "$WORK/check")"
fi
# ---------------------------------------------------------------- create / describe (§10.1, §10.3)
QR=(compute tpus queued-resources)
g "${TPU[@]}" create new1 "${ZP[@]}" --accelerator-type=v5litepod-16
expect "create: --version is required" 2 "argument --version: Must be specified."
g "${TPU[@]}" create new1 --project="$PROJ" --version=v2-alpha-tpuv5-lite
expect "create: needs a zone" 1 "Failed to find attribute [zone]."
g "${TPU[@]}" create new1 "${ZP[@]}" --version=tpu-ubuntu2204-base
g "${TPU[@]}" describe new1 "${ZP[@]}" --format='value(acceleratorType,state)'
expect "create: --accelerator-type defaults to v2-8; without --async it waits until READY" 0 "" "$(printf 'v2-8\tREADY')"
g "${TPU[@]}" create new1 "${ZP[@]}" --version=tpu-ubuntu2204-base
expect "create: an existing name is ALREADY_EXISTS" 1 \
  "ALREADY_EXISTS: Resource 'projects/$PROJ/locations/$ZONE/nodes/new1' already exists"
g "${TPU[@]}" create new2 "${ZP[@]}" --accelerator-type=V4-16 --version=tpu-ubuntu2204-base --async --spot
expect "create --async: returns at once" 0 "Check operation [projects/$PROJ/locations/$ZONE/operations/operation-"
seen=""
for _ in 1 2 3 4; do
  g "${TPU[@]}" describe new2 "${ZP[@]}" --format='value(state)'
  seen+="$(cat "$WORK/out") "
done
if [ "$seen" = "CREATING CREATING READY READY " ]; then ok "create --async: each describe sees CREATING:2, then READY (the default)"
else bad "create --async: each describe sees CREATING:2, then READY (the default)" "saw: $seen"; fi
g "${TPU[@]}" describe new2 "${ZP[@]}" --format=json
python3 -c 'import json,sys; n=json.load(open(sys.argv[1])); sys.exit(not (n["acceleratorType"] == "v4-16"
  and n["schedulingConfig"] == {"spot": True} and len(n["networkEndpoints"]) == 2))' "$WORK/out" &&
  [ -f "$STATE/tpus/new2/worker-1/root/dev/accel1" ] && [ ! -e "$STATE/tpus/new2/worker-1/root/dev/vfio" ]
rc2=$?
if [ "$rc" -eq 0 ] && [ "$rc2" -eq 0 ]; then ok "describe --format=json; v4-16 is lower-cased, 2 workers, spot, /dev/accel*"
else bad "describe --format=json; v4-16 is lower-cased, 2 workers, spot, /dev/accel*"; fi
GCLOUD_STANDIN_NODE_STATES=CREATING:1,STOPPED g "${TPU[@]}" create new3 "${ZP[@]}" --version=v --async
g "${TPU[@]}" describe new3 "${ZP[@]}" --format='value(state)'
g "${TPU[@]}" describe new3 "${ZP[@]}" --format='value(state)'
expect "GCLOUD_STANDIN_NODE_STATES drives what describe sees" 0 "" "STOPPED"
GCLOUD_STANDIN_NODE_STATES=READY:2 g "${TPU[@]}" create new4 "${ZP[@]}" --version=v
expect "a malformed state knob is a stand-in usage error" 2 "GCLOUD_STANDIN_NODE_STATES must be"
g "${TPU[@]}" create tpu7x "${ZP[@]}" --accelerator-type=tpu7x-8 --version=v
expect "create: TPU7x is not offered by the TPU VM API" 1 "INVALID_ARGUMENT"
g "${TPU[@]}" describe nosuch "${ZP[@]}" --format='value(state)'
expect "describe: unknown node is NOT_FOUND" 1 "NOT_FOUND: Resource 'projects/$PROJ/locations/$ZONE/nodes/nosuch'"
g "${TPU[@]}" describe new1 "${ZP[@]}" --format=csv
expect "describe: other formats are not emulated" 2 "is valid gcloud grammar but is not emulated"
g "${TPU[@]}" ssh new1 "${ZP[@]}" --command=true --format=json
expect "--format stays not emulated outside describe" 2 "--format is valid gcloud grammar but is not emulated"

# ---------------------------------------------------------------- queued-resources (§10.2)
QRF=(--node-id=qnode --accelerator-type=v5litepod-16 --runtime-version=v2-alpha-tpuv5-lite)
g "${QR[@]}" create qr1 "${ZP[@]}" --accelerator-type=v5litepod-16 --runtime-version=v
expect "QR create: needs --node-id (or --node-count)" 2 \
  "Exactly one of (--node-id | [--node-count : --node-prefix]) must be specified."
g "${QR[@]}" create qr1 "${ZP[@]}" --node-id=qnode --runtime-version=v
expect "QR create: needs --accelerator-type (or --type and --topology)" 2 \
  "Exactly one of (--accelerator-type | --topology --type) must be specified."
g "${QR[@]}" create qr1 "${ZP[@]}" --node-id=qnode --accelerator-type=v5litepod-16 --version=v
expect "QR create: the flag is --runtime-version, not --version" 2 "unrecognized arguments: --version=v"
g "${QR[@]}" create qr1 "${ZP[@]}" "${QRF[@]}" --valid-until-duration=soon
expect "QR create: --valid-until-duration is a duration" 2 "Failed to parse duration: soon"
g "${QR[@]}" create qr1 "${ZP[@]}" "${QRF[@]}" --spot --valid-until-duration=2h
expect "QR create: waits for the create operation, not for ACTIVE" 0 "Created queued_resource [qr1]."
seen=""
for _ in 1 2 3 4 5; do
  g "${QR[@]}" describe qr1 "${ZP[@]}" --format='value(state.state)'
  seen+="$(cat "$WORK/out") "
  if [ "$seen" = "WAITING_FOR_RESOURCES " ]; then
    g "${TPU[@]}" ssh qnode "${ZP[@]}" --command=true
    expect "QR not ACTIVE yet: its node does not exist" 1 "NOT_FOUND"
  fi
done
if [ "$seen" = "WAITING_FOR_RESOURCES WAITING_FOR_RESOURCES PROVISIONING ACTIVE ACTIVE " ]; then
  ok "QR: each describe sees WAITING_FOR_RESOURCES:2, PROVISIONING:1, then ACTIVE (the default)"
else bad "QR: each describe sees WAITING_FOR_RESOURCES:2, PROVISIONING:1, then ACTIVE (the default)" "saw: $seen"; fi
g "${TPU[@]}" describe qnode "${ZP[@]}" --format='value(state,schedulingConfig.spot,acceleratorType)'
expect "QR ACTIVE: its node is READY, spot, of the QR's type" 0 "" "$(printf 'READY\tTrue\tv5litepod-16')"
g "${TPU[@]}" ssh qnode "${ZP[@]}" --worker=all --command='echo $GCLOUD_STANDIN_WORKER'
expect "QR ACTIVE: its node is managed with the tpu-vm commands" 0
g "${QR[@]}" create qr1 "${ZP[@]}" --node-id=other --accelerator-type=v4-8 --runtime-version=v
expect "QR create: an existing id is ALREADY_EXISTS" 1 "ALREADY_EXISTS"
g "${QR[@]}" delete qr1 "${ZP[@]}"
expect "QR delete prompts (no terminal: exit 1)" 1 "This prompt could not be answered"
g "${QR[@]}" delete qr1 "${ZP[@]}" --quiet
expect "QR delete without --force while its node exists" 1 "FAILED_PRECONDITION"
g "${QR[@]}" delete qr1 "${ZP[@]}" --force --quiet
if [ "$rc" -eq 0 ] && grep -qxF "Deleted queued_resource [qr1]." "$WORK/err" && [ ! -e "$STATE/tpus/qnode" ]; then
  ok "QR delete --force --quiet: deletes the QR and its node"
else bad "QR delete --force --quiet: deletes the QR and its node"; fi
g "${QR[@]}" describe qr1 "${ZP[@]}"
expect "a deleted QR is NOT_FOUND" 1 "NOT_FOUND: Resource 'projects/$PROJ/locations/$ZONE/queuedResources/qr1'"
for final in FAILED SUSPENDED; do
  name=qr-${final,,}
  GCLOUD_STANDIN_QR_STATES="WAITING_FOR_RESOURCES:1,$final" g "${QR[@]}" create "$name" "${ZP[@]}" \
    --node-id=qnode --accelerator-type=v5litepod-16 --runtime-version=v --async
  g "${QR[@]}" describe "$name" "${ZP[@]}" --format='value(state.state)'
  g "${QR[@]}" describe "$name" "${ZP[@]}" --format='value(state.state)'
  expect "GCLOUD_STANDIN_QR_STATES: a QR that ends $final" 0 "" "$final"
  g "${QR[@]}" delete "$name" "${ZP[@]}" --quiet
  expect "a $final QR (no node) is deleted without --force" 0 "Deleted queued_resource [$name]."
done

# ---------------------------------------------------------------- knobs for the life of a run
g standin create spotty --zone="$ZONE" --workers=2 --project="$PROJ" --spot
# A process in a session of its own (as the run guard starts the program, with setsid) is
# gone too: the VM is gone.
GCLOUD_STANDIN_PREEMPT_AFTER=0.3 g "${TPU[@]}" ssh spotty "${ZP[@]}" --worker=all \
  --command='setsid sleep 30 </dev/null >/dev/null 2>&1 & echo $! > ~/detached; echo $$ > ~/pid; sleep 30; echo never'
p0=$(cat "$(home spotty 0)/pid")
d1=$(cat "$(home spotty 1)/detached")
if [ "$rc" -eq 255 ] && grep -qF "Connection to 10.0.0.2 closed by remote host." "$WORK/err" &&
  ! grep -q never "$WORK/out" && gone "$p0" && gone "$d1"; then
  ok "GCLOUD_STANDIN_PREEMPT_AFTER: the workers' processes end (a setsid one too), ssh exits 255"
else bad "GCLOUD_STANDIN_PREEMPT_AFTER: the workers' processes end (a setsid one too), ssh exits 255" "rc=$rc"; fi
g "${TPU[@]}" describe spotty "${ZP[@]}" --format='value(state)'
expect "... and the node is PREEMPTED" 0 "" "PREEMPTED"
GCLOUD_STANDIN_PREEMPT_AFTER=0.1 g "${TPU[@]}" ssh pod "${ZP[@]}" --worker=all --command='sleep 0.5; echo fine'
expect "GCLOUD_STANDIN_PREEMPT_AFTER spares an on-demand node" 0
GCLOUD_STANDIN_SSH_FAIL_WORKERS=2 g "${TPU[@]}" ssh pod "${ZP[@]}" --worker=all --command='echo $GCLOUD_STANDIN_WORKER'
if [ "$rc" -eq 255 ] && [ "$(grep -c 'port 22: Connection refused' "$WORK/err")" -eq 10 ] &&
  [ "$(sort "$WORK/out" | tr '\n' ' ')" = "0 1 3 " ]; then
  ok "GCLOUD_STANDIN_SSH_FAIL_WORKERS: that worker cannot be reached (10 attempts), the others run"
else bad "GCLOUD_STANDIN_SSH_FAIL_WORKERS: that worker cannot be reached (10 attempts), the others run" "rc=$rc"; fi
GCLOUD_STANDIN_TPU_HOLDER=1 g "${TPU[@]}" ssh pod "${ZP[@]}" --worker=all \
  --command='find /proc/[0-9]*/fd -lname "$TPULAUNCH_GUARD_ROOT/*" -printf "%h\n" 2>/dev/null | sort -u | wc -l'
holder=$(cat "$STATE/tpus/pod/worker-1/root/holder.pid")
if [ "$rc" -eq 0 ] && [ "$(sort "$WORK/out" | tr '\n' ' ')" = "0 0 0 1 " ] &&
  tr '\0' ' ' <"/proc/$holder/cmdline" | grep -q '^stale-train.py ' &&
  [ -e "$STATE/tpus/pod/worker-1/root/tmp/libtpu_lockfile" ]; then
  ok "GCLOUD_STANDIN_TPU_HOLDER: a real process holds worker 1's devices and lock (TPULAUNCH_GUARD_ROOT)"
else bad "GCLOUD_STANDIN_TPU_HOLDER: a real process holds worker 1's devices and lock (TPULAUNCH_GUARD_ROOT)" "$(cat "$WORK/out")"; fi
GCLOUD_STANDIN_TPU_STALE_LOCK=3 g "${TPU[@]}" ssh pod "${ZP[@]}" --worker=3 --command='ls "$TPULAUNCH_GUARD_ROOT/tmp"'
expect "GCLOUD_STANDIN_TPU_STALE_LOCK: a lock file that nobody holds" 0 "" "libtpu_lockfile"

# ---------------------------------------------------------------- states, delete (§1.3, §3, §7)
# ---------------------------------------------------------------- states, delete (§1.3, §3, §7)
g standin set-state solo STOPPED
g "${TPU[@]}" ssh solo --zone="$ZONE" --project=any --command=true
expect "STOPPED TPU cannot be connected to" 1 'This TPU has state "STOPPED", so it cannot be currently connected to.'
g standin set-state solo PREEMPTED
g "${TPU[@]}" scp local/file.txt solo: --zone="$ZONE" --project=any
expect "PREEMPTED TPU is terminal" 1 'This TPU has terminal state "PREEMPTED", so it cannot be used anymore.'
g standin set-state solo CREATING
g "${TPU[@]}" ssh solo --zone="$ZONE" --project=any --command=true
expect "CREATING TPU: a warning, then it runs" 0 'is in state "CREATING"'
g "${TPU[@]}" delete pod "${ZP[@]}"
expect "delete without --quiet and no terminal fails" 1 \
  "This prompt could not be answered because you are not in an interactive session.  You can re-run the command with the --quiet flag to accept default answers for all prompts."
g "${TPU[@]}" ssh pod "${ZP[@]}" --command=true
expect "... and the TPU is still there" 0
g "${TPU[@]}" delete pod --project="$PROJ"
expect "delete needs a zone" 1 "Failed to find attribute [zone]."
# A holder.pid whose pid is now another process's (pids wrap, and tests run at once): delete
# must leave that process alone and end only the real holder.
sleep 30 &
bystander=$!
printf '%s\n' "$bystander" >"$STATE/tpus/pod/worker-2/root/holder.pid"
g "${TPU[@]}" delete pod "${ZP[@]}" --quiet
if [ "$rc" -eq 0 ] && grep -qxF "Delete request issued for: [pod]" "$WORK/err" &&
  grep -qxF "Deleted tpu [pod]." "$WORK/err" && gone "$holder"; then
  ok "delete --quiet (and the node's stale holder ends with it)"
else bad "delete --quiet (and the node's stale holder ends with it)"; fi
if ! gone "$bystander"; then ok "delete spares a process that took a stale holder.pid's pid"
else bad "delete spares a process that took a stale holder.pid's pid"; fi
kill "$bystander" 2>/dev/null
wait "$bystander" 2>/dev/null
g "${TPU[@]}" ssh pod "${ZP[@]}" --command=true
expect "a deleted TPU is NOT_FOUND" 1 "NOT_FOUND"
g "${TPU[@]}" delete pod "${ZP[@]}" --quiet
expect "deleting it again is NOT_FOUND" 1 "NOT_FOUND"
g "${TPU[@]}" delete solo --zone="$ZONE" --project=any --quiet --async
expect "delete --async" 0 "Check operation [projects/any/locations/$ZONE/operations/"

# ---------------------------------------------------------------- calls.jsonl
g "${TPU[@]}" ssh nosuch "${ZP[@]}" --worker=all --command='echo "a b"'
python3 - "$STATE/calls.jsonl" "$ZONE" "$PROJ" >"$WORK/check" 2>&1 <<'EOF'
import json, sys
calls = [json.loads(line) for line in open(sys.argv[1])]
last = calls[-1]
want = ["compute", "tpus", "tpu-vm", "ssh", "nosuch", "--zone=" + sys.argv[2],
        "--project=" + sys.argv[3], "--worker=all", '--command=echo "a b"']
ok = (last["argv"] == want and last["exit"] == 1 and last["t_start"] <= last["t_end"]
      and sorted(last) == ["argv", "exit", "t_end", "t_start"]
      and all(c["argv"][0] != "standin" for c in calls)
      and [c["t_start"] for c in calls if "worker" not in c]
          == sorted(c["t_start"] for c in calls if "worker" not in c))
print("calls ok" if ok else f"bad: {last}")
EOF
if [ "$(cat "$WORK/check")" = "calls ok" ]; then ok "calls.jsonl records exact argv, times, exit, in order"
else bad "calls.jsonl records exact argv, times, exit, in order" "$(cat "$WORK/check")"; fi

# ---------------------------------------------------------------- multi-node queued resources
# After the calls.jsonl check: it wants the calls in start order, and two slices' runs overlap.
# shellcheck source=selftest_multislice.sh
. "$HERE/selftest_multislice.sh"

printf '%d passed, %d failed\n' "$passed" "$failed"
[ "$failed" -eq 0 ]
