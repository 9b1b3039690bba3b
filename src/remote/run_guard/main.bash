
# --- the call: claim or re-attach, follow, return the run's status -----------------------------

tail_pid=""
launched="" # the supervisor's pid, in the call that claimed the run and launched it



# supervisor_alive: the supervisor the record names is running (pid and start time).
supervisor_alive() {
  local pid
  get guard-pid && pid=$got && get guard-start && alive "$pid" "$got"
}

# mark_lost WHY: the supervisor is gone and the record has no end: say so in the record, for every
# later start too.
mark_lost() {
  say "error: run $script/$run_id: $1"
  set_record state lost
  set_record summary "lost: $1"
  set_record exit "$status_guard_failed"
  write_record
  exit "$status_guard_failed"
}

# ended_or KEY: the record has KEY, or its end.
ended_or() { get "$1" || get exit; }

# supervisor_coming: the record names no supervisor yet, and one may still record itself: the
# supervisor this call launched runs (the start that claimed the run), or, for a later call, the
# start that claimed the run runs. A loaded VM may take long to start a process; time alone never
# makes a run lost while either lives.
supervisor_coming() {
  if [[ -n $launched ]]; then
    running "$launched"
    return
  fi
  local pid
  get claim-pid && pid=$got && get claim-start && alive "$pid" "$got"
}

# wait_for KEY: until the record has KEY (or its end), while its supervisor lives; it looks ten
# times a second at first, then once a second. A supervisor that never recorded itself is lost
# once the process that would have (supervisor_coming) is gone: at once when this call launched
# it, 30 s after the claiming start ended for a later call (it may have launched one just before).
wait_for() {
  local tick=0 since=$SECONDS
  while read_record; do
    ended_or "$1" && return 0
    if get guard-pid && ! supervisor_alive; then
      # It may have ended just after this read: its end is in the record, or it was lost.
      read_record
      ended_or "$1" && return 0
      mark_lost "its supervisor ended without recording an end (the VM restarted, or it was killed)"
    elif ! get guard-pid; then
      if supervisor_coming; then
        since=$SECONDS
      elif read_record && ended_or "$1"; then
        return 0
      elif get guard-pid; then
        continue
      elif [[ -n $launched ]] || ((SECONDS - since > 30)); then
        mark_lost "the start that claimed it never started its supervisor"
      fi
    fi
    if ((++tick < 50)); then sleep 0.1; else sleep 1; fi
  done
  usage_error "the run's record $run_dir/run-status.rec is gone"
}

# shellcheck disable=SC2317 # called from the traps set in start_run
on_call_signal() {
  read_record
  if ! get program-pid && ! get exit; then
    # Not started yet: it never starts (the supervisor checks for the request just before).
    printf 'interrupted %s the call that started the run got SIG%s before the program started\n' \
      "$((128 + $2))" "$1" >"$run_dir/stop-request"
    return
  fi
  # The program runs on; a later start re-attaches.
  if [[ -n $tail_pid ]]; then
    kill "$tail_pid" 2>/dev/null
  fi
  exit $((128 + $2))
}

# follow HOW: the program's log to stdout (all of it for the start that claimed the run, the last
# lines for one that re-attached or replays it), following it while the program runs, then the
# record's final status.
follow() {
  local pid="" from=(-c +1)
  wait_for program-pid
  get program-pid && pid=$got
  if [[ $1 != claimed ]]; then
    from=(-n 20)
  fi
  if ! get exit && [[ -n $pid ]]; then
    if [[ $1 == attached ]]; then
      local since="an unknown time"
      if get started && [[ $got =~ ^[0-9]+$ ]]; then
        TZ=UTC0 printf -v since '%(%Y-%m-%dT%H:%M:%SZ)T' "$got"
      fi
      say "run $script/$run_id is running here since $since (started by an earlier call with this plan): following its log"
    fi
    # In the background, so a signal to this call is handled at once; tail ends with the
    # program, or at its next write when this call's connection is gone.
    tail "${from[@]}" -f --pid="$pid" -- "$log" 2>/dev/null &
    tail_pid=$!
    wait "$tail_pid"
    tail_pid=""
  elif [[ -n $pid ]]; then
    tail "${from[@]}" -- "$log" 2>/dev/null
  fi
  wait_for exit
  if [[ $1 != claimed ]] && [[ $1 == replayed || -z $pid ]]; then
    get exit
    local code=$got
    get summary
    say "run $script/$run_id ran here already with this plan: $got (its recorded status, $code, is this call's)"
  fi
  if [[ -s $run_dir/guard.log ]]; then
    cat -- "$run_dir/guard.log" >&2
  fi
  get exit
  exit "$got"
}

