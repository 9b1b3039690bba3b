# report_workers: one line per worker on stderr, from the run record each worker's run guard wrote
# (src/remote/run_guard/, run-status.rec) and the fetch brought back into
# $RUN_DIR/worker-<i>/$RUN_ID/ (with --slices, slice-<s>/worker-<i>/): the record's own summary
# (succeeded, failed with status S, never started: why, stopped, still running when killed...).
# A worker whose record did not come back is named for what happened: its download failed (the
# results stay on the TPU), the TPU was preempted, or nothing is known. When every worker
# succeeded, one line says so. Part of the generated script; reads RUN_DIR, RUN_ID, WORKERS,
# REMOTE_RUN_DIR, SLICES and HOSTS (with --slices), fetch_failed and missing (when set) and
# preempted (preemption.bash).
report_workers() {
  local i folder name record summary succeeded=0 lines=()
  for ((i = 0; i < WORKERS; i++)); do
    folder="worker-$i" name="worker $i"
    if [[ -n ${SLICES-} ]]; then
      folder="slice-$((i / HOSTS))/worker-$((i % HOSTS))" name="slice $((i / HOSTS)) worker $((i % HOSTS))"
    fi
    record="$RUN_DIR/$folder/$RUN_ID/run-status.rec"
    summary=""
    if [[ -f $record ]]; then
      summary=$(sed -n 's/^summary=//p' "$record" | head -n 1)
      # The record comes from the worker: print it as text, never as terminal control.
      summary=${summary//[^[:print:]]/?}
    fi
    if [[ -n $summary ]]; then
      :
    elif [[ -n ${fetch_failed[i]-} ]]; then
      summary="its download failed (status ${fetch_failed[i]}): its results stay on the TPU, in ~/$REMOTE_RUN_DIR"
    elif [[ -n ${missing[*]-} && " ${missing[*]} " == *" $i "* ]]; then
      summary="its folder did not arrive from the results bucket (its upload failed, or never ran): its results stay on the TPU, in ~/$REMOTE_RUN_DIR"
    elif [[ -n ${preempted-} ]]; then
      summary="no run record came back from it: $preempted"
    else
      summary="no run record came back from it"
    fi
    if [[ $summary == succeeded ]]; then
      succeeded=$((succeeded + 1))
    fi
    lines+=("tpulaunch: $name: ${summary:0:300}")
  done
  if ((succeeded == WORKERS)); then
    echo "tpulaunch: all $WORKERS worker(s) succeeded" >&2
  else
    printf '%s\n' "${lines[@]}" >&2
  fi
}
