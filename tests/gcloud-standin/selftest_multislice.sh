# Self-test of the gcloud stand-in, part 2: multi-node queued resources (Multislice,
# docs/multislice.md). Sourced by selftest.sh (its helpers g, expect, ok, bad, home and its
# variables TPU, QR, ZP, STATE, HERE, WORK), not run alone. The grammar texts are the real
# gcloud 528's (tests/real-gcloud's case grammar.multislice, docs/multislice.md §2.1, §7).
# shellcheck shell=bash disable=SC2016,SC2154

# ---------------------------------------------------------------- --node-count grammar (§2.1)
MS=(--accelerator-type=v5litepod-16 --runtime-version=v2-alpha-tpuv5-lite)
GROUP='Exactly one of (--node-id | [--node-count : --node-prefix]) must be specified.'
g "${QR[@]}" create msq "${ZP[@]}" "${MS[@]}" --node-id=slab --node-count=2
expect "QR create: --node-id with --node-count is a grammar error" 2 "argument --node-id: $GROUP"
g "${QR[@]}" create msq "${ZP[@]}" "${MS[@]}" --node-prefix=slab
expect "QR create: --node-prefix without --node-count is a grammar error" 2 \
  "argument --node-prefix: --node-count must be specified."
g "${QR[@]}" create msq "${ZP[@]}" "${MS[@]}" --node-id=slab --node-prefix=slab
expect "QR create: --node-prefix with --node-id, no count: the prefix's error" 2 \
  "argument --node-prefix: --node-count must be specified."
g "${QR[@]}" create msq "${ZP[@]}" "${MS[@]}" --node-count=two
expect "QR create: --node-count is an integer" 2 "argument --node-count: invalid int value: 'two'"
GCLOUD_STANDIN_NO_AUTH=1 g "${QR[@]}" create msq "${ZP[@]}" "${MS[@]}" --node-count=1 --node-prefix=slab
expect "QR create: --node-count=1 is refused (exit 1) before credentials are looked for" 1 \
  "Invalid value for [--node-count]: Node count must be greater than 1"
g "${QR[@]}" create msq "${ZP[@]}" "${MS[@]}" --node-count=0 --node-prefix=slab
expect "QR create: --node-count=0 reads as not given, so the prefix is refused (exit 1)" 1 \
  "arguments not allowed simultaneously: Can only specify --node-prefix if --node-count is also specified."
g "${QR[@]}" create msq "${ZP[@]}" "${MS[@]}" --node-count=0
if [ "$rc" -eq 1 ] && grep -qF "INVALID_ARGUMENT" "$WORK/err" && [ ! -e "$STATE/queued-resources/msq" ]; then
  ok "QR create: --node-count=0 alone passes gcloud, the API refuses it, nothing is made"
else bad "QR create: --node-count=0 alone passes gcloud, the API refuses it, nothing is made"; fi
g "${TPU[@]}" create slab "${ZP[@]}" --node-count=2 --accelerator-type=v5litepod-16 --version=v
expect "tpu-vm create has no --node-count" 2 "unrecognized arguments: --node-count=2 (did you mean '--queue-count'?)"

# ---------------------------------------------------------------- two slices (§2.2, §3.1)
GCLOUD_STANDIN_QR_STATES=WAITING_FOR_RESOURCES:1,ACTIVE \
  g "${QR[@]}" create msq "${ZP[@]}" "${MS[@]}" --node-count=2 --node-prefix=slab --spot
expect "QR create --node-count=2 --node-prefix=slab" 0 "Created queued_resource [msq]."
g "${TPU[@]}" describe slab-0 "${ZP[@]}"
expect "multi-node QR not ACTIVE yet: no node exists" 1 "NOT_FOUND"
g "${QR[@]}" describe msq "${ZP[@]}" --format='value(state.state)'
N0="tpu.nodeSpec[0]"
g "${QR[@]}" describe msq "${ZP[@]}" --format="value(state.state,$N0.multisliceParams.nodeCount,$N0.multisliceParams.nodeIdPrefix,$N0.nodeId)"
expect "QR describe: ACTIVE, its node spec a node count and prefix (multisliceParams), no node id" 0 "" \
  "$(printf 'ACTIVE\t2\tslab\t')"
seen=""
for i in 0 1; do
  g "${TPU[@]}" describe "slab-$i" "${ZP[@]}" --format='value(state,schedulingConfig.spot,acceleratorType,queuedResource)'
  seen+="$(cat "$WORK/out");"
done
want_node="READY	True	v5litepod-16	projects/$PROJ/locations/$ZONE/queuedResources/msq"
if [ "$seen" = "$want_node;$want_node;" ] && [ ! -e "$STATE/tpus/slab-2" ]; then
  ok "QR ACTIVE: nodes slab-0 and slab-1 (no more), READY, spot, of the QR's type"
