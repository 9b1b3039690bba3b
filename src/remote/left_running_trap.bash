# record_pipeline STATUS: what the pipeline saw, in $RUN_DIR/pipeline.rec (KEY=VALUE lines), so
# `tpulaunch runs list` knows a preemption, a timeout or an interruption without a TPU to ask.
record_pipeline() {
  local outcome=failed
  case $1 in
    0) outcome=succeeded ;;
    124) outcome=timed-out ;;
    130 | 143) outcome=interrupted ;;
  esac
  if [[ -n ${preempted-} ]]; then
    outcome=preempted
  fi
  [[ -d $RUN_DIR ]] || return 0
  printf 'record=tpulaunch-pipeline 1\nexit=%s\noutcome=%s\ndetail=%s\nended=%(%s)T\n' "$1" "$outcome" \
    "${preempted-}" -1 >"$RUN_DIR/pipeline.rec" 2>/dev/null || true
}
# on_exit STATUS: the script's last words on any way out, from the first step that uses the TPU
# on: an interruption is named as one (a program already started goes on: a run outlives its
# connection), and @left_running@ says what is still running and billing when the plan leaves it so.
on_exit() {
  record_pipeline "$1"
  if (($1 == 130 || $1 == 143)); then
    echo "tpulaunch: interrupted (status $1): a program already started goes on on the workers (a run outlives its connection); its log and results stay in its run folder there" >&2
  fi
  @left_running@
}
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'on_exit $?' EXIT
