#!/usr/bin/env bash
# End-to-end cases of lessons made of more than one file: a lesson.py that imports
# lesson_helpers.py from its folder. The classifier follows the import (the helper's CPU
# selection is the lesson's, at the helper's line); init marks the helper as a helper; check
# --strict does not ask for its review; review pins its digest, and a changed helper makes the
# lesson stale. ctest runs one function per entry, as for cases.sh:
#   TPULAUNCH=build/ci/tpulaunch SOURCE_DIR=. bash tests/e2e/lesson_cases.sh case_classify__follows_a_lesson_into_its_helper
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

TPU_FLAGS=(--tpu my-pod --zone us-west4-a --run-id r1)

# lesson_course NAME: a course folder (no matrix yet) with public/exercises/lesson.py, which
# imports make_mesh from lesson_helpers.py, whose line 5 selects CPU devices, and other.py, a
# lesson of one file.
lesson_course() {
  local dir
  dir=$(workdir "$1")
  mkdir -p "$dir/public/exercises"
  cat >"$dir/public/exercises/lesson.py" <<'PY'
import jax
from lesson_helpers import make_mesh

print(make_mesh())
PY
  cat >"$dir/public/exercises/lesson_helpers.py" <<'PY'
import jax


def make_mesh():
    return jax.devices("cpu")
PY
  printf 'import jax\nprint(jax.devices())\n' >"$dir/public/exercises/other.py"
  printf '%s\n' "$dir"
}

case_classify__follows_a_lesson_into_its_helper() {
  local dir helper_sha
  dir=$(lesson_course classify-lesson)
  helper_sha=$(sha256sum "$dir/public/exercises/lesson_helpers.py" | cut -d' ' -f1)
  # No matrix: the imports are followed below the script's own folder.
  run -C "$dir" classify public/exercises/lesson.py
  expect_status 0
  expect_stderr_empty
  expect_stdout_contains "  with:      public/exercises/lesson_helpers.py (sha256 $helper_sha)"
  expect_stdout_contains "  suggested: cpu-only (a suggestion, not a review)"
  expect_stdout_contains "  why:       selects CPU devices at lesson_helpers.py line 5 (devices-cpu)"
  expect_stdout_contains '  public/exercises/lesson_helpers.py:5:12: cpu-selection [devices-cpu] return jax.devices("cpu")'
  run -C "$dir" classify public/exercises/lesson.py --format json
  expect_status 0
  python3 - "$out" "$helper_sha" <<'PY' || fail "classify --format json lacks the helper's file and row"
import json, sys
f = json.loads(sys.argv[1])["files"][0]
assert f["course_files"] == [{"path": "public/exercises/lesson_helpers.py", "staged": "lesson_helpers.py",
                              "sha256": sys.argv[2], "declared": False}], f
e = f["evidence"][0]
assert (e["file"], e["line"], e["rule"]) == ("public/exercises/lesson_helpers.py", 5, "devices-cpu"), e
assert f["suggested_class"] == "cpu-only" and f["helper"] is False, f
PY
  # In a course whose matrix marks the helper: classify says what it is, and suggests nothing.
  run -C "$dir" init
  expect_status 0
  run -C "$dir" classify lesson_helpers
  expect_status 0
  expect_stdout_contains "  suggested: none: a reviewer must decide"
  expect_stdout_contains "  why:       a helper module (the matrix's \"helpers\"), not a script"
  run -C "$dir" classify lesson
  expect_stdout_contains "  suggested: cpu-only"
}

case_init__marks_imported_modules_as_helpers() {
  local dir
  dir=$(lesson_course init-lesson)
  run -C "$dir" init
  expect_status 0
  expect_stdout_contains "(2 scripts found, none reviewed; 1 course file they import listed as \"helpers\", not scripts: public/exercises/lesson_helpers.py)"
  python3 - "$dir/execution-matrix.json" <<'PY' || fail "init did not list the helper"
import json, sys
m = json.load(open(sys.argv[1]))
assert m == {"version": 1, "exercises_dir": "public/exercises", "helpers": ["public/exercises/lesson_helpers.py"],
             "scripts": {}}, m
PY
  # check --strict asks for the two lessons' reviews, not the helper's.
  run -C "$dir" check --strict
  expect_status 3
  expect_stdout_contains "[unreviewed] 'lesson' has no matrix entry"
  expect_stdout_contains "[unreviewed] 'other' has no matrix entry"
  expect_stdout_lacks "lesson_helpers' has no matrix entry"
  expect_stdout_contains "check: 2 scripts, 0 entries: 2 errors, 0 warnings"
  run -C "$dir" review lesson --class cpu-only --by alice
  expect_status 0
  run -C "$dir" review other --class single-host-compatible --by alice
  expect_status 0
  run -C "$dir" check --strict
  expect_status 0
  expect_stdout_contains "check: 2 scripts, 2 entries: 0 errors, 0 warnings"
  # A helper is never reviewed, planned or listed as a script.
  run -C "$dir" review lesson_helpers --class cpu-only --by alice
  expect_status 2
  expect_stdout_empty
  expect_one_error_line
  expect_stderr_contains "cannot review 'lesson_helpers': 'lesson_helpers' is a helper (the matrix's \"helpers\" name"
  run -C "$dir" plan lesson_helpers
  expect_status 3
  expect_stderr_contains "is a helper"
  # Without the mark, the helper is a script again, and --strict says so.
  python3 - "$dir/execution-matrix.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
del m["helpers"]
json.dump(m, open(sys.argv[1], "w"), indent=2)
PY
  run -C "$dir" check --strict
  expect_status 3
  expect_stdout_contains "[unreviewed] 'lesson_helpers' has no matrix entry"
}

