#!/usr/bin/env bash
# End-to-end cases of the classifier's answers (issue 23 §4) through `classify`, `review` and
# `check`: a default parameter is no selection, platform names where JAX takes a device, evidence
# it cannot resolve fails closed, weak multi-host evidence, and PEP 263 source encodings. ctest
# runs one function per entry, as for cases.sh:
#   TPULAUNCH=build/ci/tpulaunch SOURCE_DIR=. bash tests/e2e/classifier_cases.sh case_classify__a_default_parameter_is_no_selection
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# lesson DIR ID: writes stdin to DIR's exercises folder as ID.py.
lesson() { cat >"$1/public/exercises/$2.py"; }

case_classify__a_default_parameter_is_no_selection() {
  local dir
  dir=$(course_copy classify-default-parameter)
  lesson "$dir" describe <<'PY'
import jax


def describe(backend="cpu"):
    return f"{backend}: {jax.devices()}"


pick = lambda backend="cpu": backend
print(describe())
PY
  run -C "$dir" classify describe
  expect_status 0
  expect_stdout_contains "suggested: single-host-compatible (a suggestion, not a review)"
  expect_stdout_contains "evidence:  none"
  run -C "$dir" review describe --class single-host-compatible --by alice
  expect_status 0
  run -C "$dir" check --route describe@v5litepod-8
  expect_status 0
  # Passing it is a selection, at the call.
  printf 'describe(backend="cpu")\n' >>"$dir/public/exercises/describe.py"
  run -C "$dir" classify describe
  expect_stdout_contains "public/exercises/describe.py:10:10: cpu-selection [backend-cpu-kwarg] describe(backend=\"cpu\")"
  [[ $(grep -c 'cpu-selection' <<<"$out") == 1 ]] || fail "only the call is a selection: $out"
}

case_classify__platform_names_where_a_device_goes() {
  local dir
  dir=$(course_copy classify-device-names)
  lesson "$dir" on_cpu <<'PY'
import os

import jax

os.environ.setdefault("JAX_DEFAULT_DEVICE", "cpu")
jax.config.update("jax_default_device", "cpu")
with jax.default_device("cpu"):
    print(jax.numpy.ones(3).sum())
PY
  run -C "$dir" classify on_cpu
  expect_status 0
  expect_stdout_contains "suggested: cpu-only (a suggestion, not a review)"
  expect_stdout_contains "public/exercises/on_cpu.py:5:1: cpu-selection [env-default-device-cpu] os.environ.setdefault(\"JAX_DEFAULT_DEVICE\", \"cpu\")"
  expect_stdout_contains "public/exercises/on_cpu.py:6:1: cpu-selection [config-default-device-cpu] jax.config.update(\"jax_default_device\", \"cpu\")"
  expect_stdout_contains "public/exercises/on_cpu.py:7:6: cpu-selection [default-device-cpu] with jax.default_device(\"cpu\"):"
  # Reviewed for a TPU, the gate and the router refuse it.
  run -C "$dir" review on_cpu --class single-host-compatible --by alice
  expect_status 3
  expect_one_refusal_line
  run -C "$dir" review on_cpu --class cpu-only --by alice
  expect_status 0
  run -C "$dir" plan on_cpu --slice v5litepod-8 --tpu my-pod --zone us-west4-a --run-id r1
  expect_status 3
  expect_stderr_contains "cpu-only-stays-on-cpu"
  # A device listed without "cpu" is no platform name.
  lesson "$dir" on_tpu <<'PY'
import jax

for device in jax.devices():
    with jax.default_device(device):
        print(jax.numpy.ones(3).sum())
PY
  run -C "$dir" classify on_tpu
  expect_stdout_contains "suggested: single-host-compatible"
}

