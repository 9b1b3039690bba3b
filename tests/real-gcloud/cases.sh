#!/usr/bin/env bash
# Cases that run the real gcloud (the Google Cloud CLI on PATH) against a loopback Cloud TPU API
# and real sshd workers (tests/real-gcloud/README.md). The workers run the stand-in jax, so
# nothing here is a TPU result. Each pipeline case runs the same scenario through the gcloud
# stand-in first and requires the same exit status and the same fetched files: where the two
# disagree, the real gcloud is right and the stand-in is fixed. ctest runs one function per entry:
#   TPULAUNCH=build/ci/tpulaunch SOURCE_DIR=. bash tests/real-gcloud/cases.sh case_pipeline__four_workers
# A case exits 77 (skipped) after printing why when gcloud, sshd, unshare or root is missing.
# shellcheck source=tests/real-gcloud/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PIPE_FLAGS=(--tpu lab-pod --zone us-west4-a --project lab-project-1 --run-id r1)
RUN_DIR=tpu-runs/lab-pod/standin-lesson/r1

# --- grammar ----------------------------------------------------------------------------------

# Every distinct gcloud command of every plan form, single-host and multi-host, run by the real
# gcloud with an empty configuration and no account: each must get past the parser (which exits 2
# on a grammar error) and stop at the missing account (exit 1). Commands that differ only in the
# text of --command or in a worker's index (values gcloud's parser takes as they are) are run once.
case_grammar__every_plan_form() {
  local dir form slice script forms=() n=0 bad
  dir=$(workdir rg-grammar)
  forms=(
    ""
    "--project lab-project-1"
    "--course"
    "--bootstrap --teardown"
    "--create --spot --project lab-project-1"
    "--create --internal-ips --tunnel-through-iap"
    "--queued --reserved --timeout 1h"
    "--queued --internal-ips --internal-ip"
    "--queued --spot --bootstrap --teardown --project lab-project-1"
    "--results gs://lab-results/runs --bootstrap"
  )
  for slice in v5litepod-8:tpu-hello v5litepod-16:collective-update; do
    script=${slice#*:}
    slice=${slice%%:*}
    for form in "${forms[@]}"; do
      # shellcheck disable=SC2086  # a form is several words
      run -C "$COURSE" plan "$script" --slice "$slice" --tpu my-pod --zone us-west4-a --run-id r1 $form --format json
      [[ "$status" == 0 ]] || fail "plan $script --slice $slice $form: status $status: $err"
      printf '%s\n' "$out" >"$dir/plan-$n.json"
      n=$((n + 1))
    done
    run -C "$COURSE" discover --slice "$slice" --tpu my-pod --zone us-west4-a --run-id r1 --bootstrap --teardown --format json
    [[ "$status" == 0 ]] || fail "discover --slice $slice: status $status: $err"
    printf '%s\n' "$out" >"$dir/plan-$n.json"
    n=$((n + 1))
  done
  # One command per form, NUL-separated words in one file each.
  python3 - "$dir" "$dir"/plan-*.json <<'PY' || fail "could not read the plans' gcloud commands"
import json, os, re, sys
out, seen, forms = sys.argv[1], [], {}
for path in sys.argv[2:]:
    for step in json.load(open(path))["steps"]:
        argv = step.get("argv")
        if argv and argv[0] == "gcloud" and argv not in seen:
            seen.append(argv)
            form = tuple(re.sub(r"^--command=.*", "--command=C", re.sub(r"(--worker=|worker-)[0-9]+", r"\1N", word))
                         for word in argv)
            forms.setdefault(form, argv)
os.makedirs(os.path.join(out, "commands"), exist_ok=True)
for i, argv in enumerate(forms.values()):
    with open(os.path.join(out, "commands", "%03d" % i), "wb") as f:
        f.write(b"\0".join(a.encode() for a in argv[1:]) + b"\0")
print(len(seen), "distinct gcloud commands,", len(forms), "forms", file=sys.stderr)
PY
  # The check can fail: a misspelt flag is a grammar error (exit 2), and must be told apart.
  printf '%s\0' compute tpus tpu-vm ssh my-pod --zone=us-west4-a --commnd=true >"$dir/commands/misspelt"
  # Two at a time: each call costs about a CPU-second of Python start-up.
  find "$dir/commands" -type f | LC_ALL=C sort | xargs -P 2 -n 1 bash "$REAL_GCLOUD_DIR/parse_only.sh"
  if [[ "$(cat "$dir/commands/misspelt.status")" != 2 ]] ||
    ! grep -q "unrecognized arguments: --commnd=true" "$dir/commands/misspelt.err"; then
    fail "a misspelt flag was not refused as a grammar error: status $(cat "$dir/commands/misspelt.status"): $(cat "$dir/commands/misspelt.err")"
  fi
  bad=0
  for file in "$dir"/commands/???; do
    if [[ "$(cat "$file.status")" != 1 ]] || ! grep -q -e "do not currently have an active account" \
      -e "credential" "$file.err"; then
      fail "gcloud $(tr '\0' ' ' <"$file" | cut -c1-300): status $(cat "$file.status"), expected 1 and no account: $(cat "$file.err")"
      bad=$((bad + 1))
    fi
  done
  echo "$(find "$dir/commands" -name '???' | wc -l) command forms given to $(command -v gcloud), $bad refused" >&2
}

# check_forms NAME: reads hand-written lines "STATUS<TAB>TEXT<TAB>WORDS" on stdin, runs each gcloud
# WORDS (space-separated, without "gcloud") through parse_only.sh, and requires that exit status
# and TEXT in gcloud's stderr. Status 1 with "active account" means the parser took the form;
# status 2 is a grammar refusal; status 1 with other text is a refusal by gcloud's own checks that
# run before it looks for an account.
check_forms() {
  local dir n=0 status text words file argv
  dir=$(workdir "rg-$1")
  mkdir -p "$dir/forms"
  while IFS=$'\t' read -r status text words; do
    [[ -z "$status" || "$status" == "#"* ]] && continue
    file=$(printf '%s/forms/%03d' "$dir" "$n")
    read -r -a argv <<<"$words" # split on spaces, no glob expansion ("[0]" in a --format)
    printf '%s\0' "${argv[@]}" >"$file"
    printf '%s\n' "$status" >"$file.want-status"
    printf '%s\n' "$text" >"$file.want-text"
    n=$((n + 1))
  done
  ((n > 0)) || fail "no forms were given"
  find "$dir/forms" -name '???' | LC_ALL=C sort | xargs -P 2 -n 1 bash "$REAL_GCLOUD_DIR/parse_only.sh"
  for file in "$dir"/forms/???; do
    if [[ "$(cat "$file.status")" != "$(cat "$file.want-status")" ]] ||
      ! grep -qF -- "$(cat "$file.want-text")" "$file.err"; then
      fail "gcloud $(tr '\0' ' ' <"$file"): status $(cat "$file.status"), expected $(cat "$file.want-status") and \"$(cat "$file.want-text")\": $(cat "$file.err")"
    fi
  done
  echo "$n hand-written forms given to $(command -v gcloud)" >&2
}

# The gcloud forms a Multislice plan uses (docs/multislice.md, plan --slices; the last four lines
# are in the plan's own word order): one queued resource with
# --node-count nodes named PREFIX-0..PREFIX-(N-1), reached node by node with tpu-vm ssh/scp. The
# refusals are gcloud's own: --node-id with --node-count, --node-prefix without --node-count,
# --node-count=1, and a multi-node tpu-vm create. gcloud's checks read --node-count=0 as "not
# given": alone it gets past them (to the API), with --node-prefix it is refused as a prefix
# without a count. That is why tpulaunch checks the count itself.
case_grammar__multislice() {
  local ok="do not currently have an active account"
  local qr="compute tpus queued-resources create lab-qr --zone=us-west4-a --accelerator-type=v5litepod-16 --runtime-version=v2-alpha-tpuv5-lite"
  local at="--zone=us-west4-a --project=lab-project-1"
  check_forms grammar-multislice <<EOF
1	$ok	$qr --node-count=2 --node-prefix=lab-pod --spot --project=lab-project-1
1	$ok	$qr --node-count=2 --reserved --valid-until-duration=1h --project=lab-project-1
1	$ok	$qr --node-count=4 --node-prefix=lab-pod --guaranteed --valid-until-duration=6h
1	$ok	$qr --node-count=2 --node-prefix=lab-pod --spot --internal-ips
1	$ok	$qr --node-count=2 --node-prefix=lab-pod --spot --async --project=lab-project-1
1	$ok	$qr --node-count=0
1	Can only specify --node-prefix if --node-count is also specified	$qr --node-count=0 --node-prefix=lab-pod
1	Node count must be greater than 1	$qr --node-count=1 --node-prefix=lab-pod
2	Exactly one of (--node-id | [--node-count : --node-prefix]) must be specified	$qr --node-id=lab-pod --node-count=2
2	argument --node-prefix: --node-count must be specified	$qr --node-id=lab-pod --node-prefix=lab-pod
2	argument --node-count: invalid int value: 'two'	$qr --node-count=two
2	unrecognized arguments: --node-count=2	compute tpus tpu-vm create lab-pod --node-count=2 --zone=us-west4-a --accelerator-type=v5litepod-16 --version=v2-alpha-tpuv5-lite
1	$ok	compute tpus queued-resources describe lab-qr --format=value(state.state) $at
1	$ok	compute tpus queued-resources delete lab-qr --force --quiet $at
1	$ok	compute tpus queued-resources delete lab-qr --force --async --quiet $at
1	$ok	compute tpus tpu-vm describe lab-pod-0 --format=value(networkEndpoints[0].ipAddress) $at
1	$ok	compute tpus tpu-vm ssh lab-pod-1 --worker=all --command=true $at
1	$ok	compute tpus tpu-vm scp ./stage/a.py lab-pod-1:a.py --worker=all $at
1	$ok	compute tpus queued-resources ssh lab-qr --node=all --worker=all --command=true $at
1	$ok	compute tpus queued-resources create lab-qr --node-count=2 --node-prefix=lab-pod --zone=us-west4-a --accelerator-type=v5litepod-16 --runtime-version=v2-alpha-tpuv5-lite --spot --project=lab-project-1
1	$ok	compute tpus tpu-vm scp ./r1/tpulaunch-run-guard.sh public/exercises/a.py lab-pod-1: --zone=us-west4-a --worker=all --project=lab-project-1
1	$ok	compute tpus tpu-vm scp --recurse lab-pod-1:~/jax-tpu-lab/runs/r1 ./r1/slice-1/worker-3/ --zone=us-west4-a --worker=3 --project=lab-project-1
1	$ok	compute tpus tpu-vm describe lab-pod-0 --zone=us-west4-a --format=value(state) --project=lab-project-1
EOF
}

# The gcloud forms of a TPU on a private network (docs/private-network.md): --internal-ip is on
# the GA tpu-vm ssh/scp; --tunnel-through-iap only on their alpha track (GA refuses it, and there
# is no beta tpu-vm group), and on the GA queued-resources ssh/scp. Wherever both exist they are
# one mutually exclusive group. The last five are the forms tpulaunch plan emits, in its word order.
case_grammar__private_network() {
  local ok="do not currently have an active account"
  local both="At most one of --internal-ip | --tunnel-through-iap can be specified"
  local other="--tunnel-through-iap flag is available in one or more alternate release tracks"
  local at="--zone=us-west4-a --project=lab-project-1"
  check_forms grammar-private-network <<EOF
1	$ok	compute tpus tpu-vm create lab-pod --internal-ips --accelerator-type=v5litepod-16 --version=v2-alpha-tpuv5-lite --spot --async $at
1	$ok	compute tpus queued-resources create lab-qr --node-id=lab-pod --internal-ips --accelerator-type=v5litepod-16 --runtime-version=v2-alpha-tpuv5-lite --spot $at
1	$ok	compute tpus tpu-vm ssh lab-pod --worker=all --internal-ip --command=true $at
1	$ok	compute tpus tpu-vm scp ./stage/a.py lab-pod:a.py --worker=all --internal-ip $at
1	$ok	compute tpus tpu-vm scp lab-pod:out/ ./fetch/ --recurse --worker=0 --internal-ip $at
2	$other	compute tpus tpu-vm ssh lab-pod --worker=all --tunnel-through-iap --command=true $at
2	$other	compute tpus tpu-vm scp ./stage/a.py lab-pod:a.py --worker=all --tunnel-through-iap $at
2	Invalid choice: 'tpu-vm'	beta compute tpus tpu-vm ssh lab-pod --tunnel-through-iap --command=true $at
1	$ok	alpha compute tpus tpu-vm ssh lab-pod --worker=all --tunnel-through-iap --command=true $at
1	$ok	alpha compute tpus tpu-vm scp ./stage/a.py lab-pod:a.py --worker=all --tunnel-through-iap $at
1	$ok	alpha compute tpus tpu-vm ssh lab-pod --worker=all --internal-ip --command=true $at
2	$both	alpha compute tpus tpu-vm ssh lab-pod --worker=all --internal-ip --tunnel-through-iap --command=true $at
2	$both	alpha compute tpus tpu-vm scp ./stage/a.py lab-pod:a.py --worker=all --internal-ip --tunnel-through-iap $at
1	$ok	compute tpus queued-resources ssh lab-qr --node=all --worker=all --tunnel-through-iap --command=true $at
1	$ok	compute tpus queued-resources scp ./stage/a.py lab-qr:a.py --node=all --worker=all --internal-ip $at
2	$both	compute tpus queued-resources ssh lab-qr --node=all --worker=all --internal-ip --tunnel-through-iap --command=true $at
1	$ok	compute tpus tpu-vm ssh lab-pod --zone=us-west4-a --worker=all --project=lab-project-1 --internal-ip --command=true
1	$ok	compute tpus tpu-vm scp --recurse lab-pod:out ./fetch/worker-0/ --zone=us-west4-a --worker=0 --project=lab-project-1 --internal-ip
1	$ok	alpha compute tpus tpu-vm ssh lab-pod --zone=us-west4-a --worker=all --project=lab-project-1 --tunnel-through-iap --command=true
1	$ok	alpha compute tpus tpu-vm scp ./stage/a.py lab-pod: --zone=us-west4-a --worker=all --project=lab-project-1 --tunnel-through-iap
1	$ok	alpha compute tpus tpu-vm scp --recurse lab-pod:out ./fetch/worker-0/ --zone=us-west4-a --worker=0 --project=lab-project-1 --tunnel-through-iap
EOF
}

# --- the harness itself: what the stand-in's knobs model, shown with the real gcloud ------------

# both_gcloud ARGS...: one gcloud call through the stand-in (state $standin_dir/state) and through
# the real gcloud ($real_dir's loopback API); they must end with the same status and print the same
# stdout. Sets $status, $out, $err of the real call and $standin_status, $standin_out, $standin_err.
both_gcloud() {
  standin_status=0
  (cd "$standin_dir" && env -u CLOUDSDK_COMPUTE_ZONE GCLOUD_STANDIN_STATE="$standin_dir/state" \
    CLOUDSDK_CORE_PROJECT=lab-project-1 "$STANDIN/gcloud" "$@" >"$standin_dir/gcloud.out" 2>"$standin_dir/gcloud.err" \
    </dev/null) || standin_status=$?
  standin_out=$(cat "$standin_dir/gcloud.out")
  standin_err=$(cat "$standin_dir/gcloud.err")
  status=0
  real_gcloud "$real_dir" "$@" || status=$?
  out=$(cat "$real_dir/gcloud.out")
  err=$(cat "$real_dir/gcloud.err")
  if [[ "$status" != "$standin_status" || "$out" != "$standin_out" ]]; then
    fail "gcloud $*: the real gcloud gave status $status and stdout [$out], the stand-in $standin_status and [$standin_out]"$'\n'"--- real stderr: $err"$'\n'"--- stand-in stderr: $standin_err"
  fi
}

# yaml_metadata: the metadata block of a describe's yaml on stdin.
yaml_metadata() {
  sed -n '/^metadata:/,/^[^ ]/p' | sed '$!b; /^[^ ]/d'
}

# A run's mark (issue 34): --metadata on tpu-vm create and queued-resources create, as the real
# gcloud parses it (calliope's ArgDict: the last --metadata wins, `KEY` alone is refused with exit
# 2), keeps it on the node, prints it with describe (value(metadata.KEY): an empty line when the key
# is absent; yaml quotes a mark of digits only) and serves it from every worker's metadata server
# (404 for a key the node lacks). Nodes made by hand (a TPU someone else owns) carry another mark
# or none. The stand-in must print what the real gcloud prints.
case_harness__metadata_mark() {
  local way dir at=(--zone=us-west4-a) curl
  # One write per worker (its value and curl's status), so that two workers' lines never interleave.
  # shellcheck disable=SC2016  # expanded on the worker
  curl='v=$(curl -sSf -H "Metadata-Flavor: Google" http://metadata.google.internal/computeMetadata/v1/instance/attributes/tpulaunch_run); echo "$v $?"'
  for way in standin real; do
    dir=$(workdir "rg-metadata-$way")
    mkdir -p "$dir/state"
    GCLOUD_STANDIN_STATE="$dir/state" "$STANDIN/gcloud" standin create other --zone=us-west4-a --workers=2 \
      --project=lab-project-1 --accelerator-type=v4-16 --metadata=tpulaunch_run=ffffffffffffffff >/dev/null
    GCLOUD_STANDIN_STATE="$dir/state" "$STANDIN/gcloud" standin create bare --zone=us-west4-a --workers=1 \
      --project=lab-project-1 --accelerator-type=v4-8 >/dev/null
    printf -v "${way}_dir" '%s' "$dir"
  done
  export GCLOUD_STANDIN_NODE_STATES=READY GCLOUD_STANDIN_QR_STATES=ACTIVE
  trap 'real_cloud_stop "$real_dir"' EXIT
  real_cloud_start "$real_dir"

  both_gcloud compute tpus tpu-vm create mine "${at[@]}" --accelerator-type=v4-16 --version=tpu-ubuntu2204-base \
    --metadata=tpulaunch_run=0123456789abcdef --async
  [[ "$status" == 0 ]] || fail "create --metadata: status $status: $err"
  both_gcloud compute tpus tpu-vm describe mine "${at[@]}" '--format=value(metadata.tpulaunch_run)'
  [[ "$out" == 0123456789abcdef ]] || fail "describe did not print the mark: [$out]"
  both_gcloud compute tpus tpu-vm describe bare "${at[@]}" '--format=value(metadata.tpulaunch_run)'
  [[ "$status" == 0 && "$(od -An -c "$real_dir/gcloud.out" | tr -d ' ')" == '\n' ]] ||
    fail "a node without the key: not one empty line: status $status, [$(od -An -c "$real_dir/gcloud.out")]"
  both_gcloud compute tpus tpu-vm describe other "${at[@]}" '--format=value(metadata.tpulaunch_run)'
  [[ "$out" == ffffffffffffffff ]] || fail "another's mark: [$out]"
  # Repeated, the last --metadata wins; a value of digits only is quoted in yaml.
  both_gcloud compute tpus tpu-vm create digits "${at[@]}" --accelerator-type=v4-8 --version=tpu-ubuntu2204-base \
    --metadata=tpulaunch_run=1 --metadata=tpulaunch_run=0123456789012345,owner= --async
  both_gcloud compute tpus tpu-vm describe digits "${at[@]}" '--format=value(metadata)'
  [[ "$out" == "owner=;tpulaunch_run=0123456789012345" ]] || fail "value(metadata): [$out]"
  real_gcloud "$real_dir" compute tpus tpu-vm describe digits "${at[@]}" --format=yaml || fail "describe --format=yaml"
  GCLOUD_STANDIN_STATE="$standin_dir/state" "$STANDIN/gcloud" compute tpus tpu-vm describe digits "${at[@]}" \
    --project=lab-project-1 --format=yaml >"$standin_dir/gcloud.out" </dev/null
  [[ "$(yaml_metadata <"$real_dir/gcloud.out")" == $'metadata:\n  owner: \'\'\n  tpulaunch_run: \'0123456789012345\'' ]] ||
    fail "the real gcloud's yaml: $(cat "$real_dir/gcloud.out")"
  diff -u <(yaml_metadata <"$standin_dir/gcloud.out") <(yaml_metadata <"$real_dir/gcloud.out") >&2 ||
    fail "the stand-in's yaml metadata (-) is not the real gcloud's (+)"
  both_gcloud compute tpus tpu-vm create spelt "${at[@]}" --accelerator-type=v4-8 --version=v --metadata=tpulaunch_run
  [[ "$status" == 2 && "$err" == *"argument --metadata: Bad syntax for dict arg: [tpulaunch_run]."* &&
    "$standin_err" == *"argument --metadata: Bad syntax for dict arg: [tpulaunch_run]."* ]] ||
    fail "--metadata=KEY without a value: status $status: $err"$'\n'"stand-in: $standin_err"
  # A queued resource's node spec carries it to its node.
  both_gcloud compute tpus queued-resources create mine-qr "${at[@]}" --node-id=mine-q --accelerator-type=v4-8 \
    --runtime-version=tpu-ubuntu2204-base --metadata=tpulaunch_run=00000000000000aa
  both_gcloud compute tpus queued-resources describe mine-qr "${at[@]}" '--format=value(state.state)'
  both_gcloud compute tpus tpu-vm describe mine-q "${at[@]}" '--format=value(metadata.tpulaunch_run)'
  [[ "$out" == 00000000000000aa ]] || fail "the queued resource's node lacks the mark: [$out]"
  # Every worker's metadata server serves it; 404 where the node has no such key.
  both_gcloud compute tpus tpu-vm ssh mine "${at[@]}" --worker=all --command="$curl"
  [[ "$out" == $'0123456789abcdef 0\n0123456789abcdef 0' ]] || fail "the workers' metadata server: [$out]"
  both_gcloud compute tpus tpu-vm ssh mine-q "${at[@]}" --command="$curl"
  [[ "$out" == "00000000000000aa 0" ]] || fail "the queued node's metadata server: [$out]"
  both_gcloud compute tpus tpu-vm ssh bare "${at[@]}" --command="$curl"
  [[ "$out" == " 22" && "$err" == *"curl: (22) The requested URL returned error: 404"* ]] ||
    fail "a missing key: [$out] $err"
  real_cloud_stop "$real_dir"
}

# The remote command of the dropped-connection case: it notes each start, starts a process that
# leaves the session (setsid) and notes its end later, and goes on writing after a pause.
DROP_COMMAND='echo $$ >>~/shells; setsid -f sh -c "sleep 3; echo done >>~/marker"; echo start; sleep 6; echo still-here >>~/after-sleep; echo to-stdout; echo after-stdout >>~/after-stdout'

# expect_dropped_once HOME0 HOME1 WHAT: worker 1's connection dropped 1 s into the first attempt
# and gcloud ran the command again; worker 0 ran it once. The first attempt's shell ran on after
# the drop (its pause ended: after-sleep twice) until its next write to the lost connection
# (SIGPIPE: after-stdout once), and the process that left with setsid wrote its marker.
expect_dropped_once() {
  local home0=$1 home1=$2 what=$3 i file want
  for ((i = 0; i < 100; i++)); do
    [[ "$(wc -l <"$home1/after-sleep" 2>/dev/null)" == 2 ]] && break
    sleep 0.1
  done
  for file in shells marker after-sleep after-stdout; do
    [[ "$(wc -l <"$home0/$file" 2>/dev/null)" == 1 ]] || fail "$what: worker 0's ~/$file has not 1 line"
    want=2
    [[ "$file" == after-stdout ]] && want=1
    [[ "$(wc -l <"$home1/$file" 2>/dev/null)" == "$want" ]] ||
      fail "$what: worker 1's ~/$file has $(wc -l <"$home1/$file" 2>/dev/null) line(s), not $want"
  done
}

# A dropped connection (issue 34 §4): worker 1's ssh session is cut 1 s into a command, as when its
# per-connection sshd dies. The real ssh prints "Connection to … closed by remote host." and exits
# 255, the real gcloud says it retries and runs the same command again, which then runs normally;
# the first attempt's processes are not killed: the shell runs on until it writes to the lost
# connection, the one that left with setsid finishes. Shown three ways, which must agree: the
# stand-in with GCLOUD_STANDIN_DROP_*; the real gcloud on node "hand" with drop_worker_connection;
# the real gcloud on node "knob" with the same knobs, which the loopback API applies (DROP_WHEN
# names a file only node knob's worker 1 has).
case_harness__dropped_connection() {
  local way dir node pid knob_status hand_status node_dir
  for way in standin real; do
    dir=$(workdir "rg-drop-$way")
    mkdir -p "$dir/state"
    for node in hand knob; do
      GCLOUD_STANDIN_STATE="$dir/state" "$STANDIN/gcloud" standin create "$node" --zone=us-west4-a --workers=2 \
        --project=lab-project-1 --accelerator-type=v4-16 >/dev/null
    done
    touch "$dir/state/tpus/knob/worker-1/home/drop-me"
    printf -v "${way}_dir" '%s' "$dir"
  done
  export GCLOUD_STANDIN_DROP_WORKERS=1 GCLOUD_STANDIN_DROP_AFTER=1 GCLOUD_STANDIN_DROP_WHEN=drop-me
  (cd "$standin_dir" && GCLOUD_STANDIN_STATE="$standin_dir/state" "$STANDIN/gcloud" compute tpus tpu-vm ssh knob \
    --zone=us-west4-a --project=lab-project-1 --worker=all --command="$DROP_COMMAND" >gcloud.out 2>gcloud.err </dev/null) ||
    fail "the stand-in: status $?: $(cat "$standin_dir/gcloud.err")"
  expect_dropped_once "$(worker_home "$standin_dir" 0 knob)" "$(worker_home "$standin_dir" 1 knob)" "the stand-in"
  [[ "$(grep -c '"dropped": true' "$standin_dir/state/runs.jsonl")" == 1 ]] || fail "the stand-in: not one dropped attempt"

  trap 'real_cloud_stop "$real_dir"' EXIT
  real_cloud_start "$real_dir"
  mkdir -p "$real_dir/knob" "$real_dir/hand"
  REAL_GCLOUD_OUT=$real_dir/knob/gcloud real_gcloud "$real_dir" compute tpus tpu-vm ssh knob --zone=us-west4-a \
    --worker=all --command="$DROP_COMMAND" &
  knob_status=$!
  REAL_GCLOUD_OUT=$real_dir/hand/gcloud real_gcloud "$real_dir" compute tpus tpu-vm ssh hand --zone=us-west4-a \
    --worker=all --command="$DROP_COMMAND" &
  hand_status=$!
  pid=$(drop_worker_connection "$real_dir" hand 1 1) || fail "drop_worker_connection found no session on hand's worker 1"
  wait "$hand_status" || fail "node hand: the real gcloud exited $?: $(cat "$real_dir/hand/gcloud.err")"
  wait "$knob_status" || fail "node knob: the real gcloud exited $?: $(cat "$real_dir/knob/gcloud.err")"
  for node in hand knob; do
    node_dir=$real_dir/$node
    expect_dropped_once "$(worker_home "$real_dir" 0 "$node")" "$(worker_home "$real_dir" 1 "$node")" "node $node"
    for dir in "$standin_dir" "$node_dir"; do
      # OpenSSH ends that line with \r\n.
      [[ "$(grep -c $'closed by remote host\\.\r*$' "$dir/gcloud.err")" == 1 &&
        "$(grep -c '^Retrying: SSH command error: \[/usr/bin/ssh\] exited with return code \[255\]\.$' "$dir/gcloud.err")" == 1 &&
        "$(grep -c '^SSH: Attempting to connect to worker 1\.\.\.$' "$dir/gcloud.err")" == 2 ]] ||
        fail "$dir: not one drop, one retry and two attempts on worker 1: $(cat "$dir/gcloud.err")"
    done
    diff -u <(sort "$standin_dir/gcloud.out") <(sort "$node_dir/gcloud.out") >&2 ||
      fail "node $node: the real gcloud (+) printed other lines than the stand-in (-)"
  done
  grep -q "closed by remote host" <(grep -v $'^Connection to 127\\.0\\.0\\.[0-9]* closed by remote host\\.\r$' "$real_dir/hand/gcloud.err") &&
    fail "ssh named another address, or ended its line otherwise"
  [[ -f "$real_dir/state/tpus/knob/worker-1/ssh-dropped" && ! -e "$real_dir/state/tpus/hand/worker-1/ssh-dropped" ]] ||
    fail "the knobs dropped another node's connection, or none"
  echo "drop_worker_connection killed sshd session $pid" >&2
  real_cloud_stop "$real_dir"
}

# --- pipelines --------------------------------------------------------------------------------

# A prepared VM (its venv present), 4 workers: staged in one scp (every file the stage step names
# reaches every worker), digest-checked, run, fetched one worker at a time, verified, and torn
# down last (the DELETE is the API's last request).
case_pipeline__four_workers() {
  local i src digest
  GCLOUD_STANDIN_PREPARED=1 scenario four 4 -- standin-lesson --slice v5litepod-16 "${PIPE_FLAGS[@]}" --teardown
  expect_same_as_standin
  expect_status 0
  expect_stdout_contains "verified: training receipts (detailed form) of 4 workers on v5litepod-16"
  expect_stdout_contains "NOT a TPU result"
  for i in 0 1 2 3; do
    [[ -f "$real_dir/$RUN_DIR/worker-$i/r1/artifacts/worker-$i.json" ]] || fail "worker $i's receipt did not come back"
    [[ -f "$real_dir/$RUN_DIR/worker-$i/r1/standin-lesson-tpu-t1v-n-standin0-w-$i.txt" ]] ||
      fail "worker $i's log did not come back"
    [[ ! -e "$real_dir/$RUN_DIR/worker-$i/r1/artifacts/worker-$(((i + 1) % 4)).json" ]] ||
      fail "worker $i's folder holds another worker's receipt"
  done
  # The stage step is one scp of every source to every worker.
  [[ "$(grep -c '"name": "stage"' "$real_dir/plan.json")" == 1 ]] || fail "not one stage step"
  while IFS= read -r src; do
    for i in 0 1 2 3; do
      [[ -n "$(find "$(node_folder "$real_dir")/worker-$i/home" -name "$(basename "$src")")" ]] ||
        fail "worker $i has no staged $(basename "$src")"
    done
  done < <(plan_stage_sources "$real_dir")
  # What ran is what was reviewed: the script in the run's stage folder on every worker has the
  # plan's digest (which the run guard checked before it ran anything).
  digest=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["sha256"])' "$real_dir/plan.json")
  for i in 0 1 2 3; do
    src=$(compgen -G "$(node_folder "$real_dir")/worker-$i/home/jax-tpu-lab/runs/standin-lesson/r1/staged-*/code/public/exercises/standin-lesson.py") ||
      fail "worker $i has no staged script in its run folder"
    [[ "$(sha256sum <"$src" | cut -d' ' -f1)" == "$digest" ]] || fail "worker $i ran a script whose digest is not the plan's"
  done
  [[ "$(api_calls "$real_dir" | grep -v /operations/ | tail -n 1)" == "DELETE /v2/projects/lab-project-1/locations/us-west4-a/nodes/lab-pod" ]] ||
    fail "the teardown is not the last request: $(api_calls "$real_dir" | tail -n 3)"
  [[ "$(api_calls "$real_dir" | grep -c DELETE)" == 1 ]] || fail "more than one DELETE"
  compgen -G "$real_dir/state/deleted/lab-pod.*" >/dev/null || fail "the TPU was not deleted"
}

