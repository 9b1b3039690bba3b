#!/bin/bash
# tpulaunch's GKE verify: what the verify step of a GKE plan runs on this machine (docs/gke.md).
#
#   bash -c "$(this file)" gke-verify DIR PLAN SLICES WORKERS JOBSET NAMESPACE
#
# DIR is the run folder: jobset-state (the JobSet's terminal state, which the wait step wrote),
# pods.txt (each pod's slice, worker, phase and exit code), slice-<s>/worker-<i>/pod.log (each
# pod's log) and, from the results bucket, slice-<s>/worker-<i>/pod-status.rec. Every pod of
# every slice must have a log and a record of this PLAN with status 0. A pod that failed is named
# by slice and worker, with its log; a pod Kubernetes stopped because another failed is named as
# stopped; the JobSet is kept (verify never deletes anything).
# Exit 0 when every pod is verified, 3 otherwise.
set -uo pipefail
dir=$1 plan=$2 slices=$3 workers=$4 jobset=$5 namespace=$6
problems=0
problem() {
  echo "tpulaunch: verify: $*" >&2
  problems=$((problems + 1))
}
field() { sed -n "s/^$1=//p" "$2" | tail -n 1; }

state=$(cat "$dir/jobset-state" 2>/dev/null) || state=""
[[ "$state" == Completed ]] || problem "the JobSet $jobset ended '${state:-unknown}', not Completed"
for ((s = 0; s < slices; s++)); do
  for ((i = 0; i < workers; i++)); do
    w=$dir/slice-$s/worker-$i
    [[ -s "$w/pod.log" ]] || problem "slice $s worker $i: no log in $w/pod.log"
    if [[ ! -f "$w/pod-status.rec" ]]; then
      pod=$(awk -v s="$s" -v i="$i" '$1 == s && $2 == i { print $3 " exit " $4 }' "$dir/pods.txt" 2>/dev/null)
      problem "slice $s worker $i: no record came back from the results bucket (pod: ${pod:-not found})"
      continue
    fi
    [[ "$(field plan "$w/pod-status.rec")" == "$plan" ]] || problem "slice $s worker $i: its record is of another plan"
    status=$(field status "$w/pod-status.rec")
    case $(field state "$w/pod-status.rec") in
    succeeded) [[ "$status" == 0 ]] || problem "slice $s worker $i: its record says succeeded, status ${status:-none}" ;;
    stopped) problem "slice $s worker $i was stopped by Kubernetes before it ended (SIGTERM: another pod failed, or the JobSet was deleted), status ${status:-none} (its log: $w/pod.log)" ;;
    timeout) problem "slice $s worker $i ran past --timeout and was stopped, status ${status:-none} (its log: $w/pod.log)" ;;
    *) problem "slice $s worker $i failed: $(field state "$w/pod-status.rec"), status ${status:-none} (its log: $w/pod.log)" ;;
    esac
  done
done
if ((problems > 0)); then
  echo "tpulaunch: verify: $problems problem(s); the JobSet is kept for inspection: kubectl get jobset $jobset -n $namespace" >&2
  exit 3
fi
echo "tpulaunch: verify: $((slices * workers)) pod(s) of $slices slice(s) succeeded with plan $plan"
