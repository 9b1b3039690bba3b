#!/usr/bin/env bash
# End-to-end cases of a TPU on a private network (docs/private-network.md): --internal-ip on every
# ssh and scp, --tunnel-through-iap on gcloud's alpha track, and the two refused together as gcloud
# refuses them. The sh forms run against the stand-in, which takes --internal-ip on the GA track
# and --tunnel-through-iap only under `alpha`, as the real gcloud does. ctest runs one function per
# entry, as for cases.sh:
#   TPULAUNCH=build/ci/tpulaunch SOURCE_DIR=. bash tests/e2e/network_cases.sh case_net__both_refused
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PIPE_FLAGS=(--tpu lab-pod --zone us-west4-a --project lab-project-1 --run-id r1)

# ssh_scp_argvs DIR: the argv of every ssh and scp call made on this machine, one JSON array a line.
ssh_scp_argvs() { standin_calls "$1" | grep -E '"(ssh|scp)"' | grep -v '"worker"' || true; }

# plan_and_run DIR FLAGS...: plans the stand-in lesson on v5litepod-16 with FLAGS as an sh script,
# runs it against the stand-in, and expects both to succeed and the receipts to be verified.
plan_and_run() {
  local dir=$1
  shift
  run -C "$dir" plan standin-lesson --slice v5litepod-16 "${PIPE_FLAGS[@]}" "$@" --format sh
  expect_status 0
  printf '%s\n' "$out" >"$dir/run.sh"
  run_pipeline "$dir" run.sh
  expect_status 0
  expect_stdout_contains "verified:"
}

case_net__both_refused() {
  local dir
  dir=$(bare_course net-both)
  run -C "$dir" plan standin-lesson --slice v5litepod-16 "${PIPE_FLAGS[@]}" --internal-ip --tunnel-through-iap
  expect_status 2
  expect_one_error_line "at most one of --internal-ip | --tunnel-through-iap can be specified"
}

case_net__internal_ip_on_every_ssh_and_scp() {
  local dir line
  dir=$(standin_course net-internal 4)
  run -C "$dir" plan standin-lesson --slice v5litepod-16 "${PIPE_FLAGS[@]}" --internal-ip
  expect_status 0
  expect_stdout_contains "--internal-ip: every ssh and scp goes to the workers' internal addresses"
  expect_stdout_lacks "tunnel-through-iap"
  # Every ssh and scp line of the text plan carries the flag, on the GA track.
  while IFS= read -r line; do
    [[ "$line" == *" --internal-ip"* ]] || fail "an ssh/scp call without --internal-ip: $line"
    [[ "$line" != *" alpha "* ]] || fail "--internal-ip left the GA track: $line"
  done < <(grep -E 'tpu-vm (ssh|scp) ' <<<"$out")
  grep -qE 'tpu-vm (ssh|scp) ' <<<"$out" || fail "no ssh or scp call in the plan"
  plan_and_run "$dir" --internal-ip --bootstrap
  [[ -n "$(ssh_scp_argvs "$dir")" ]] || fail "the stand-in saw no ssh or scp call"
  while IFS= read -r line; do
    [[ "$line" == *'"--internal-ip"'* ]] || fail "the stand-in saw a call without --internal-ip: $line"
  done < <(ssh_scp_argvs "$dir")
}

case_net__iap_on_the_alpha_track() {
  local dir line
  dir=$(standin_course net-iap 4)
  run -C "$dir" plan standin-lesson --slice v5litepod-16 "${PIPE_FLAGS[@]}" --tunnel-through-iap
  expect_status 0
  expect_stdout_contains "alpha track only"
  expect_stdout_contains "35.235.240.0/20"
  while IFS= read -r line; do
    [[ "$line" == *"gcloud alpha compute tpus tpu-vm "* ]] || fail "an ssh/scp call off the alpha track: $line"
    [[ "$line" == *" --tunnel-through-iap"* ]] || fail "an ssh/scp call without --tunnel-through-iap: $line"
  done < <(grep -E 'tpu-vm (ssh|scp) ' <<<"$out")
  grep -qE 'tpu-vm (ssh|scp) ' <<<"$out" || fail "no ssh or scp call in the plan"
  plan_and_run "$dir" --tunnel-through-iap --bootstrap
  [[ -n "$(ssh_scp_argvs "$dir")" ]] || fail "the stand-in saw no ssh or scp call"
  while IFS= read -r line; do
    [[ "$line" == '["alpha", '*'"--tunnel-through-iap"'* ]] || fail "the stand-in saw a call off the alpha track: $line"
  done < <(ssh_scp_argvs "$dir")
}

# --internal-ips: asked for when the TPU is made (the create call only; refused for an existing
# TPU), with the notes on reaching such workers and on PyPI through Cloud NAT for --bootstrap.
case_net__internal_ips_when_the_tpu_is_made() {
  local dir
  dir=$(bare_course net-internal-ips)
  run -C "$dir" plan standin-lesson --slice v5litepod-16 "${PIPE_FLAGS[@]}" --internal-ips
  expect_status 2
  expect_one_error_line "--internal-ips asks for workers without external addresses when the TPU is made: it needs --create or --queued"
  run -C "$dir" plan standin-lesson --slice v5litepod-16 "${PIPE_FLAGS[@]}" --create --internal-ips --bootstrap
  expect_status 0
  expect_stdout_contains "gcloud compute tpus tpu-vm create lab-pod --zone=us-west4-a --accelerator-type=v5litepod-16 --version=v2-alpha-tpuv5-lite --async --internal-ips --metadata=tpulaunch_run="
  expect_stdout_contains "--internal-ips: the workers get no external addresses"
  expect_stdout_contains "reach only through Cloud NAT"
  [[ "$(grep -c -- '--internal-ips' <<<"$out")" == 3 ]] || fail "--internal-ips beyond the create line and the two notes"
  plan_and_run "$dir" --create --internal-ips --poll 1s --bootstrap --teardown
  standin_calls "$dir" | grep '"create"' | grep -q '"--internal-ips"' || fail "the stand-in's create call had no --internal-ips"
}

if [[ $# -ne 1 ]] || ! declare -F "$1" >/dev/null; then
  echo "usage: network_cases.sh case_<command>__<name>" >&2
  exit 2
fi
"$1"
finish
