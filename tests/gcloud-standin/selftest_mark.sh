# Self-test of the gcloud stand-in, part 5: a run's mark (create's --metadata, describe, the metadata
# server) and a dropped connection (GCLOUD_STANDIN_DROP_*), the two things issue 34 meets a TPU with
# (docs/gcloud.md §9, §11; tests/real-gcloud's harness cases show them with the real gcloud).
# Sourced by selftest.sh after selftest_lib.sh (its helpers g, expect, ok, bad, home, gone and its
# variables TPU, ZP, STATE, WORK), after the other parts or alone (`selftest.sh mark`): it makes
# every TPU it uses. Not run by itself.
# shellcheck shell=bash disable=SC2016,SC2154

QR=(compute tpus queued-resources)
# ---------------------------------------------------------------- --metadata (calliope's ArgDict)
MARK=tpulaunch_run
META_URL=http://metadata.google.internal/computeMetadata/v1/instance/attributes
g "${TPU[@]}" create marked "${ZP[@]}" --accelerator-type=v4-16 --version=tpu-ubuntu2204-base \
  --metadata="$MARK=0123456789abcdef" --async
expect "create --metadata KEY=VALUE (--async)" 0 "Create request issued for: [marked]"
g "${TPU[@]}" describe marked "${ZP[@]}" --format="value(metadata.$MARK)"
expect "describe value(metadata.KEY): the value" 0 "" "0123456789abcdef"
g "${TPU[@]}" describe marked "${ZP[@]}" --format="value(metadata.other)"
if [ "$rc" -eq 0 ] && [ "$(od -An -c "$WORK/out" | tr -d ' ')" = '\n' ]; then
  ok "describe value(metadata.KEY) of a key the node lacks: one empty line"
else bad "describe value(metadata.KEY) of a key the node lacks: one empty line"; fi
g "${TPU[@]}" describe marked "${ZP[@]}" --format=json
if [ "$rc" -eq 0 ] && python3 -c 'import json,sys
sys.exit(json.load(open(sys.argv[1]))["metadata"] != {"tpulaunch_run": "0123456789abcdef"})' "$WORK/out"; then
  ok "describe --format=json: the metadata map"
