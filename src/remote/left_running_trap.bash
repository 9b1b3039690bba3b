# on_exit STATUS: the script's last words on any way out, from the first step that uses the TPU
# on: an interruption is named as one (a program already started goes on: a run outlives its
# connection), and @left_running@ says what is still running and billing when the plan leaves it so.
on_exit() {
  if (($1 == 130 || $1 == 143)); then
    echo "tpulaunch: interrupted (status $1): a program already started goes on on the workers (a run outlives its connection); its log and results stay in its run folder there" >&2
  fi
  @left_running@
}
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'on_exit $?' EXIT
