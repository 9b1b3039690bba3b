# node_state NODE: the state of the plan's TPU named NODE (with --slices, each slice's node): a case
# on NODE with one describe call a node.
node_state() {
  @describe@
}
preempted=""
preemption_gone=0
preemption_checked=0
# check_preempted: ask gcloud for each node's state, once; the first PREEMPTED, TERMINATED or
# REPAIRING one is noted (the first two never come back).
check_preempted() {
  local node state nodes=(@nodes@)
  if ((preemption_checked)); then
    return 0
  fi
  preemption_checked=1
  for node in "${nodes[@]}"; do
    state=$(node_state "$node") || continue
    case $state in
      PREEMPTED | TERMINATED)
        preempted="$node was $state"
        preemption_gone=1
        return 0
        ;;
      REPAIRING)
        preempted="$node is REPAIRING (Google is repairing it)"
        return 0
        ;;
    esac
  done
}
# stop_if_preempted: when it was, say so (it is not a failure of the program) and exit @preempted@; with
# --teardown, delete one that never comes back first, as it still holds quota.
stop_if_preempted() {
  if [[ -z $preempted ]]; then
    return 0
  fi
  echo "tpulaunch: error: $preempted during the pipeline: this is not a failure of the program; whatever could be fetched is in $RUN_DIR" >&2
  if ((TEARDOWN && preemption_gone)); then
    echo "tpulaunch: deleting it (--teardown), as it still holds quota" >&2
    release_capacity || true
  elif [[ -n ${RELEASE-} ]]; then
    echo "tpulaunch: it still holds quota until it is deleted: $RELEASE" >&2
  fi
  exit @preempted@
}
# failed_step STATUS: a step failed; report a preemption if that is what it was, else stop.
failed_step() {
  check_preempted
  stop_if_preempted
  exit "$1"
}
