# Self-test of the gcloud stand-in, part 4: create / describe, queued resources, the knobs for the life of a run, states and delete, calls.jsonl (§1.3, §3, §7, §10).
# Sourced by selftest.sh after selftest_lib.sh (its helpers g, expect, ok, bad, home, gone,
# workers_of and its variables TPU, ZP, STATE, HERE, WORK), in order: each part uses the
# TPUs the parts before it made. Not run alone.
# shellcheck shell=bash disable=SC2016,SC2154

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
# gone too: the VM is gone.  Two seconds, not less: the workers' shells must have written
# their pids first, and on a loaded 2-core machine (CI) starting them took longer than 0.3 s.
GCLOUD_STANDIN_PREEMPT_AFTER=2 g "${TPU[@]}" ssh spotty "${ZP[@]}" --worker=all \
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