# A dropped connection in the middle of a run (issue 34 §4): worker 1's ssh session is cut once
# its program has started. The real ssh exits 255, the real gcloud runs the same run command
# again, and the run guard re-attaches to the run its first call started (the program runs on,
# in its own session): one program per worker, the run ends once, and it verifies.
case_pipeline__dropped_connection_reattaches() {
  local i home
  GCLOUD_STANDIN_DROP_WORKERS=1 GCLOUD_STANDIN_DROP_WHEN='jax-tpu-lab/runs/*/*/standin-lesson-tpu-*.txt' \
    GCLOUD_STANDIN_PREPARED=1 scenario dropped 4 -- standin-lesson --slice v5litepod-16 "${PIPE_FLAGS[@]}"
  expect_same_as_standin
  expect_status 0
  expect_stdout_contains "verified: training receipts (detailed form) of 4 workers on v5litepod-16"
  [[ "$(grep -c '^Retrying: SSH command error: \[/usr/bin/ssh\] exited with return code \[255\]\.$' <<<"$err")" == 1 ]] ||
    fail "not one retry after the drop: $err"
  [[ "$err" == *"is running here since"* || "$err" == *"ran here already with this plan"* ]] ||
    fail "the second call did not re-attach: $err"
  for i in 0 1 2 3; do
    home=$(worker_home "$real_dir" "$i")
    [[ "$(cat "$home"/jax-tpu-lab/runs/standin-lesson/r1/standin-lesson-tpu-*.txt | grep -c "^\[process $i/4\] host")" == 1 ]] ||
      fail "worker $i's program ran more than once, or not at all"
  done
  [[ -f "$(node_folder "$real_dir")/worker-1/ssh-dropped" ]] || fail "worker 1's connection was never dropped"
}

