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

# --- the plan's own commands -----------------------------------------------------------------
# The cases below run what `tpulaunch plan --gke ... --format sh` prints, as a user would: the
# real kubectl, and a gcloud whose get-credentials writes the loopback API's kubeconfig (its
# storage calls go to the stand-in's bucket folder).

# gke_course DIR: the stand-in course (the lesson, multi-host-qualified), late-fail.py, whose
# worker FAIL_WORKER fails (status 3) after the others have ended, and early-fail.py, whose worker
# FAIL_WORKER fails at once while the others still run (Kubernetes then deletes them).
gke_course() {
  local course
  course=$(bare_course "$(basename "$1")-course")
  cat >"$course/public/exercises/late-fail.py" <<'PY'
import os
import sys
import time

import jax

jax.distributed.initialize()
index = jax.process_index()
print("late-fail: process {} of {}, {} devices".format(index, jax.process_count(), jax.device_count()), flush=True)
if os.environ.get("FAIL_WORKER") == str(index):
    time.sleep(3)
    print("late-fail: process {} fails on purpose".format(index), flush=True)
    sys.exit(3)
PY
  cat >"$course/public/exercises/early-fail.py" <<'PY'
import os
import sys
import time

import jax

jax.distributed.initialize()
index = jax.process_index()
print("early-fail: process {} of {}, {} devices".format(index, jax.process_count(), jax.device_count()), flush=True)
if os.environ.get("FAIL_WORKER") == str(index):
    print("early-fail: process {} fails on purpose".format(index), flush=True)
    sys.exit(3)
print("early-fail: process {} works on".format(index), flush=True)
time.sleep(120)
PY
  local script
  for script in late-fail early-fail; do
    "$TPULAUNCH" -C "$course" review "$script" --class multi-host-qualified --by e2e-tests \
      --override "a test program: it fails on purpose, with no collective" >/dev/null
  done
  printf '%s\n' "$course"
}

# gke_run DIR COURSE SCRIPT SLICE [PLAN ARGS...]: plans SCRIPT on SLICE for the loopback cluster
# as an sh script (DIR/run.sh), then runs it from DIR/user with DIR/bin first on PATH; sets
# $status, $out, $err from the run.
gke_run() {
  local dir=$1 course=$2 script=$3 slice=$4
  shift 4
  mkdir -p "$dir/bin" "$dir/user"
  cat >"$dir/bin/gcloud" <<GCLOUD
#!/bin/bash
printf '%s\n' "\$*" >>"$dir/gcloud-calls.txt"
if [[ "\$1 \$2 \$3" == "container clusters get-credentials" ]]; then
  cp "$dir/kubeconfig" "\$KUBECONFIG"
  echo "kubeconfig entry generated for \$4." >&2
  exit 0
fi
GCLOUD_STANDIN_STATE="$dir/state/gcloud-standin" GCLOUD_STANDIN_GCS="$dir/state/gcs" exec "$STANDIN/gcloud" "\$@"
GCLOUD
  chmod +x "$dir/bin/gcloud"
  "$TPULAUNCH" -C "$course" plan "$script" --slice "$slice" --gke lab-cluster --location us-east5-b \
    --image example.com/tpu/jax:standin --results gs://lab-bucket/runs --run-id r1 --format sh "$@" >"$dir/run.sh" ||
    fail "the plan failed: $(cat "$dir/run.sh")"
  status=0
  (cd "$dir/user" && env -u KUBECONFIG HOME="$dir/home" KUBECONFIG="$dir/user/kubeconfig" PATH="$dir/bin:$PATH" \
    bash "$dir/run.sh" >"$dir/run.out" 2>"$dir/run.err") || status=$?
  out=$(cat "$dir/run.out")
  err=$(cat "$dir/run.err")
}

