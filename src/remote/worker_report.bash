# report_workers: one line per worker on stderr, from the run record each worker's run guard wrote
# (src/remote/run_guard.bash, run-status.rec) and the fetch brought back into
# $RUN_DIR/worker-<i>/$RUN_ID/: never started, still running when killed, failed with status S,
# or succeeded. A worker with no record never started (or nothing came back from it). When every
# worker succeeded, one line says so. Part of the generated script; reads RUN_DIR, RUN_ID, WORKERS.
report_workers() {
  local i record summary succeeded=0 lines=()
  for ((i = 0; i < WORKERS; i++)); do
    record="$RUN_DIR/worker-$i/$RUN_ID/run-status.rec"
    summary=""
    if [[ -f $record ]]; then
      summary=$(sed -n 's/^summary=//p' "$record" | head -n 1)
    fi
    # The record comes from the worker: print it as text, never as terminal control.
    summary=${summary//[^[:print:]]/?}
    if [[ -z $summary ]]; then
      summary="never started (no run record came back from it)"
    fi
    if [[ $summary == succeeded ]]; then
      succeeded=$((succeeded + 1))
    fi
    lines+=("tpulaunch: worker $i: ${summary:0:300}")
  done
  if ((succeeded == WORKERS)); then
    echo "tpulaunch: all $WORKERS worker(s) succeeded" >&2
  else
    printf '%s\n' "${lines[@]}" >&2
  fi
}
