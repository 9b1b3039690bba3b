#!/bin/bash
# tpulaunch's pod program: what every container of a GKE run's JobSet runs (docs/gke.md).
#
#   bash /tpulaunch/gke-pod.sh --plan DIGEST --upload URL --python PYTHON --grace SECONDS
#        [--timeout SECONDS] [--file SHA256 KEY PATH]... -- PROGRAM [ARG]...
#
# The plan's ConfigMap holds this file, the script and its course files (each under a ConfigMap
# KEY), mounted read-only beside it. Its worker index is TPU_WORKER_ID and its slice
# MEGASCALE_SLICE_ID (0 on one slice): what GKE's TPU webhook and JobSet give each pod. Then:
#   1. each --file is checked against its pinned SHA256 and copied to PATH below the run's code/
#      folder (the course's own layout); a file that differs stops the pod with 97, nothing run;
#   2. PYTHON must run (96), and no process of this container may hold libtpu's lock (94);
#   3. PYTHON PROGRAM ARG... runs in code/, with TPU_RUN_DIR=<run>/artifacts and
#      PYTHONUNBUFFERED=1 (JAX_PLATFORMS and the plan's --env come from the container's
#      environment), its output to the pod's log (kubectl logs) and to log.txt as it is printed
#      (with this program's own lines);
#   4. SIGTERM (Kubernetes deleting the pod: another pod of its Job failed, the JobSet failed or
#      was deleted) is passed on to the program, and so is --timeout's end (status 124); either
#      way the program gets --grace seconds, then SIGKILL. The pod's terminationGracePeriodSeconds
#      leaves time after that for step 5: a deleted pod's log is gone with it;
#   5. whatever the status, the run folder (pod-status.rec, log.txt, artifacts/) is copied to
#      URL/slice-<slice>/worker-<index>/ with `gcloud storage cp` (the image's gcloud): a pod
#      keeps nothing after it ends. The pod exits with the program's status, or 95 if the
#      program succeeded and the upload did not.
# pod-status.rec: KEY=VALUE lines: record=tpulaunch-pod-status 1, plan, slice, worker, host,
# state (succeeded, failed, stopped, timeout, digest-mismatch, no-python, tpu-busy), status.
set -uo pipefail