# start_run: claims the run and starts the supervisor, or re-attaches to the run that has it.
start_run() {
  local theirs
  trap '' PIPE # the connection may go: keep going, the record must tell the truth
  worker=$(metadata agent-worker-number) && [[ $worker =~ ^[0-9]+$ ]] || worker="?"
  record=("record=tpulaunch-run-status 2")
  set_record script "$script"
  set_record run-id "$run_id"
  set_record plan "$plan"
  set_record start "$(one_line "$(cat "$staged/start" 2>/dev/null)")"
  set_record worker "$worker"
  set_record host "$(one_line "$host")"
  set_record state starting
  set_record timeout "$timeout"
  # Who claims it: while this call lives, a later call waits for the supervisor it launches.
  set_record claim-pid "$$"
  proc_start "$$"
  set_record claim-start "$started_at"
  if claim_run; then
    trap 'on_call_signal HUP 1' HUP
    trap 'on_call_signal INT 2' INT
    trap 'on_call_signal TERM 15' TERM
    setsid bash "${BASH_SOURCE[0]}" --guard-sha256 "$guard_sha256" --supervise "${guard_args[@]}" \
      </dev/null >>"$run_dir/guard.log" 2>&1 &
    launched=$!
    follow claimed
  fi
  read_record
  get plan
  theirs=$got
  if [[ $theirs != "$plan" ]]; then
    say "error: run $script/$run_id ran here already with another plan (${theirs:0:16}, this one is ${plan:0:16}): a run id names one run, and a second never overwrites the first; make a new plan"
    exit "$status_run_exists"
  fi
  if get exit; then
    follow replayed
  fi
  follow attached
}

# stop_run: ends this run on this worker; a run that has not started here yet never starts.
stop_run() {
  local request
  request="stopped 143 $(one_line "$stop_reason")"
  record=("record=tpulaunch-run-status 2")
  set_record script "$script"
  set_record run-id "$run_id"
  set_record plan "$plan"
  if claim_run; then
    set_record state stopped
    set_record summary "$(one_line "never started: stopped: $stop_reason")"
    set_record exit 143
    write_record
    exit 0
  fi
  read_record
  # Another plan's run, or one that ended: not this call's to stop.
  get plan
  [[ $got == "$plan" ]] && ! get exit || exit 0
  printf '%s\n' "$request" >"$run_dir/stop-request" || usage_error "cannot write in $run_dir"
  # A program that runs gets its supervisor's SIGTERM; one not started yet never starts (the
  # supervisor reads the request just before), and its checks are not interrupted.
  if get program-pid && supervisor_alive; then
    get guard-pid
    kill -TERM "$got" 2>/dev/null
  fi
  exit 0
}

# --- tpulaunch runs status, attach, clean: a run that started earlier, by its record --------------

# the_record: the record in memory, or a line saying this worker has none (exit 0: nothing ran here).
the_record() {
  read_record && return 0
  say "run $script/$run_id: no run record on this worker (it never started here)"
  [[ $mode == clean ]] && rm -rf -- "$run_dir"
  exit 0
}

# running_here: the record has no end and its supervisor runs (or has not recorded itself yet).
running_here() {
  ! get exit && { ! get guard-pid || supervisor_alive; }
}

show_status() {
  local worker_of state summary
  the_record
  worker_of=$(field_of worker) state=$(field_of state) summary=$(field_of summary)
  if ! get exit && ! running_here; then
    state=lost summary="its supervisor is gone without an end (the VM restarted, or it was killed)"
  fi
  printf 'worker %s (%s): %s: %s\n' "$worker_of" "$host" "$state" "${summary:-no end recorded yet}"
  exit 0
}

attach_run() {
  the_record
  get worker
  if [[ $got == 0 ]]; then
    follow attached
  fi
  wait_for exit
  get exit
  exit "$got"
}

clean_run() {
  local stale
  the_record
  if running_here; then
    get guard-pid
    say "run $script/$run_id is running here (supervisor pid $got): its folder is not removed; end it first"
    exit "$status_running"
  fi
  for stale in "$HOME"/tpulaunch-run-guard-*.sh "$HOME"/tpulaunch-discover-*.py; do
    [[ -e $stale ]] && say "left by an older tpulaunch (not removed): $stale"
  done
  rm -rf -- "$run_dir" || usage_error "could not remove $run_dir"
  rmdir -- "${run_dir%/*}" 2>/dev/null
  say "removed run $script/$run_id's folder ~/jax-tpu-lab/runs/$script/$run_id"
  exit 0
}

bootstrap() {
  local status=0
  mkdir -p -- "$HOME/jax-tpu-lab" && python3 -m venv "$HOME/jax-tpu-lab/.venv" &&
    "$HOME/jax-tpu-lab/.venv/bin/python" -m pip install --quiet --upgrade 'jax[tpu]' || status=$?
  # gcloud reads a remote 255 as its ssh failing and runs the whole command again.
  ((status != 255)) || status=$status_mapped_255
  exit "$status"
}

main() {
  host=$(hostname 2>/dev/null || echo unknown-host)
  [[ ${1-} == --guard-sha256 && ${2-} =~ ^[0-9a-f]{64}$ ]] || usage_error "--guard-sha256 HEX must come first"
  guard_sha256=$2
  check_self "$guard_sha256"
  shift 2
  parse_args "$@"
  check_place
  check_mark
  case $mode in
    bootstrap) bootstrap ;;
    stop) stop_run ;;
    status) show_status ;;
    attach) attach_run ;;
    clean) clean_run ;;
    supervise) supervise ;;
    *) start_run ;;
  esac
}

main "$@"
