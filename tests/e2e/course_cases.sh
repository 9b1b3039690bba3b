#!/usr/bin/env bash
# End-to-end cases of what a course author meets, from `init` to CI annotations: the one
# override rule across review, plan and check; scripts in subfolders; a symlinked exercises
# folder; classify past an unreadable file; the matrix round trip; "did you mean" at every typo;
# and annotation paths under -C. ctest runs one function per entry, as for cases.sh:
#   TPULAUNCH=build/ci/tpulaunch SOURCE_DIR=. bash tests/e2e/course_cases.sh case_init__writes_a_minimal_matrix
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

TPU_FLAGS=(--tpu my-pod --zone us-west4-a --run-id r1)

# add_entry DIR ID CLASS [OVERRIDES_JSON]: records ID with the file's digest, by hand (as a
# person editing the matrix would, without review's checks).
add_entry() {
  local sha
  sha=$(sha256sum "$1/public/exercises/$2.py" | cut -d' ' -f1)
  python3 - "$1/execution-matrix.json" "$2" "$3" "$sha" "${4:-[]}" <<'PY'
import json, sys
path, sid, cls, sha, overrides = sys.argv[1:]
m = json.load(open(path))
m["scripts"][sid] = {"class": cls, "sha256": sha, "overrides": json.loads(overrides)}
json.dump(m, open(path, "w"), indent=2)
PY
}

# --- one override rule for review, plan and check ---------------------------------------------

case_review__override_rule_across_review_plan_check() {
  local dir before
  dir=$(course_copy override-rule)
  # Per-process data, a collective and a result check, but no jax.distributed.initialize().
  printf 'import jax\nx = jax.process_index()\ny = jax.lax.psum(x, "i")\nassert y\n' >"$dir/public/exercises/no-init.py"
  before=$(sha256sum "$dir/execution-matrix.json")
  run -C "$dir" review no-init --class multi-host-qualified --by alice --override "initialize is done by the launcher"
  expect_status 3
  expect_stdout_empty
  expect_one_refusal_line
  expect_stderr_contains "an override cannot stand in for initialize"
  expect_stderr_contains "(source-lacks-initialize)"
  [[ "$(sha256sum "$dir/execution-matrix.json")" == "$before" ]] || fail "a refused review changed the matrix"
  # Written by hand anyway: neither check nor plan honours what review would not record.
  add_entry "$dir" no-init multi-host-qualified '[{"rule": "missing:initialize", "line": 0, "reason": "launcher"}]'
  run -C "$dir" check
  expect_status 3
  expect_stdout_contains "[contradiction] 'no-init' is reviewed multi-host-qualified but has no initialize evidence (no override can cover it"
  run -C "$dir" plan no-init --slice v5litepod-16 "${TPU_FLAGS[@]}"
  expect_status 3
  expect_stderr_contains "tpulaunch: refused: source-lacks-initialize:"
  # A marker that may be overridden: review records it, check and plan honour exactly that.
  printf 'import jax\njax.distributed.initialize()\nprint(jax.devices())\n' >"$dir/public/exercises/smoke.py"
  run -C "$dir" review smoke --class multi-host-qualified --by alice --override "a smoke test of the cluster"
  expect_status 0
  expect_stdout_contains "override: no per-process data evidence anywhere in the source (missing:per-process data): a smoke test of the cluster"
  run -C "$dir" check
  expect_stdout_lacks "'smoke' is reviewed"
  run -C "$dir" plan smoke --slice v5litepod-16 "${TPU_FLAGS[@]}"
  expect_status 0
  # CPU evidence: the override covers that rule and line, and nothing else.
  run -C "$dir" review distributed-02 --class single-host-compatible --by alice --override "CPU mesh only under --simulate"
  expect_status 0
  run -C "$dir" check
  expect_stdout_lacks "'distributed-02' is reviewed"
  run -C "$dir" plan distributed-02 --slice v5litepod-8 "${TPU_FLAGS[@]}"
  expect_status 0
  echo "jax.devices('cpu')" >>"$dir/public/exercises/smoke.py"
  add_entry "$dir" smoke single-host-compatible
  run -C "$dir" plan smoke --slice v5litepod-8 "${TPU_FLAGS[@]}"
  expect_status 3
  # The count and the rows shown agree.
  expect_stderr_contains "selects CPU devices in its source (1 finding)"
  [[ $(grep -c 'cpu-selection \[devices-cpu\]' <<<"$err") == 1 ]] || fail "expected exactly one evidence line: $err"
}

