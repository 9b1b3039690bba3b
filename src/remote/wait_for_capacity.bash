capacity_state() { @describe@; }
wait_for_capacity() {
  local want=$1 dead_ends=" $2 " poll=$3 limit=$4 what=$5 state status deadline
  deadline=$((SECONDS + limit))
  while :; do
    status=0
    state=$(capacity_state) || status=$?
    if ((status != 0)); then
      # One failed look (a network blip, an API error) is not a verdict: look again.
      state=""
      step "wait: could not read the state of $what (gcloud exited $status); it is kept, and looked at again"
    elif [[ $state == "$want" ]]; then
      step "wait: $what is $state"
      return 0
    elif [[ -n $state && $dead_ends == *" $state "* ]]; then
      echo "tpulaunch: error: $what is $state, which never becomes $want; deleting it so that it stops holding quota" >&2
      release_capacity || true
      exit @capacity_failed@
    fi
    if ((SECONDS >= deadline)); then
      echo "tpulaunch: error: $what is still ${state:-without a state} after ${limit}s (--ready-timeout); deleting it" >&2
      release_capacity || true
      exit @capacity_deadline@
    fi
    step "wait: $what is ${state:-without a state yet}; next look in ${poll}s"
    sleep "$poll"
  done
}
