# tpulaunch run guard: what a plan's bootstrap and run steps run on every TPU VM worker.
#
#   bash ~/jax-tpu-lab/runs/SCRIPT/RUN_ID/staged-PLANID/tpulaunch-run-guard.sh --guard-sha256 HEX
#        --plan DIGEST --script SCRIPT --run-id RUN_ID [--mark VALUE] [--bootstrap | --stop REASON |
#        [--file SHA256 PATH]... [--devices accel|vfio|any] [--timeout SECONDS] [--grace SECONDS]
#        [--kill-stale] [--upload URL] [--slices N --slice-id S] [--env KEY=VALUE]... --python PYTHON
#        -- PROGRAM [ARG]...]
#
# The plan's write step puts this file in the run's stage folder (`tpulaunch guard` prints it),
# and the stage step copies that folder, with the script and its course files below code/, into
# the run's own folder on every worker: ~/jax-tpu-lab/runs/SCRIPT/RUN_ID/ (the run folder, DIR
# below). PLANID is the first 16 hex digits of DIGEST, the plan's digest (docs/lifecycle.md). The
# guard first checks its own bytes against HEX (a stale or changed copy stops with 97) and that it
# is where the plan staged it. With --mark (a TPU the plan created) it then checks that this VM
# carries the plan's mark, the metadata value tpulaunch_run = VALUE, and stops with 88 otherwise,
# having touched nothing. Then, by mode:
#
# run (the default). The run is a key (SCRIPT, RUN_ID) with one plan (DIGEST), and runs once per
# worker, ever:
#   1. claim the run: create DIR/run-status.rec atomically (link(2): no check-then-create). If it
#      exists, this is a second start: with another DIGEST it stops (93) saying whose run it is;
#      with the same one (gcloud re-runs a command whose ssh exited 255: a dropped connection) it
#      re-attaches: it follows the program's log while the program runs and returns its status,
#      or replays the recorded status of a run that ended;
#   2. start the supervisor: this file again, in a session of its own (setsid), so the run
#      outlives the connection; it alone writes the record from then on. It checks each --file
#      against its digest below the stage folder's code/ (97; a file that is not there, or one
#      more than the plan staged, 98); with --slices reads the MEGASCALE_* values from the
#      metadata tpu-env, checks the slice count and id, exports and records them (98); checks
#      that PYTHON can be run (96); looks for processes holding the TPU devices (/dev/accel*,
#      /dev/vfio/*) or libtpu's lock /tmp/libtpu_lockfile (94, or with --kill-stale SIGTERM, the
#      grace period, SIGKILL, and the lock removed); then runs PYTHON PROGRAM ARG... in the stage
#      folder's code/ (the run's only course code: PYTHONPATH is unset unless an --env sets it),
#      in its own process group, with TPU_RUN_DIR=DIR/artifacts, PYTHONUNBUFFERED=1 (unless an
#      --env sets it) and each --env, output to the per-host log DIR/NAME-tpu-HOST.txt as it is
#      printed; --timeout: SIGTERM, SIGKILL after --grace (30 s), 124; what is left in its process
#      group is ended with it; --upload, whatever the status: `gcloud storage cp --recursive` DIR to
#      URL/worker-<index>/ (95 if the program succeeded and the upload did not);
#   3. this call follows the log (to stdout) until the program ends, waits for the record's final
#      status, prints the supervisor's messages (DIR/guard.log) on stderr and exits with it. A
#      signal to this call before the program starts stops it from starting; after, the program
#      runs on (the connection is what was lost), and a later start re-attaches.
# bootstrap: create ~/jax-tpu-lab/.venv with python3 -m venv and pip install --upgrade jax[tpu].
# stop: end this run on this worker (another slice of a Multislice run failed first): a running
#   program gets SIGTERM, then SIGKILL after the grace period; a run not started yet never starts.
# status, attach, clean (tpulaunch runs; they read the record and never start a run): status prints
#   one line of this worker's record; attach follows the log on the record's worker 0 (its last
#   lines, then as it is written) and waits on every worker for the run's end, returning its
#   status; clean removes DIR unless the run is running (87), and names files an older tpulaunch
#   staged in ~.
#
# DIR/run-status.rec, KEY=VALUE lines, each version written atomically: record=tpulaunch-run-status
# 2, script, run-id, plan, start (the start token the write step put in the stage folder), worker
# (the index the metadata server gives), host, state, guard-pid and guard-start (the supervisor's
# pid and start time in clock ticks, /proc/PID/stat), program-pid and program-start, started and
# ended (Unix seconds), status, timeout (0: none), signal, detail, the MEGASCALE_* values
# (--slices), summary (the outcome in one sentence) and, last, exit (the status every start of
# this run returns). state: starting, running, succeeded, failed, timed-out, interrupted, stopped,
# lost, or never started: busy, digest-mismatch, no-python, stage-missing, megascale-mismatch,
# interrupted, stopped.
#
# Exit statuses (include/tpulaunch/util/exit_code.hpp lists them; keep the two in step): 0 the
# program succeeded; 1-253 its own status; 88 this VM does not carry the plan's mark; 93 the run
# ran here with another plan; 94 TPU busy; 95 its upload failed (the program succeeded); 96 no
# interpreter; 97 a staged file (the script, a file it imports, this guard) differs from its pinned
# digest; 98 the guard could not start (bad arguments, a file not staged, MEGASCALE_* values not the
# plan's, a supervisor lost without an end); 124 timed out; 254 the program (or pip) exited 255
# (gcloud would run the command again); 128+N the run was ended by signal N.
#
# Test seams: TPULAUNCH_GUARD_ROOT prefixes the device and lock paths (the stand-in's fake root;
# unset on a TPU VM), and HOME says where the run folders are. Other users' processes are not
# visible in /proc/*/fd without root.