case_review__re_review_replaces_reason_and_note() {
  local dir
  dir=$(course_copy re-review)
  run -C "$dir" review tpu-hello --class single-host-compatible --by alice --note "first look"
  expect_status 0
  run -C "$dir" review tpu-hello --class single-host-compatible --by bob
  expect_status 0
  python3 - "$dir/execution-matrix.json" <<'PY' || fail "a re-review kept the previous reviewer's words"
import json, sys
e = json.load(open(sys.argv[1]))["scripts"]["tpu-hello"]
assert e["reviewed_by"] == "bob", e
assert "note" not in e and "reason" not in e, e
PY
}

# --- nothing in the exercises folder is skipped silently ----------------------------------------

case_check__subfolder_scripts() {
  local dir
  dir=$(course_copy subfolders)
  mkdir -p "$dir/public/exercises/advanced/deeper" "$dir/public/exercises/.drafts" "$dir/elsewhere"
  printf 'import jax\nprint(jax.devices("cpu"))\n' >"$dir/public/exercises/advanced/sub_lesson.py"
  printf 'import jax\nprint(jax.devices())\n' >"$dir/public/exercises/advanced/deeper/on_tpu.py"
  printf 'print(1)\n' >"$dir/public/exercises/.drafts/draft.py"
  printf 'print(2)\n' >"$dir/elsewhere/linked.py"
  ln -s ../../elsewhere "$dir/public/exercises/linked"
  run -C "$dir" check
  expect_status 0
  expect_stdout_contains "warning: [unreviewed] 'advanced/sub_lesson' has no matrix entry"
  expect_stdout_contains "warning: [unreviewed] 'advanced/deeper/on_tpu' has no matrix entry"
  expect_stdout_contains "public/exercises/.drafts: warning: [invalid-name] the folder name cannot be part of a script id"
  expect_stdout_contains "public/exercises/linked: warning: [linked-folder] a symlink to a folder is not followed"
  expect_stdout_contains "check: 8 scripts, 4 entries: 0 errors, 5 warnings"
  run -C "$dir" check --strict
  expect_status 3
  run -C "$dir" classify advanced/sub_lesson
  expect_status 0
  expect_stdout_contains "public/exercises/advanced/sub_lesson.py:2:7: cpu-selection [devices-cpu]"
  run -C "$dir" review advanced/sub_lesson --class cpu-only --by alice
  expect_status 0
  expect_stdout_contains "recorded advanced/sub_lesson as cpu-only"
  run -C "$dir" review public/exercises/advanced/deeper/on_tpu.py --class single-host-compatible --by alice
  expect_status 0
  run -C "$dir" check --route advanced/sub_lesson@cpu --route advanced/deeper/on_tpu@v5litepod-8
  expect_status 0
  expect_stdout_lacks "advanced/sub_lesson' has no matrix entry"
  # The CPU route runs the file where it is and keeps its receipt under the id's path, creating
  # the folder first; the sh form runs from any folder.
  run -C "$dir" plan advanced/sub_lesson
  expect_status 0
  expect_stdout_contains "mkdir -p advanced/"
  expect_stdout_contains "python3 public/exercises/advanced/sub_lesson.py | tee advanced/sub_lesson-cpu.txt"
  run -C "$dir" plan advanced/sub_lesson --format sh
  printf '%s\n' "$out" >"$dir/cpu.sh"
  mkdir -p "$dir/fake"
  printf 'def devices(backend=None):\n    return [backend + ":0"]\n' >"$dir/fake/jax.py"
  (cd "$WORK_ROOT" && PYTHONPATH="$dir/fake" bash "$dir/cpu.sh" >/dev/null 2>&1) || fail "the CPU route failed"
  grep -q "cpu:0" "$dir/advanced/sub_lesson-cpu.txt" 2>/dev/null || fail "no CPU receipt at advanced/sub_lesson-cpu.txt"
  # A TPU route stages it under its course path in the run's stage folder and runs it from there
  # (the pipeline case runs one end to end).
  run -C "$dir" plan advanced/deeper/on_tpu --slice v5litepod-8 "${TPU_FLAGS[@]}"
  expect_status 0
  expect_stdout_contains "--file public/exercises/advanced/deeper/on_tpu.py "
  expect_stdout_contains "-- public/exercises/advanced/deeper/on_tpu.py'"
  # A script reached through the linked folder is refused like any path that leaves the folder.
  run -C "$dir" review linked/linked --class cpu-only --by alice
  expect_status 4
  expect_one_error_line
  expect_stderr_contains "leads outside the exercises folder"
}

