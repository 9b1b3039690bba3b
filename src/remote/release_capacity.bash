release_capacity() {
  if ! @release@; then
    echo "tpulaunch: error: could not delete it; delete it by hand: $RELEASE" >&2
    return 1
  fi
  trap - EXIT # nothing is left running
}
