# Self-test of the gcloud stand-in, part 2: the grammar and scp (docs/gcloud.md §2.2, §7).
# Sourced by selftest.sh after selftest_lib.sh (its helpers g, expect, ok, bad, home, gone,
# workers_of and its variables TPU, ZP, STATE, HERE, WORK), in order: each part uses the
# TPUs the parts before it made. Not run alone.
# shellcheck shell=bash disable=SC2016,SC2154

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

# ---------------------------------------------------------------- a private network (docs/private-network.md)
g "${TPU[@]}" ssh pod "${ZP[@]}" --worker=0 --internal-ip --command='echo $GCLOUD_STANDIN_WORKER'
expect "GA tpu-vm ssh takes --internal-ip" 0 "" "0"
g "${TPU[@]}" ssh pod "${ZP[@]}" --worker=0 --tunnel-through-iap --command=true
expect "GA tpu-vm ssh refuses --tunnel-through-iap and names the alpha track" 2 \
  "gcloud alpha compute tpus tpu-vm ssh --tunnel-through-iap"
g alpha "${TPU[@]}" ssh pod "${ZP[@]}" --worker=0 --tunnel-through-iap --command='echo $GCLOUD_STANDIN_WORKER'
expect "alpha tpu-vm ssh takes --tunnel-through-iap" 0 "" "0"
g alpha "${TPU[@]}" scp local/file.txt pod:~/lab/iap.txt "${ZP[@]}" --worker=0 --tunnel-through-iap
expect "alpha tpu-vm scp takes --tunnel-through-iap" 0
g alpha "${TPU[@]}" ssh pod "${ZP[@]}" --internal-ip --tunnel-through-iap --command=true
expect "--internal-ip with --tunnel-through-iap is refused" 2 \
  "argument --internal-ip: At most one of --internal-ip | --tunnel-through-iap can be specified."