else bad "describe --format=json: the metadata map"; fi
g "${TPU[@]}" create digits "${ZP[@]}" --version=v --metadata="$MARK=1" --metadata="$MARK=0123456789012345,owner="
g "${TPU[@]}" describe digits "${ZP[@]}" --format=yaml
if [ "$rc" -eq 0 ] && [ "$(sed -n '/^metadata:/,/^name:/p' "$WORK/out")" = "metadata:
  owner: ''
  $MARK: '0123456789012345'
name: projects/$PROJ/locations/$ZONE/nodes/digits" ]; then
  ok "the last --metadata wins; yaml quotes a value of digits and an empty one (as gcloud 528)"
else bad "the last --metadata wins; yaml quotes a value of digits and an empty one (as gcloud 528)"; fi
g "${TPU[@]}" describe digits "${ZP[@]}" --format='value(metadata)'
expect "describe value(MAP): KEY=VALUE;... sorted (as gcloud 528)" 0 "" "owner=;$MARK=0123456789012345"
for bad_value in "$MARK:Bad syntax for dict arg: [$MARK]." "=v:Invalid flag value [=v]" "a=1,,b=2:Invalid flag value []" \
  "^^a=1:Invalid delimeter."; do
  g "${TPU[@]}" create refused "${ZP[@]}" --version=v --metadata="${bad_value%%:*}"
  expect "--metadata=${bad_value%%:*} is refused by the grammar" 2 "argument --metadata: ${bad_value#*:}"
done
g "${TPU[@]}" create altdelim "${ZP[@]}" --version=v '--metadata=^:^a=1,2:b=x=y'
g "${TPU[@]}" describe altdelim "${ZP[@]}" --format='value(metadata.a,metadata.b)'
expect "--metadata=^:^...: another delimiter; a value may hold '='" 0 "" "$(printf '1,2\tx=y')"
g "${TPU[@]}" create fromfile "${ZP[@]}" --version=v --metadata-from-file="$MARK=f.txt"
expect "--metadata-from-file stays not emulated" 2 "is valid gcloud grammar but is not emulated"

# ---------------------------------------------------------------- the workers' metadata server
g "${TPU[@]}" ssh marked "${ZP[@]}" --worker=all \
  --command="v=\$(curl -sSf -H 'Metadata-Flavor: Google' $META_URL/$MARK); echo \"\$v \$?\""
expect "every worker's metadata server serves the node's metadata key" 0 "" "0123456789abcdef 0
0123456789abcdef 0"
g "${TPU[@]}" ssh marked "${ZP[@]}" --command="curl -sSf -H 'Metadata-Flavor: Google' $META_URL/other"
expect "... 404 for a key the node lacks (curl -f: 22)" 22 "curl: (22) The requested URL returned error: 404"
g "${TPU[@]}" ssh marked "${ZP[@]}" --command="curl -sS $META_URL/$MARK"
expect "... 403 without Metadata-Flavor: Google" 0 "" \
  "Your client does not have permission to get URL /computeMetadata/v1/instance/attributes/$MARK from this server. Missing Metadata-Flavor:Google header."
g standin create theirs --zone="$ZONE" --workers=1 --project="$PROJ" --metadata="$MARK=ffffffffffffffff,owner=bob"
g "${TPU[@]}" describe theirs "${ZP[@]}" --format="value(metadata.$MARK,metadata.owner)"
expect "standin create --metadata: a TPU someone else made, with their mark" 0 "" "$(printf 'ffffffffffffffff\tbob')"
g standin create nomark --zone="$ZONE" --workers=1 --project="$PROJ"
g "${TPU[@]}" describe nomark "${ZP[@]}" --format=json
if [ "$rc" -eq 0 ] && ! grep -q metadata "$WORK/out"; then ok "standin create: no metadata unless asked (none shown)"
else bad "standin create: no metadata unless asked (none shown)"; fi
g standin create badmark --zone="$ZONE" --workers=1 --metadata="$MARK"
expect "standin create --metadata checks as gcloud does" 2 "Bad syntax for dict arg"
GCLOUD_STANDIN_QR_STATES=ACTIVE g "${QR[@]}" create markqr "${ZP[@]}" --node-id=markq --accelerator-type=v4-8 \
  --runtime-version=v --metadata="$MARK=00000000000000aa"
g "${QR[@]}" describe markqr "${ZP[@]}" --format=json
if [ "$rc" -eq 0 ] && python3 -c 'import json,sys
sys.exit(json.load(open(sys.argv[1]))["tpu"]["nodeSpec"][0]["node"]["metadata"] != {"tpulaunch_run": "00000000000000aa"})' \
  "$WORK/out"; then ok "queued-resources create --metadata: in the node spec"
else bad "queued-resources create --metadata: in the node spec"; fi
g "${TPU[@]}" ssh markq "${ZP[@]}" --command="curl -sSf -H 'Metadata-Flavor: Google' $META_URL/$MARK"
expect "... and on its node once ACTIVE, served by its metadata server" 0 "" "00000000000000aa"
g "${QR[@]}" delete markqr "${ZP[@]}" --force --quiet

# ---------------------------------------------------------------- a dropped connection
g standin create dropper --zone="$ZONE" --workers=2 --project="$PROJ"
# Notes each start; a process that leaves with setsid and lives on; a pause; then writes on.
DROPPED='echo $$ >>~/shells; setsid -f sh -c "echo \$\$ >>~/detached; exec sleep 30" </dev/null >/dev/null 2>&1; echo start; sleep 1.5; echo still >>~/after-sleep; echo out; echo x >>~/after-stdout'
GCLOUD_STANDIN_DROP_WORKERS=1 GCLOUD_STANDIN_DROP_AFTER=0.5 g "${TPU[@]}" ssh dropper "${ZP[@]}" --worker=all \
  --command="$DROPPED"
d1=$(head -n 1 "$(home dropper 1)/detached")
for _ in $(seq 50); do [ "$(wc -l <"$(home dropper 1)/after-sleep")" = 2 ] && break; sleep 0.1; done
counts=""
for file in shells after-sleep after-stdout; do counts+="$(wc -l <"$(home dropper 0)/$file")/$(wc -l <"$(home dropper 1)/$file") "; done
if [ "$rc" -eq 0 ] && grep -qF "Connection to 10.0.0.3 closed by remote host." "$WORK/err" &&
  [ "$(grep -c 'SSH: Attempting to connect to worker 1' "$WORK/err")" = 2 ] &&
  grep -qF "Retrying: SSH command error: [/usr/bin/ssh] exited with return code [255]." "$WORK/err" &&
  [ "$counts" = "1/2 1/2 1/1 " ] && [ "$(sort "$WORK/out" | tr '\n' ' ')" = "out out start start start " ] &&
  ! gone "$d1"; then
  ok "GCLOUD_STANDIN_DROP_*: worker 1's connection drops (255), gcloud runs the command again; the first shell runs on until it writes (SIGPIPE), a setsid one lives on"
else bad "GCLOUD_STANDIN_DROP_*: worker 1's connection drops (255), gcloud runs the command again; the first shell runs on until it writes (SIGPIPE), a setsid one lives on" "rc=$rc counts=$counts"; fi
python3 - "$STATE/runs.jsonl" >"$WORK/check" <<'EOF'
import json, sys
runs = [json.loads(line) for line in open(sys.argv[1]) if '"dropper"' in line]
dropped = [r for r in runs if r.get("dropped")]
ok = (len(runs) == 3 and len(dropped) == 1 and dropped[0]["worker"] == 1 and dropped[0]["attempt"] == 1
      and dropped[0]["exit"] == 255 and dropped[0]["t_end"] - dropped[0]["t_start"] >= 0.5)
print("runs ok" if ok else "bad: {}".format(runs))
EOF
if [ "$(cat "$WORK/check")" = "runs ok" ]; then ok "runs.jsonl: every attempt, the dropped one marked \"dropped\": true"
else bad "runs.jsonl: every attempt, the dropped one marked \"dropped\": true" "$(cat "$WORK/check")"; fi
GCLOUD_STANDIN_DROP_WORKERS=1 GCLOUD_STANDIN_DROP_AFTER=0 g "${TPU[@]}" ssh dropper "${ZP[@]}" --worker=1 --command='sleep 0.3; echo fine'
expect "... once per worker of a TPU: a later call runs normally" 0 "" "fine"
g standin create dropwhen --zone="$ZONE" --workers=1 --project="$PROJ"
GCLOUD_STANDIN_DROP_WORKERS=0 GCLOUD_STANDIN_DROP_WHEN='run/*.log' g "${TPU[@]}" ssh dropwhen "${ZP[@]}" --command='sleep 0.5; echo early'
expect "GCLOUD_STANDIN_DROP_WHEN: no drop while no file matches the glob" 0 "" "early"
GCLOUD_STANDIN_DROP_WORKERS=0 GCLOUD_STANDIN_DROP_WHEN='run/*.log' g "${TPU[@]}" ssh dropwhen "${ZP[@]}" \
  --command='mkdir -p run; echo $$ >>run/a.log; sleep 1; echo late'
if [ "$rc" -eq 0 ] && [ "$(wc -l <"$(home dropwhen 0)/run/a.log")" = 2 ] && grep -q "closed by remote host" "$WORK/err"; then
  ok "GCLOUD_STANDIN_DROP_WHEN: the drop comes once a file under the worker's home matches"
else bad "GCLOUD_STANDIN_DROP_WHEN: the drop comes once a file under the worker's home matches"; fi
GCLOUD_STANDIN_DROP_WORKERS=one g "${TPU[@]}" ssh dropwhen "${ZP[@]}" --command=true
expect "a malformed GCLOUD_STANDIN_DROP_WORKERS is a stand-in usage error" 2 "GCLOUD_STANDIN_DROP_WORKERS must be"
GCLOUD_STANDIN_DROP_WORKERS=0 GCLOUD_STANDIN_DROP_AFTER=soon g "${TPU[@]}" ssh dropwhen "${ZP[@]}" --command=true
expect "a malformed GCLOUD_STANDIN_DROP_AFTER is a stand-in usage error" 2 "GCLOUD_STANDIN_DROP_AFTER must be"
g "${TPU[@]}" delete dropper "${ZP[@]}" --quiet
if [ "$rc" -eq 0 ] && gone "$d1"; then ok "delete ends the TPU's processes, also one that left the session with setsid"
else bad "delete ends the TPU's processes, also one that left the session with setsid" "pid $d1"; fi
for tpu in marked digits altdelim theirs nomark dropwhen; do g "${TPU[@]}" delete "$tpu" "${ZP[@]}" --quiet --async; done
