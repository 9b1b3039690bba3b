#!/usr/bin/env bash
# End-to-end cases of the GKE backend's plans (docs/gke.md): the same script, classes and rules as
# the TPU-VM route, placed as a JobSet by --gke CLUSTER --location LOCATION. Goldens for a
# v5litepod-16 (4 pods), v6e-16 x 2 slices and tpu7x-128; the refusals at the edge. The plans run
# through the real kubectl in tests/real-kubectl/. ctest runs one function per entry:
#   TPULAUNCH=build/ci/tpulaunch SOURCE_DIR=. bash tests/e2e/gke_cases.sh case_gke__v5litepod_16_text
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

GKE_FLAGS=(--gke lab-cluster --location us-east5-b --image example.com/tpu/jax:0.4.35
  --results gs://lab-bucket/runs --run-id r1)

case_gke__v5litepod_16_text() {
  run -C "$COURSE" plan collective-update --slice v5litepod-16 "${GKE_FLAGS[@]}"
  expect_status 0
  expect_stderr_empty
  expect_stdout_golden plan-gke-collective-update-v5litepod-16.txt
}

# The sh form, and --manifest writing the manifest the sh form's write step writes, byte for byte.
case_gke__v5litepod_16_sh_and_manifest() {
  local dir
  dir=$(workdir gke-sh)
  run -C "$COURSE" plan collective-update --slice v5litepod-16 "${GKE_FLAGS[@]}" --teardown --format sh \
    --manifest "$dir/manifest.json"
  expect_status 0
  expect_stdout_golden plan-gke-collective-update-v5litepod-16.sh
  python3 - "$dir/manifest.json" <<'PY' || fail "--manifest is not a List of the ConfigMap and the JobSet"
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["kind"] == "List" and [i["kind"] for i in doc["items"]] == ["ConfigMap", "JobSet"], doc["kind"]
PY
  run -C "$COURSE" plan collective-update --slice v5litepod-16 "${GKE_FLAGS[@]}" --format yaml
  expect_status 0
  python3 - "$dir/manifest.json" "$out" <<'PY' || fail "--format yaml is not the manifest"
import json, sys
docs = json.load(open(sys.argv[1]))["items"]
try:
    import yaml
except ImportError:
    sys.exit(0)
assert list(yaml.safe_load_all(sys.argv[2])) == docs
PY
}

case_gke__v6e_16_two_slices_json() {
  run -C "$COURSE" plan collective-update --slice v6e-16 --slices 2 "${GKE_FLAGS[@]}" --format json
  expect_status 0
  expect_stdout_golden plan-gke-collective-update-v6e-16-x2.json
}

# TPU7x: a route on GKE, refused with the reason on the TPU-VM route.
case_gke__tpu7x_128_is_a_gke_route() {
  run -C "$COURSE" plan collective-update --slice tpu7x-128 "${GKE_FLAGS[@]}"
  expect_status 0
  expect_stdout_golden plan-gke-collective-update-tpu7x-128.txt
  run -C "$COURSE" plan collective-update --slice tpu7x-128 --tpu lab-pod --zone us-east5-b
  expect_status 3
  expect_stderr_contains "use GKE"
}

# The same classes and rules: a single-host script on a multi-host slice is refused as on TPU VMs;
# TPU-VM placement flags, a missing --results or a bad cluster name are usage errors; yaml
# without --gke is one too.
case_gke__refusals() {
  run -C "$COURSE" plan tpu-hello --slice v5litepod-16 "${GKE_FLAGS[@]}"
  expect_status 3
  expect_stdout_empty
  run -C "$COURSE" plan collective-update --slice v5litepod-16 "${GKE_FLAGS[@]}" --tpu lab-pod
  expect_status 2
  expect_stderr_contains "--tpu names a TPU VM"
  run -C "$COURSE" plan collective-update --slice v5litepod-16 --gke lab-cluster --location us-east5-b \
    --image example.com/tpu/jax:0.4.35
  expect_status 2
  expect_stderr_contains "a GKE route needs --results"
  run -C "$COURSE" plan collective-update --slice v5litepod-16 "${GKE_FLAGS[@]}" --create
  expect_status 2
  expect_stderr_contains "steer a TPU VM"
  run -C "$COURSE" plan collective-update --slice v5litepod-16 --gke Lab_Cluster --location us-east5-b \
    --image example.com/tpu/jax:0.4.35 --results gs://lab-bucket/runs
  expect_status 2
  expect_stderr_contains "--gke 'Lab_Cluster' is not a GKE cluster name"
  run -C "$COURSE" plan collective-update --slice v5litepod-16 --tpu lab-pod --zone us-east5-b --format yaml
  expect_status 2
  expect_stdout_empty
}

if [[ $# -ne 1 ]] || ! declare -F "$1" >/dev/null; then
  echo "usage: gke_cases.sh case_<command>__<name>" >&2
  exit 2
fi
"$1"
finish
