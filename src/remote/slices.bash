# The generated script's part for --slices (docs/multislice.md): every slice's run call is started
# in the background (run_pids, in slice order), since a Multislice program waits in initialization
# until every slice has joined; wait_slices then keeps each call's status and names a failed slice.
run_pids=()
wait_slices() {
  local slice status
  for slice in "${!run_pids[@]}"; do
    status=0
    wait "${run_pids[slice]}" || status=$?
    if ((status != 0)); then
      echo "tpulaunch: error: slice $slice (node $TPU-$slice) failed with status $status" >&2
      # shellcheck disable=SC2034 # the generated script reads it after the fetches
      run_status=$status
    fi
  done
}
# report_slices: report_workers (worker_report.bash) for a run over SLICES slices of HOSTS hosts,
# whose records the fetch brought back into $RUN_DIR/slice-<s>/worker-<i>/$RUN_ID/.
report_slices() {
  local p record summary succeeded=0 lines=()
  for ((p = 0; p < WORKERS; p++)); do
    record="$RUN_DIR/slice-$((p / HOSTS))/worker-$((p % HOSTS))/$RUN_ID/run-status.rec"
    summary=""
    if [[ -f $record ]]; then
      summary=$(sed -n 's/^summary=//p' "$record" | head -n 1)
    fi
    summary=${summary//[^[:print:]]/?} # the record comes from the worker: text, never control
    if [[ -z $summary ]]; then
      summary="never started (no run record came back from it)"
    fi
    if [[ $summary == succeeded ]]; then
      succeeded=$((succeeded + 1))
    fi
    lines+=("tpulaunch: slice $((p / HOSTS)) worker $((p % HOSTS)): ${summary:0:300}")
  done
  if ((succeeded == WORKERS)); then
    echo "tpulaunch: all $WORKERS worker(s) of $SLICES slices succeeded" >&2
  else
    printf '%s\n' "${lines[@]}" >&2
  fi
}