case_review__pins_the_helpers_digest() {
  local dir helper_sha
  dir=$(lesson_course review-lesson)
  helper_sha=$(sha256sum "$dir/public/exercises/lesson_helpers.py" | cut -d' ' -f1)
  run -C "$dir" init
  # A TPU class over the helper's CPU selection is refused, naming the helper's line.
  run -C "$dir" review lesson --class single-host-compatible --by alice
  expect_status 3
  expect_one_refusal_line
  expect_stderr_contains "'lesson' selects CPU devices (lesson_helpers.py line 5 (devices-cpu))"
  run -C "$dir" review lesson --class cpu-only --by alice
  expect_status 0
  expect_stdout_contains "  with public/exercises/lesson_helpers.py (sha256 $helper_sha)"
  python3 - "$dir/execution-matrix.json" "$helper_sha" <<'PY' || fail "review did not pin the helper"
import json, sys
e = json.load(open(sys.argv[1]))["scripts"]["lesson"]
assert e["files"] == [{"path": "public/exercises/lesson_helpers.py", "sha256": sys.argv[2]}], e
assert e["evidence"] == ["cpu-selection devices-cpu at lesson_helpers.py line 5"], e
PY
  run -C "$dir" check --route lesson@cpu
  expect_status 0
  run -C "$dir" plan lesson
  expect_status 0
  # The helper changes: the lesson is stale, in check and in plan, until reviewed again.
  printf '# a comment\n' >>"$dir/public/exercises/lesson_helpers.py"
  run -C "$dir" check
  expect_status 3
  expect_stdout_contains "[stale-digest] 'lesson' changed since it was reviewed: its course file public/exercises/lesson_helpers.py changed (sha256 ${helper_sha:0:12} reviewed, "
  run -C "$dir" plan lesson
  expect_status 3
  expect_stderr_contains "review-required: [stale-digest]"
  expect_stderr_contains "its course file public/exercises/lesson_helpers.py changed"
  run -C "$dir" review lesson --class cpu-only --by alice
  expect_status 0
  run -C "$dir" check
  expect_status 0
  # A new course module imported by the helper joins the lesson: stale again until reviewed.
  printf 'import jax\n' >"$dir/public/exercises/mesh_utils.py"
  printf 'import mesh_utils\n' >>"$dir/public/exercises/lesson_helpers.py"
  run -C "$dir" review lesson --class cpu-only --by alice
  expect_status 0
  expect_stdout_contains "  with public/exercises/mesh_utils.py (sha256 "
  printf 'x = 1\n' >>"$dir/public/exercises/mesh_utils.py"
  run -C "$dir" check
  expect_status 3
  expect_stdout_contains "its course file public/exercises/mesh_utils.py changed"
}