# A pasted --create plan for a TPU name someone else holds (issue 34 §3), through the real gcloud:
# the name check names it, the create call fails, and every later line checks the mark the
# create would have set, so nothing is staged, run or fetched on that TPU.
case_pipeline__foreign_tpu_is_never_touched() {
  local way dir
  for way in standin real; do
    dir=$(standin_course "rg-foreign-$way" 4 --metadata=tpulaunch_run=0123456789abcdef)
    run -C "$dir" plan standin-lesson --slice v5litepod-16 "${PIPE_FLAGS[@]}" --create --poll 1s --bootstrap
    [[ "$status" == 0 ]] || fail "plan: status $status: $err"
    sed -n '/^commands:$/,/^$/p' <<<"$out" | grep '^  [^#]' | sed 's/^  //' >"$dir/pasted.sh"
    if [[ $way == standin ]]; then
      run_pipeline "$dir" pasted.sh
    else
      real_dir=$dir
      trap 'real_cloud_stop "$real_dir"' EXIT
      real_cloud_start "$dir"
      run_real "$dir" pasted.sh
      real_cloud_stop "$dir"
    fi
    expect_stderr_contains "tpulaunch: error: a TPU named lab-pod exists already (state READY)"
    ! grep -q '^verified:' <<<"$out" || fail "$way: a pasted plan verified on someone else's TPU"
    for i in 0 1 2 3; do
      [[ ! -e "$(worker_home "$dir" "$i")/jax-tpu-lab" ]] || fail "$way: something reached worker $i of the other TPU"
    done
  done
}

