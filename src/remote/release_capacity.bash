release_capacity() {
  if ! @release@; then
    echo "tpulaunch: error: could not delete it; delete it by hand: $RELEASE" >&2
    return 1
  fi
  trap 'record_pipeline $?' EXIT # nothing is left running; what the pipeline saw is still recorded
}