else bad "QR ACTIVE: nodes slab-0 and slab-1 (no more), READY, spot, of the QR's type" "saw: $seen"; fi

g "${TPU[@]}" describe slab-0 "${ZP[@]}" --format='value(networkEndpoints[0].ipAddress)'
ip0=$(cat "$WORK/out")
g "${TPU[@]}" describe slab-1 "${ZP[@]}" --format='value(networkEndpoints[0].ipAddress,networkEndpoints[3].ipAddress,networkEndpoints[4].ipAddress)'
read -r ip1 ip13 ip14 <"$WORK/out"
if [[ "$ip0" =~ ^10\.[0-9]+\.[0-9]+\.[0-9]+$ ]] && [[ "$ip1" =~ ^10\. ]] && [[ "$ip13" =~ ^10\. ]] &&
  [ "$ip0" != "$ip1" ] && [ "$ip1" != "$ip13" ] && [ -z "${ip14-}" ]; then
  ok "describe --format=value(networkEndpoints[i].ipAddress): each worker of each slice its own address"
else bad "describe --format=value(networkEndpoints[i].ipAddress): each worker of each slice its own address" \
  "slab-0 w0 '$ip0', slab-1 w0 '$ip1' w3 '$ip13' w4 '${ip14-}'"; fi

# What every worker of every slice reads from its metadata server's tpu-env, and its environment.
META='curl -s -H Metadata-Flavor:Google http://metadata.google.internal/computeMetadata/v1/instance/attributes/tpu-env'
: >"$WORK/tpu-env"
for i in 0 1; do
  g "${TPU[@]}" ssh "slab-$i" "${ZP[@]}" --worker=all \
    --command='echo "$(hostname) $('"$META"' | tr "\n" " ")"; echo "$(hostname) env $(env | grep -c ^MEGASCALE_)"'
  [ "$rc" -eq 0 ] || bad "ssh slab-$i --worker=all reads tpu-env" "exit $rc"
  sed "s/^/slab-$i /" "$WORK/out" >>"$WORK/tpu-env"
done
python3 - "$WORK/tpu-env" "$ip0" >"$WORK/check" 2>&1 <<'EOF'
import re, sys
lines, problems, tags, workers = open(sys.argv[1]).read().splitlines(), [], {}, {}
for line in lines:
    node, host, rest = line.split(" ", 2)
    if rest == "env 0":                 # `env | grep -c ^MEGASCALE_`: none in the environment
        workers.setdefault("env", []).append(node)
        continue
    s = node[-1]
    want = ("MEGASCALE_COORDINATOR_ADDRESS: '{}:8080' MEGASCALE_NUM_SLICES: '2' "
            "MEGASCALE_SLICE_ID: '{}' ".format(sys.argv[2], s))
    m = re.match(r"^t1v-n-(standin[0-9]+)-w-([0-3])$", host)
    if rest != want or not m:
        problems.append(line)
        continue
    tags.setdefault(s, set()).add(m.group(1))
    workers.setdefault(s, []).append(int(m.group(2)))
ok = (not problems and sorted(workers.get("0", [])) == [0, 1, 2, 3]
      and sorted(workers.get("1", [])) == [0, 1, 2, 3] and len(workers.get("env", [])) == 8
      and len(tags.get("0", ())) == 1 and len(tags.get("1", ())) == 1 and tags["0"] != tags["1"])
print("tpu-env ok" if ok else "bad: {} {} {}".format(problems, workers, tags))
EOF
if [ "$(cat "$WORK/check")" = "tpu-env ok" ]; then
  ok "tpu-env on each of 8 workers: coordinator slab-0 w0's IP:8080, 2 slices, its slice id; none in the environment; host names per slice"
else bad "tpu-env on each of 8 workers: coordinator slab-0 w0's IP:8080, 2 slices, its slice id; none in the environment; host names per slice" \
  "$(cat "$WORK/check")"; fi
g "${TPU[@]}" ssh ready "${ZP[@]}" --command="$META; echo end"
expect "a node made alone: tpu-env holds no MEGASCALE_* value" 0 "" "end"

g "${TPU[@]}" scp stage.py slab-1:~/ "${ZP[@]}" --worker=all
if [ "$rc" -eq 0 ] && [ -f "$(home slab-1 0)/stage.py" ] && [ -f "$(home slab-1 3)/stage.py" ] &&
  [ ! -e "$(home slab-0 0)/stage.py" ]; then
  ok "scp SRC slab-1:DEST --worker=all reaches that slice's 4 workers, not the other's"
