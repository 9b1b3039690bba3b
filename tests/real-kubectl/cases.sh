#!/usr/bin/env bash
# Cases that run the real kubectl (the one on PATH) against a loopback Kubernetes API whose pods
# are local processes running the stand-in jax (tests/real-kubectl/README.md). The manifests are
# src/gke/'s (through gke_manifest); the commands are written by hand until the plan emits them.
# Nothing here is a TPU or a cluster. ctest runs one function per entry:
#   TPULAUNCH=build/ci/tpulaunch GKE_MANIFEST=build/ci/tests/gke_manifest SOURCE_DIR=. \
#     bash tests/real-kubectl/cases.sh case_run__four_pods_complete
# A case exits 77 (skipped) after printing why when kubectl, unshare or root is missing.
# shellcheck source=tests/real-kubectl/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# kubectl apply of both objects: discovery, then OpenAPI v3 only to learn that the server validates
# fields itself, then a GET (404) and a create with fieldValidation=Strict, as against a real
# cluster; `kubectl create` of a JobSet that exists is the server's AlreadyExists.
case_apply__asks_the_server_to_validate() {
  local dir
  dir=$(workdir rk-apply)
  kube_start "$dir" --node-pool tpu-v5-lite-podslice/4x4/4/4
  manifests "$dir" lesson v5litepod-16 1
  k "$dir" apply -f "$dir/lesson-files.json" -f "$dir/lesson.json"
  expect_status 0
  expect_stdout_contains "configmap/lesson-files created"
  expect_stdout_contains "jobset.jobset.x-k8s.io/lesson created"
  api_calls "$dir" >"$dir/calls.txt"
  grep -qx "POST /api/v1/namespaces/default/configmaps?fieldManager=kubectl-client-side-apply&fieldValidation=Strict" "$dir/calls.txt" ||
    fail "the ConfigMap was not created with fieldValidation=Strict: $(cat "$dir/calls.txt")"
  grep -qx "POST /apis/jobset.x-k8s.io/v1alpha2/namespaces/default/jobsets?fieldManager=kubectl-client-side-apply&fieldValidation=Strict" "$dir/calls.txt" ||
    fail "the JobSet was not created with fieldValidation=Strict: $(cat "$dir/calls.txt")"
  grep -q '"path": "/openapi/v2"' "$dir/state/requests.jsonl" && fail "kubectl downloaded the OpenAPI v2 schema"
  k "$dir" create -f "$dir/lesson.json"
  expect_status 1
  [[ "$err" == *'Error from server (AlreadyExists): error when creating'*'jobsets.jobset.x-k8s.io "lesson" already exists'* ]] ||
    fail "create of an existing JobSet: $err"
  kube_stop "$dir"
}

# A v5litepod-16 (4 pods): each pod gets its worker id and the 4 host names from GKE's webhook,
# the 4 processes form one JAX group, every pod's log is read by its labels, each result is in
# the bucket, and deleting the JobSet (the last request that changes anything) removes its pods.
case_run__four_pods_complete() {
  local dir i log
  dir=$(workdir rk-four-pods)
  kube_start "$dir" --node-pool tpu-v5-lite-podslice/4x4/4/4
  manifests "$dir" lesson v5litepod-16 1
  k "$dir" apply -f "$dir/lesson-files.json" -f "$dir/lesson.json"
  expect_status 0
  wait_terminal "$dir" lesson
  [[ "$out" == Completed ]] || fail "terminal state: $out"
  k "$dir" wait --for=condition=Completed jobset/lesson --timeout=10s
  expect_status 0
  logs_by_pod "$dir" lesson 1 4
  for ((i = 0; i < 4; i++)); do
    log=$(cat "$dir/logs/slice-0/worker-$i.log")
    [[ "$log" == "worker $i process $i of 4 slice - of - host lesson-slice-0-$i hostnames lesson-slice-0-0.lesson,lesson-slice-0-1.lesson,lesson-slice-0-2.lesson,lesson-slice-0-3.lesson devices 16" ]] ||
      fail "worker $i's log: $log"
    [[ -f "$dir/state/gcs/lab-bucket/r1/slice-0/worker-$i/result.txt" ]] || fail "worker $i's result is not in the bucket"
    [[ "$(pod_field "$dir" lesson 0 "$i" status.phase)" == Succeeded ]] || fail "worker $i's pod did not succeed"
  done
  k "$dir" delete jobset lesson
  expect_status 0
  expect_stdout_contains 'jobset.jobset.x-k8s.io "lesson" deleted'
  k "$dir" get pods -l jobset.sigs.k8s.io/jobset-name=lesson -o name
  [[ -z "$out" ]] || fail "pods left after the JobSet was deleted: $out"
  [[ "$(api_calls "$dir" | grep -E '^(POST|DELETE|PATCH|PUT)' | tail -n 1)" == "DELETE /apis/jobset.x-k8s.io/v1alpha2/namespaces/default/jobsets/lesson" ]] ||
    fail "the JobSet's deletion is not the last change: $(api_calls "$dir" | tail -n 3)"
  kube_stop "$dir"
}

