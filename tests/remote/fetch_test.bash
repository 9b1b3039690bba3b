#!/usr/bin/env bash
# Behaviour of the fetch library (src/remote/fetch.bash) on its own, with fake downloads: at most
# PARALLEL in flight, every worker's status kept, failures reported by worker, and the same with
# the older-bash path (no `wait -n`). Run: bash tests/remote/fetch_test.bash
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# fake_download WORKER STATUS: counts the downloads in flight while it runs, then exits STATUS.
fake_download() {
  local worker=$1 status=$2
  mkdir -p "$work/running"
  : >"$work/running/$worker"
  find "$work/running" -type f | wc -l >>"$work/in-flight"
  sleep 0.05
  rm -f "$work/running/$worker"
  return "$status"
}

# One round: 6 workers, statuses below, 2 at a time.
round() {
  local any_done=$1
  (
    PARALLEL=2
    # shellcheck source=src/remote/fetch.bash
    source "$here/../../src/remote/fetch.bash"
    fetch_any_done=$any_done
    statuses=(0 1 0 3 0 0)
    for worker in "${!statuses[@]}"; do
      fetch_start "$worker" fake_download "$worker" "${statuses[worker]}"
    done
    fetch_wait_all
    printf '%s\n' "${!fetch_failed[*]}" "${fetch_failed[*]}" "${#fetch_pids[@]}"
  ) >"$work/result"
  local -a result
  mapfile -t result <"$work/result"
  [[ "${result[0]}" == "1 3" ]] || fail "any_done=$any_done: failed workers are '${result[0]}', expected '1 3'"
  [[ "${result[1]}" == "1 3" ]] || fail "any_done=$any_done: their statuses are '${result[1]}', expected '1 3'"
  [[ "${result[2]}" == 0 ]] || fail "any_done=$any_done: ${result[2]} downloads still tracked after fetch_wait_all"
  local most
  most=$(sort -n "$work/in-flight" | tail -n 1)
  ((most <= 2)) || fail "any_done=$any_done: $most downloads were in flight at once, PARALLEL is 2"
  [[ $(wc -l <"$work/in-flight") == 6 ]] || fail "any_done=$any_done: not every download ran"
  rm -f "$work/in-flight"
}

round 1
round 0
if ((failures > 0)); then
  exit 1
fi
echo "fetch library: ok"