case_review__override_of_a_helpers_row_covers_that_row() {
  local dir
  dir=$(lesson_course override-lesson)
  run -C "$dir" init
  run -C "$dir" review lesson --class single-host-compatible --by alice --override "the CPU mesh is only for --simulate"
  expect_status 0
  expect_stdout_contains "  override: devices-cpu at lesson_helpers.py line 5: the CPU mesh is only for --simulate"
  python3 - "$dir/execution-matrix.json" <<'PY' || fail "the override does not name the helper"
import json, sys
e = json.load(open(sys.argv[1]))["scripts"]["lesson"]
assert e["overrides"] == [{"rule": "devices-cpu", "line": 5, "file": "lesson_helpers.py",
                           "reason": "the CPU mesh is only for --simulate"}], e
PY
  run -C "$dir" check --route lesson@v5litepod-8
  expect_status 0
  run -C "$dir" plan lesson --slice v5litepod-8 "${TPU_FLAGS[@]}"
  expect_status 0
  # The same rule at the same line of the script itself is another row: not covered.
  python3 - "$dir/execution-matrix.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
del m["scripts"]["lesson"]["overrides"][0]["file"]
json.dump(m, open(sys.argv[1], "w"), indent=2)
PY
  run -C "$dir" check
  expect_status 3
  expect_stdout_contains "public/exercises/lesson_helpers.py:5: error: [contradiction] 'lesson' is reviewed single-host-compatible but selects CPU devices in a file it imports [devices-cpu]"
  run -C "$dir" check --format github
  expect_stdout_contains "public/exercises/lesson_helpers.py,line=5"
  run -C "$dir" plan lesson --slice v5litepod-8 "${TPU_FLAGS[@]}"
  expect_status 3
  expect_stderr_contains "tpulaunch: refused: source-selects-cpu:"
}

case_classify__a_helper_leading_outside_the_course_is_refused() {
  local dir
  dir=$(lesson_course outside-lesson)
  mkdir -p "$dir/elsewhere"
  mv "$dir/public/exercises/lesson_helpers.py" "$dir/elsewhere/"
  ln -s ../../elsewhere/lesson_helpers.py "$dir/public/exercises/lesson_helpers.py"
  printf '{"version": 1, "exercises_dir": "public/exercises", "scripts": {}}\n' >"$dir/execution-matrix.json"
  for command in "classify lesson" "review lesson --class cpu-only --by alice"; do
    # shellcheck disable=SC2086 # word splitting of $command is intended
    run -C "$dir" $command
    expect_status 4
    expect_stdout_empty
    expect_one_error_line
    expect_stderr_contains "script 'lesson': public/exercises/lesson_helpers.py leads outside the folder public/exercises"
  done
}

# doors_course NAME: a course whose lesson.py loads common/backends.py (which selects the CPU) by
# name with importlib, and whose other.py uses only make_mesh of common/mesh.py, which also has a
# CPU-selecting function nothing calls.
doors_course() {
  local dir
  dir=$(workdir "$1")
  mkdir -p "$dir/public/exercises/common"
  : >"$dir/public/exercises/common/__init__.py"
  printf 'import jax\njax.config.update("jax_platforms", "cpu")\n' >"$dir/public/exercises/common/backends.py"
  cat >"$dir/public/exercises/common/mesh.py" <<'PY'
import jax


def make_mesh():
    return jax.devices()


def cpu_debug_devices():
    return jax.devices("cpu")
PY
  cat >"$dir/public/exercises/lesson.py" <<'PY'
import importlib

import jax

backends = importlib.import_module("common.backends")
print(jax.devices())
PY
  cat >"$dir/public/exercises/other.py" <<'PY'
import jax
from common.mesh import make_mesh

print(make_mesh())
PY
  printf '%s\n' "$dir"
}

case_classify__follows_code_loaded_by_a_call() {
  local dir sha
  dir=$(doors_course classify-doors)
  sha=$(sha256sum "$dir/public/exercises/common/backends.py" | cut -d' ' -f1)
  run -C "$dir" classify public/exercises/lesson.py
  expect_status 0
  expect_stdout_contains "  with:      public/exercises/common/backends.py (sha256 $sha)"
  expect_stdout_contains "  suggested: cpu-only (a suggestion, not a review)"
  expect_stdout_contains '  public/exercises/common/backends.py:2:1: cpu-selection [config-platforms-cpu] jax.config.update("jax_platforms", "cpu")'
  # A module named by a variable: undecided, naming the call and its line; never a confident class.
  printf 'import importlib\nname = input()\nm = importlib.import_module(name)\n' >"$dir/public/exercises/lesson.py"
  run -C "$dir" classify public/exercises/lesson.py --format json
  expect_status 0
  python3 - "$out" <<'PY' || fail "the unresolved import is not an undecided row"
import json, sys
f = json.loads(sys.argv[1])["files"][0]
assert f["suggested_class"] is None, f
e = [r for r in f["evidence"] if r["rule"] == "import-unresolved"]
assert len(e) == 1 and e[0]["line"] == 3 and e[0]["uncalled_function"] is None, f["evidence"]
assert e[0]["detail"].startswith("importlib.import_module() is given `name`, not a string literal"), e[0]
PY
  # A path that names a course file is followed; one that names none stays undecided.
  printf 'import runpy\nrunpy.run_path("common/backends.py")\n' >"$dir/public/exercises/lesson.py"
  run -C "$dir" classify public/exercises/lesson.py
  expect_stdout_contains "  with:      public/exercises/common/backends.py (sha256 $sha)"
  expect_stdout_lacks "import-unresolved"
  printf 'import runpy\nrunpy.run_path("common/gone.py")\n' >"$dir/public/exercises/lesson.py"
  run -C "$dir" classify public/exercises/lesson.py
  expect_stdout_contains "public/exercises/lesson.py:2:1: cpu-selection [import-unresolved] runpy.run_path(\"common/gone.py\")"
  expect_stdout_contains "cannot tell: runpy.run_path() loads 'common/gone.py', which names no file of the course"
}

