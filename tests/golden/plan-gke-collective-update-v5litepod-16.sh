#!/bin/bash
# shellcheck disable=SC2016,SC2015
# tpulaunch plan, GKE backend (docs/gke.md). Review it, then run it with bash.
# collective-update (public/exercises/collective-update.py), class multi-host-qualified, route multi-host on GKE
# slice v5litepod-16 x 1: 4 pod(s) of 4 chip(s) per slice, 16 devices in all
# cluster lab-cluster (us-east5-b), namespace default, image example.com/tpu/jax:0.4.35
# JobSet collective-update-665466d2, ConfigMap collective-update-665466d2-files, plan 665466d2ec7d0029da967de68da26a0ab595c8671f4bd268a2608db51817a9d5
# run folder ./gke-runs/lab-cluster/collective-update/r1, results gs://lab-bucket/runs/lab-cluster/collective-update/r1
set -uo pipefail
gke_fail() { echo "tpulaunch: error: $1" >&2; exit "$2"; }
cd @COURSE@ || exit 1
# 1. prepare: get the credentials of cluster lab-cluster (us-east5-b) for kubectl
gcloud container clusters get-credentials lab-cluster --location=us-east5-b || gke_fail 'the prepare step failed: get the credentials of cluster lab-cluster (us-east5-b) for kubectl' 1
# 2. name-check: check that no JobSet collective-update-665466d2 exists in namespace default
test -z "$(kubectl get jobset collective-update-665466d2 --ignore-not-found --output=name --namespace=default)" || gke_fail 'a JobSet collective-update-665466d2 exists already in namespace default (this run started before, or another'\''s): nothing was applied; a new --run-id makes a new plan' 89
# 3. write: write the manifest (the ConfigMap collective-update-665466d2-files with the pod program and 1 staged file(s), each pinned by its digest; the JobSet collective-update-665466d2) to ./gke-runs/lab-cluster/collective-update/r1/manifest.json
mkdir -p ./gke-runs/lab-cluster/collective-update/r1 && printf '%s\n' '{
  "apiVersion": "v1",
  "kind": "List",
  "items": [
    {
      "apiVersion": "v1",
      "kind": "ConfigMap",
      "metadata": {
        "name": "collective-update-665466d2-files",
        "namespace": "default",
        "labels": {
          "tpulaunch/run-id": "r1",
          "tpulaunch/plan": "665466d2ec7d0029"
        }
      },
      "data": {
        "file-0": "\"\"\"Multi-host collective update: one SGD step whose gradient is averaged over every chip.\n\nRun on every host of a slice at once (gcloud ... ssh --worker=all). Each process\nowns a distinct slice of the inputs, computes its local gradient, and the global\nmean gradient comes from a psum over all devices of all hosts. The result is\nchecked against a value derived independently from the formula, each process\nwrites a receipt worker-<i>.json into $TPU_RUN_DIR, and process 0 alone\npublishes checkpoint.json, after a global barrier, atomically.\n\"\"\"\nimport json\nimport os\nimport socket\n\nimport jax\nimport jax.numpy as jnp\nimport numpy as np\nfrom jax.experimental import multihost_utils\n\njax.distributed.initialize()\n\nprocess = jax.process_index()\nprocesses = jax.process_count()\nlocal = jax.local_device_count()\nrun_dir = os.environ[\"TPU_RUN_DIR\"]\n\n# Loss per example: 0.5 * (w * x - y)^2 with y = 3x, so dL/dw = (w * x - y) * x.\nw0 = 0.5\nexamples_per_device = 4\nglobal_examples = jax.device_count() * examples_per_device\n\n# Every process owns its own contiguous block of example ids: no two processes share one.\nfirst = process * local * examples_per_device\nowned = np.arange(first, first + local * examples_per_device, dtype=np.float32)\nx_local = owned.reshape(local, examples_per_device) / global_examples\ny_local = 3.0 * x_local\n\n\ndef local_grad_sum(x, y):\n    return jnp.sum((w0 * x - y) * x)\n\n\n# psum over the \"hosts\" axis of pmap reaches every device of every process.\nsummed = jax.pmap(lambda x, y: jax.lax.psum(local_grad_sum(x, y), \"i\"), axis_name=\"i\")(x_local, y_local)\nmean_grad = float(summed[0]) / global_examples\n\n# Independent check: the same mean from the closed form over all example ids.\nall_x = np.arange(global_examples, dtype=np.float64) / global_examples\nexpected = float(np.mean((w0 * all_x - 3.0 * all_x) * all_x))\nif abs(mean_grad - expected) > 1e-5:\n    raise SystemExit(f\"process {process}: mean gradient {mean_grad} != expected {expected}\")\n\nw1 = w0 - 0.1 * mean_grad\nreceipt = {\n    \"kind\": \"training\",\n    \"script\": \"collective-update\",\n    \"process_index\": process,\n    \"process_count\": processes,\n    \"local_device_count\": local,\n    \"device_count\": jax.device_count(),\n    \"backend\": jax.default_backend(),\n    \"hostname\": socket.gethostname(),\n    \"owned_inputs\": [int(v) for v in owned],\n    \"global_mean_gradient\": mean_grad,\n    \"expected_mean_gradient\": expected,\n    \"params_before\": [w0],\n    \"params_after\": [w1],\n    \"check\": \"passed\",\n}\nwith open(os.path.join(run_dir, f\"worker-{process}.json\"), \"w\") as f:\n    json.dump(receipt, f)\nprint(json.dumps(receipt))\n\n# Nobody publishes until every process has its receipt on disk.\nmultihost_utils.sync_global_devices(\"receipts-written\")\nif process == 0:\n    checkpoint = {\"kind\": \"checkpoint\", \"written_by\": 0, \"process_count\": processes, \"step\": 1,\n                  \"params\": [w1], \"global_mean_gradient\": mean_grad}\n    tmp = os.path.join(run_dir, \"checkpoint.json.tmp\")\n    with open(tmp, \"w\") as f:\n        json.dump(checkpoint, f)\n        f.flush()\n        os.fsync(f.fileno())\n    os.replace(tmp, os.path.join(run_dir, \"checkpoint.json\"))\n",
        "gke-pod.sh": "#!/bin/bash\n# tpulaunch'\''s pod program: what every container of a GKE run'\''s JobSet runs (docs/gke.md).\n#\n#   bash /tpulaunch/gke-pod.sh --plan DIGEST --upload URL --python PYTHON --grace SECONDS\n#        [--timeout SECONDS] [--file SHA256 KEY PATH]... -- PROGRAM [ARG]...\n#\n# The plan'\''s ConfigMap holds this file, the script and its course files (each under a ConfigMap\n# KEY), mounted read-only beside it. Its worker index is TPU_WORKER_ID and its slice\n# MEGASCALE_SLICE_ID (0 on one slice): what GKE'\''s TPU webhook and JobSet give each pod. Then:\n#   1. each --file is checked against its pinned SHA256 and copied to PATH below the run'\''s code/\n#      folder (the course'\''s own layout); a file that differs stops the pod with 97, nothing run;\n#   2. PYTHON must run (96), and no process of this container may hold libtpu'\''s lock (94);\n#   3. PYTHON PROGRAM ARG... runs in code/, with TPU_RUN_DIR=<run>/artifacts and\n#      PYTHONUNBUFFERED=1 (JAX_PLATFORMS and the plan'\''s --env come from the container'\''s\n#      environment), its output to the pod'\''s log (kubectl logs) and to log.txt as it is printed\n#      (with this program'\''s own lines);\n#   4. SIGTERM (Kubernetes deleting the pod: another pod of its Job failed, the JobSet failed or\n#      was deleted) is passed on to the program, and so is --timeout'\''s end (status 124); either\n#      way the program gets --grace seconds, then SIGKILL. The pod'\''s terminationGracePeriodSeconds\n#      leaves time after that for step 5: a deleted pod'\''s log is gone with it;\n#   5. whatever the status, the run folder (pod-status.rec, log.txt, artifacts/) is copied to\n#      URL/slice-<slice>/worker-<index>/ with `gcloud storage cp` (the image'\''s gcloud): a pod\n#      keeps nothing after it ends. The pod exits with the program'\''s status, or 95 if the\n#      program succeeded and the upload did not.\n# pod-status.rec: KEY=VALUE lines: record=tpulaunch-pod-status 1, plan, slice, worker, host,\n# state (succeeded, failed, stopped, timeout, digest-mismatch, no-python, tpu-busy), status.\nset -uo pipefail\n\nplan=\"\" upload=\"\" python=\"\" grace=\"\" timeout=0 files=()\nwhile (($# > 0)); do\n  case $1 in\n  --plan | --upload | --python | --grace | --timeout)\n    (($# >= 2)) || break\n    printf -v \"${1#--}\" '\''%s'\'' \"$2\"\n    shift 2\n    ;;\n  --file)\n    (($# >= 4)) || break\n    files+=(\"$2\" \"$3\" \"$4\")\n    shift 4\n    ;;\n  --)\n    shift\n    break\n    ;;\n  *) break ;;\n  esac\ndone\nif [[ -z \"$plan\" || -z \"$upload\" || -z \"$python\" || ! \"$grace\" =~ ^[0-9]+$ || ! \"$timeout\" =~ ^[0-9]+$ || $# -lt 1 ]]; then\n  echo \"tpulaunch-pod: usage: gke-pod.sh --plan DIGEST --upload URL --python PYTHON --grace SECONDS [--timeout SECONDS] [--file SHA256 KEY PATH]... -- PROGRAM [ARG]...\" >&2\n  exit 98\nfi\n\nworker=${TPU_WORKER_ID:-0}\nslice=${MEGASCALE_SLICE_ID:-0}\nhere=$(dirname -- \"${BASH_SOURCE[0]}\")\nrun=${TMPDIR:-/tmp}/tpulaunch-run\nrecord=$run/pod-status.rec\nmkdir -p -- \"$run/code\" \"$run/artifacts\" || exit 98\n\nsay() {\n  echo \"tpulaunch-pod: slice $slice worker $worker: $*\" >&2\n  echo \"tpulaunch-pod: slice $slice worker $worker: $*\" >>\"$run/log.txt\"\n}\nset_record() { printf '\''%s=%s\\n'\'' \"$1\" \"$2\" >>\"$record\"; }\n\n# SIGTERM before the program runs stops the pod at the next step; while it runs, it is passed\n# on; after it ended, the pod finishes its upload.\nstopped_by=\"\" program=\"\" killer=\"\" ended=0\n# shellcheck disable=SC2317 # the traps below call it\nstop_program() {\n  [[ -n \"$stopped_by\" ]] && return\n  if [[ -z \"$program\" ]]; then\n    ((ended)) || stopped_by=$1\n    return\n  fi\n  stopped_by=$1\n  say \"$2: the program gets SIGTERM, then SIGKILL after ${grace}s\"\n  kill -TERM \"$program\" 2>/dev/null\n  { sleep \"$grace\" && kill -KILL \"$program\" 2>/dev/null; } &\n  killer=$!\n}\ntrap '\''stop_program stopped \"Kubernetes is stopping the pod (SIGTERM)\"'\'' TERM\ntrap '\''stop_program timeout \"the program ran past --timeout ${timeout}s\"'\'' ALRM\n\n# finish STATE STATUS: record the end, upload the run folder, exit.\nfinish() {\n  local status=$2 name\n  set_record state \"$1\"\n  set_record status \"$status\"\n  for name in pod-status.rec log.txt artifacts; do\n    # An empty folder is not copied (there is nothing in it to keep).\n    [[ -f \"$run/$name\" || -n \"$(ls -A -- \"$run/$name\" 2>/dev/null)\" ]] || continue\n    if ! gcloud storage cp --recursive \"$run/$name\" \"$upload/slice-$slice/worker-$worker/\" >\"$run/upload.log\" 2>&1; then\n      say \"could not upload $name to $upload/slice-$slice/worker-$worker/: $(tail -n 1 \"$run/upload.log\")\"\n      ((status == 0)) && status=95\n    fi\n  done\n  exit \"$status\"\n}\n\n: >\"$record\"\nset_record record \"tpulaunch-pod-status 1\"\nset_record plan \"$plan\"\nset_record slice \"$slice\"\nset_record worker \"$worker\"\nset_record host \"$(hostname)\"\n\nfor ((i = 0; i < ${#files[@]}; i += 3)); do\n  sha=${files[i]} key=${files[i + 1]} path=${files[i + 2]}\n  actual=$(sha256sum <\"$here/$key\" 2>/dev/null) || actual=\"\"\n  if [[ \"${actual%% *}\" != \"$sha\" ]]; then\n    say \"$path differs from the digest the plan pinned ($sha): nothing was run\"\n    finish digest-mismatch 97\n  fi\n  if ! { mkdir -p -- \"$run/code/$(dirname -- \"$path\")\" && cp -- \"$here/$key\" \"$run/code/$path\"; }; then\n    finish digest-mismatch 97\n  fi\ndone\nif ! command -v -- \"$python\" >/dev/null; then\n  say \"the interpreter $python is not in the image: nothing was run\"\n  finish no-python 96\nfi\nif [[ -e /tmp/libtpu_lockfile ]] && command -v fuser >/dev/null && fuser /tmp/libtpu_lockfile >/dev/null 2>&1; then\n  say \"a process of this container holds libtpu'\''s lock /tmp/libtpu_lockfile: nothing was run\"\n  finish tpu-busy 94\nfi\n\n[[ -z \"$stopped_by\" ]] || finish stopped 143\n\ncd -- \"$run/code\" || finish failed 98\nexport TPU_RUN_DIR=\"$run/artifacts\" PYTHONUNBUFFERED=1\n# The program'\''s output goes through a FIFO to tee (the pod'\''s log and log.txt), so that this\n# program waits for the program itself and can pass SIGTERM on to it, not to tee.\nmkfifo -- \"$run/output\" || finish failed 98\ntee -a -- \"$run/log.txt\" <\"$run/output\" &\ntee_pid=$!\n\"$python\" \"$@\" >\"$run/output\" 2>&1 &\nprogram=$!\nwatchdog=\"\"\nif ((timeout > 0)); then\n  { sleep \"$timeout\" && kill -ALRM $$; } &\n  watchdog=$!\nfi\n# `wait` returns early when a trap runs; the program has ended once it is no longer there.\nwhile :; do\n  wait \"$program\"\n  status=$?\n  kill -0 \"$program\" 2>/dev/null || break\ndone\nended=1 program=\"\"\nfor pid in \"$watchdog\" \"$killer\"; do\n  [[ -z \"$pid\" ]] || kill \"$pid\" 2>/dev/null\ndone\n# tee ends with the program'\''s output; a process the program left behind may hold it open.\n{ sleep 10 && kill \"$tee_pid\" 2>/dev/null; } &\ntee_timer=$!\nwhile kill -0 \"$tee_pid\" 2>/dev/null; do\n  wait \"$tee_pid\"\ndone\nkill \"$tee_timer\" 2>/dev/null\ncase $stopped_by in\nstopped) finish stopped \"$status\" ;;\ntimeout) finish timeout 124 ;;\nesac\nif ((status == 0)); then\n  finish succeeded 0\nfi\nsay \"the program failed with status $status\"\nfinish failed \"$status\"\n"
      }
    },
    {
      "apiVersion": "jobset.x-k8s.io/v1alpha2",
      "kind": "JobSet",
      "metadata": {
        "name": "collective-update-665466d2",
        "namespace": "default",
        "labels": {
          "tpulaunch/run-id": "r1",
          "tpulaunch/plan": "665466d2ec7d0029"
        },
        "annotations": {
          "alpha.jobset.sigs.k8s.io/exclusive-topology": "cloud.google.com/gke-nodepool"
        }
      },
      "spec": {
        "failurePolicy": {
          "maxRestarts": 0
        },
        "replicatedJobs": [
          {
            "name": "slice",
            "replicas": 1,
            "template": {
              "spec": {
                "parallelism": 4,
                "completions": 4,
                "backoffLimit": 0,
                "template": {
                  "metadata": {
                    "labels": {
                      "tpulaunch/run-id": "r1",
                      "tpulaunch/plan": "665466d2ec7d0029"
                    }
                  },
                  "spec": {
                    "restartPolicy": "Never",
                    "terminationGracePeriodSeconds": 150,
                    "nodeSelector": {
                      "cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice",
                      "cloud.google.com/gke-tpu-topology": "4x4"
                    },
                    "tolerations": [
                      {
                        "key": "google.com/tpu",
                        "operator": "Exists",
                        "effect": "NoSchedule"
                      }
                    ],
                    "containers": [
                      {
                        "name": "tpulaunch",
                        "image": "example.com/tpu/jax:0.4.35",
                        "command": [
                          "bash",
                          "/tpulaunch/gke-pod.sh",
                          "--plan",
                          "665466d2ec7d0029da967de68da26a0ab595c8671f4bd268a2608db51817a9d5",
                          "--upload",
                          "gs://lab-bucket/runs/lab-cluster/collective-update/r1",
                          "--python",
                          "python3",
                          "--grace",
                          "30",
                          "--file",
                          "ccbfae793e9870a8591d38bb715507918092a150bf444cea6a369ddf75dd8b45",
                          "file-0",
                          "public/exercises/collective-update.py",
                          "--",
                          "public/exercises/collective-update.py"
                        ],
                        "env": [
                          {
                            "name": "JAX_PLATFORMS",
                            "value": "tpu"
                          }
                        ],
                        "resources": {
                          "limits": {
                            "google.com/tpu": 4
                          }
                        },
                        "volumeMounts": [
                          {
                            "name": "tpulaunch-files",
                            "mountPath": "/tpulaunch",
                            "readOnly": true
                          }
                        ]
                      }
                    ],
                    "volumes": [
                      {
                        "name": "tpulaunch-files",
                        "configMap": {
                          "name": "collective-update-665466d2-files"
                        }
                      }
                    ]
                  }
                }
              }
            }
          }
        ]
      }
    }
  ]
}' >./gke-runs/lab-cluster/collective-update/r1/manifest.json || gke_fail 'the write step failed: write the manifest (the ConfigMap collective-update-665466d2-files with the pod program and 1 staged file(s), each pinned by its digest; the JobSet collective-update-665466d2) to ./gke-runs/lab-cluster/collective-update/r1/manifest.json' 1
# 4. stage: create the ConfigMap and the JobSet: 1 slice(s) x 4 pod(s), each pod checks the staged files' digests and runs the script
kubectl apply --filename=./gke-runs/lab-cluster/collective-update/r1/manifest.json || gke_fail 'the stage step failed: create the ConfigMap and the JobSet: 1 slice(s) x 4 pod(s), each pod checks the staged files'\'' digests and runs the script' 1
# 5. wait: wait for the JobSet to end (Completed or Failed), at most 86400s; keep its state and each pod's
kubectl wait '--for=jsonpath={.status.terminalState}' jobset/collective-update-665466d2 --timeout=86400s --namespace=default && kubectl get jobset collective-update-665466d2 '--output=jsonpath={.status.terminalState}' --namespace=default >./gke-runs/lab-cluster/collective-update/r1/jobset-state && kubectl get pods --selector=jobset.sigs.k8s.io/jobset-name=collective-update-665466d2 '--output=jsonpath={range .items[*]}{.metadata.labels.jobset\.sigs\.k8s\.io/job-index} {.metadata.labels.batch\.kubernetes\.io/job-completion-index} {.status.phase} {.status.containerStatuses[0].state.terminated.exitCode}{"\n"}{end}' --namespace=default >./gke-runs/lab-cluster/collective-update/r1/pods.txt || gke_fail 'the JobSet collective-update-665466d2 did not end within 86400s (or its state could not be read); it is kept: kubectl get jobset collective-update-665466d2 --namespace=default' 1
# 6. fetch: the log of slice 0 worker 0 (from the bucket if the pod is gone)
PARALLEL=8
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
# gke_log FOLDER READ... --or COPY...: one pod's log into FOLDER/pod.log, for a GKE plan's sh form,
# started by fetch_start (src/remote/fetch.bash) like a TPU worker's download (docs/gke.md).
# READ is `kubectl logs --follow` of the pod by its labels: a pod that is still ending (deleted
# when another pod failed) is followed to its end. When it prints nothing, the pod is gone
# (Kubernetes deleted it, and its log with it: kubectl says "No resources found" and succeeds), so
# COPY (`gcloud storage cp` of the log.txt the pod program uploaded, src/remote/gke_pod.bash)
# writes FOLDER/pod.log instead. Fails when neither brought a log.
gke_log() {
  local folder=$1 reader=()
  shift
  while (($# > 0)) && [[ "$1" != --or ]]; do
    reader+=("$1")
    shift
  done
  shift
  mkdir -p -- "$folder" || return 1
  "${reader[@]}" >"$folder/pod.log" 2>"$folder/kubectl-logs.err"
  [[ -s "$folder/pod.log" ]] && return 0
  echo "tpulaunch: $folder: the pod is gone; its log is the copy it uploaded" >&2
  "$@" >/dev/null 2>"$folder/log-copy.err" && [[ -s "$folder/pod.log" ]]
}

# gke_log_report PODS: after fetch_wait_all, names each pod whose log could not be read (in
# fetch.bash's fetch_failed, by process: slice x PODS + worker); verify counts it as missing.
gke_log_report() {
  local p
  for p in "${!fetch_failed[@]}"; do
    echo "tpulaunch: could not read the log of slice $((p / $1)) worker $((p % $1))" >&2
  done
}
fetch_start 0 gke_log ./gke-runs/lab-cluster/collective-update/r1/slice-0/worker-0 kubectl logs --selector=jobset.sigs.k8s.io/jobset-name=collective-update-665466d2,jobset.sigs.k8s.io/job-index=0,batch.kubernetes.io/job-completion-index=0 --tail=-1 --follow --namespace=default --or gcloud storage cp gs://lab-bucket/runs/lab-cluster/collective-update/r1/slice-0/worker-0/log.txt ./gke-runs/lab-cluster/collective-update/r1/slice-0/worker-0/pod.log
# 7. fetch: the log of slice 0 worker 1 (from the bucket if the pod is gone)
fetch_start 1 gke_log ./gke-runs/lab-cluster/collective-update/r1/slice-0/worker-1 kubectl logs --selector=jobset.sigs.k8s.io/jobset-name=collective-update-665466d2,jobset.sigs.k8s.io/job-index=0,batch.kubernetes.io/job-completion-index=1 --tail=-1 --follow --namespace=default --or gcloud storage cp gs://lab-bucket/runs/lab-cluster/collective-update/r1/slice-0/worker-1/log.txt ./gke-runs/lab-cluster/collective-update/r1/slice-0/worker-1/pod.log
# 8. fetch: the log of slice 0 worker 2 (from the bucket if the pod is gone)
fetch_start 2 gke_log ./gke-runs/lab-cluster/collective-update/r1/slice-0/worker-2 kubectl logs --selector=jobset.sigs.k8s.io/jobset-name=collective-update-665466d2,jobset.sigs.k8s.io/job-index=0,batch.kubernetes.io/job-completion-index=2 --tail=-1 --follow --namespace=default --or gcloud storage cp gs://lab-bucket/runs/lab-cluster/collective-update/r1/slice-0/worker-2/log.txt ./gke-runs/lab-cluster/collective-update/r1/slice-0/worker-2/pod.log
# 9. fetch: the log of slice 0 worker 3 (from the bucket if the pod is gone)
fetch_start 3 gke_log ./gke-runs/lab-cluster/collective-update/r1/slice-0/worker-3 kubectl logs --selector=jobset.sigs.k8s.io/jobset-name=collective-update-665466d2,jobset.sigs.k8s.io/job-index=0,batch.kubernetes.io/job-completion-index=3 --tail=-1 --follow --namespace=default --or gcloud storage cp gs://lab-bucket/runs/lab-cluster/collective-update/r1/slice-0/worker-3/log.txt ./gke-runs/lab-cluster/collective-update/r1/slice-0/worker-3/pod.log
# 10. collect: bring every pod's run folder back from the results bucket, in one call
fetch_wait_all
gke_log_report 4
gcloud storage cp --recursive gs://lab-bucket/runs/lab-cluster/collective-update/r1 ./gke-runs/lab-cluster/collective-update/ || gke_fail 'the collect step failed: bring every pod'\''s run folder back from the results bucket, in one call' 1
# 11. verify: check every pod's log and record (this plan's digest, status 0); a failed pod is named by slice and worker, and the JobSet is kept
bash -c '#!/bin/bash
# tpulaunch'\''s GKE verify: what the verify step of a GKE plan runs on this machine (docs/gke.md).
#
#   bash -c "$(this file)" gke-verify DIR PLAN SLICES WORKERS JOBSET NAMESPACE
#
# DIR is the run folder: jobset-state (the JobSet'\''s terminal state, which the wait step wrote),
# pods.txt (each pod'\''s slice, worker, phase and exit code), slice-<s>/worker-<i>/pod.log (each
# pod'\''s log) and, from the results bucket, slice-<s>/worker-<i>/pod-status.rec. Every pod of
# every slice must have a log and a record of this PLAN with status 0. A pod that failed is named
# by slice and worker, with its log; a pod Kubernetes stopped because another failed is named as
# stopped; the JobSet is kept (verify never deletes anything).
# Exit 0 when every pod is verified, 3 otherwise.
set -uo pipefail
dir=$1 plan=$2 slices=$3 workers=$4 jobset=$5 namespace=$6
problems=0
problem() {
  echo "tpulaunch: verify: $*" >&2
  problems=$((problems + 1))
}
field() { sed -n "s/^$1=//p" "$2" | tail -n 1; }

state=$(cat "$dir/jobset-state" 2>/dev/null) || state=""
[[ "$state" == Completed ]] || problem "the JobSet $jobset ended '\''${state:-unknown}'\'', not Completed"
for ((s = 0; s < slices; s++)); do
  for ((i = 0; i < workers; i++)); do
    w=$dir/slice-$s/worker-$i
    [[ -s "$w/pod.log" ]] || problem "slice $s worker $i: no log in $w/pod.log"
    if [[ ! -f "$w/pod-status.rec" ]]; then
      pod=$(awk -v s="$s" -v i="$i" '\''$1 == s && $2 == i { print $3 " exit " $4 }'\'' "$dir/pods.txt" 2>/dev/null)
      problem "slice $s worker $i: no record came back from the results bucket (pod: ${pod:-not found})"
      continue
    fi
    [[ "$(field plan "$w/pod-status.rec")" == "$plan" ]] || problem "slice $s worker $i: its record is of another plan"
    status=$(field status "$w/pod-status.rec")
    case $(field state "$w/pod-status.rec") in
    succeeded) [[ "$status" == 0 ]] || problem "slice $s worker $i: its record says succeeded, status ${status:-none}" ;;
    stopped) problem "slice $s worker $i was stopped by Kubernetes before it ended (SIGTERM: another pod failed, or the JobSet was deleted), status ${status:-none} (its log: $w/pod.log)" ;;
    timeout) problem "slice $s worker $i ran past --timeout and was stopped, status ${status:-none} (its log: $w/pod.log)" ;;
    *) problem "slice $s worker $i failed: $(field state "$w/pod-status.rec"), status ${status:-none} (its log: $w/pod.log)" ;;
    esac
  done
done
if ((problems > 0)); then
  echo "tpulaunch: verify: $problems problem(s); the JobSet is kept for inspection: kubectl get jobset $jobset -n $namespace" >&2
  exit 3
fi
echo "tpulaunch: verify: $((slices * workers)) pod(s) of $slices slice(s) succeeded with plan $plan"
' gke-verify ./gke-runs/lab-cluster/collective-update/r1 665466d2ec7d0029da967de68da26a0ab595c8671f4bd268a2608db51817a9d5 1 4 collective-update-665466d2 default || gke_fail 'the run did not verify (above); the JobSet collective-update-665466d2 is kept for inspection: kubectl get jobset collective-update-665466d2 --namespace=default' 3
# 12. teardown: delete the JobSet (its pods) and the ConfigMap, after verify (only when verify-succeeded)
kubectl delete jobset/collective-update-665466d2 configmap/collective-update-665466d2-files --namespace=default || gke_fail 'the teardown step failed: delete the JobSet (its pods) and the ConfigMap, after verify' 1
echo 'tpulaunch: the run of collective-update on lab-cluster is verified and its JobSet deleted'
