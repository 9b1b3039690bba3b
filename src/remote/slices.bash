# The generated script's part for --slices (docs/multislice.md): every slice's run call is started
# in the background (run_pids, in slice order), since a Multislice program waits in initialization
# until every slice has joined. wait_slices looks at them once a second: the first to fail is named
# and ends the run on every slice still running (stop_slice, each slice's run guard's --stop), so
# none waits for the failed slice until a timeout; then every call's end is waited for, and the
# first failure's status kept.
run_pids=()
# stop_slice SLICE: ends the run on that slice (a case with one ssh call a slice).
stop_slice() {
  @stop@
}
wait_slices() {
  local slice status pending=("${!run_pids[@]}") still=() stops=() other
  while ((${#pending[@]} > 0)); do
    still=()
    for slice in "${pending[@]}"; do
      if kill -0 "${run_pids[slice]}" 2>/dev/null; then
        still+=("$slice")
        continue
      fi
      status=0
      wait "${run_pids[slice]}" || status=$?
      if ((status == 0)); then
        continue
      fi
      echo "tpulaunch: error: slice $slice (node $TPU-$slice) failed with status $status" >&2
      if ((run_status == 0)); then
        # shellcheck disable=SC2034 # the generated script reads it after the fetches
        run_status=$status
        for other in "${!run_pids[@]}"; do
          if ((other != slice)) && kill -0 "${run_pids[other]}" 2>/dev/null; then
            echo "tpulaunch: stopping the run on slice $other (node $TPU-$other): it would wait for slice $slice" >&2
            stop_slice "$other" &
            stops+=("$!")
          fi
        done
      fi
    done
    pending=("${still[@]}")
    if ((${#pending[@]} > 0)); then
      sleep 1
    fi
  done
  for other in "${stops[@]}"; do
    wait "$other" || true
  done
}
