# shellcheck shell=bash
# Helpers for tests/real-gcloud/cases.sh: the real gcloud (the one on PATH, not the stand-in)
# against a loopback Cloud TPU API (fakecloud.py) and real sshd workers. Nothing here is a TPU:
# the workers run the stand-in jax of tests/gcloud-standin/fakejax.
#
# Each case runs in its own network namespace (unshare --net, loopback only), so no request can
# leave the machine and cases running side by side never share an address. A case whose tools are
# missing exits 77 (ctest's SKIP_RETURN_CODE) after printing why.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../e2e/lib.sh"

REAL_GCLOUD_DIR="$SOURCE_DIR/tests/real-gcloud"
SKIP=77

skip() {
  echo "SKIP: $*" >&2
  exit "$SKIP"
}

# The tools a case needs, or exit 77 naming what is missing.
require_real_gcloud() {
  local tool gcloud_path
  ((EUID == 0)) || skip "the real-gcloud cases run as root (each worker's sshd gets its own mount and UTS namespaces)"
  gcloud_path=$(command -v gcloud) || skip "gcloud is not on PATH (the Google Cloud CLI, package google-cloud-cli)"
  [[ "$(readlink -f "$gcloud_path")" != "$(readlink -f "$STANDIN/gcloud")" ]] ||
    skip "gcloud on PATH is the stand-in ($gcloud_path), not the real gcloud"
  for tool in unshare ip ssh scp ssh-agent ssh-add ssh-keygen python3; do
    command -v "$tool" >/dev/null || skip "$tool is not on PATH (scripts/setup.sh installs it)"
  done
  [[ -x /usr/sbin/sshd ]] || command -v sshd >/dev/null || skip "sshd is missing (package openssh-server)"
  unshare --net --mount --uts true 2>/dev/null ||
    skip "unshare cannot create network, mount and UTS namespaces here"
}

# enter_netns ARGS...: runs this case again inside a new network namespace whose loopback is up.
enter_netns() {
  if [[ -z "${REAL_GCLOUD_NETNS:-}" ]]; then
    REAL_GCLOUD_NETNS=1 exec unshare --net -- bash "$0" "$@"
  fi
  ip link set lo up
}

# The gcloud calls' environment, as arguments of env: no CLOUDSDK_* of the caller's (a zone, a
# project, a configuration), then everything the real gcloud needs to talk to the loopback API, as
# documented properties, and nothing of this machine's own gcloud configuration.
real_env() {
  local dir=$1 port
  port=$(cat "$dir/fakecloud.port")
  compgen -e | sed -n 's/^CLOUDSDK_/-u&/p'
  printf '%s\n' "HOME=$dir/home" "CLOUDSDK_CONFIG=$dir/gcloud-config" \
    "CLOUDSDK_API_ENDPOINT_OVERRIDES_TPU=http://127.0.0.1:$port/" \
    "CLOUDSDK_API_ENDPOINT_OVERRIDES_COMPUTE=http://127.0.0.1:$port/compute/v1/" \
    "CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE=http://127.0.0.1:$port/" \
    "CLOUDSDK_AUTH_ACCESS_TOKEN_FILE=$dir/access-token" "CLOUDSDK_CORE_ACCOUNT=tester@example.com" \
    "CLOUDSDK_CORE_PROJECT=lab-project-1" "CLOUDSDK_CORE_DISABLE_USAGE_REPORTING=1" \
    "CLOUDSDK_COMPONENT_MANAGER_DISABLE_UPDATE_CHECK=1" "SSH_AUTH_SOCK=$dir/agent.sock"
}

# real_cloud_start DIR: a user's home with ~/.ssh/google_compute_engine loaded in a real
# ssh-agent, and the loopback API serving DIR/state (the stand-in's TPUs, if any) with one sshd
# per worker. The caller's FAKEJAX_*, LESSON_* and GCLOUD_STANDIN_* knobs reach the workers.
real_cloud_start() {
  local dir=$1 i
  mkdir -p "$dir/home/.ssh" "$dir/gcloud-config"
  chmod 700 "$dir/home/.ssh"
  ssh-keygen -q -t rsa -b 2048 -N '' -C root -f "$dir/home/.ssh/google_compute_engine" </dev/null
  printf 'loopback-token\n' >"$dir/access-token"
  # In the foreground of a background job, so that it stays this case's child and ends with it.
  ssh-agent -D -a "$dir/agent.sock" >/dev/null &
  echo $! >"$dir/agent.pid"
  for ((i = 0; i < 100; i++)); do
    [[ -S "$dir/agent.sock" ]] && break
    sleep 0.05
  done
  SSH_AUTH_SOCK="$dir/agent.sock" ssh-add -q "$dir/home/.ssh/google_compute_engine" 2>/dev/null
  # The interpreter the stand-in's worker programs name (its python3, the venvs' python) must be
  # one the workers see: not under /root, which each worker's own home covers.
  "${GCLOUD_STANDIN_PYTHON:-/usr/bin/python3}" "$REAL_GCLOUD_DIR/fakecloud.py" --state "$dir/state" --pubkey "$dir/home/.ssh/google_compute_engine.pub" \
    --port-file "$dir/fakecloud.port" 2>"$dir/fakecloud.log" &
  echo $! >"$dir/fakecloud.pid"
  for ((i = 0; i < 600; i++)); do
    [[ -s "$dir/fakecloud.port" ]] && return 0
    kill -0 "$(cat "$dir/fakecloud.pid")" 2>/dev/null || break
    sleep 0.1
  done
  fail "the loopback API did not start: $(cat "$dir/fakecloud.log")"
  finish
}

