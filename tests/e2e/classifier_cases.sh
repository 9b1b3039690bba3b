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
  expect_status 3
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