# Worker 2 fails (exit 3) after the others have ended: the JobSet is Failed, every pod's log can
# still be read, worker 2's pod names its exit code, and the JobSet is kept (nothing is deleted).
case_run__failing_pod_keeps_the_jobset() {
  local dir i
  dir=$(workdir rk-failing-pod)
  kube_start "$dir" --node-pool tpu-v5-lite-podslice/4x4/4/4
  manifests "$dir" lesson v5litepod-16 1 FAIL_WORKER=2
  k "$dir" apply -f "$dir/lesson-files.json" -f "$dir/lesson.json"
  expect_status 0
  wait_terminal "$dir" lesson
  [[ "$out" == Failed ]] || fail "terminal state: $out"
  k "$dir" get jobset lesson -o 'jsonpath={.status.conditions[0].type}={.status.conditions[0].status}'
  [[ "$out" == Failed=True ]] || fail "the JobSet's condition: $out"
  logs_by_pod "$dir" lesson 1 4
  grep -q "worker 2 fails on purpose" "$dir/logs/slice-0/worker-2.log" || fail "worker 2's log lacks its failure"
  for ((i = 0; i < 4; i++)); do
    grep -q "^worker $i process $i of 4 " "$dir/logs/slice-0/worker-$i.log" || fail "worker $i's log: $(cat "$dir/logs/slice-0/worker-$i.log")"
  done
  [[ "$(pod_field "$dir" lesson 0 2 'status.containerStatuses[0].state.terminated.exitCode')" == 3 ]] ||
    fail "worker 2's exit code is not 3"
  [[ "$(pod_field "$dir" lesson 0 0 status.phase)" == Succeeded ]] || fail "worker 0's pod did not succeed"
  k "$dir" get jobset lesson -o name
  [[ "$out" == jobset.jobset.x-k8s.io/lesson ]] || fail "the JobSet is not kept: $out $err"
  ! api_calls "$dir" | grep -q '^DELETE' || fail "something was deleted: $(api_calls "$dir" | grep '^DELETE')"
  kube_stop "$dir"
}

# Multislice: two v4-16 slices (2 pods each) as one JobSet of 2 replicas, each slice on a node pool
# of its own (the exclusive-topology annotation), one JAX group of 4 processes across both, each
# pod with its slice's MEGASCALE_* values.
case_run__multislice_two_replicas() {
  local dir s i log pool0 pool1
  dir=$(workdir rk-multislice)
  kube_start "$dir" --node-pool tpu-v4-podslice/2x2x2/2/4 --node-pool tpu-v4-podslice/2x2x2/2/4
  manifests "$dir" lesson v4-16 2
  k "$dir" apply -f "$dir/lesson-files.json" -f "$dir/lesson.json"
  expect_status 0
  wait_terminal "$dir" lesson
  [[ "$out" == Completed ]] || fail "terminal state: $out"
  logs_by_pod "$dir" lesson 2 2
  for ((s = 0; s < 2; s++)); do
    for ((i = 0; i < 2; i++)); do
      log=$(cat "$dir/logs/slice-$s/worker-$i.log")
      [[ "$log" == "worker $i process $((s * 2 + i)) of 4 slice $s of 2 host lesson-slice-$s-$i hostnames lesson-slice-$s-0.lesson,lesson-slice-$s-1.lesson devices 16" ]] ||
        fail "slice $s worker $i's log: $log"
      [[ -f "$dir/state/gcs/lab-bucket/r1/slice-$s/worker-$i/result.txt" ]] || fail "slice $s worker $i's result is not in the bucket"
    done
  done
  pool0=$(pod_field "$dir" lesson 0 1 spec.nodeName)
  pool1=$(pod_field "$dir" lesson 1 1 spec.nodeName)
  [[ "${pool0%-node-*}" != "${pool1%-node-*}" && -n "$pool0" ]] || fail "both slices on one node pool: $pool0 $pool1"
  k "$dir" delete jobset lesson
  expect_status 0
  kube_stop "$dir"
}