case_check__symlinked_exercises_folder_is_refused() {
  local dir outside
  dir=$(course_copy symlinked-exercises)
  outside=$(workdir symlinked-exercises-outside)
  mv "$dir/public/exercises/"*.py "$outside/"
  rmdir "$dir/public/exercises"
  ln -s "$outside" "$dir/public/exercises"
  for command in "check" "plan tpu-hello --slice v5litepod-8 --tpu my-pod --zone us-west4-a" \
    "review tpu-hello --class single-host-compatible --by alice" "classify tpu-hello"; do
    # shellcheck disable=SC2086 # word splitting of $command is intended
    run -C "$dir" $command
    expect_status 4
    expect_stdout_empty
    expect_one_error_line
    expect_stderr_contains "\"exercises_dir\" 'public/exercises' leads outside the course folder"
  done
  # A symlinked folder that stays inside the course is fine.
  rm "$dir/public/exercises"
  mkdir -p "$dir/lessons"
  mv "$outside/"*.py "$dir/lessons/"
  ln -s ../lessons "$dir/public/exercises"
  run -C "$dir" check
  expect_status 0
}

case_classify__past_an_unreadable_file() {
  local dir
  dir=$(course_copy classify-unreadable)
  mkdir "$dir/public/exercises/x.py"
  run -C "$dir" classify public/exercises/distributed-02.py public/exercises/x.py public/exercises/tpu-hello.py
  expect_status 4
  expect_stdout_contains "public/exercises/distributed-02.py"$'\n'"  sha256:"
  expect_stdout_contains "public/exercises/tpu-hello.py"$'\n'"  sha256:"
  expect_one_error_line
  expect_stderr_contains "cannot read script 'public/exercises/x.py': is a directory"
  run -C "$dir" classify public/exercises/x.py public/exercises/tpu-hello.py nope-script --format json
  expect_status 4
  [[ $(printf '%s\n' "$err" | grep -c '^tpulaunch: error: ') == 2 ]] || fail "expected two error lines: $err"
  python3 - "$out" <<'PY' || fail "the readable file is missing from the JSON"
import json, sys
files = json.loads(sys.argv[1])["files"]
assert [f["path"] for f in files] == ["public/exercises/tpu-hello.py"], files
PY
}

case_classify__a_folder_with_a_fifo_reports_it() {
  local dir
  dir=$(course_copy classify-fifo)
  mkfifo "$dir/public/exercises/pipe.py"
  ln -s nowhere.py "$dir/public/exercises/dangling.py"
  # check reports both (a script that is not a regular file); classify of the folder does too,
  # and still classifies every other file.
  run -C "$dir" check
  expect_stdout_contains "pipe.py is not a regular file"
  run -C "$dir" classify public/exercises
  expect_status 4
  expect_stdout_contains "public/exercises/tpu-hello.py"$'\n'"  sha256:"
  expect_stderr_contains "tpulaunch: error: cannot read script 'public/exercises/pipe.py': not a regular file"
  expect_stderr_contains "tpulaunch: error: cannot read script 'public/exercises/dangling.py': No such file or directory"
  [[ $(printf '%s\n' "$err" | grep -c '^tpulaunch: error: ') == 2 ]] || fail "expected two error lines: $err"
}

