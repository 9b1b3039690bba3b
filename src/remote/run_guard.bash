# tpulaunch run guard: what the run step's one ssh call runs on every TPU VM worker.
#
#   bash ~/tpulaunch-run-guard-<first 12 hex of this file's SHA-256>.sh --guard-sha256 HEX
#        --run-dir DIR --log FILE [--stage FROM TO SHA256]... [--devices accel|vfio|any]
#        [--timeout SECONDS] [--grace SECONDS] [--kill-stale] [--upload URL]
#        [--slices N --slice-id S] [--env KEY=VALUE]... --python PYTHON -- SCRIPT [ARG]...
#
# The plan writes this file (`tpulaunch guard --write` prints it too) and stages it with the script.
# It first checks its own bytes against HEX (a stale or changed copy stops with 97). Then:
#   1. stop (93) when DIR holds a run record (this run id ran here before); else create DIR and
#      DIR/artifacts (TPU_RUN_DIR), so every worker's fetch finds it whatever happens next;
#   2. each --stage: move FROM (in the home folder) to TO, else stop (98); check TO's SHA-256 (97);
#   3. --slices (docs/multislice.md): read the MEGASCALE_* values from the metadata tpu-env, check
#      the slice count N and slice id S, export and record them; else stop (98);
#   4. check that PYTHON can be run here, else stop (96) naming the host, the path and the fix;
#   5. look for processes holding the TPU devices (/dev/accel*, /dev/vfio/*; `any`: both) or
#      libtpu's lock /tmp/libtpu_lockfile in /proc/*/fd: busy stops (94) naming each holder;
#      --kill-stale sends them SIGTERM, SIGKILL after the grace period, then removes the lock;
#   6. run PYTHON SCRIPT ARG... in its own process group with TPU_RUN_DIR and each --env exported
#      (env(1)), output to FILE and stdout; --timeout: SIGTERM, SIGKILL after --grace (30 s), 124;
#      what is left in its process group gets the same, so nothing keeps holding the TPU;
#   7. --upload, whatever the status: `gcloud storage cp --recursive` DIR to URL/worker-<index>/
#      (the index from the metadata server); a failed upload is named (95 if the program succeeded);
#   8. exit with the status below; 255 becomes 254 (gcloud reruns a command that exits 255).
#
# DIR/run-status.rec, KEY=VALUE lines written atomically: record=tpulaunch-run-status 1, host,
# state, started, ended (Unix seconds), status, timeout (0: none), signal (TERM or KILL), detail,
# the MEGASCALE_* values (--slices), summary (the outcome in one sentence, which the script and
# verify print). state: running, succeeded, failed, timed-out, interrupted (SIGHUP, SIGINT or
# SIGTERM), or never started: busy, digest-mismatch, no-python, stage-missing, megascale-mismatch.
#
# Exit statuses (include/tpulaunch/util/exit_code.hpp lists them; keep the two in step): 0 the
# program succeeded; 1-253 its own status; 93 the run folder holds a run already; 94 TPU busy; 95
# its upload failed (the program succeeded); 96 no interpreter; 97 a staged file (the script, a file
# it imports, this guard) differs from its pinned digest; 98 the guard could not start (bad
# arguments, run folder not writable, staged file missing, MEGASCALE_* values not the plan's); 124
# timed out; 254 the program exited 255; 128+N this call was interrupted by signal N.
#
# Test seam, the only one: TPULAUNCH_GUARD_ROOT prefixes the device and lock paths (the stand-in's
# fake root; unset on a TPU VM). Other users' processes are not visible in /proc/*/fd without root.

set -u -o pipefail

readonly status_run_exists=93
readonly status_busy=94
readonly status_upload_failed=95
readonly status_no_python=96
readonly status_digest_mismatch=97
readonly status_guard_failed=98
readonly status_timed_out=124
readonly status_mapped_255=254

run_dir="" log="" stage_from=() stage_to=() stage_sha256=() devices=any timeout=0 grace=30 kill_stale=0 upload=""
python="" envs=() slices=0 slice_id=0
program_pid="" tee_pid="" watchdog_pid="" interrupted="" status=0 scratch="" host=""
record=()

say() { printf 'tpulaunch: %s: %s\n' "$host" "$*" >&2; }

usage_error() {
  say "run guard: $*"
  exit "$status_guard_failed"
}

is_count() { [[ $1 =~ ^[0-9]{1,9}$ ]]; }

