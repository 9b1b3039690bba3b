#!/usr/bin/env bash
# Self-test of the gcloud stand-in (tests/gcloud-standin/gcloud): its grammar
# and behaviour against docs/gcloud.md (§1.3, §2.2, §3, §7),
# plus the fake jax and the stand-in lessons.  Prints "N passed, 0 failed" and
# exits non-zero on any failure.  Needs bash and python3 only.  The checks are in
# parts by concept (each stand-in file stays under 600 lines), sourced in order
# after the shared helpers of selftest_lib.sh: selftest_workers.sh,
# selftest_grammar.sh, selftest_storage.sh, selftest_life.sh, selftest_mark.sh,
# selftest_multislice.sh.
#
# Remote commands are single-quoted on purpose: their $VARS must expand on the
# (stand-in) worker, not here.
# shellcheck disable=SC2016
set -u -o pipefail

# selftest.sh [all|mark|rest]: every part (the default), only selftest_mark.sh (which stands
# alone), or every part but it: ctest runs the last two side by side (cli.standin.selftest-mark,
# cli.standin.selftest), so that each stays well inside its time limit on a loaded machine.
WHICH=${1:-all}
case "$WHICH" in
  all | mark | rest) ;;
  *) echo "usage: selftest.sh [all|mark|rest]" >&2; exit 2 ;;
esac

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=selftest_lib.sh
. "$HERE/selftest_lib.sh"

if [ "$WHICH" != mark ]; then
  # shellcheck source=selftest_workers.sh
  . "$HERE/selftest_workers.sh"
  # shellcheck source=selftest_grammar.sh
  . "$HERE/selftest_grammar.sh"
  # shellcheck source=selftest_storage.sh
  . "$HERE/selftest_storage.sh"
  # shellcheck source=selftest_life.sh
  . "$HERE/selftest_life.sh"
fi
if [ "$WHICH" != rest ]; then
  # shellcheck source=selftest_mark.sh
  . "$HERE/selftest_mark.sh"
fi

if [ "$WHICH" != mark ]; then
  # ---------------------------------------------------------------- multi-node queued resources
  # After the calls.jsonl check: it wants the calls in start order, and two slices' runs overlap.
  # shellcheck source=selftest_multislice.sh
  . "$HERE/selftest_multislice.sh"
fi

# The failed checks' names again at the end, where a log cut to its tail (ctest's, CI's) shows them.
for name in "${failed_names[@]+"${failed_names[@]}"}"; do printf 'FAILED: %s\n' "$name"; done
printf '%d passed, %d failed\n' "$passed" "$failed"
[ "$failed" -eq 0 ]
