# shellcheck shell=bash
# Helpers for tests/real-kubectl/cases.sh: the real kubectl (the one on PATH) against a loopback
# Kubernetes API (fakekube.py) whose pods are local processes running the stand-in jax. Nothing
# here is a TPU or a cluster. Each case runs in its own network namespace (unshare --net, loopback
# only). A case whose tools are missing exits 77 (ctest's SKIP_RETURN_CODE) after printing why.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../e2e/lib.sh"

REAL_KUBECTL_DIR="$SOURCE_DIR/tests/real-kubectl"
: "${GKE_MANIFEST:?set GKE_MANIFEST to the built gke_manifest (tests/tools/gke_manifest.cpp)}"
SKIP=77

skip() {
  echo "SKIP: $*" >&2
  exit "$SKIP"
}

# The tools a case needs, or exit 77 naming what is missing.
require_real_kubectl() {
  local tool
  ((EUID == 0)) || skip "the real-kubectl cases run as root (each pod gets its own mount and UTS namespaces)"
  command -v kubectl >/dev/null || skip "kubectl is not on PATH (package kubectl, from the google-cloud-cli packages)"
  for tool in unshare ip python3 chroot; do
    command -v "$tool" >/dev/null || skip "$tool is not on PATH"
  done
  unshare --net --mount --uts true 2>/dev/null || skip "unshare cannot create network, mount and UTS namespaces here"
  [[ ! -e /tpulaunch ]] || skip "/tpulaunch exists on this machine: the pods mount their files there"
}

# enter_netns ARGS...: runs this case again inside a new network namespace whose loopback is up.
enter_netns() {
  if [[ -z "${REAL_KUBECTL_NETNS:-}" ]]; then
    REAL_KUBECTL_NETNS=1 exec unshare --net -- bash "$0" "$@"
  fi
  ip link set lo up
}

# kube_start DIR [FAKEKUBE_ARGS...]: the loopback API serving DIR/state (node pools and knobs in
# FAKEKUBE_ARGS), a kubeconfig DIR/kubeconfig pointing at it, the stand-in image's gcloud, and a
# bucket gs://lab-bucket (DIR/state/gcs/lab-bucket). DIR must not be under /tmp: each pod has a
# /tmp of its own.
kube_start() {
  local dir=$1 i port
  shift
  mkdir -p "$dir/home" "$dir/state/image-bin" "$dir/state/gcs/lab-bucket"
  printf '#!/bin/sh\nexec %q "$@"\n' "$STANDIN/gcloud" >"$dir/state/image-bin/gcloud"
  chmod +x "$dir/state/image-bin/gcloud"
  python3 "$REAL_KUBECTL_DIR/fakekube.py" --state "$dir/state" --port-file "$dir/fakekube.port" "$@" \
    2>"$dir/fakekube.log" &
  echo $! >"$dir/fakekube.pid"
  for ((i = 0; i < 600; i++)); do
    [[ -s "$dir/fakekube.port" ]] && break
    kill -0 "$(cat "$dir/fakekube.pid")" 2>/dev/null || break
    sleep 0.1
  done
  [[ -s "$dir/fakekube.port" ]] || {
    fail "the loopback API did not start: $(cat "$dir/fakekube.log")"
    finish
  }
  port=$(cat "$dir/fakekube.port")
  cat >"$dir/kubeconfig" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
- name: loopback
  cluster: {server: "http://127.0.0.1:$port"}
users:
- name: tester
  user: {token: loopback-token}
contexts:
- name: loopback
  context: {cluster: loopback, user: tester, namespace: default}
current-context: loopback
KUBECONFIG
}

# kube_stop DIR: ends the loopback API, and with it every pod still running.
kube_stop() {
  local dir=$1 pid
  [[ -s "$dir/fakekube.pid" ]] || return 0
  pid=$(cat "$dir/fakekube.pid")
  if kill -TERM "$pid" 2>/dev/null; then
    wait "$pid" 2>/dev/null || true
  fi
  rm -f "$dir/fakekube.pid"
}

