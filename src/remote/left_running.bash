tpu_left_running() {
  echo @message@ >&2
}
