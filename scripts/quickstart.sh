#!/usr/bin/env bash
# Quick start: install what is missing, build, and run the main job on the example course:
# a CPU route, a multi-host pipeline, and a refusal. Nothing here touches a TPU or the network
# (the plan is printed, not run).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/setup.sh
cmake --preset ci >/dev/null
# The binary only: the tests are scripts/test.sh's business (building them here took most of the
# time on 2 cores).
cmake --build --preset ci --target tpulaunch

tpulaunch=build/ci/tpulaunch
course=examples/course
show() {
  printf '\n$ tpulaunch %s\n' "$*"
  "$tpulaunch" "$@"
}

show -C "$course" check
show -C "$course" plan distributed-02
show -C "$course" plan collective-update --slice v5litepod-16 --tpu my-pod --zone us-west4-a --run-id demo
# A refusal is the tool doing its job: exit 3, the rule and the reason on stderr.
set +e
show -C "$course" plan tpu-hello --slice v5litepod-16 --tpu my-pod --zone us-west4-a
status=$?
set -e
if [[ "$status" != 3 ]]; then
  echo "quickstart: expected the refusal to exit 3, got $status" >&2
  exit 1
fi
printf '(exit %s: refused, as it should be)\n' "$status"
printf '\nThe binary is %s. To call it as tpulaunch: cmake --install build/ci --prefix ~/.local\n' "$tpulaunch"
printf '(then ~/.local/bin/tpulaunch; ~/.local/bin must be on PATH), or put %s on PATH.\n' "$PWD/build/ci"