set -u -o pipefail

readonly status_running=87
readonly status_not_ours=88
readonly status_run_exists=93
readonly status_busy=94
readonly status_upload_failed=95
readonly status_no_python=96
readonly status_digest_mismatch=97
readonly status_guard_failed=98
readonly status_timed_out=124
readonly status_mapped_255=254

guard_args=() mode=run plan="" script="" run_id="" mark="" stop_reason=""
files_sha256=() files_path=() devices=any timeout=0 grace=30 kill_stale=0 upload="" python="" envs=()
slices=0 slice_id=0 program=()
run_dir="" staged="" log="" host="" worker="?"
record=()

say() { printf 'tpulaunch: %s: %s\n' "$host" "$*" >&2; }

usage_error() {
  say "run guard: $*"
  exit "$status_guard_failed"
}

is_count() { [[ $1 =~ ^[0-9]{1,9}$ ]]; }

# Ids as validate.cpp takes them: letters, digits, '.', '_' and '-', no leading '.' or '-'; a
# script id is one or more such parts, '/'-separated.
is_id() { [[ $1 =~ ^[A-Za-z0-9_][A-Za-z0-9._-]*$ ]]; }
is_script_id() { [[ $1 =~ ^[A-Za-z0-9_][A-Za-z0-9._-]*(/[A-Za-z0-9_][A-Za-z0-9._-]*)*$ ]]; }

parse_args() {
  guard_args=("$@")
  while (($# > 0)); do
    case $1 in
      --supervise) mode=supervise; shift; continue ;;
      --bootstrap) mode=bootstrap; shift; continue ;;
      --status | --attach | --clean) mode=${1#--}; shift; continue ;;
      --kill-stale) kill_stale=1; shift; continue ;;
      --file)
        (($# >= 3)) || usage_error "--file needs SHA256 and PATH"
        files_sha256+=("$2") files_path+=("$3")
        shift 3
        continue
        ;;
      --stop) mode=stop stop_reason=${2-} ;;
      --plan) plan=${2-} ;;
      --script) script=${2-} ;;
      --run-id) run_id=${2-} ;;
      --mark) mark=${2-} ;;
      --devices) devices=${2-} ;;
      --timeout) timeout=${2-} ;;
      --grace) grace=${2-} ;;
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
  check_args
}

check_args() {
  local i env
  [[ $plan =~ ^[0-9a-f]{64}$ ]] || usage_error "--plan takes the plan's SHA-256 (64 hex digits)"
  is_script_id "$script" || usage_error "--script takes a script id"
  is_id "$run_id" || usage_error "--run-id takes a run id"
  [[ -z $mark || $mark =~ ^[0-9a-f]{16}$ ]] || usage_error "--mark takes 16 hex digits"
  [[ $devices == accel || $devices == vfio || $devices == any ]] || usage_error "--devices must be accel, vfio or any"
  if ! is_count "$timeout" || ! is_count "$grace" || ! is_count "$slices" || ! is_count "$slice_id"; then
    usage_error "--timeout, --grace, --slices and --slice-id take whole numbers"
  fi
  for i in "${!files_sha256[@]}"; do
    [[ ${files_sha256[i]} =~ ^[0-9a-f]{64}$ ]] || usage_error "--file takes a SHA-256 of 64 hex digits"
    [[ ${files_path[i]} != /* && /${files_path[i]}/ != */../* ]] || usage_error "--file takes a path below code/"
  done
  for env in "${envs[@]}"; do
    [[ $env =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || usage_error "--env takes NAME=VALUE"
  done
  if [[ $mode == run || $mode == supervise ]]; then
    ((${#program[@]} > 0)) || usage_error "no program after --"
    [[ -n $python ]] || usage_error "--python is required"
  fi
  run_dir=$HOME/jax-tpu-lab/runs/$script/$run_id
  staged=$run_dir/staged-${plan:0:16}
  log=$run_dir/${script##*/}-tpu-$host.txt
}

now() { printf '%(%s)T' -1; }

# One line of printable text, at most 200 characters: a value from the system for the record.
one_line() {
  local text=${1//[^[:print:]]/?}
  printf '%s' "${text:0:200}"
}

# check_self HEX: stop (97) unless this file's bytes have that SHA-256.
check_self() {
  if ! printf '%s  %s\n' "$1" "${BASH_SOURCE[0]}" | sha256sum --check --status 2>/dev/null; then
    say "this run guard (${BASH_SOURCE[0]}) is not the one the plan wrote (sha256 $1): it is stale or changed on this worker; nothing was run"
    exit "$status_digest_mismatch"
  fi
}

# check_place: the guard runs from the stage folder of the run its arguments name, nowhere else.
check_place() {
  local here
  here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P) || usage_error "cannot find its own folder"
  if [[ ! -d $staged || $here != "$(cd -- "$staged" && pwd -P)" ]]; then
    usage_error "it is not in the stage folder of run $script/$run_id ($staged): nothing was run"
  fi
}

# The metadata server: this VM's worker number in its slice, its tpu-env, the plan's mark.
readonly metadata_url=http://metadata.google.internal/computeMetadata/v1/instance/attributes
metadata() { curl -sSf -m 10 -H 'Metadata-Flavor: Google' "$metadata_url/$1" 2>/dev/null; }

# check_mark: with --mark, this VM must carry it (the metadata value the create call set).
check_mark() {
  local found
  [[ -n $mark ]] || return 0
  found=$(metadata tpulaunch_run) || found=""
  if [[ $found != "$mark" ]]; then
    say "this TPU VM does not carry this plan's mark (metadata tpulaunch_run=$mark; it has '$(one_line "$found")'): it is not the TPU this plan created, so nothing was touched"
    exit "$status_not_ours"
  fi
}