case_check__unresolvable_evidence_fails_closed() {
  local dir
  dir=$(course_copy classify-unresolved)
  lesson "$dir" computed <<'PY'
import os

import jax

SETTINGS = {"JAX_PLATFORMS": "tpu"}
for key, value in SETTINGS.items():
    os.environ[key] = value
pick = getattr(jax, "devices")
print(pick())
PY
  run -C "$dir" classify computed --format json
  expect_status 0
  python3 - "$out" <<'PY' || fail "classify of unresolvable evidence: $out"
import json, sys
f = json.loads(sys.argv[1])["files"][0]
assert f["suggested_class"] is None, f
rows = [(r["rule"], r["line"], r["detail"]) for r in f["evidence"]]
assert rows == [
    ("platform-unresolved", 7, "the key of os.environ[...] is the name 'key', whose value is unknown: 'key' is bound "
                               "at line 6 by a parameter, a loop, an import or the like"),
    ("platform-unresolved", 8, "getattr() reaches jax.devices by name, a call the classifier does not read"),
], rows
PY
  # Recorded by hand as single-host-compatible (as a person editing the matrix might), the gate
  # and the router refuse it: the undecided rows are CPU-selection evidence until a reviewer
  # overrides exactly them.
  python3 - "$dir/execution-matrix.json" "$(sha256sum "$dir/public/exercises/computed.py" | cut -d' ' -f1)" <<'PY'
import json, sys
path, sha = sys.argv[1:]
m = json.load(open(path))
m["scripts"]["computed"] = {"class": "single-host-compatible", "sha256": sha}
json.dump(m, open(path, "w"), indent=2)
PY
  run -C "$dir" check
  expect_status 3
  expect_stdout_contains "public/exercises/computed.py:7: error: [contradiction] 'computed' is reviewed single-host-compatible but selects CPU devices here [platform-unresolved]"
  expect_stdout_contains "public/exercises/computed.py:8: error: [contradiction]"
  run -C "$dir" plan computed --slice v5litepod-8 --tpu my-pod --zone us-west4-a --run-id r1
  expect_status 3
  expect_stderr_contains "source-selects-cpu"
}

case_classify__weak_multi_host_evidence() {
  local dir
  dir=$(course_copy classify-weak-multi-host)
  lesson "$dir" weak <<'PY'
import jax
import jax.numpy as jnp
from jax.experimental import multihost_utils

if args.multi_host:
    jax.distributed.initialize()
print("process", jax.process_index(), "of", jax.process_count())
total = multihost_utils.process_allgather(jnp.ones(4))
assert total.shape == (4 * jax.device_count(),), "one row per device"
PY
  run -C "$dir" classify weak
  expect_status 0
  expect_stdout_contains "suggested: none: a reviewer must decide"
  expect_stdout_contains "why:       initializes distributed JAX at line 6 (conditionally) but lacks: per-process data, result check"
  expect_stdout_contains "public/exercises/weak.py:6:5: multi-host [distributed-initialize] jax.distributed.initialize()"
  expect_stdout_contains "      note: conditional: it runs only inside \`if args.multi_host:\` (line 5), so a host where that does not hold never joins"
  expect_stdout_contains "public/exercises/weak.py:7:18: multi-host [process-index-printed]"
  expect_stdout_contains "public/exercises/weak.py:9:1: multi-host [shape-assert] assert total.shape"
  expect_stdout_lacks "[result-check]"
  expect_stdout_lacks "[process-index]"
  # A multi-host review needs the markers the weak rows do not give.
  run -C "$dir" review weak --class multi-host-qualified --by alice
  expect_status 3
  expect_one_refusal_line
  expect_stderr_contains "per-process data"
  expect_stderr_contains "result check"
  # Stronger evidence: the index owns data, the assert checks the value; the condition remains.
  lesson "$dir" strong <<'PY'
import jax
import jax.numpy as jnp
from jax.experimental import multihost_utils

if args.multi_host:
    jax.distributed.initialize()
local = jnp.full(4, float(jax.process_index() + 1))
total = multihost_utils.process_allgather(local)
assert float(total.sum()) == 4.0 * sum(range(1, jax.process_count() + 1))
PY
  run -C "$dir" classify strong
  expect_stdout_contains "why:       initializes distributed JAX at line 6, but conditional: it runs only inside \`if args.multi_host:\` (line 5), so a host where that does not hold never joins; a reviewer must decide"
  # The review must say what makes the condition hold on every host (docs/matrix.md).
  run -C "$dir" review strong --class multi-host-qualified --by alice
  expect_status 3
  expect_stderr_contains "needs --initialize-condition REASON"
  run -C "$dir" review strong --class multi-host-qualified --by alice --initialize-condition "the course passes --multi-host on every host"
  expect_status 0
  sed -i 's/^if args.multi_host:$/if __name__ == "__main__":/' "$dir/public/exercises/strong.py"
  run -C "$dir" classify strong
  expect_stdout_contains "suggested: multi-host-qualified (a suggestion, not a review)"
  expect_stdout_lacks "note:"
}