# One worker's program fails (status 7; its peers then fail in their collective, status 1): every
# worker's log and record are fetched, the TPU is kept (no DELETE) and named.
case_pipeline__failing_worker() {
  local i
  LESSON_FAIL_WORKER=2 GCLOUD_STANDIN_PREPARED=1 scenario fail 4 -- standin-lesson --slice v5litepod-16 \
    "${PIPE_FLAGS[@]}" --teardown
  expect_same_as_standin
  expect_status 1
  expect_stderr_contains "##### Command execution on worker 2 failed with exit status 7. Continuing."
  expect_stderr_contains "tpulaunch: worker 2: failed with status 7"
  expect_stderr_contains "tpulaunch: error: the run failed with status 1"
  expect_stderr_contains "lab-pod is still running"
  for i in 0 1 2 3; do
    [[ -f "$real_dir/$RUN_DIR/worker-$i/r1/run-status.rec" ]] || fail "worker $i's record was not fetched"
    [[ -f "$real_dir/$RUN_DIR/worker-$i/r1/standin-lesson-tpu-t1v-n-standin0-w-$i.txt" ]] || fail "worker $i's log was not fetched"
  done
  ! api_calls "$real_dir" | grep -q '^DELETE' || fail "the TPU was deleted after a failure"
  [[ -d "$real_dir/state/tpus/lab-pod" ]] || fail "the TPU is gone"
}