# k DIR ARGS...: runs the real kubectl with DIR's kubeconfig and home (its discovery cache) and
# nothing of this machine's own configuration; sets $status, $out, $err.
k() {
  local dir=$1
  shift
  status=0
  env -u KUBECONFIG HOME="$dir/home" KUBECONFIG="$dir/kubeconfig" kubectl "$@" >"$dir/kubectl.out" \
    2>"$dir/kubectl.err" </dev/null || status=$?
  out=$(cat "$dir/kubectl.out")
  err=$(cat "$dir/kubectl.err")
}

# manifests DIR NAME SLICE SLICES [ENV K=V]...: DIR/NAME-files.json (a ConfigMap of the test
# program, tests/real-kubectl/pod/) and DIR/NAME.json (the JobSet), both built by src/gke/
# through gke_manifest.
manifests() {
  local dir=$1 name=$2 slice=$3 slices=$4 env=()
  shift 4
  for kv in "$@"; do
    env+=(--env "$kv")
  done
  "$GKE_MANIFEST" configmap --name "$name-files" --label "tpulaunch/run-id=r1" \
    "$REAL_KUBECTL_DIR/pod/pod.sh" "$REAL_KUBECTL_DIR/pod/lesson.py" >"$dir/$name-files.json"
  "$GKE_MANIFEST" jobset --slice "$slice" --slices "$slices" --name "$name" --image "example.com/tpu/jax:standin" \
    --config-map "$name-files" --mount /tpulaunch --label "tpulaunch/run-id=r1" \
    --env PYTHONUNBUFFERED=1 "${env[@]}" -- bash /tpulaunch/pod.sh >"$dir/$name.json"
}

# pod_field DIR JOBSET SLICE WORKER JSONPATH: a field of that pod, by JobSet's labels.
pod_field() {
  k "$1" get pods -l "jobset.sigs.k8s.io/jobset-name=$2,jobset.sigs.k8s.io/job-index=$3,batch.kubernetes.io/job-completion-index=$4" \
    -o "jsonpath={.items[0].$5}"
  printf '%s' "$out"
}

# logs_by_pod DIR JOBSET SLICES WORKERS: every pod's log, fetched one pod at a time by its labels,
# into DIR/logs/slice-<s>/worker-<i>.log; a pod whose log cannot be read is a failure.
logs_by_pod() {
  local dir=$1 name=$2 slices=$3 workers=$4 s i pod
  for ((s = 0; s < slices; s++)); do
    mkdir -p "$dir/logs/slice-$s"
    for ((i = 0; i < workers; i++)); do
      pod=$(pod_field "$dir" "$name" "$s" "$i" metadata.name)
      [[ -n "$pod" ]] || fail "no pod for slice $s worker $i"
      k "$dir" logs "$pod"
      ((status == 0)) || fail "kubectl logs $pod: $status $err"
      printf '%s\n' "$out" >"$dir/logs/slice-$s/worker-$i.log"
    done
  done
}

# api_calls DIR: the loopback API's requests, one "METHOD path?query" per line (the query's keys
# sorted; discovery and OpenAPI requests left out).
api_calls() {
  python3 -c 'import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["path"].startswith(("/openapi", "/version")) or r["path"] in ("/api", "/apis") or r["path"].count("/") <= 3:
        continue
    q = "&".join("{}={}".format(k, v) for k, v in sorted(r["query"].items()) if k != "timeout")
    print(r["method"], r["path"] + ("?" + q if q else ""))' "$1/state/requests.jsonl"
}

# wait_terminal DIR NAME: kubectl wait until the JobSet has a terminal state (Completed or
# Failed), then that state in $out.
wait_terminal() {
  k "$1" wait --for=jsonpath='{.status.terminalState}' "jobset/$2" --timeout=120s
  ((status == 0)) || fail "kubectl wait: $status $err"
  k "$1" get jobset "$2" -o 'jsonpath={.status.terminalState}'
}
