# require_mark NODE: stops (@not_ours@) unless the TPU named NODE carries this plan's mark, the
# metadata value tpulaunch_run=$MARK that the plan's create call set: a TPU of that name that this
# plan did not create (someone else's, made before it) is never touched. @describe@ is a case on
# NODE with one describe call a node, which prints the mark (an empty line when there is none).
require_mark() {
  local found
  found=$(@describe@) || found=""
  if [[ $found != "$MARK" ]]; then
    echo "tpulaunch: error: $1 does not carry this plan's mark (metadata tpulaunch_run=$MARK; it has '${found//[^[:print:]]/?}'): it is not the TPU this plan created, so nothing was touched" >&2
    exit @not_ours@
  fi
}