case_classify__undecided_rows_and_wording() {
  local dir
  dir=$(course_copy classify-undecided)
  printf 'import jax\nPLAT = "tpu"\nPLAT = "cpu"\njax.devices(PLAT)\n' >"$dir/public/exercises/rebound.py"
  run -C "$dir" classify rebound
  expect_status 0
  expect_stdout_contains "suggested: none: a reviewer must decide"$'\n'
  expect_stdout_lacks ") ("
  expect_stdout_contains "public/exercises/rebound.py:4:1: cpu-selection [platform-unresolved] jax.devices(PLAT)"
  expect_stdout_contains "cannot tell: the backend of jax.devices() is the name 'PLAT', whose value is unknown: 'PLAT' is bound 2 times (lines 2, 3)"
  run -C "$dir" classify tpu-hello
  expect_stdout_contains "suggested: single-host-compatible (a suggestion, not a review)"
  run -C "$dir" review rebound --class single-host-compatible --by alice
  expect_status 3
  expect_one_refusal_line
  expect_stderr_contains "line 4 (platform-unresolved)"
}

# --- the matrix round-trips without loss ---------------------------------------------------------

case_review__matrix_round_trip_keeps_unknown_fields() {
  local dir
  dir=$(course_copy round-trip)
  python3 - "$dir/execution-matrix.json" <<'PY'
import json, sys
path = sys.argv[1]
m = json.load(open(path))
out = {"version": 1, "zz_course": {"b": 1, "a": [2, {"y": 1, "x": 0}]}, "exercises_dir": m["exercises_dir"],
       "scripts": m["scripts"], "aa_contact": "staff@example.org"}
e = out["scripts"]["tpu-hello"]
out["scripts"]["tpu-hello"] = {"path": "public/exercises/tpu-hello.py", **e, "z_tag": "week-1", "a_tag": None}
json.dump(out, open(path, "w"), indent=2)
PY
  run -C "$dir" review distributed-02 --class cpu-only --by alice
  expect_status 0
  run -C "$dir" review tpu-hello --class single-host-compatible --by bob
  expect_status 0
  python3 - "$dir/execution-matrix.json" <<'PY' || fail "review lost or reordered a field it does not know"
import json, sys
text = open(sys.argv[1]).read()
m = json.loads(text, object_pairs_hook=lambda pairs: pairs)
top = [k for k, _ in m]
assert top == ["version", "exercises_dir", "scripts", "zz_course", "aa_contact"], top
course = dict(m)["zz_course"]
assert course == [("b", 1), ("a", [2, [("y", 1), ("x", 0)]])], course
entry = dict(dict(dict(m)["scripts"])["tpu-hello"])
assert entry["path"] == "public/exercises/tpu-hello.py", entry
keys = [k for k, _ in dict(dict(m)["scripts"])["tpu-hello"]]
assert keys.index("path") < keys.index("z_tag") < keys.index("a_tag"), keys
assert keys[0] == "class", keys
PY
  # Reviewing again changes nothing else: the text is stable.
  cp "$dir/execution-matrix.json" "$dir/before.json"
  run -C "$dir" review tpu-hello --class single-host-compatible --by bob
  python3 - "$dir/before.json" "$dir/execution-matrix.json" <<'PY' || fail "a repeated review changed more than its time"
import sys
a, b = (open(p).read().splitlines() for p in sys.argv[1:])
diff = [(x, y) for x, y in zip(a, b) if x != y]
assert len(a) == len(b) and all("reviewed_at" in x for x, _ in diff), diff
PY
}

# --- help at every typo ----------------------------------------------------------------------------