plan="" upload="" python="" grace="" timeout=0 files=()
while (($# > 0)); do
  case $1 in
  --plan | --upload | --python | --grace | --timeout)
    (($# >= 2)) || break
    printf -v "${1#--}" '%s' "$2"
    shift 2
    ;;
  --file)
    (($# >= 4)) || break
    files+=("$2" "$3" "$4")
    shift 4
    ;;
  --)
    shift
    break
    ;;
  *) break ;;
  esac
done
if [[ -z "$plan" || -z "$upload" || -z "$python" || ! "$grace" =~ ^[0-9]+$ || ! "$timeout" =~ ^[0-9]+$ || $# -lt 1 ]]; then
  echo "tpulaunch-pod: usage: gke-pod.sh --plan DIGEST --upload URL --python PYTHON --grace SECONDS [--timeout SECONDS] [--file SHA256 KEY PATH]... -- PROGRAM [ARG]..." >&2
  exit 98
fi

worker=${TPU_WORKER_ID:-0}
slice=${MEGASCALE_SLICE_ID:-0}
here=$(dirname -- "${BASH_SOURCE[0]}")
run=${TMPDIR:-/tmp}/tpulaunch-run
record=$run/pod-status.rec
mkdir -p -- "$run/code" "$run/artifacts" || exit 98

say() {
  echo "tpulaunch-pod: slice $slice worker $worker: $*" >&2
  echo "tpulaunch-pod: slice $slice worker $worker: $*" >>"$run/log.txt"
}
set_record() { printf '%s=%s\n' "$1" "$2" >>"$record"; }

# SIGTERM before the program runs stops the pod at the next step; while it runs, it is passed
# on; after it ended, the pod finishes its upload.
stopped_by="" program="" killer="" ended=0
# shellcheck disable=SC2317 # the traps below call it
stop_program() {
  [[ -n "$stopped_by" ]] && return
  if [[ -z "$program" ]]; then
    ((ended)) || stopped_by=$1
    return
  fi
  stopped_by=$1
  say "$2: the program gets SIGTERM, then SIGKILL after ${grace}s"
  kill -TERM "$program" 2>/dev/null
  { sleep "$grace" && kill -KILL "$program" 2>/dev/null; } &
  killer=$!
}
trap 'stop_program stopped "Kubernetes is stopping the pod (SIGTERM)"' TERM
trap 'stop_program timeout "the program ran past --timeout ${timeout}s"' ALRM

# finish STATE STATUS: record the end, upload the run folder, exit.
finish() {
  local status=$2 name
  set_record state "$1"
  set_record status "$status"
  for name in pod-status.rec log.txt artifacts; do
    # An empty folder is not copied (there is nothing in it to keep).
    [[ -f "$run/$name" || -n "$(ls -A -- "$run/$name" 2>/dev/null)" ]] || continue
    if ! gcloud storage cp --recursive "$run/$name" "$upload/slice-$slice/worker-$worker/" >"$run/upload.log" 2>&1; then
      say "could not upload $name to $upload/slice-$slice/worker-$worker/: $(tail -n 1 "$run/upload.log")"
      ((status == 0)) && status=95
    fi
  done
  exit "$status"
}

: >"$record"
set_record record "tpulaunch-pod-status 1"
set_record plan "$plan"
set_record slice "$slice"
set_record worker "$worker"
set_record host "$(hostname)"

for ((i = 0; i < ${#files[@]}; i += 3)); do
  sha=${files[i]} key=${files[i + 1]} path=${files[i + 2]}
  actual=$(sha256sum <"$here/$key" 2>/dev/null) || actual=""
  if [[ "${actual%% *}" != "$sha" ]]; then
    say "$path differs from the digest the plan pinned ($sha): nothing was run"
    finish digest-mismatch 97
  fi
  if ! { mkdir -p -- "$run/code/$(dirname -- "$path")" && cp -- "$here/$key" "$run/code/$path"; }; then
    finish digest-mismatch 97
  fi
done
if ! command -v -- "$python" >/dev/null; then
  say "the interpreter $python is not in the image: nothing was run"
  finish no-python 96
fi
if [[ -e /tmp/libtpu_lockfile ]] && command -v fuser >/dev/null && fuser /tmp/libtpu_lockfile >/dev/null 2>&1; then
  say "a process of this container holds libtpu's lock /tmp/libtpu_lockfile: nothing was run"
  finish tpu-busy 94
fi

[[ -z "$stopped_by" ]] || finish stopped 143

cd -- "$run/code" || finish failed 98
export TPU_RUN_DIR="$run/artifacts" PYTHONUNBUFFERED=1
# The program's output goes through a FIFO to tee (the pod's log and log.txt), so that this
# program waits for the program itself and can pass SIGTERM on to it, not to tee.
mkfifo -- "$run/output" || finish failed 98
tee -a -- "$run/log.txt" <"$run/output" &
tee_pid=$!
"$python" "$@" >"$run/output" 2>&1 &
program=$!
watchdog=""
if ((timeout > 0)); then
  { sleep "$timeout" && kill -ALRM $$; } &
  watchdog=$!
fi
# `wait` returns early when a trap runs; the program has ended once it is no longer there.
while :; do
  wait "$program"
  status=$?
  kill -0 "$program" 2>/dev/null || break
done
ended=1 program=""
for pid in "$watchdog" "$killer"; do
  [[ -z "$pid" ]] || kill "$pid" 2>/dev/null
done
# tee ends with the program's output; a process the program left behind may hold it open.
{ sleep 10 && kill "$tee_pid" 2>/dev/null; } &
tee_timer=$!
while kill -0 "$tee_pid" 2>/dev/null; do
  wait "$tee_pid"
done
kill "$tee_timer" 2>/dev/null
case $stopped_by in
stopped) finish stopped "$status" ;;
timeout) finish timeout 124 ;;
esac
if ((status == 0)); then
  finish succeeded 0
fi
say "the program failed with status $status"
finish failed "$status"