# A v5litepod-16 (4 pods) through the plan's own commands: credentials, the name check, apply,
# the wait, every pod's log, the results from the bucket, verify, and --teardown's delete last.
case_plan__four_pods_verified_then_teardown() {
  local dir course run i
  dir=$(workdir rk-plan-four)
  kube_start "$dir" --node-pool tpu-v5-lite-podslice/4x4/4/4
  course=$(gke_course "$dir")
  gke_run "$dir" "$course" standin-lesson v5litepod-16 --teardown --manifest "$dir/reviewed.json"
  ((status == 0)) || fail "the run failed ($status): $err"
  [[ "$out" == *"tpulaunch: verify: 4 pod(s) of 1 slice(s) succeeded with plan "* ]] || fail "verify: $out $err"
  cmp -s "$dir/reviewed.json" "$course/gke-runs/lab-cluster/standin-lesson/r1/manifest.json" ||
    fail "the sh form applied another document than --manifest wrote"
  [[ "$out" == *"is verified and its JobSet deleted"* ]] || fail "no end line: $out"
  grep -qx "container clusters get-credentials lab-cluster --location=us-east5-b" "$dir/gcloud-calls.txt" ||
    fail "get-credentials: $(cat "$dir/gcloud-calls.txt")"
  run=$course/gke-runs/lab-cluster/standin-lesson/r1
  [[ "$(cat "$run/jobset-state")" == Completed ]] || fail "jobset-state: $(cat "$run/jobset-state")"
  for ((i = 0; i < 4; i++)); do
    grep -q "process $i" "$run/slice-0/worker-$i/pod.log" || fail "worker $i's log: $(cat "$run/slice-0/worker-$i/pod.log")"
    grep -qx "status=0" "$run/slice-0/worker-$i/pod-status.rec" || fail "worker $i's record"
    grep -qx "worker=$i" "$run/slice-0/worker-$i/pod-status.rec" || fail "worker $i's record names another worker"
  done
  api_calls "$dir" | grep -E '^(POST|DELETE|PATCH|PUT)' >"$dir/changes.txt"
  [[ "$(tail -n 1 "$dir/changes.txt")" == DELETE*/configmaps/* && "$(tail -n 2 "$dir/changes.txt" | head -n 1)" == DELETE*/jobsets/* ]] ||
    fail "the teardown is not the last change: $(cat "$dir/changes.txt")"
  # The same plan again: its JobSet name is taken while the first is kept (here: deleted, so a
  # new apply would go through); a second run of a kept JobSet is refused by the name check.
  kube_stop "$dir"
}

# Worker 2 of 4 fails at once while the others still run: the Job controller deletes the other
# three pods (SIGTERM; their pod program uploads its log and record, then they are gone with
# their logs), so their logs come from the bucket. Every pod's log is in slice-0/worker-<i>/,
# verify names slice 0 worker 2 as failed and the others as stopped, the JobSet is kept and
# named, nothing is deleted (--teardown waits for verify); the same plan run again is refused by
# the name check (89) before anything is applied.
case_plan__failed_pod_named_and_jobset_kept() {
  local dir course run i
  dir=$(workdir rk-plan-fail)
  kube_start "$dir" --node-pool tpu-v5-lite-podslice/4x4/4/4
  course=$(gke_course "$dir")
  gke_run "$dir" "$course" early-fail v5litepod-16 --teardown --env FAIL_WORKER=2
  ((status == 3)) || fail "the run's status is $status, not 3: $err"
  [[ "$err" == *"tpulaunch: verify: slice 0 worker 2 failed: failed, status 3"* ]] || fail "worker 2 not named: $err"
  [[ "$err" == *"the JobSet early-fail-"*" is kept for inspection: kubectl get jobset early-fail-"* ]] || fail "JobSet not named: $err"
  run=$course/gke-runs/lab-cluster/early-fail/r1
  [[ "$(cat "$run/jobset-state")" == Failed ]] || fail "jobset-state: $(cat "$run/jobset-state")"
  for ((i = 0; i < 4; i++)); do
    grep -q "early-fail: process $i of 4, 16 devices" "$run/slice-0/worker-$i/pod.log" || fail "worker $i's log: $(cat "$run/slice-0/worker-$i/pod.log")"
    [[ $i == 2 ]] && continue
    grep -q "early-fail: process $i works on" "$run/slice-0/worker-$i/pod.log" || fail "worker $i's log lacks its last line"
    grep -q "Kubernetes is stopping the pod (SIGTERM)" "$run/slice-0/worker-$i/pod.log" || fail "worker $i's log lacks its SIGTERM"
    [[ "$err" == *"slice-0/worker-$i: the pod is gone; its log is the copy it uploaded"* ]] || fail "worker $i's log did not come from the bucket: $err"
    [[ "$err" == *"slice 0 worker $i was stopped by Kubernetes before it ended"* ]] || fail "worker $i not named as stopped: $err"
  done
  grep -q "fails on purpose" "$run/slice-0/worker-2/pod.log" || fail "worker 2's log lacks its failure"
  k "$dir" get pods -o 'jsonpath={range .items[*]}{.metadata.labels.batch\.kubernetes\.io/job-completion-index}{end}'
  [[ "$out" == 2 ]] || fail "the Job controller did not delete the other pods (left: $out)"
  ! api_calls "$dir" | grep -q '^DELETE' || fail "something was deleted: $(api_calls "$dir" | grep '^DELETE')"
  k "$dir" get jobsets -o name
  [[ "$out" == jobset.jobset.x-k8s.io/early-fail-* ]] || fail "the JobSet is not kept: $out"
  gke_run "$dir" "$course" early-fail v5litepod-16 --teardown --env FAIL_WORKER=2
  ((status == 89)) || fail "a second run's status is $status, not 89: $err"
  [[ "$err" == *"exists already in namespace default"* ]] || fail "the name check: $err"
  kube_stop "$dir"
}

# The manifest a user reviews (--manifest FILE, a v1 List of the ConfigMap and the JobSet) applied
# as it is with the real kubectl: kubectl validates a List itself (its kind takes no
# fieldValidation), against the server's OpenAPI v2 document, then creates each item with
# fieldValidation=Strict; the run completes; `kubectl delete -f FILE` deletes both.
case_plan__reviewed_manifest_applies_as_it_is() {
  local dir course
  dir=$(workdir rk-plan-manifest)
  kube_start "$dir" --node-pool tpu-v5-lite-podslice/4x4/4/4
  course=$(gke_course "$dir")
  "$TPULAUNCH" -C "$course" plan standin-lesson --slice v5litepod-16 --gke lab-cluster --location us-east5-b \
    --image example.com/tpu/jax:standin --results gs://lab-bucket/runs --run-id r1 --manifest "$dir/reviewed.json" \
    >"$dir/plan.txt" || fail "the plan failed: $(cat "$dir/plan.txt")"
  k "$dir" apply -f "$dir/reviewed.json"
  expect_status 0
  expect_stdout_contains "configmap/standin-lesson-"
  expect_stdout_contains "jobset.jobset.x-k8s.io/standin-lesson-"
  api_calls "$dir" | grep '^POST' >"$dir/creates.txt"
  [[ "$(grep -c 'fieldValidation=Strict' "$dir/creates.txt")" == 2 && "$(wc -l <"$dir/creates.txt")" == 2 ]] ||
    fail "the two creates: $(cat "$dir/creates.txt")"
  grep -q '"path": "/openapi/v2"' "$dir/state/requests.jsonl" || fail "kubectl did not validate the List itself"
  k "$dir" get jobsets -o name
  wait_terminal "$dir" "${out#jobset.jobset.x-k8s.io/}"
  [[ "$out" == Completed ]] || fail "terminal state: $out"
  k "$dir" delete -f "$dir/reviewed.json"
  expect_status 0
  k "$dir" get jobsets,configmaps -o name
  [[ -z "$out" ]] || fail "left after kubectl delete -f: $out"
  kube_stop "$dir"
}

# Multislice: two v4-16 slices as one JobSet of 2 replicas, one JAX group of 4 processes, each
# pod's log and record under slice-<s>/worker-<i>/, verified.
case_plan__multislice_two_replicas_verified() {
  local dir course run s i
  dir=$(workdir rk-plan-multi)
  kube_start "$dir" --node-pool tpu-v4-podslice/2x2x2/2/4 --node-pool tpu-v4-podslice/2x2x2/2/4
  course=$(gke_course "$dir")
  gke_run "$dir" "$course" late-fail v4-16 --slices 2
  ((status == 0)) || fail "the run failed ($status): $err"
  [[ "$out" == *"tpulaunch: verify: 4 pod(s) of 2 slice(s) succeeded"* ]] || fail "verify: $out"
  run=$course/gke-runs/lab-cluster/late-fail/r1
  for ((s = 0; s < 2; s++)); do
    for ((i = 0; i < 2; i++)); do
      grep -q "late-fail: process $((s * 2 + i)) of 4, 16 devices" "$run/slice-$s/worker-$i/pod.log" ||
        fail "slice $s worker $i's log: $(cat "$run/slice-$s/worker-$i/pod.log")"
      grep -qx "slice=$s" "$run/slice-$s/worker-$i/pod-status.rec" || fail "slice $s worker $i's record"
    done
  done
  kube_stop "$dir"
}

# Multislice, slice 0 worker 1 failing at once: its Job deletes slice 0's other pod, the JobSet
# fails and deletes slice 1's Job (foreground: its pods stopped first). Every pod's log is still
# in slice-<s>/worker-<i>/, verify names slice 0 worker 1 and the kept JobSet.
case_plan__multislice_failure_stops_the_other_slice() {
  local dir course run s i
  dir=$(workdir rk-plan-multi-fail)
  kube_start "$dir" --node-pool tpu-v4-podslice/2x2x2/2/4 --node-pool tpu-v4-podslice/2x2x2/2/4
  course=$(gke_course "$dir")
  gke_run "$dir" "$course" early-fail v4-16 --slices 2 --env FAIL_WORKER=1
  ((status == 3)) || fail "the run's status is $status, not 3: $err"
  [[ "$err" == *"tpulaunch: verify: slice 0 worker 1 failed: failed, status 3"* ]] || fail "slice 0 worker 1 not named: $err"
  run=$course/gke-runs/lab-cluster/early-fail/r1
  for ((s = 0; s < 2; s++)); do
    for ((i = 0; i < 2; i++)); do
      grep -q "early-fail: process $((s * 2 + i)) of 4, 16 devices" "$run/slice-$s/worker-$i/pod.log" ||
        fail "slice $s worker $i's log: $(cat "$run/slice-$s/worker-$i/pod.log")"
      ((s == 0 && i == 1)) && continue
      [[ "$err" == *"slice $s worker $i was stopped by Kubernetes before it ended"* ]] || fail "slice $s worker $i not named as stopped: $err"
    done
  done
  k "$dir" get jobs -o name
  [[ "$out" == job.batch/early-fail-*-slice-0 ]] || fail "the JobSet did not delete slice 1's Job: $out"
  k "$dir" get jobsets -o name
  [[ "$out" == jobset.jobset.x-k8s.io/early-fail-* ]] || fail "the JobSet is not kept: $out"
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