# add_exit_255_script DIR: an exercise that notes each start in the worker's home, then exits 255.
add_exit_255_script() {
  cat >"$1/public/exercises/exit-255.py" <<'PY'
"""Notes each start in ~/attempts, then exits 255 (a test program, not a lesson)."""
import pathlib

with open(pathlib.Path.home() / "attempts", "a") as attempts:
    attempts.write("ran\n")
raise SystemExit(255)
PY
  "$TPULAUNCH" -C "$1" review exit-255 --class single-host-compatible --by real-gcloud-tests >/dev/null
}

# A program that exits 255 (which gcloud takes for an ssh failure and runs again, up to 10 times)
# runs once: the run guard passes it on as 254.
case_pipeline__exit_255_runs_once() {
  local SCENARIO_SETUP=add_exit_255_script
  GCLOUD_STANDIN_PREPARED=1 FAKEJAX_LOCAL_DEVICES=8 scenario 255 1 -- exit-255 --slice v5litepod-8 "${PIPE_FLAGS[@]}"
  expect_same_as_standin
  expect_status 254
  [[ "$(cat "$(worker_home "$real_dir" 0)/attempts" 2>/dev/null)" == "ran" ]] ||
    fail "the program did not run exactly once: $(cat "$(worker_home "$real_dir" 0)/attempts" 2>/dev/null)"
  [[ "$(cat "$(worker_home "$standin_dir" 0)/attempts" 2>/dev/null)" == "ran" ]] ||
    fail "the program did not run exactly once on the stand-in"
  [[ "$(grep -c 'SSH: Attempting to connect to worker 0' <<<"$err")" == 1 ]] || fail "gcloud connected more than once: $err"
}