# real_cloud_stop DIR: ends the loopback API (and with it every worker) and the agent.
real_cloud_stop() {
  local dir=$1 pid
  if [[ -s "$dir/fakecloud.pid" ]]; then
    pid=$(cat "$dir/fakecloud.pid")
    if kill -TERM "$pid" 2>/dev/null; then
      wait "$pid" 2>/dev/null || true
    fi
    rm -f "$dir/fakecloud.pid"
  fi
  if [[ -s "$dir/agent.pid" ]]; then
    pid=$(cat "$dir/agent.pid")
    if kill -TERM "$pid" 2>/dev/null; then
      wait "$pid" 2>/dev/null || true
    fi
    rm -f "$dir/agent.pid"
  fi
}

# real_path: this PATH without the stand-in and the stand-in ssh-add, so `gcloud` is the real one.
real_path() {
  printf '%s' "$PATH" | tr ':' '\n' | grep -v -x -e "$STANDIN" -e "$SOURCE_DIR/tests/e2e/bin" | paste -sd:
}

# run_real DIR SCRIPT: runs a generated sh script in DIR through the real gcloud; sets $status,
# $out, $err. PATH has tpulaunch first and neither the stand-in nor the stand-in ssh-add.
run_real() {
  local dir=$1 script=$2 bin path
  bin=$(dirname "$TPULAUNCH")
  path=$(real_path)
  status=0
  (cd "$dir" && mapfile -t vars < <(real_env "$dir") &&
    env "${vars[@]}" PATH="$bin:$path" TPULAUNCH_ALLOW_STANDIN=1 bash "$script" >"$dir/pipeline.out" \
      2>"$dir/pipeline.err" </dev/null) || status=$?
  out=$(cat "$dir/pipeline.out")
  err=$(cat "$dir/pipeline.err")
}

# real_gcloud DIR ARGS...: one call of the real gcloud against DIR's loopback API, in the same
# environment as run_real's; its stdout and stderr go to P.out and P.err, P being $REAL_GCLOUD_OUT
# or DIR/gcloud, and it returns gcloud's status (a case can run it in the background and `wait`).
real_gcloud() {
  local dir=$1 path prefix=${REAL_GCLOUD_OUT:-$1/gcloud}
  shift
  path=$(real_path)
  (cd "$dir" && mapfile -t vars < <(real_env "$dir") &&
    exec env "${vars[@]}" PATH="$path" gcloud "$@" >"$prefix.out" 2>"$prefix.err" </dev/null)
}

# drop_worker_connection DIR NODE WORKER [AFTER]: drops worker WORKER's ssh connection to node
# NODE as a network would: waits (up to 20 s) for an ssh session there that runs a command and is
# AFTER seconds old (default 0), then kills its per-connection sshd (`sshd: root@notty`, not the
# listening sshd). ssh prints "Connection to … closed by remote host." and exits 255, so gcloud
# retries; the session's shell and what it started run on without its pipes (a write to them
# gets SIGPIPE). Prints the killed pid; returns 1 if no such session came. The knobs
# GCLOUD_STANDIN_DROP_WORKERS/_AFTER/_WHEN do the same from within the loopback API, for a scenario.
drop_worker_connection() {
  python3 "$REAL_GCLOUD_DIR/fakecloud_workers.py" drop "$1/state/fakecloud/$2-w$3/sshd.pid" "${4:-0}"
}

# fetched DIR: the files the pipeline brought back, relative to DIR/tpu-runs, one per line.
fetched() {
  [[ -d "$1/tpu-runs" ]] || return 0
  (cd "$1/tpu-runs" && find . -type f | LC_ALL=C sort)
}

# api_calls DIR: the loopback API's requests, one "METHOD path" per line.
api_calls() {
  python3 -c 'import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    print(r["method"], r["path"])' "$1/state/requests.jsonl"
}

# expect_queued_resource_deleted_last: the last API call of the real run (operations polls aside)
# deletes the queued resource lab-pod-qr: nothing reached the TPU after its teardown.
expect_queued_resource_deleted_last() {
  [[ "$(api_calls "$real_dir" | grep -v /operations/ | tail -n 1)" == "DELETE /v2/projects/lab-project-1/locations/us-west4-a/queuedResources/lab-pod-qr" ]] ||
    fail "the queued resource is not deleted last: $(api_calls "$real_dir" | tail -n 3)"
}

