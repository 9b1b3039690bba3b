
# --- the supervisor: the checks, the program, the record --------------------------------------
# It runs in a session of its own (setsid, output to DIR/guard.log), so neither a dropped
# connection nor the end of the call that started it ends the run; after the claim only it writes
# the record.

program_pid="" watchdog_pid="" interrupted="" status=0 scratch="" stop_state="" stop_status="" stop_why=""

# never_started STATE STATUS WHY: the record says so, the upload takes it, the supervisor ends.
never_started() {
  set_record state "$1"
  set_record status "$2"
  set_record summary "$(one_line "never started: $3")"
  set_record ended "$(now)"
  write_record
  status=$2
  after_program # the record comes back with --results too
  finish
}

# stop_requested: a stop came (--stop, or a signal to the call that started the run before the
# program did). DIR/stop-request holds one line, STATE STATUS WHY: stopped or interrupted, the
# status the run then returns, and why; stop_request reads it into stop_state, stop_status, stop_why.
stop_requested() { [[ -e $run_dir/stop-request ]]; }
stop_request() {
  local line=""
  read -r line <"$run_dir/stop-request" 2>/dev/null
  stop_state=${line%% *}
  line=${line#* }
  stop_status=${line%% *}
  stop_why=$(one_line "${line#* }")
  [[ $stop_state == stopped || $stop_state == interrupted ]] || stop_state=interrupted
  is_count "$stop_status" || stop_status=130
}

# check_files: every file the plan staged below code/ has its digest, and nothing else is there.
check_files() {
  local i count
  for i in "${!files_path[@]}"; do
    if [[ ! -f $staged/code/${files_path[i]} ]]; then
      say "the staged file code/${files_path[i]} is not in $staged"
      never_started stage-missing "$status_guard_failed" "the staged file code/${files_path[i]} is missing"
    fi
    if ! printf '%s  %s\n' "${files_sha256[i]}" "$staged/code/${files_path[i]}" | sha256sum --check --status; then
      say "the staged file code/${files_path[i]} on $host does not match the sha256 the plan pinned"
      set_record detail "staged file code/${files_path[i]} differs from the pinned sha256"
      never_started digest-mismatch "$status_digest_mismatch" "the staged file code/${files_path[i]} differs from the pinned sha256"
    fi
  done
  count=$(find "$staged/code" -type f 2>/dev/null | wc -l)
  if ((count != ${#files_path[@]})); then
    say "$staged/code holds $count files, and the plan staged ${#files_path[@]}"
    never_started stage-missing "$status_guard_failed" "the stage folder holds files the plan did not stage"
  fi
}

# megascale: with --slices, the MEGASCALE_* lines (KEY: 'VALUE') of this VM's tpu-env, checked
# against the plan's slice count and this node's slice id, then exported and recorded.
megascale() {
  local line key value pattern="^(MEGASCALE_[A-Z_]+): *'?([^']*)'? *\$"
  local -A found=()
  while IFS= read -r line; do
    if [[ $line =~ $pattern ]]; then
      found[${BASH_REMATCH[1]}]=${BASH_REMATCH[2]}
    fi
  done < <(metadata tpu-env)
  for key in MEGASCALE_COORDINATOR_ADDRESS MEGASCALE_NUM_SLICES MEGASCALE_SLICE_ID; do
    value=$(one_line "${found[$key]-}")
    set_record "${key,,}" "$value"
    envs+=("$key=$value")
  done
  if [[ ${found[MEGASCALE_NUM_SLICES]-} != "$slices" || ${found[MEGASCALE_SLICE_ID]-} != "$slice_id" ||
    ! ${found[MEGASCALE_COORDINATOR_ADDRESS]-} =~ ^[A-Za-z0-9._-]+(:[0-9]+)?$ ]]; then
    say "its tpu-env's MEGASCALE_* values (in its run record) do not make it slice $slice_id of $slices"
    never_started megascale-mismatch "$status_guard_failed" "its tpu-env does not make it slice $slice_id of $slices"
  fi
}

# shellcheck disable=SC2317 # called from the traps set in supervise
on_signal() {
  interrupted=$1
  if [[ -n $program_pid ]]; then
    kill -TERM -- "-$program_pid" 2>/dev/null
  fi
}

# end_group: SIGTERM to whatever is left of the program's process group, then SIGKILL.
end_group() {
  local tick
  group_running "$program_pid" || return 0
  kill -TERM -- "-$program_pid" 2>/dev/null
  for ((tick = 0; tick <= grace * 10; tick++)); do
    group_running "$program_pid" || return 0
    sleep 0.1
  done
  kill -KILL -- "-$program_pid" 2>/dev/null
}

# The watchdog: SIGTERM to the program's group at the deadline, SIGKILL after the grace period;
# what it sent goes to $scratch/timed-out for the record.
watchdog() {
  local sleeper
  trap 'kill "$sleeper" 2>/dev/null; exit 0' TERM
  sleep "$timeout" &
  sleeper=$!
  wait "$sleeper"
  echo TERM >"$scratch/timed-out"
  kill -TERM -- "-$program_pid" 2>/dev/null
  sleep "$grace" &
  sleeper=$!
  wait "$sleeper"
  if group_running "$program_pid"; then
    echo KILL >"$scratch/timed-out"
    kill -KILL -- "-$program_pid" 2>/dev/null
  fi
}

# The environment the program gets: TPU_RUN_DIR, unbuffered output and no PYTHONPATH (the stage
# folder's code/ is the run's only course code), then each --env (env(1) keeps the last value a
# name is given, so an --env PYTHONUNBUFFERED or PYTHONPATH wins).
program_env() {
  program_env_args=(-u PYTHONPATH "TPU_RUN_DIR=$run_dir/artifacts" PYTHONUNBUFFERED=1 "${envs[@]}")
}

# The state the record ends with, from how the program ended.
record_outcome() {
  local timed_out=""
  if [[ -e $scratch/timed-out ]]; then
    timed_out=$(<"$scratch/timed-out")
    say "the program ran past --timeout ${timeout}s: ended with SIG$timed_out"
    set_record state timed-out
    set_record signal "$timed_out"
    set_record summary "still running when killed: it ran past --timeout ${timeout}s and ended with SIG$timed_out"
    status=$status_timed_out
  elif [[ -n $interrupted ]] && stop_requested; then
    stop_request
    set_record state "$stop_state"
    set_record signal "$interrupted"
    set_record summary "$stop_state while running: $stop_why"
  elif [[ -n $interrupted ]]; then
    set_record state interrupted
    set_record signal "$interrupted"
    set_record summary "still running when killed: its supervisor got SIG$interrupted"
  elif ((status == 0)); then
    set_record state succeeded
    set_record summary succeeded
  else
    set_record state failed
    set_record summary "failed with status $status"
  fi
}

run_program() {
  local program_env_args=()
  scratch=$(mktemp -d "${TMPDIR:-/tmp}/tpulaunch-run.XXXXXX") || usage_error "cannot make a scratch folder"
  program_env
  : >>"$log" || usage_error "cannot write its log $log"
  (cd -- "$staged/code" && exec setsid env "${program_env_args[@]}" "$python" "${program[@]}") >>"$log" 2>&1 </dev/null &
  program_pid=$!
  set_record program-pid "$program_pid"
  proc_start "$program_pid"
  set_record program-start "$started_at"
  set_record started "$(now)"
  set_record state running
  set_record summary "still running when the run ended: no end was recorded (the worker was lost)"
  write_record
  if ((timeout > 0)); then
    watchdog </dev/null >/dev/null 2>&1 &
    watchdog_pid=$!
  fi
  # A trapped signal ends `wait` early; wait again until the program has really ended.
  while :; do
    status=0
    wait "$program_pid" || status=$?
    kill -0 "$program_pid" 2>/dev/null || break
  done
  if [[ -n $watchdog_pid ]]; then
    kill "$watchdog_pid" 2>/dev/null
    wait "$watchdog_pid" 2>/dev/null
  fi
  end_group
  set_record ended "$(now)"
  record_outcome
  rm -rf -- "$scratch"
  set_record status "$status"
  write_record
}

# after_program: whatever the program's status. --upload: the run folder to URL/worker-<index>/
# (the trailing '/' makes a retried upload land in the same place).
after_program() {
  [[ -n $upload ]] || return 0
  if [[ $worker =~ ^[0-9]+$ ]] && gcloud storage cp --recursive "$run_dir" "$upload/worker-$worker/"; then
    return 0
  fi
  say "error: worker $worker ($host) could not upload its results to the results bucket; they stay in its run folder $run_dir"
  set_record detail "the upload to $upload/worker-$worker/ failed; the results stay on the worker"
  if ((status == 0)); then
    status=$status_upload_failed
    set_record summary "succeeded, but its upload failed: the results stay on the worker in $run_dir"
  fi
}

# finish: the status every start of this run returns goes last into the record.
finish() {
  local code=$status
  if [[ -n $interrupted ]]; then
    case $interrupted in
      HUP) code=129 ;;
      INT) code=130 ;;
      *) code=143 ;;
    esac
  elif ((status == 255)); then
    code=$status_mapped_255
  fi
  set_record exit "$code"
  write_record
  exit "$code"
}

supervise() {
  read_record || usage_error "the run's record is gone"
  # Marked lost before it recorded itself (a call that waited for it gave up): never start.
  if get exit; then
    exit 0
  fi
  worker=$(field_of worker)
  set_record guard-pid "$$"
  proc_start "$$"
  set_record guard-start "$started_at"
  write_record
  trap 'on_signal HUP' HUP
  trap 'on_signal INT' INT
  trap 'on_signal TERM' TERM
  mkdir -p -- "$run_dir/artifacts" || usage_error "cannot create $run_dir/artifacts"
  check_files
  ((slices == 0)) || megascale
  if ! command -v -- "$python" >/dev/null; then
    say "error: no Python interpreter at $python; run the plan with --bootstrap, or choose one with --python PATH"
    never_started no-python "$status_no_python" "there is no Python interpreter at $python"
  fi
  if ! check_tpu; then
    never_started busy "$status_busy" "the TPU is busy: $(field_of detail)"
  fi
  if stop_requested; then
    stop_request
    never_started "$stop_state" "$stop_status" "$stop_state: $stop_why"
  elif [[ -n $interrupted ]]; then
    never_started interrupted 130 "interrupted: its supervisor got SIG$interrupted"
  fi
  run_program
  after_program
  finish
}
