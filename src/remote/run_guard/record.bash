
# --- the run record ---------------------------------------------------------------------------

# set_record KEY VALUE: sets (or replaces) one line of the record; write_record writes it.
set_record() {
  local i
  for i in "${!record[@]}"; do
    if [[ ${record[i]} == "$1="* ]]; then
      record[i]="$1=$2"
      return
    fi
  done
  record+=("$1=$2")
}

# get KEY: the value of KEY in the record in memory, in $got; false when it has none. No subshell:
# the call that follows a run takes signals, and bash 5.2 can misparse a command substitution
# during which a trap runs, so that code reads the record with get, never $(field_of ...).
got=""
get() {
  local line
  got=""
  for line in "${record[@]}"; do
    if [[ $line == "$1="* ]]; then
      got=${line#*=}
      return 0
    fi
  done
  return 1
}

# field_of KEY: the value of KEY in the record in memory, printed.
field_of() {
  local line
  for line in "${record[@]}"; do
    if [[ $line == "$1="* ]]; then
      printf '%s' "${line#*=}"
    fi
  done
}

# write_record: the record in memory replaces the file, atomically (rename).
write_record() {
  local tmp="$run_dir/.run-status.rec.$$"
  if ! printf "%s\n" "${record[@]}" >"$tmp" || ! mv -f -- "$tmp" "$run_dir/run-status.rec"; then
    say "could not write $run_dir/run-status.rec"
  fi
}

# read_record: the file into memory (the supervisor writes it; a start that attaches reads it).
read_record() {
  record=()
  [[ -f $run_dir/run-status.rec ]] || return 1
  mapfile -t record <"$run_dir/run-status.rec"
}

# claim_run: creates the record from memory under its final name in one step (link(2) fails when
# the name exists), so of two starts of one run exactly one claims it. False when it exists.
claim_run() {
  local tmp="$run_dir/.run-status.rec.claim.$$" claimed=1
  printf "%s\n" "${record[@]}" >"$tmp" || usage_error "cannot write in $run_dir"
  if ln -- "$tmp" "$run_dir/run-status.rec" 2>/dev/null; then
    claimed=0
  fi
  rm -f -- "$tmp"
  return "$claimed"
}

# proc_start PID: the process's start time (clock ticks since boot, /proc/PID/stat field 22), in
# $started_at, so a recorded pid is never taken for another process that got the same number
# later; false when it is not running (or a zombie).
started_at=""
proc_start() {
  local stat fields
  started_at=""
  read -r stat 2>/dev/null <"/proc/$1/stat" || return 1
  read -r -a fields <<<"${stat##*) }"
  [[ ${fields[0]} != Z ]] || return 1
  started_at=${fields[19]}
}

# alive PID START: that process (not a later one with its pid) is running.
alive() {
  [[ -n $1 && -n $2 ]] && proc_start "$1" && [[ $started_at == "$2" ]]
}

# running PID: the process exists and is not a zombie (which holds nothing).
running() { proc_start "$1"; }