parse_args() {
  while (($# > 0)); do
    case $1 in
      --run-dir) run_dir=${2-} ;;
      --log) log=${2-} ;;
      --stage)
        (($# >= 4)) || usage_error "--stage needs FROM, TO and SHA256"
        stage_from+=("$2") stage_to+=("$3") stage_sha256+=("$4")
        shift 4
        continue
        ;;
      --devices) devices=${2-} ;;
      --timeout) timeout=${2-} ;;
      --grace) grace=${2-} ;;
      --kill-stale) kill_stale=1; shift; continue ;;
      --upload) upload=${2-} ;;
      --slices) slices=${2-} ;;
      --slice-id) slice_id=${2-} ;;
      --env) envs+=("${2-}") ;;
      --python) python=${2-} ;;
      --) shift; break ;;
      *) usage_error "unknown argument '$1'" ;;
    esac
    (($# >= 2)) || usage_error "$1 needs a value"
    shift 2
  done
  program=("$@")
  ((${#program[@]} > 0)) || usage_error "no program after --"
  [[ -n $run_dir && -n $log && -n $python ]] || usage_error "--run-dir, --log and --python are required"
  [[ $devices == accel || $devices == vfio || $devices == any ]] || usage_error "--devices must be accel, vfio or any"
  if ! is_count "$timeout" || ! is_count "$grace" || ! is_count "$slices" || ! is_count "$slice_id"; then
    usage_error "--timeout, --grace, --slices and --slice-id take whole numbers"
  fi
  local i env
  for i in "${!stage_sha256[@]}"; do
    [[ ${stage_sha256[i]} =~ ^[0-9a-f]{64}$ ]] || usage_error "--stage takes a SHA-256 of 64 hex digits"
  done
  for env in "${envs[@]}"; do
    [[ $env =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || usage_error "--env takes NAME=VALUE"
  done
}

now() { printf '%(%s)T' -1; }

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

# field_of KEY: the value of KEY in the record being built.
field_of() {
  local line
  for line in "${record[@]}"; do
    if [[ $line == "$1="* ]]; then
      printf '%s' "${line#*=}"
    fi
  done
}

write_record() {
  local tmp="$run_dir/.run-status.rec.tmp"
  if ! printf "%s\n" "${record[@]}" >"$tmp" || ! mv -f -- "$tmp" "$run_dir/run-status.rec"; then
    say "could not write $run_dir/run-status.rec"
  fi
}

# One line of printable text, at most 200 characters: a value from the system for the record.
one_line() {
  local text=${1//[^[:print:]]/?}
  printf '%s' "${text:0:200}"
}

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

# running PID: the process exists and is not a zombie (which holds nothing).
running() {
  local stat
  stat=$(<"/proc/$1/stat") 2>/dev/null || return 1
  stat=${stat##*) }
  [[ ${stat:0:1} != Z ]]
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

# --- the program ------------------------------------------------------------------------------

# shellcheck disable=SC2317 # called from the traps set in main
on_signal() {
  interrupted=$1
  trap '' PIPE # the ssh channel may be gone: keep going, to record what happened
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

run_program() {
  local fifo timed_out=""
  # Outside the run folder: the fetch copies that folder, and a copy would block on a fifo.
  scratch=$(mktemp -d "${TMPDIR:-/tmp}/tpulaunch-run.XXXXXX") || return "$status_guard_failed"
  fifo="$scratch/output"
  mkfifo -- "$fifo" || return "$status_guard_failed"
  # tee -p keeps writing the log when the ssh channel goes away.
  tee -p -- "$log" <"$fifo" &
  tee_pid=$!
  set_record started "$(now)"
  set_record state running
  set_record summary "still running when the run ended: no end was recorded (the worker or its connection was lost)"
  write_record
  TPU_RUN_DIR="$run_dir/artifacts" setsid env "${envs[@]}" "$python" "${program[@]}" >"$fifo" 2>&1 </dev/null &
  program_pid=$!
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
  wait "$tee_pid" 2>/dev/null
  set_record ended "$(now)"
  if [[ -e $scratch/timed-out ]]; then
    timed_out=$(<"$scratch/timed-out")
    say "the program ran past --timeout ${timeout}s: ended with SIG$timed_out"
    set_record state timed-out
    set_record signal "$timed_out"
    set_record summary "still running when killed: it ran past --timeout ${timeout}s and ended with SIG$timed_out"
    status=$status_timed_out
  elif [[ -n $interrupted ]]; then
    set_record state interrupted
    set_record signal "$interrupted"
    set_record summary "still running when killed: the run call got SIG$interrupted (the connection was lost?)"
  elif ((status == 0)); then
    set_record state succeeded
    set_record summary succeeded
  else
    set_record state failed
    set_record summary "failed with status $status"
  fi
  rm -rf -- "$scratch"
  set_record status "$status"
  write_record
}

# The metadata server: this VM's worker number in its slice, and its tpu-env.
readonly metadata_url=http://metadata.google.internal/computeMetadata/v1/instance/attributes
# megascale: with --slices, the MEGASCALE_* lines (KEY: 'VALUE') of this VM's tpu-env, checked
# against the plan's slice count and this node's slice id, then exported and recorded.
megascale() {
  local line key value pattern="^(MEGASCALE_[A-Z_]+): *'?([^']*)'? *\$"
  local -A found=()
  while IFS= read -r line; do
    if [[ $line =~ $pattern ]]; then
      found[${BASH_REMATCH[1]}]=${BASH_REMATCH[2]}
    fi
  done < <(curl -sSf -m 10 -H 'Metadata-Flavor: Google' "$metadata_url/tpu-env" 2>/dev/null)
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

# after_program: whatever the program's status. --upload: the run folder to URL/worker-<index>/ (the
# trailing '/' makes a retried upload land in the same place).
after_program() {
  local worker
  [[ -n $upload ]] || return 0
  if worker=$(curl -sSf -m 10 -H 'Metadata-Flavor: Google' "$metadata_url/agent-worker-number") && [[ $worker =~ ^[0-9]+$ ]] &&
    gcloud storage cp --recursive "$run_dir" "$upload/worker-$worker/"; then
    return 0
  fi
  printf 'tpulaunch: error: worker %s (%s) could not upload its results to the results bucket; they stay in its run folder\n' \
    "${worker:-?}" "$host" >&2
  if ((status == 0)); then
    status=$status_upload_failed
  fi
}

finish() {
  if [[ -n $interrupted ]]; then
    case $interrupted in
      HUP) exit 129 ;;
      INT) exit 130 ;;
      *) exit 143 ;;
    esac
  fi
  if ((status == 255)); then
    exit "$status_mapped_255"
  fi
  exit "$status"
}

# never_started STATE STATUS WHY
never_started() {
  set_record state "$1"
  set_record status "$2"
  set_record summary "$(one_line "never started: $3")"
  set_record ended "$(now)"
  write_record
  status=$2
  after_program # the record comes back with --results too
  exit "$2"
}

# check_self HEX: stop (97) unless this file's bytes have that SHA-256.
check_self() {
  if ! printf '%s  %s\n' "$1" "${BASH_SOURCE[0]}" | sha256sum --check --status 2>/dev/null; then
    say "this run guard (${BASH_SOURCE[0]}) is not the one the plan wrote (sha256 $1): it is stale or changed on this worker; nothing was run"
    exit "$status_digest_mismatch"
  fi
}

# stage_files: each staged file moved into place, then checked against the digest the plan pinned.
stage_files() {
  local i
  for i in "${!stage_from[@]}"; do
    if ! { mkdir -p -- "${stage_to[i]%/*}" && mv -f -- "${stage_from[i]}" "${stage_to[i]}"; }; then
      say "the staged file ${stage_from[i]} is not on $host"
      never_started stage-missing "$status_guard_failed" "the staged file ${stage_from[i]} is missing"
    fi
    if ! printf '%s  %s\n' "${stage_sha256[i]}" "${stage_to[i]}" | sha256sum --check --status; then
      say "the staged file ${stage_to[i]} on $host does not match the reviewed sha256"
      set_record detail "staged file ${stage_to[i]} differs from the reviewed sha256"
      never_started digest-mismatch "$status_digest_mismatch" "the staged file ${stage_to[i]} differs from the reviewed sha256"
    fi
  done
}

main() {
  host=$(hostname 2>/dev/null || echo unknown-host)
  [[ ${1-} == --guard-sha256 && ${2-} =~ ^[0-9a-f]{64}$ ]] || usage_error "--guard-sha256 HEX must come first"
  check_self "$2"
  shift 2
  parse_args "$@"
  trap 'on_signal HUP' HUP
  trap 'on_signal INT' INT
  trap 'on_signal TERM' TERM
  # A record here: this run id ran on this worker before. Its folder is left as it is.
  if [[ -e $run_dir/run-status.rec ]]; then
    say "$run_dir holds a run already (this run id ran here before); a second run never overwrites the first: make a new plan"
    exit "$status_run_exists"
  fi
  mkdir -p -- "$run_dir/artifacts" || usage_error "cannot create $run_dir/artifacts"
  record=("record=tpulaunch-run-status 1")
  set_record host "$(one_line "$host")"
  set_record timeout "$timeout"
  stage_files
  ((slices == 0)) || megascale
  if ! command -v -- "$python" >/dev/null; then
    printf 'tpulaunch: error: %s has no Python interpreter at %s; run the plan with --bootstrap, or choose one with --python PATH\n' \
      "$host" "$python" >&2
    never_started no-python "$status_no_python" "there is no Python interpreter at $python"
  fi
  if ! check_tpu; then
    never_started busy "$status_busy" "the TPU is busy: $(field_of detail)"
  fi
  run_program || usage_error "could not start the program"
  after_program
  finish
}

main "$@"
