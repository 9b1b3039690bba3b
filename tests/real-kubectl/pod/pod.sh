#!/bin/bash
# The test program of the real-kubectl cases, as a pod runs it (tests/real-kubectl/README.md):
# the stand-in jax over every pod of the JobSet, its line copied to gs://lab-bucket with the
# image's gcloud (the stand-in's, into a folder), and FAIL_WORKER's worker failing on purpose.
set -euo pipefail
cd /tmp
python3 /tpulaunch/lesson.py >result.txt
cat result.txt
if ! gcloud storage cp result.txt "gs://lab-bucket/r1/slice-${MEGASCALE_SLICE_ID:-0}/worker-${TPU_WORKER_ID:-0}/result.txt" \
  >copy.log 2>&1; then
  cat copy.log >&2
  exit 1
fi
if [[ "${FAIL_WORKER:-}" == "${TPU_WORKER_ID:-0}" ]]; then
  # After the others have ended, so every pod's log can still be read (a failed Job deletes the
  # pods that are still running).
  sleep 3
  echo "worker ${TPU_WORKER_ID:-0} fails on purpose" >&2
  exit 3
fi
