fetch_pids=()
fetch_workers=()
fetch_failed=() # worker -> exit status of its failed download
fetch_any_done=0
if ((BASH_VERSINFO[0] * 100 + BASH_VERSINFO[1] >= 403)); then
  fetch_any_done=1 # `wait -n`: wake when any download ends
fi
# fetch_wait_one: wait until one download in flight ends; note its worker if it failed.
fetch_wait_one() {
  local i pid status take_oldest=$((!fetch_any_done))
  while :; do
    for i in "${!fetch_pids[@]}"; do
      pid=${fetch_pids[i]}
      if ((take_oldest)) || ! kill -0 "$pid" 2>/dev/null; then
        status=0
        wait "$pid" || status=$?
        if ((status != 0)); then
          fetch_failed[fetch_workers[i]]=$status
        fi
        unset 'fetch_pids[i]' 'fetch_workers[i]'
        fetch_pids=("${fetch_pids[@]}")
        fetch_workers=("${fetch_workers[@]}")
        return 0
      fi
    done
    # Sleep until some download ends. 127: none is left running, so take the oldest.
    wait -n 2>/dev/null || (($? != 127)) || take_oldest=1
  done
}
# fetch_start WORKER COMMAND...: start one worker's fetch, keeping at most PARALLEL in flight.
fetch_start() {
  local worker=$1
  shift
  while ((${#fetch_pids[@]} >= PARALLEL)); do
    fetch_wait_one
  done
  "$@" &
  fetch_pids+=("$!")
  fetch_workers+=("$worker")
}
fetch_wait_all() {
  while ((${#fetch_pids[@]} > 0)); do
    fetch_wait_one
  done
}
