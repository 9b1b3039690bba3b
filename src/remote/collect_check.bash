missing=()
for ((i = 0; i < WORKERS; i++)); do
  if [[ ! -d "$RUN_DIR/worker-$i/$RUN_ID" ]]; then
    missing+=("$i")
  fi
done
if ((collect_status != 0)); then
  echo "tpulaunch: error: the download from $RESULTS failed with status $collect_status" >&2
fi
if ((${#missing[@]} > 0)); then
  echo "tpulaunch: error: no results from worker(s) ${missing[*]} of $WORKERS in $RESULTS" >&2
fi
