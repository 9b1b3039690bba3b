# tpu_left_running: what is still running and billing, and the command that deletes it.
tpu_left_running() {
  echo @message@ >&2
}
