
# --- the TPU's devices and lock ---------------------------------------------------------------

root=${TPULAUNCH_GUARD_ROOT:-}
lock_file="$root/tmp/libtpu_lockfile"

# A path as a find -lname pattern: its own glob characters escaped.
literal_pattern() {
  local text=$1 out="" i c
  for ((i = 0; i < ${#text}; i++)); do
    c=${text:i:1}
    case $c in
      "*" | "?" | "[" | "]" | "\\") out+="\\$c" ;;
      *) out+=$c ;;
    esac
  done
  printf '%s' "$out"
}

# holders: "PID TARGET" for each open file of another process that is a TPU device or the lock.
holders() {
  local base tests=()
  base=$(literal_pattern "$root")
  if [[ $devices == accel || $devices == any ]]; then
    tests+=(-lname "$base/dev/accel*" -o)
  fi
  if [[ $devices == vfio || $devices == any ]]; then
    tests+=(-lname "$base/dev/vfio/*" -o)
  fi
  tests+=(-lname "$(literal_pattern "$lock_file")")
  find /proc/[0-9]*/fd -mindepth 1 -maxdepth 1 \( "${tests[@]}" \) -printf '%h %l\n' 2>/dev/null |
    while read -r fd_dir target; do
      fd_dir=${fd_dir#/proc/}
      printf '%s %s\n' "${fd_dir%/fd}" "$target"
    done | sort -n -u | while read -r pid target; do
      if [[ $pid != "$$" ]]; then
        printf '%s %s\n' "$pid" "$target"
      fi
    done
}

holder_pids() { holders | cut -d' ' -f1 | sort -n -u; }

describe_holders() {
  local pid command
  while read -r pid; do
    command=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)
    printf 'pid %s (%s) ' "$pid" "$(one_line "${command% }")"
  done < <(holder_pids)
}

# group_running PGID: some process of that process group is running.
group_running() {
  local stat fields
  kill -0 -- "-$1" 2>/dev/null || return 1
  for stat in /proc/[0-9]*/stat; do
    stat=$(<"$stat") 2>/dev/null || continue
    read -r -a fields <<<"${stat##*) }"
    if [[ ${fields[0]} != Z && ${fields[2]} == "$1" ]]; then
      return 0
    fi
  done
  return 1
}

# wait_gone SECONDS PID...: true when every PID has ended within SECONDS.
wait_gone() {
  local seconds=$1 tick pid alive
  shift
  for ((tick = 0; tick <= seconds * 10; tick++)); do
    alive=0
    for pid in "$@"; do
      if running "$pid"; then
        alive=1
      fi
    done
    ((alive)) || return 0
    sleep 0.1
  done
  return 1
}

# kill_holders: SIGTERM, the grace period, then SIGKILL; true when no holder remains.
kill_holders() {
  local pids=() pid
  mapfile -t pids < <(holder_pids)
  ((${#pids[@]} > 0)) || return 0
  say "--kill-stale: sending SIGTERM to $(describe_holders)"
  kill -TERM "${pids[@]}" 2>/dev/null
  if ! wait_gone "$grace" "${pids[@]}"; then
    for pid in "${pids[@]}"; do
      if running "$pid"; then
        say "--kill-stale: pid $pid is still running after ${grace}s: SIGKILL"
        kill -KILL "$pid" 2>/dev/null
      fi
    done
    wait_gone 5 "${pids[@]}"
  fi
  [[ -z $(holder_pids) ]]
}

# check_tpu: true when the TPU is free (with --kill-stale, after freeing it).
check_tpu() {
  local busy
  if ((kill_stale)) && [[ -n $(holder_pids) ]]; then
    kill_holders
  fi
  busy=$(describe_holders)
  if [[ -n $busy ]]; then
    say "the TPU is busy: ${busy}hold its devices or $lock_file; rerun with --kill-stale to end them"
    set_record detail "$(one_line "held by ${busy% }")"
    return 1
  fi
  if [[ -e $lock_file ]]; then
    if ((kill_stale)); then
      say "--kill-stale: removing the stale lock $lock_file (no process holds it)"
      rm -f -- "$lock_file"
    else
      say "stale lock $lock_file (no process holds it): libtpu would refuse to start; rerun with --kill-stale to remove it"
      set_record detail "stale lock $lock_file"
      return 1
    fi
  fi
  return 0
}