# A fresh VM (no venv) without --bootstrap: the run stops at once on every worker saying so (96),
# with one ssh attempt per worker.
case_pipeline__fresh_vm_without_bootstrap() {
  local i
  scenario fresh 2 -- standin-lesson --slice v5p-16 "${PIPE_FLAGS[@]}" --teardown
  expect_same_as_standin
  expect_status 96
  for i in 0 1; do
    expect_stderr_contains "tpulaunch: t1v-n-standin0-w-$i: error: no Python interpreter at /root/jax-tpu-lab/.venv/bin/python; run the plan with --bootstrap"
    [[ "$(grep -c "SSH: Attempting to connect to worker $i" <<<"$err")" == 1 ]] || fail "worker $i was tried more than once"
  done
  expect_stderr_contains "the TPU is left running"
  ! api_calls "$real_dir" | grep -q '^DELETE' || fail "the TPU was deleted after a failed run"
}

# A process of an earlier run holds the TPU's devices: the run stops, naming the holder.
case_pipeline__busy_tpu_names_the_holder() {
  GCLOUD_STANDIN_PREPARED=1 FAKEJAX_LOCAL_DEVICES=8 GCLOUD_STANDIN_TPU_HOLDER=0 scenario busy 1 -- standin-lesson \
    --slice v5litepod-8 "${PIPE_FLAGS[@]}"
  expect_same_as_standin
  expect_status 94
  expect_stderr_contains "t1v-n-standin0-w-0: the TPU is busy: pid "
  expect_stderr_contains "stale-train.py"
  expect_stderr_contains "rerun with --kill-stale to end them"
}

# --timeout with a worker that never ends (and ignores SIGTERM): it is killed and named, and every
# worker is still fetched.
case_pipeline__timeout_hung_worker() {
  local i
  LESSON_HANG_WORKER=1:stubborn GCLOUD_STANDIN_PREPARED=1 scenario timeout 2 -- standin-lesson --slice v5p-16 \
    "${PIPE_FLAGS[@]}" --timeout 6s --grace 1s
  expect_same_as_standin
  expect_status 124
  expect_stderr_contains "tpulaunch: worker 1: still running when killed: it ran past --timeout 6s and ended with SIGKILL"
  expect_stderr_contains "tpulaunch: worker 0: succeeded"
  for i in 0 1; do
    [[ -f "$real_dir/$RUN_DIR/worker-$i/r1/artifacts/worker-$i.json" ]] || fail "worker $i's receipt was not fetched"
  done
}

# expect_eight_workers_verified: the run on v5litepod-32 was verified, and every worker's receipt
# is in its own folder.
expect_eight_workers_verified() {
  local i
  expect_stdout_contains "verified: training receipts (detailed form) of 8 workers on v5litepod-32"
  for i in 0 1 2 3 4 5 6 7; do
    [[ -f "$real_dir/$RUN_DIR/worker-$i/r1/artifacts/worker-$i.json" ]] || fail "worker $i's receipt did not come back"
  done
}

# Eight workers, the one large case: every worker fetched and verified.
case_pipeline__eight_workers() {
  GCLOUD_STANDIN_PREPARED=1 scenario eight 8 -- standin-lesson --slice v5litepod-32 "${PIPE_FLAGS[@]}"
  expect_same_as_standin
  expect_status 0
  expect_eight_workers_verified
}

