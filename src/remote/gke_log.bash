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