case_init__counts_a_module_loaded_by_a_call_as_a_helper() {
  local dir
  dir=$(doors_course init-doors)
  run -C "$dir" init
  expect_status 0
  python3 - "$dir/execution-matrix.json" <<'PY' || fail "init did not list the loaded module as a helper"
import json, sys
m = json.load(open(sys.argv[1]))
assert m["helpers"] == ["public/exercises/common/__init__.py", "public/exercises/common/backends.py",
                        "public/exercises/common/mesh.py"], m
PY
  run -C "$dir" check --strict
  expect_stdout_contains "[unreviewed] 'lesson' has no matrix entry"
  expect_stdout_lacks "'common/backends' has no matrix entry"
}

case_review__a_cpu_selection_in_a_function_nothing_calls_needs_no_override() {
  local dir
  dir=$(doors_course uncalled-doors)
  run -C "$dir" init
  run -C "$dir" classify other
  expect_status 0
  expect_stdout_contains "  suggested: single-host-compatible (a suggestion, not a review)"
  expect_stdout_contains '  public/exercises/common/mesh.py:9:12: cpu-selection [devices-cpu] return jax.devices("cpu")'
  expect_stdout_contains "      note: uncalled: it is in cpu_debug_devices() (common/mesh.py line 8), which nothing in the lesson calls, so it counts for nothing"
  run -C "$dir" review other --class single-host-compatible --by alice
  expect_status 0
  run -C "$dir" check --route other@v5litepod-8
  expect_status 0
  run -C "$dir" plan other --slice v5litepod-8 "${TPU_FLAGS[@]}"
  expect_status 0
  # Once the lesson calls it, it counts: check and plan say the review is contradicted.
  printf 'from common.mesh import cpu_debug_devices\ncpu_debug_devices()\n' >>"$dir/public/exercises/other.py"
  run -C "$dir" review other --class single-host-compatible --by alice
  expect_status 3
  expect_stderr_contains "'other' selects CPU devices (common/mesh.py line 9 (devices-cpu))"
}

case_check__a_missing_module_of_a_course_package_is_an_error() {
  local dir
  dir=$(doors_course missing-doors)
  run -C "$dir" init
  run -C "$dir" review other --class single-host-compatible --by alice
  expect_status 0
  # The module goes; a copy left elsewhere must never be what runs.
  rm "$dir/public/exercises/common/mesh.py"
  local message="public/exercises/other.py:2: script 'other' imports common.mesh, but the course package public/exercises/common/ has no module 'mesh' (no mesh.py, no mesh/ in it)"
  run -C "$dir" check
  expect_status 4
  expect_stdout_contains "public/exercises/other.py:2: error: [unreadable] $message"
  for command in "classify other" "review other --class single-host-compatible --by alice" "plan other"; do
    # shellcheck disable=SC2086 # word splitting of $command is intended
    run -C "$dir" $command
    expect_status 4
    expect_stdout_empty
    expect_one_error_line
    expect_stderr_contains "tpulaunch: error: $message"
  done
}

case_classify__a_platform_imported_from_a_course_module() {
  local dir
  dir=$(doors_course constant-doors)
  printf 'PLATFORM = "cpu"\n' >"$dir/public/exercises/common/cfg.py"
  printf 'import jax\nfrom common.cfg import PLATFORM\njax.config.update("jax_platforms", PLATFORM)\n' \
    >"$dir/public/exercises/lesson.py"
  run -C "$dir" classify public/exercises/lesson.py
  expect_status 0
  expect_stdout_contains "  suggested: cpu-only (a suggestion, not a review)"
  expect_stdout_contains "public/exercises/lesson.py:3:1: cpu-selection [config-platforms-cpu]"
  expect_stdout_contains "      note: 'PLATFORM' is 'cpu', bound in common.cfg (common/cfg.py line 1)"
}

if [[ $# -ne 1 ]] || ! declare -F "$1" >/dev/null; then
  echo "usage: lesson_cases.sh case_<command>__<name>" >&2
  exit 2
fi
"$1"
finish
