TPULAUNCH_PROGRAM=@program@
if [[ -n ${TPULAUNCH:-} ]]; then
  TPULAUNCH_PROGRAM=$TPULAUNCH
fi
readonly TPULAUNCH_PROGRAM
if ! command -v "$TPULAUNCH_PROGRAM" >/dev/null; then
  echo "tpulaunch: error: the plan runs $TPULAUNCH_PROGRAM (to write its run guard, to verify), which cannot be run here; set TPULAUNCH to the tpulaunch to use" >&2
  exit 1
fi
step "tpulaunch's own steps will run $TPULAUNCH_PROGRAM (set TPULAUNCH to choose another)"
