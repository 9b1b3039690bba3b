# collect_missing: the processes whose run folder is not in $RUN_DIR, into `missing`.
collect_missing() {
  local i folder
  missing=()
  for ((i = 0; i < WORKERS; i++)); do
    # With --slices, process i is worker i % HOSTS of slice i / HOSTS (as the fetch folders are).
    folder="worker-$i"
    if [[ -n ${SLICES-} ]]; then
      folder="slice-$((i / HOSTS))/worker-$((i % HOSTS))"
    fi
    if [[ ! -d "$RUN_DIR/$folder/$RUN_ID" ]]; then
      missing+=("$i")
    fi
  done
}
collect_missing
# A worker whose folder did not arrive (its upload failed) is fetched from the worker itself, one
# download each, as without --results; what is still missing after that is named.
if ((${#missing[@]} > 0)); then
  echo "tpulaunch: worker(s) ${missing[*]} of $WORKERS did not arrive from $RESULTS: fetching them from the workers, one download each" >&2
  @fallback@
  fetch_wait_all
  collect_missing
fi
if ((collect_status != 0)); then
  echo "tpulaunch: error: the download from $RESULTS failed with status $collect_status" >&2
fi
if ((${#missing[@]} > 0)); then
  echo "tpulaunch: error: no results from worker(s) ${missing[*]} of $WORKERS in $RESULTS nor from the workers" >&2
fi