else bad "scp SRC slab-1:DEST --worker=all reaches that slice's 4 workers, not the other's"; fi

# ---------------------------------------------------------------- one program over both slices
# Both slices' runs started together (a Multislice program waits for every slice): one group of
# 8 processes, ids 0-7 by slice (worker + 4 x slice id), 8 x 4 devices; LESSON_FAIL_NODE=slab-1
# fails that slice only, after its work.
for i in 0 1; do
  g "${TPU[@]}" scp "$HERE/lesson_standin.py" "slab-$i:~/" "${ZP[@]}" --worker=all
done
for i in 0 1; do
  LESSON_FAIL_NODE=slab-1 FAKEJAX_TIMEOUT=30 "$GCLOUD" "${TPU[@]}" ssh "slab-$i" "${ZP[@]}" --worker=all \
    --command='python3 -m venv ~/v && TPU_RUN_DIR=~/run ~/v/bin/python lesson_standin.py' \
    >"$WORK/out-$i" 2>"$WORK/err-$i" </dev/null &
done
wait %1; rc0=$?
wait %2; rc1=$?
python3 - "$STATE/tpus" >"$WORK/check" 2>&1 <<'EOF'
import json, sys, pathlib
root, seen = pathlib.Path(sys.argv[1]), []
for s in (0, 1):
    for w in range(4):
        for receipt in sorted((root / f"slab-{s}/worker-{w}/home/run").glob("worker-*.json")):
            r = json.loads(receipt.read_text())
            seen.append((r["process_index"], r["process_count"], r["device_count"], s * 4 + w))
ok = sorted(seen) == [(i, 8, 32, i) for i in range(8)]
print("receipts ok" if ok else "bad: {}".format(sorted(seen)))
EOF
if [ "$rc0" -eq 0 ] && [ "$rc1" -eq 7 ] && [ "$(cat "$WORK/check")" = "receipts ok" ] &&
  [ "$(grep -c 'Command execution on worker . failed with exit status 7' "$WORK/err-1")" -eq 4 ]; then
  ok "two slices, one program: 8 processes (ids by slice, 32 devices); LESSON_FAIL_NODE=slab-1 fails slab-1 (7) only"
else bad "two slices, one program: 8 processes (ids by slice, 32 devices); LESSON_FAIL_NODE=slab-1 fails slab-1 (7) only" \
  "slab-0 exit $rc0, slab-1 exit $rc1; $(cat "$WORK/check"); $(tail -3 "$WORK/err-0" "$WORK/err-1")"; fi

# ---------------------------------------------------------------- names, delete (§2.2)
g "${QR[@]}" create other "${ZP[@]}" "${MS[@]}" --node-count=3 --node-prefix=slab
expect "QR create: a node name PREFIX-i that exists is ALREADY_EXISTS" 1 "ALREADY_EXISTS"
GCLOUD_STANDIN_QR_STATES=ACTIVE g "${QR[@]}" create msq2 "${ZP[@]}" "${MS[@]}" --node-count=2
g "${QR[@]}" describe msq2 "${ZP[@]}"
if [ -d "$STATE/tpus/msq2-0" ] && [ -d "$STATE/tpus/msq2-1" ]; then
  ok "QR create without --node-prefix: the QR's id is the prefix (msq2-0, msq2-1)"
else bad "QR create without --node-prefix: the QR's id is the prefix (msq2-0, msq2-1)"; fi
g "${QR[@]}" delete msq "${ZP[@]}" --quiet
expect "multi-node QR delete without --force while its nodes exist" 1 "FAILED_PRECONDITION"
g "${TPU[@]}" delete msq2-0 "${ZP[@]}" --quiet
g "${QR[@]}" delete msq2 "${ZP[@]}" --quiet
expect "a QR with one node left still needs --force" 1 "still has node 'msq2-1'"
g "${QR[@]}" delete msq "${ZP[@]}" --force --quiet
if [ "$rc" -eq 0 ] && grep -qxF "Deleted queued_resource [msq]." "$WORK/err" && [ ! -e "$STATE/tpus/slab-0" ] &&
  [ ! -e "$STATE/tpus/slab-1" ] && [ ! -e "$STATE/queued-resources/msq" ] && [ -d "$STATE/tpus/msq2-1" ]; then
  ok "QR delete --force --quiet: deletes the QR and all its nodes, no other"
else bad "QR delete --force --quiet: deletes the QR and all its nodes, no other"; fi
g "${TPU[@]}" ssh slab-1 "${ZP[@]}" --worker=all --command=true
expect "a deleted slice is NOT_FOUND" 1 "NOT_FOUND"