case_plan__did_you_mean_script_ids() {
  run -C "$COURSE" plan distributed_02
  expect_status 2
  expect_stdout_empty
  expect_one_error_line
  expect_stderr_contains "no script 'distributed_02' in execution-matrix.json or in public/exercises (did you mean 'distributed-02'?)"
  run -C "$COURSE" plan tpu-helo --slice v5litepod-8 "${TPU_FLAGS[@]}"
  expect_status 2
  expect_stderr_contains "(did you mean 'tpu-hello'?)"
  run -C "$(course_copy suggest-review)" review sharding_sketch --class cpu-only --by alice
  expect_status 2
  expect_stderr_contains "(did you mean 'sharding-sketch'?)"
  run -C "$COURSE" check --route colective-update@v5litepod-16
  expect_status 2
  expect_stderr_contains "(did you mean 'collective-update'?)"
  # The file name is accepted as the id when that file is in the exercises folder.
  run -C "$COURSE" plan distributed-02.py
  expect_status 0
  expect_stdout_contains "python3 public/exercises/distributed-02.py"
}

case_slice__names_any_case_and_generation_aliases() {
  local name
  for name in v5litepod-16 V5LITEPOD-16 v5e-16 v5lite-16 V5E-16 tpu-v5-lite-podslice-16; do
    run slice "$name" --format json
    expect_status 0
    expect_stdout_contains '"name": "v5litepod-16"'
  done
  run slice trillium-16 --format json
  expect_status 0
  expect_stdout_contains '"name": "v6e-16"'
  run slice v6e-12
  expect_status 2
  expect_one_error_line
  expect_stderr_contains "unknown slice 'v6e-12' (did you mean 'v6e-16'?)"
  run slice v5p-12
  expect_stderr_contains "(did you mean 'v5p-16'?)"
  run slice v5e-61
  expect_stderr_contains "(did you mean 'v5litepod-16'?)"
  run -C "$COURSE" plan collective-update --slice V5E-16 "${TPU_FLAGS[@]}" --course
  expect_status 0
  expect_stdout_contains "--worker=all"
}

case_slices__only_takes_aliases_and_suggests() {
  run slices --only v5e-4,trillium-16,V5P-8 --format json
  expect_status 0
  python3 - "$out" <<'PY' || fail "--only did not keep the order or the canonical names"
import json, sys
assert [s["name"] for s in json.loads(sys.argv[1])["slices"]] == ["v5litepod-4", "v6e-16", "v5p-8"]
PY
  run slices --only v5litepod-4,v5litepod-61
  expect_status 2
  expect_one_error_line
  expect_stderr_contains "unknown slice 'v5litepod-61' (did you mean 'v5litepod-16'?)"
}

case_main__unknown_commands_and_options_get_suggestions() {
  run bogus
  expect_status 2
  expect_stdout_empty
  expect_one_error_line
  expect_stderr_contains "unknown command 'bogus'"
  run plna tpu-hello
  expect_status 2
  expect_one_error_line
  expect_stderr_contains "unknown command 'plna' (did you mean 'plan'?)"
  run -C "$COURSE" plan tpu-hello --slcie v5litepod-8
  expect_status 2
  expect_one_error_line
  expect_stderr_contains "unknown option '--slcie' for plan (did you mean '--slice'?)"
  run -C "$COURSE" check --stric
  expect_status 2
  expect_stderr_contains "unknown option '--stric' for check (did you mean '--strict'?)"
  run --matirx x.json check
  expect_status 2
  expect_stderr_contains "(did you mean '--matrix'?)"
  run -C "$COURSE" check extra
  expect_status 2
  expect_one_error_line
  expect_stderr_contains "check: unexpected argument 'extra'"
}

# --- init --------------------------------------------------------------------------------------

