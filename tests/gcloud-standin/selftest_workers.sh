# Self-test of the gcloud stand-in, part 1: a fresh or prepared TPU VM, --worker and the ssh rules (docs/gcloud.md §1.3, §6).
# Sourced by selftest.sh after selftest_lib.sh (its helpers g, expect, ok, bad, home, gone,
# workers_of and its variables TPU, ZP, STATE, HERE, WORK), in order: each part uses the
# TPUs the parts before it made. Not run alone.
# shellcheck shell=bash disable=SC2016,SC2154

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

# concurrency: every worker starts before any finishes. Each waits (at most 10 s) until all four
# have started, rather than sleeping a fixed time that a loaded machine may take to start them:
# run one after another, worker 0 would end before worker 1 started.
g "${TPU[@]}" ssh pod "${ZP[@]}" --worker=all \
  --command='date +%s.%N > ~/t0.tmp; mv ~/t0.tmp ~/t0; for _ in $(seq 100); do set -- ~/../../worker-*/home/t0; [ "$#" -eq 4 ] && [ -e "$4" ] && break; sleep 0.1; done; date +%s.%N > ~/t1'
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