case_check__pep263_declared_encodings() {
  local dir
  dir=$(course_copy classify-pep263)
  # Latin-1 bytes (0xe9 is 'é'), declared on line 2 after a shebang, as Python reads them.
  printf '#!/usr/bin/env python3\n# -*- coding: latin-1 -*-\nimport jax\nname = "caf\351"\nprint(name, jax.devices("cpu"))\n' \
    >"$dir/public/exercises/latin.py"
  run -C "$dir" classify latin --format json
  expect_status 0
  python3 - "$out" "$dir/public/exercises/latin.py" <<'PY' || fail "classify of a Latin-1 script: $out"
import hashlib, json, sys
f = json.loads(sys.argv[1])["files"][0]
assert f["sha256"] == hashlib.sha256(open(sys.argv[2], "rb").read()).hexdigest(), f  # the file's own bytes
assert f["suggested_class"] == "cpu-only", f
row = f["evidence"][0]
assert (row["rule"], row["line"], row["column"]) == ("devices-cpu", 5, 13), row
assert row["text"] == 'print(name, jax.devices("cpu"))', row
PY
  run -C "$dir" review latin --class cpu-only --by alice
  expect_status 0
  run -C "$dir" check --route latin@cpu
  expect_status 0
  # The vim form and cp1252 (0x93/0x94 are quotation marks there, control codes in Latin-1).
  printf '# vim: set fileencoding=cp1252 :\nprint("\223quoted\224")\n' >"$dir/public/exercises/windows.py"
  run -C "$dir" classify windows
  expect_status 0
  expect_stdout_contains "suggested: single-host-compatible"
  # An encoding tpulaunch does not read is refused by its name; undeclared Latin-1 keeps its error.
  printf '# -*- coding: shift_jis -*-\nprint("\202\240")\n' >"$dir/public/exercises/sjis.py"
  run -C "$dir" classify sjis
  expect_status 4
  expect_one_error_line
  expect_stderr_contains "public/exercises/sjis.py:1: script declares the encoding 'shift_jis' (PEP 263), which tpulaunch does not read"
  printf 'print("caf\351")\n' >"$dir/public/exercises/plain.py"
  run -C "$dir" classify plain
  expect_status 4
  expect_stderr_contains "public/exercises/plain.py:1:11: script is not UTF-8 text (byte 0xe9)"
  printf 'x = 1\nprint(x)\0\n' >"$dir/public/exercises/nul.py"
  run -C "$dir" classify nul
  expect_status 4
  expect_stderr_contains "public/exercises/nul.py:2:9: script contains a NUL byte (byte offset 14)"
  run -C "$dir" check
  expect_status 4 # a script that cannot be read, as plan says on the same file
  expect_stdout_contains "[unreadable] public/exercises/sjis.py:1: script 'sjis' declares the encoding 'shift_jis'"
  expect_stdout_contains "[unreadable] public/exercises/nul.py:2:9: script 'nul' contains a NUL byte"
  expect_stdout_lacks "latin.py"
}

if [[ $# -ne 1 ]] || ! declare -F "$1" >/dev/null; then
  echo "usage: classifier_cases.sh case_<command>__<name>" >&2
  exit 2
fi
"$1"
finish
