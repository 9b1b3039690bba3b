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
if ((collect_status != 0)); then
  echo "tpulaunch: error: the download from $RESULTS failed with status $collect_status" >&2
fi
if ((${#missing[@]} > 0)); then
  echo "tpulaunch: error: no results from worker(s) ${missing[*]} of $WORKERS in $RESULTS" >&2
fi