# A slow schedule: the pods wait Pending (a short wait times out, exit 1), then run; `get -w`
# follows one pod from Pending to Succeeded.
case_run__slow_schedule_is_waited_for() {
  local dir watch_pid
  dir=$(workdir rk-slow-schedule)
  kube_start "$dir" --node-pool tpu-v5-lite-podslice/2x4/2/4 --schedule-seconds 8
  manifests "$dir" lesson v5litepod-8 1
  k "$dir" apply -f "$dir/lesson-files.json" -f "$dir/lesson.json"
  expect_status 0
  env -u KUBECONFIG HOME="$dir/home" KUBECONFIG="$dir/kubeconfig" timeout 60 kubectl get pods -w \
    -l jobset.sigs.k8s.io/jobset-name=lesson,batch.kubernetes.io/job-completion-index=1 \
    -o 'jsonpath={.metadata.name} {.status.phase}{"\n"}' >"$dir/watch.out" 2>"$dir/watch.err" &
  watch_pid=$!
  [[ "$(pod_field "$dir" lesson 0 0 status.phase)" == Pending ]] || fail "worker 0 is not Pending while unscheduled"
  k "$dir" wait --for=jsonpath='{.status.terminalState}' jobset/lesson --timeout=1s
  expect_status 1
  [[ "$err" == *"timed out waiting for the condition"* ]] || fail "the short wait: $err"
  wait_terminal "$dir" lesson
  [[ "$out" == Completed ]] || fail "terminal state: $out"
  sleep 1
  kill "$watch_pid" 2>/dev/null || true
  wait "$watch_pid" 2>/dev/null || true
  python3 - "$dir/watch.out" <<'PY' || fail "get -w did not follow the pod: $(cat "$dir/watch.out")"
import sys
phases = [line.split()[1] for line in open(sys.argv[1]) if line.strip()]
order = [p for i, p in enumerate(phases) if i == 0 or phases[i - 1] != p]
assert order == ["Pending", "Running", "Succeeded"], phases
PY
  kube_stop "$dir"
}

# A JobSet whose nodeSelector no node pool matches (a v6e-16 on a v5e cluster) stays Pending: the
# manifest's selector, toleration and chips are what place a pod.
case_run__no_matching_node_pool_stays_pending() {
  local dir
  dir=$(workdir rk-no-pool)
  kube_start "$dir" --node-pool tpu-v5-lite-podslice/4x4/4/4
  manifests "$dir" lesson v6e-16 1
  k "$dir" apply -f "$dir/lesson-files.json" -f "$dir/lesson.json"
  expect_status 0
  k "$dir" wait --for=jsonpath='{.status.terminalState}' jobset/lesson --timeout=3s
  expect_status 1
  [[ "$(pod_field "$dir" lesson 0 3 status.phase)" == Pending ]] || fail "worker 3 is not Pending"
  [[ "$(pod_field "$dir" lesson 0 3 'status.conditions[0].reason')" == Unschedulable ]] || fail "worker 3 is not Unschedulable"
  kube_stop "$dir"
}

if [[ $# -lt 1 ]] || ! declare -F "$1" >/dev/null; then
  echo "usage: cases.sh case_<group>__<name>" >&2
  exit 2
fi
require_real_kubectl
enter_netns "$1"
"$1"
finish