# real_calls DIR: the gcloud calls the loopback API saw, one per gcloud process (its invocation
# id) in the order of their first requests, named as local_calls (tests/e2e/lib.sh) names the
# stand-in's: "ssh", "scp", "delete", "queued-resources describe", ...
real_calls() {
  python3 -c 'import json, sys
seen = []
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["invocation"] and r["invocation"] not in [i for i, _ in seen]:
        seen.append((r["invocation"], r["gcloud"]))
for _, command in seen:
    words = command.split(".")
    if words[1] == "storage":
        print(" ".join(words[1:3]))
    else:
        print(" ".join(words[3:5]) if words[3] == "queued-resources" else words[-1])' "$1/state/requests.jsonl"
}

# scenario NAME WORKERS [STANDIN_CREATE_ARGS...] -- PLAN_ARGS...: one scenario two ways, each in
# its own course (a stand-in TPU "lab-pod" of WORKERS workers; none for 0): through the gcloud
# stand-in, then through the real gcloud. The caller's knobs (FAKEJAX_*, LESSON_*,
# GCLOUD_STANDIN_*, REALGCLOUD_*) apply to both. Sets $standin_dir, $standin_status,
# $standin_err, $real_dir, and $status/$out/$err of the real run.
scenario() {
  local name=$1 workers=$2 create=() plan way dir
  shift 2
  while [[ $# -gt 0 && "$1" != "--" ]]; do
    create+=("$1")
    shift
  done
  shift
  plan=("$@")
  for way in standin real; do
    if ((workers > 0)); then
      dir=$(standin_course "rg-$name-$way" "$workers" "${create[@]}")
    else
      dir=$(bare_course "rg-$name-$way")
    fi
    if [[ -n "${SCENARIO_SETUP:-}" ]]; then
      "$SCENARIO_SETUP" "$dir"
    fi
    run -C "$dir" plan "${plan[@]}" --format sh
    [[ "$status" == 0 ]] || { fail "plan ${plan[*]}: status $status: $err"; finish; }
    printf '%s\n' "$out" >"$dir/run.sh"
    run -C "$dir" plan "${plan[@]}" --format json
    printf '%s\n' "$out" >"$dir/plan.json"
    if [[ "$way" == standin ]]; then
      standin_dir=$dir
      run_pipeline "$dir" run.sh
      standin_status=$status
      standin_err=$err
    else
      real_dir=$dir
      trap 'real_cloud_stop "$real_dir"' EXIT
      real_cloud_start "$dir"
      run_real "$dir" run.sh
      real_cloud_stop "$dir"
    fi
  done
}

# expect_same_as_standin: the real gcloud and the stand-in ended the scenario with the same
# status, brought back the same files (names, not contents: clocks and pids differ), and made the
# same gcloud calls.
expect_same_as_standin() {
  if [[ "$status" != "$standin_status" ]]; then
    fail "real gcloud: status $status, stand-in: $standin_status"$'\n'"--- real stderr:"$'\n'"$err"$'\n'"--- stand-in stderr:"$'\n'"$standin_err"
  fi
  if ! diff -u <(fetched "$standin_dir") <(fetched "$real_dir") >&2; then
    fail "the real gcloud (+) and the stand-in (-) brought back different files"
  fi
  # The same gcloud calls (as a set with counts: the fetches run side by side).
  if ! diff -u <(local_calls "$standin_dir" | LC_ALL=C sort) <(real_calls "$real_dir" | LC_ALL=C sort) >&2; then
    fail "the pipeline made other gcloud calls through the real gcloud (+) than through the stand-in (-)"
  fi
}

# plan_stage_sources DIR: the local files the plan's stage step copies (the scp sources).
plan_stage_sources() {
  python3 -c 'import json, sys
plan = json.load(open(sys.argv[1]))
for step in plan["steps"]:
    if step["name"] == "stage":
        argv = step["argv"]
        words = [a for a in argv[5:] if not a.startswith("--")]
        for src in words[:-1]:
            print(src)' "$1/plan.json"
}

# node_folder DIR [NODE]: the stand-in folder of TPU NODE (default lab-pod) in DIR, also once it was deleted.
node_folder() {
  local node=${2:-lab-pod}
  if [[ -d "$1/state/tpus/$node" ]]; then
    printf '%s\n' "$1/state/tpus/$node"
  else
    compgen -G "$1/state/deleted/$node.*" | head -n 1
  fi
}

# worker_home DIR I [NODE]: worker I's home folder (its /root over ssh) on NODE (default lab-pod).
worker_home() {
  printf '%s\n' "$(node_folder "$1" "${3:-}")/worker-$2/home"
}