# Retrieval through the bucket (issue 37 §3), the way the plan advises above 16 workers: each of 8
# workers uploads its folder (the stand-in's gcloud on the worker writes the stand-in's bucket
# folder), and the real gcloud brings all 8 back in one `gcloud storage cp --recursive`, from the
# loopback Cloud Storage API (fakestorage.py), checking each object's hashes. No per-worker scp.
make_results_bucket() {
  GCLOUD_STANDIN_STATE="$1/state" "$STANDIN/gcloud" standin create-bucket lab-results >/dev/null
}
case_pipeline__results_bucket_eight_workers() {
  local requests scp_calls
  SCENARIO_SETUP=make_results_bucket GCLOUD_STANDIN_PREPARED=1 scenario bucket 8 -- standin-lesson \
    --slice v5litepod-32 "${PIPE_FLAGS[@]}" --results gs://lab-results/runs
  expect_same_as_standin
  expect_status 0
  expect_eight_workers_verified
  requests=$real_dir/state/requests.jsonl
  grep -q '"gcloud": "gcloud.storage.cp"' "$requests" || fail "the real gcloud asked the loopback storage API nothing"
  grep -q '"alt": "media"' "$requests" || fail "no object was downloaded through the storage API"
  # One scp call in all, the stage step's upload: no worker was fetched from the worker itself.
  scp_calls=$(python3 -c 'import json, sys
print(len({r["invocation"] for r in map(json.loads, open(sys.argv[1])) if r["gcloud"].endswith("tpu-vm.scp")}))' "$requests")
  [[ $scp_calls == 1 ]] || fail "$scp_calls gcloud scp calls; expected only the stage step's"
}

# Retrieval at scale (issue 37 §3): above 8 hosts the plan fetches a slice's workers in one loop
# (`for ((w = 0; ...)); do fetch_start "$w" gcloud ... --worker="$w" ...`), which the real gcloud
# runs as 16 per-worker downloads. Worker 5's program fails: the run fails, and every worker's
# folder still comes back, the failing one's included.
case_pipeline__sixteen_workers_fetch_loop() {
  local i
  LESSON_FAIL_WORKER=5 GCLOUD_STANDIN_PREPARED=1 scenario sixteen 16 -- standin-lesson --slice v5litepod-64 \
    "${PIPE_FLAGS[@]}" --parallel 16
  expect_same_as_standin
  expect_status 1
  expect_stderr_contains "tpulaunch: error: the run failed with status"
  grep -q '^for ((w = 0; w < 16; w++)); do$' "$real_dir/run.sh" || fail "the plan has no fetch loop"
  for ((i = 0; i < 16; i++)); do
    [[ -f "$real_dir/$RUN_DIR/worker-$i/r1/run-status.rec" ]] || fail "worker $i's record did not come back"
  done
  [[ "$(real_calls "$real_dir" | grep -c '^scp$')" == 17 ]] || fail "not one download per worker (and the stage)"
}

# --- the life of a TPU ------------------------------------------------------------------------

# A queued resource that waits for capacity, then becomes ACTIVE: its node is bootstrapped, runs,
# and the queued resource is deleted with it at the end.
case_life__queued_waiting_then_active() {
  GCLOUD_STANDIN_QR_STATES=WAITING_FOR_RESOURCES:1,ACTIVE FAKEJAX_LOCAL_DEVICES=8 scenario queued 0 -- standin-lesson \
    --slice v5litepod-8 "${PIPE_FLAGS[@]}" --queued --poll 1s --teardown
  expect_same_as_standin
  expect_status 0
  expect_stderr_contains "wait: queued resource lab-pod-qr is WAITING_FOR_RESOURCES"
  expect_stderr_contains "wait: queued resource lab-pod-qr is ACTIVE"
  expect_stdout_contains "verified: training receipts (detailed form) of 1 worker on v5litepod-8"
  expect_queued_resource_deleted_last
  compgen -G "$real_dir/state/deleted/qr-lab-pod-qr.*" >/dev/null || fail "the queued resource still exists"
  compgen -G "$real_dir/state/deleted/lab-pod.*" >/dev/null || fail "its node still exists"
}

# Multislice (docs/multislice.md): two 2-host slices as one queued resource with a node count.
# The real gcloud creates, reaches each node (P-0, P-1) by its own ssh/scp and deletes them all
# with the queued resource; every worker's run guard finds its slice's MEGASCALE_* values in
# tpu-env (slice 0's worker 0 is the coordinator), and the 4 processes have ids worker + 2*slice.
case_life__multislice_two_slices() {
  local s w rec coordinator
  GCLOUD_STANDIN_QR_STATES=ACTIVE scenario multislice 0 -- standin-lesson --slice v4-16 "${PIPE_FLAGS[@]}" \
    --slices 2 --queued --poll 1s --teardown
  expect_same_as_standin
  expect_status 0
  expect_stdout_contains "verified: training receipts (detailed form) of 4 workers on v4-16"
  coordinator=""
  for s in 0 1; do
    for w in 0 1; do
      rec="$real_dir/$RUN_DIR/slice-$s/worker-$w/r1/run-status.rec"
      [[ -f "$real_dir/$RUN_DIR/slice-$s/worker-$w/r1/artifacts/worker-$((w + 2 * s)).json" ]] ||
        fail "slice $s worker $w: no receipt of process $((w + 2 * s))"
      [[ "$(sed -n 's/^megascale_slice_id=//p' "$rec")" == "$s" ]] || fail "slice $s worker $w: wrong slice id"
      [[ "$(sed -n 's/^megascale_num_slices=//p' "$rec")" == 2 ]] || fail "slice $s worker $w: wrong slice count"
      coordinator+="$(sed -n 's/^megascale_coordinator_address=//p' "$rec") "
    done
  done
  [[ "$coordinator" =~ ^(127\.0\.0\.[0-9]+:[0-9]+\ ){4}$ && "$(tr ' ' '\n' <<<"$coordinator" | sort -u | grep -c .)" == 1 ]] ||
    fail "not one coordinator on the loopback: $coordinator"
  expect_queued_resource_deleted_last
  compgen -G "$real_dir/state/deleted/lab-pod-0.*" >/dev/null || fail "slice 0's node still exists"
  compgen -G "$real_dir/state/deleted/lab-pod-1.*" >/dev/null || fail "slice 1's node still exists"
}

# One slice of a spot Multislice PREEMPTED while its program runs: the plan asks each slice's node
# and names slice 1's (92, not a failed program), and deletes the queued resource with both nodes.
case_life__multislice_preempted_slice() {
  # Process 2 (slice 1's worker 0) hangs after its receipt, so slice 1's run is still going when
  # its node is preempted: the stand-in 2 s into that ssh call, the loopback API once the receipt
  # exists in lab-pod-1's folder (the glob is relative to each node's, so lab-pod-0 never matches).
  LESSON_HANG_WORKER=2 GCLOUD_STANDIN_PREEMPT_AFTER=2 GCLOUD_STANDIN_PREEMPT_NODE=lab-pod-1 GCLOUD_STANDIN_QR_STATES=ACTIVE \
    REALGCLOUD_PREEMPT_WHEN='worker-0/home/jax-tpu-lab/**/artifacts/worker-2.json' \
    scenario multislice-preempted 0 -- standin-lesson --slice v4-16 "${PIPE_FLAGS[@]}" --slices 2 --queued --spot \
    --poll 1s --teardown
  # Not expect_same_as_standin: the two preempt at different moments (the stand-in 2 s into the
  # call, the loopback API once worker 2's receipt exists), so whether slice 0 has finished its
  # work, or gets the run's stop call first, differs between them by design; the outcome must not.
  [[ "$status" == "$standin_status" ]] || fail "real gcloud: status $status, stand-in: $standin_status"
  expect_status 92
  expect_stderr_contains "tpulaunch: error: lab-pod-1 was PREEMPTED during the pipeline: this is not a failure of the program"
  [[ "$err" != *"lab-pod-0 was"* ]] || fail "slice 0's node was reported as preempted"
  compgen -G "$real_dir/state/deleted/lab-pod-0.*" >/dev/null || fail "slice 0's node still exists"
  compgen -G "$real_dir/state/deleted/lab-pod-1.*" >/dev/null || fail "slice 1's node still exists"
}

# A queued resource that goes FAILED: deleted (it holds quota), its state named, status 90.
case_life__queued_failed_is_deleted() {
  GCLOUD_STANDIN_QR_STATES=WAITING_FOR_RESOURCES:1,FAILED scenario queued-failed 0 -- standin-lesson --slice v5litepod-8 \
    "${PIPE_FLAGS[@]}" --queued --poll 1s --teardown
  expect_same_as_standin
  expect_status 90
  expect_stderr_contains "tpulaunch: error: queued resource lab-pod-qr is FAILED, which never becomes ACTIVE; deleting it"
  [[ "$(api_calls "$real_dir" | grep -c '^DELETE')" == 1 ]] || fail "not one DELETE: $(api_calls "$real_dir")"
  compgen -G "$real_dir/state/deleted/qr-lab-pod-qr.*" >/dev/null || fail "the failed queued resource still holds quota"
}

# A spot node PREEMPTED while its program runs: every worker's processes end at once, gcloud's
# retries cannot connect, and the plan reports a preemption (92), not a failed program, and
# deletes the node (--teardown).
case_life__preempted_mid_run() {
  # The stand-in preempts 2 s into the run; the loopback API once worker 0's receipt exists
  # (worker 0 then hangs on purpose, so the run is still going).
  LESSON_HANG_WORKER=0 GCLOUD_STANDIN_PREEMPT_AFTER=2 GCLOUD_STANDIN_PREPARED=1 \
    REALGCLOUD_PREEMPT_WHEN='worker-0/home/jax-tpu-lab/**/artifacts/worker-0.json' \
    scenario preempted 2 --spot -- standin-lesson --slice v5p-16 "${PIPE_FLAGS[@]}" --spot --teardown
  expect_same_as_standin
  expect_status 92
  expect_stderr_contains "tpulaunch: error: lab-pod was PREEMPTED during the pipeline: this is not a failure of the program"
  expect_stderr_contains "deleting it (--teardown), as it still holds quota"
  [[ "$err" != *"the run failed with status"* ]] || fail "a preemption was reported as a failed program"
  compgen -G "$real_dir/state/deleted/lab-pod.*" >/dev/null || fail "the preempted TPU was not deleted"
}

# The text form of a --queued --teardown plan, pasted line by line (each line runs whatever the one
# before did), through the real gcloud, with a program that fails: the worker's results come back,
# nothing is deleted (release and teardown are comment lines), and the queued resource stays.
case_life__pasted_queued_teardown_never_deletes() {
  local dir
  dir=$(bare_course rg-pasted-queued)
  run -C "$dir" plan standin-lesson --slice v5litepod-8 "${PIPE_FLAGS[@]}" --queued --poll 1s --teardown
  expect_status 0
  printf '%s\n' "$out" | sed -n '/^commands:$/,/^notes:$/p' | sed -e '1d' -e '$d' -e 's/^  //' >"$dir/paste.txt"
  grep -q '^#   gcloud compute tpus queued-resources delete' "$dir/paste.txt" || fail "the delete lines are not comments"
  real_dir=$dir
  trap 'real_cloud_stop "$real_dir"' EXIT
  # The knobs go to the loopback API and the workers' sshd when they start (given to run_real
  # alone, they never reached the worker, and the case passed only while verify failed for
  # another reason).
  GCLOUD_STANDIN_QR_STATES=WAITING_FOR_RESOURCES:1,ACTIVE LESSON_FAIL_WORKER=0 real_cloud_start "$dir"
  run_real "$dir" paste.txt
  real_cloud_stop "$dir"
  expect_stdout_contains "LESSON_FAIL_WORKER=0: failing on purpose with status 7"
  expect_stdout_contains "not verified"
  [[ -f "$dir/$RUN_DIR/worker-0/r1/run-status.rec" ]] || fail "the worker's record was not fetched"
  ! api_calls "$dir" | grep -q '^DELETE' || fail "pasting the plan deleted something: $(api_calls "$dir" | grep '^DELETE')"
  [[ -d "$dir/state/queued-resources/lab-pod-qr" ]] || fail "the queued resource is gone"
}

# --- runs -------------------------------------------------------------------------------------

# tpulaunch runs status and attach after a run (issue 37 §1), through the real gcloud: each is one
# `tpu-vm ssh --worker=all` call into the run guard the run staged; status prints one line per
# worker from its record, attach replays worker 0's log and returns the run's status.
case_runs__attach_and_status() {
  local dir
  dir=$(GCLOUD_STANDIN_PREPARED=1 standin_course rg-runs-attach 2)
  real_dir=$dir
  trap 'real_cloud_stop "$real_dir"' EXIT
  real_cloud_start "$dir"
  run -C "$dir" plan standin-lesson --slice v5p-16 "${PIPE_FLAGS[@]}" --format sh
  printf '%s\n' "$out" >"$dir/run.sh"
  run_real "$dir" run.sh
  expect_status 0
  run -C "$dir" runs attach r1 --format sh
  printf '%s\n' "$out" >"$dir/attach.sh"
  run_real "$dir" attach.sh
  expect_status 0
  expect_stdout_contains "[process 0/2] host"
  [[ "$out" != *"[process 1/2] host"* ]] || fail "attach showed worker 1's log, not worker 0's alone"
  run -C "$dir" runs status r1 --format sh
  printf '%s\n' "$out" >"$dir/status.sh"
  run_real "$dir" status.sh
  real_cloud_stop "$dir"
  expect_status 0
  expect_stdout_contains "worker 0 (t1v-n-standin0-w-0): succeeded: succeeded"
  expect_stdout_contains "worker 1 (t1v-n-standin0-w-1): succeeded: succeeded"
  [[ "$(real_calls "$dir" | grep -c '^ssh$')" == 3 ]] || fail "not one ssh call each for run, attach and status: $(real_calls "$dir")"
}

# --- measurements (not ctest cases: bench/retrieval_bench.sh runs this) --------------------------

# measure_retrieval: the 8-worker scenario through the real gcloud with --results (each worker
# uploads to the stand-in's bucket), then its retrieval again, timed on its own, each way the plan
# keeps: the plan's per-worker fetch commands (plan.json's fetch steps, the fallback for workers
# the bucket did not bring) into a fresh folder, all 8 at once (the default --parallel 8) and one
# of them alone; and the plan's one collect command (gcloud storage cp --recursive, from the
# loopback Cloud Storage API). Prints "per-worker N wall_s cpu_s" and "bucket 8 wall_s cpu_s"
# lines: the wall time and the user+system CPU seconds of every process they started (gcloud,
# ssh, scp).
measure_retrieval() {
  local n fetch
  real_dir=$(GCLOUD_STANDIN_PREPARED=1 standin_course rg-measure 8)
  make_results_bucket "$real_dir"
  run -C "$real_dir" plan standin-lesson --slice v5litepod-32 "${PIPE_FLAGS[@]}" --results gs://lab-results/runs --format sh
  printf '%s\n' "$out" >"$real_dir/run.sh"
  # The collect command from the plan that ran; the per-worker fetch commands from the same plan
  # without --results (its fallback fetches name the worker as "$w", for a loop of its own).
  run -C "$real_dir" plan standin-lesson --slice v5litepod-32 "${PIPE_FLAGS[@]}" --results gs://lab-results/runs --format json
  local with_results=$out
  run -C "$real_dir" plan standin-lesson --slice v5litepod-32 "${PIPE_FLAGS[@]}" --format json
  python3 -c 'import json, sys
with open(sys.argv[3], "w") as fetch:
    for s in json.loads(sys.argv[2])["steps"]:
        if s["name"] == "fetch":
            print(s["command"], file=fetch)
with open(sys.argv[4], "w") as collect:
    for s in json.loads(sys.argv[1])["steps"]:
        if s["name"] == "collect":
            print(s["command"], file=collect)' "$with_results" "$out" "$real_dir/fetch.lines" "$real_dir/collect.lines"
  [[ $(wc -l <"$real_dir/fetch.lines") -eq 8 && $(wc -l <"$real_dir/collect.lines") -eq 1 ]] ||
    fail "expected 8 fetch commands and 1 collect command"
  trap 'real_cloud_stop "$real_dir"' EXIT
  GCLOUD_STANDIN_PREPARED=1 real_cloud_start "$real_dir"
  run_real "$real_dir" run.sh
  expect_status 0
  for n in 8 1 bucket; do
    fetch=$real_dir/refetch-$n
    mkdir -p "$fetch/$RUN_DIR"
    if [[ $n == bucket ]]; then
      # shellcheck disable=SC2016 # the inner bash expands them, from its own arguments
      (cd "$fetch" && mapfile -t vars < <(real_env "$real_dir") &&
        env "${vars[@]}" PATH="$(real_path)" /usr/bin/time -f "bucket 8 %e %U %S" -o "$fetch/time" \
          bash -c 'eval "$(cat "$1")"' _ "$real_dir/collect.lines" >"$fetch/out" 2>&1) ||
        fail "the retrieval from the bucket failed: $(cat "$fetch/out")"
      n=8
    else
      # shellcheck disable=SC2016 # the inner bash expands them, from its own arguments
      (cd "$fetch" && mkdir -p "$RUN_DIR"/worker-{0..7}/ && mapfile -t vars < <(real_env "$real_dir") &&
        env "${vars[@]}" PATH="$(real_path)" /usr/bin/time -f "per-worker $n %e %U %S" -o "$fetch/time" \
          bash -c 'while IFS= read -r line; do eval "$line" & done < <(head -n "$1" "$2"); wait' _ "$n" \
          "$real_dir/fetch.lines" >"$fetch/out" 2>&1) || fail "the retrieval of $n worker(s) failed: $(cat "$fetch/out")"
    fi
    [[ -f "$fetch/$RUN_DIR/worker-$((n - 1))/r1/run-status.rec" ]] || fail "worker $((n - 1)) did not come back"
    awk '{printf "%s %s %s %.2f\n", $1, $2, $3, $4 + $5}' "$fetch/time"
  done
  real_cloud_stop "$real_dir"
}

if [[ $# -lt 1 ]] || ! declare -F "$1" >/dev/null; then
  echo "usage: cases.sh case_<group>__<name>" >&2
  exit 2
fi
require_real_gcloud
enter_netns "$1"
"$1"
finish