case_init__writes_a_minimal_matrix() {
  local dir
  dir=$(workdir init-new)
  mkdir -p "$dir/lessons"
  printf 'import jax\nprint(jax.devices())\n' >"$dir/lessons/hello.py"
  run -C "$dir" init --exercises-dir lessons
  expect_status 0
  expect_stdout_contains "created execution-matrix.json for the scripts in lessons (1 script found, none reviewed)"
  expect_stdout_contains "tpulaunch -C $dir review ID --class CLASS --by NAME"
  python3 - "$dir/execution-matrix.json" <<'PY' || fail "init did not write a minimal matrix"
import json, sys
assert json.load(open(sys.argv[1])) == {"version": 1, "exercises_dir": "lessons", "scripts": {}}
PY
  [[ -z "$(find "$dir" -name '.execution-matrix.json.tmp.*')" ]] || fail "init left a temporary file"
  run -C "$dir" check
  expect_status 0
  expect_stdout_contains "warning: [unreviewed] 'hello' has no matrix entry"
  run -C "$dir" review hello --class single-host-compatible --by alice
  expect_status 0
  # A matrix in a folder that is not there: its exercises folder cannot be there either.
  run -C "$dir" init --matrix other/m.json
  expect_status 2
  expect_one_error_line
  expect_stderr_contains "the exercises folder other/public/exercises does not exist"
  [[ ! -e "$dir/other" ]] || fail "a refused init made a folder"
  run -C "$dir" init --exercises-dir ../outside --matrix m2.json
  expect_status 2
  expect_one_error_line
  expect_stderr_contains "must stay inside the course"
  [[ ! -e "$dir/m2.json" ]] || fail "a refused init wrote a file"
}

case_init__refuses_to_overwrite() {
  local dir before
  dir=$(course_copy init-existing)
  before=$(sha256sum "$dir/execution-matrix.json")
  run -C "$dir" init
  expect_status 1
  expect_stdout_empty
  expect_one_error_line
  expect_stderr_contains "'execution-matrix.json' already exists; it is never overwritten"
  [[ "$(sha256sum "$dir/execution-matrix.json")" == "$before" ]] || fail "init changed an existing matrix"
  dir=$(workdir init-default)
  run -C "$dir" init
  expect_status 2
  expect_one_error_line
  expect_stderr_contains "the exercises folder public/exercises does not exist"
  [[ ! -e "$dir/execution-matrix.json" ]] || fail "init wrote a matrix for a folder that does not exist"
  mkdir -p "$dir/public/exercises"
  run -C "$dir" init
  expect_status 0
  expect_stdout_contains "for the scripts in public/exercises (0 scripts found, none reviewed)"
}

# --- CI output that lands where it should ---------------------------------------------------------

case_check__annotation_paths_under_c() {
  local repo start plain
  repo=$(workdir annotation-repo)
  mkdir -p "$repo/.git" "$repo/courses"
  cp -R "$COURSE" "$repo/courses/jax"
  echo "# edited" >>"$repo/courses/jax/public/exercises/tpu-hello.py"
  start=$(workdir annotation-start)
  run_from "$start" -C "$repo/courses/jax" check --format github
  expect_status 3
  expect_stdout_contains "::error file=courses/jax/public/exercises/tpu-hello.py,title=tpulaunch stale-digest::"
  run_from "$repo" --matrix courses/jax/execution-matrix.json check --format github
  expect_stdout_contains "::error file=courses/jax/public/exercises/tpu-hello.py,"
  expect_stdout_contains "::warning file=courses/jax/public/exercises/sharding-sketch.py,"
  run_from "$repo/courses" -C jax check --format github
  expect_stdout_contains "::error file=courses/jax/public/exercises/tpu-hello.py,"
  # No .git anywhere above (a folder outside this repository): relative to where it started.
  plain=$(mktemp -d)
  mkdir -p "$plain/course"
  cp -R "$COURSE/." "$plain/course/"
  echo "# edited" >>"$plain/course/public/exercises/tpu-hello.py"
  run_from "$plain" -C course check --format github
  rm -rf "$plain"
  expect_stdout_contains "::error file=course/public/exercises/tpu-hello.py,"
}

if [[ $# -ne 1 ]] || ! declare -F "$1" >/dev/null; then
  echo "usage: course_cases.sh case_<command>__<name>" >&2
  exit 2
fi
"$1"
finish
