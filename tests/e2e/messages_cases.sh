#!/usr/bin/env bash
# End-to-end cases of what a new user reads (issue 23, §5 and §6): a bad value inside --catalog
# blamed on the file, not a flag; config errors as CI annotations; exit codes as the table says;
# messages that read right; the matrix found from a subfolder; init that says what is missing and
# hints that can be pasted; zone warnings; the top-level help and the installed binary. ctest
# runs one function per entry, as for cases.sh:
#   TPULAUNCH=build/ci/tpulaunch SOURCE_DIR=. bash tests/e2e/messages_cases.sh case_plan__catalog_value_is_a_config_error
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

TPU_FLAGS=(--tpu my-pod --zone us-west4-a --run-id r1)

expect_stderr_lacks() {
  if [[ "$err" == *"$1"* ]]; then
    fail "stderr should not contain: $1"$'\n'"--- stderr:"$'\n'"$err"
  fi
}

expect_stderr_lines() {
  local lines=0
  [[ -z "$err" ]] || lines=$(printf '%s\n' "$err" | wc -l)
  if [[ "$lines" != "$1" ]]; then
    fail "expected $1 line(s) on stderr, got $lines: $err"
  fi
}

# add_entry DIR ID CLASS: records ID with its file's digest, by hand.
add_entry() {
  local sha
  sha=$(sha256sum "$1/public/exercises/$2.py" | cut -d' ' -f1)
  python3 - "$1/execution-matrix.json" "$2" "$3" "$sha" <<'PY'
import json, sys
path, sid, cls, sha = sys.argv[1:]
m = json.load(open(path))
m["scripts"][sid] = {"class": cls, "sha256": sha}
json.dump(m, open(path, "w"), indent=2)
PY
}

# --- (a) a bad value inside --catalog is the catalog's error --------------------------------------

case_plan__catalog_value_is_a_config_error() {
  local dir
  dir=$(workdir catalog-value)
  # The built-in catalog with one runtime version gcloud would never take.
  python3 - "$SOURCE_DIR/catalog/slices.json" "$dir/catalog.json" <<'PY'
import sys
text = open(sys.argv[1]).read()
text = text.replace('"runtime_version": "v2-alpha-tpuv5-lite", "topology": "4x4"',
                    '"runtime_version": "V5 lite; reboot", "topology": "4x4"', 1)
open(sys.argv[2], "w").write(text)
PY
  grep -q 'V5 lite; reboot' "$dir/catalog.json" || fail "the fixture did not change the catalog"
  local line
  line=$(grep -n 'V5 lite; reboot' "$dir/catalog.json" | cut -d: -f1)
  # --create takes the catalog's runtime version: the file is named, with the value's position.
  run -C "$COURSE" plan collective-update --slice v5litepod-16 "${TPU_FLAGS[@]}" --create --catalog "$dir/catalog.json"
  expect_status 4
  expect_stdout_empty
  expect_one_error_line
  expect_stderr_contains "$dir/catalog.json:$line:"
  expect_stderr_contains "slice 'v5litepod-16': \"runtime_version\" \"V5 lite; reboot\" is not a runtime version"
  expect_stderr_lacks "--runtime-version"
  # Any command that reads the catalog says the same, before doing anything.
  TPULAUNCH_CATALOG="$dir/catalog.json" run -C "$COURSE" slices
  expect_status 4
  expect_one_error_line
  expect_stderr_contains "$dir/catalog.json:$line:"
  # The flag itself is still checked as a flag: a usage error that names it.
  run -C "$COURSE" plan collective-update --slice v5litepod-16 "${TPU_FLAGS[@]}" --create --runtime-version "Bad One"
  expect_status 2
  expect_one_error_line
  expect_stderr_contains "invalid runtime version 'Bad One' for --runtime-version"
}

# --- (b) check: config errors annotated, JSON lines filled ---------------------------------------

case_check__github_annotates_its_own_errors() {
  local dir
  dir=$(course_copy check-annotate)
  mkdir "$dir/.git" # the repository root, which annotation paths start from
  # A matrix with a stray comma on line 3.
  python3 - "$dir/execution-matrix.json" <<'PY'
import sys
path = sys.argv[1]
lines = open(path).read().split("\n")
lines[2] = lines[2] + ","
open(path, "w").write("\n".join(lines))
PY
  run -C "$dir" check --format github
  expect_status 4
  expect_stdout_empty
  expect_stderr_lines 1
  if [[ "$err" != "::error file=execution-matrix.json,line=3,col="*",title=tpulaunch config::execution-matrix.json:3:"* ]]; then
    fail "a malformed matrix is not an ::error annotation on its line: $err"
  fi
  # The other formats keep the one plain error line.
  run -C "$dir" check
  expect_status 4
  expect_stdout_empty
  expect_one_error_line
  expect_stderr_contains "execution-matrix.json:3:"
  # JSON: the error line on stderr, and the report's document on stdout, the error its finding.
  run -C "$dir" check --format json
  expect_status 4
  expect_one_error_line
  expect_stdout_contains '"kind": "config"'
  expect_stdout_contains '"line": 3,'
  # A bad --route is check's error too: annotated, with no file to point at.
  run -C "$COURSE" check --format github --route tpu-hello@v5e-99
  expect_status 2
  expect_stdout_empty
  expect_stderr_lines 1
  if [[ "$err" != "::error title=tpulaunch usage::unknown slice 'v5e-99'"* ]]; then
    fail "a bad --route is not an ::error annotation: $err"
  fi
}

case_check__json_fills_the_line_the_message_names() {
  local dir
  dir=$(course_copy check-json-line)
  mkdir "$dir/.git"
  printf 'import jax\nname = "caf\351"\n' >"$dir/public/exercises/latin.py"
  run -C "$dir" check --format json
  expect_status 4
  python3 - "$out" <<'PY' || fail "the unreadable finding lacks the line and column its message names"
import json, sys
report = json.loads(sys.argv[1])
[f] = [f for f in report["findings"] if f["kind"] == "unreadable"]
assert f["path"] == "public/exercises/latin.py", f
assert f["message"].startswith("public/exercises/latin.py:2:12: "), f
assert (f["line"], f["column"]) == (2, 12), f
# Findings about no line say so with null, never 0.
assert all(g["line"] is None or g["line"] > 0 for g in report["findings"]), report["findings"]
PY
  run -C "$dir" check --format github
  expect_status 4
  expect_stdout_contains "::error file=public/exercises/latin.py,line=2,col=12,title=tpulaunch unreadable::"
}

# --- (c) the exit-code table and behaviour agree ---------------------------------------------------

case_check__unreadable_script_exits_as_the_table_says() {
  local dir row
  dir=$(course_copy check-exit-4)
  printf 'print("caf\351")\n' >"$dir/public/exercises/latin.py"
  run -C "$dir" check
  # The row of the table that --help prints for this code names scripts.
  row=$("$TPULAUNCH" --help | grep -E '^  4 +config ')
  [[ "$row" == *"script"* ]] || fail "the exit-code table has no script in row 4: $row"
  expect_status 4
  # The whole report is still printed: every finding, then the summary naming the exit code.
  expect_stdout_contains "public/exercises/latin.py:1: error: [unreadable]"
  expect_stdout_contains "warning: [unreviewed] 'sharding-sketch'"
  expect_stdout_contains "(exit 4)"
  # plan says 4 on the same file.
  run -C "$dir" plan latin
  expect_status 4
  expect_one_error_line
}

case_verify__malformed_receipt_exits_as_the_table_says() {
  local dir run_dir row
  dir=$(workdir verify-malformed)
  run_dir="$dir/run/r1"
  mkdir -p "$run_dir/worker-0/r1/artifacts"
  printf 'state=succeeded\nstatus=0\n' >"$run_dir/worker-0/r1/run-status.rec"
  printf 'hello from worker 0\n' >"$run_dir/worker-0/r1/lesson-tpu-host0.txt"
  printf '{"kind": "training", "process_index": ' >"$run_dir/worker-0/r1/artifacts/worker-0.json"
  run verify "$run_dir" --slice v5litepod-8
  # The table says why: a receipt is the run's output, so a malformed one is a finding (3).
  row=$("$TPULAUNCH" --help | grep -E '^  3 +refused ')
  [[ "$row" == *"malformed receipt"* ]] || fail "the exit-code table does not say where a malformed receipt goes: $row"
  expect_status 3
  expect_stdout_contains "FAIL worker 0: worker-0.json: worker-0.json:1:"
  expect_stdout_contains "not verified"
  grep -q '| 3 | refused | .*malformed receipt' "$SOURCE_DIR/README.md" || fail "README's table disagrees"
}

# --- (d) messages that read right ----------------------------------------------------------------

case_plan__refusals_read_right() {
  local dir
  dir=$(course_copy refusals-read)
  # One other host, and three: the verb agrees with the count.
  run -C "$dir" plan tpu-hello --slice v4-16 "${TPU_FLAGS[@]}"
  expect_status 3
  expect_one_refusal_line
  expect_stderr_contains "while the other host never starts and 4 chips sit idle"
  expect_stderr_lacks "1 host"
  run -C "$dir" plan tpu-hello --slice v5litepod-16 "${TPU_FLAGS[@]}"
  expect_stderr_contains "while the other 3 hosts never start and 12 chips sit idle"
  # The rule names itself once.
  echo "# edited" >>"$dir/public/exercises/tpu-hello.py"
  run -C "$dir" plan tpu-hello --slice v5litepod-8 "${TPU_FLAGS[@]}"
  expect_status 3
  expect_stderr_contains "tpulaunch: refused: review-required: [stale-digest] 'tpu-hello' changed since it was reviewed"
  expect_stderr_lacks "review-required: review-required"
  # An empty script reviewed cpu-only has no evidence: it is not said to select CPU devices.
  : >"$dir/public/exercises/empty.py"
  add_entry "$dir" empty cpu-only
  run -C "$dir" plan empty --slice v5litepod-8 "${TPU_FLAGS[@]}"
  expect_status 3
  expect_one_refusal_line
  expect_stderr_contains "'empty' is cpu-only (its file is empty: no evidence either way"
  expect_stderr_lacks "selects CPU devices"
  run -C "$dir" plan distributed-02 --slice v5litepod-8 "${TPU_FLAGS[@]}"
  expect_status 3
  expect_stderr_contains "'distributed-02' is cpu-only (it selects CPU devices at line"
}

case_slice__suggestion_sees_through_spaces_and_aliases() {
  local typed
  for typed in "v5e 16" "v5e_16" "V5E16" "v5litepod 16"; do
    run slice "$typed"
    expect_status 2
    expect_one_error_line
    expect_stderr_contains "unknown slice '$typed' (did you mean 'v5litepod-16'?)"
  done
  run -C "$COURSE" plan collective-update --slice "v5e 16" "${TPU_FLAGS[@]}"
  expect_status 2
  expect_stderr_contains "(did you mean 'v5litepod-16'?)"
  run slice "trillium 8"
  expect_stderr_contains "(did you mean 'v6e-8'?)"
  run slice "v5p-12"
  expect_stderr_contains "(did you mean 'v5p-16'?)"
}

case_review__override_of_a_missing_marker_in_words() {
  local dir
  dir=$(course_copy override-words)
  printf 'import jax\njax.distributed.initialize()\nprint(jax.devices())\n' >"$dir/public/exercises/smoke.py"
  run -C "$dir" review smoke --class multi-host-qualified --by alice --override "a smoke test of the cluster"
  expect_status 0
  expect_stdout_contains "override: no per-process data evidence anywhere in the source (missing:per-process data): a smoke test of the cluster"
  expect_stdout_contains "override: no collective evidence anywhere in the source (missing:collective)"
  expect_stdout_lacks "line 0"
}

# --- (e) the matrix found from a subfolder; init -------------------------------------------------

case_matrix__found_in_the_folders_above() {
  local dir outside
  dir=$(course_copy matrix-above)
  mkdir -p "$dir/public/exercises/advanced"
  run_from "$dir/public/exercises/advanced" plan distributed-02
  expect_status 0
  expect_stdout_contains "script: distributed-02 (../../../public/exercises/distributed-02.py)"
  run_from "$dir/public/exercises" check
  expect_status 0
  expect_stdout_contains "check: 5 scripts, 4 entries"
  run_from "$dir/public" classify distributed-02
  expect_status 0
  expect_stdout_contains "../public/exercises/distributed-02.py"
  # Started outside any course: the error says where it looked and how to point at one.
  outside=$(workdir matrix-outside)
  run_from "$outside" plan distributed-02
  expect_status 4
  expect_stdout_empty
  expect_one_error_line
  expect_stderr_contains "no execution-matrix.json in $outside or in any folder above it"
  expect_stderr_contains "-C DIR or --matrix FILE"
  run_from "$outside" review distributed-02 --class cpu-only --by alice
  expect_status 4
  expect_stderr_contains "no execution-matrix.json in $outside"
  # A matrix that is named is used as named, never searched for.
  run_from "$dir/public" --matrix execution-matrix.json plan distributed-02
  expect_status 4
  expect_stderr_contains "cannot read matrix 'execution-matrix.json'"
  TPULAUNCH_MATRIX="$dir/execution-matrix.json" run_from "$outside" plan distributed-02
  expect_status 0
  run_from "$outside" -C "$dir/public/exercises" plan distributed-02
  expect_status 0
}

case_init__missing_folder_is_an_error() {
  local dir
  dir=$(workdir init-missing)
  run -C "$dir" init
  expect_status 2
  expect_stdout_empty
  expect_one_error_line
  expect_stderr_contains "the exercises folder public/exercises does not exist in $dir"
  expect_stderr_contains "--exercises-dir DIR"
  [[ -z "$(ls -A "$dir")" ]] || fail "a refused init wrote something: $(ls -A "$dir")"
  run -C "$dir" init --exercises-dir lessons
  expect_status 2
  expect_stderr_contains "the exercises folder lessons does not exist"
}

case_init__next_steps_keep_c_and_cover_subfolders() {
  local start course line hint
  start=$(workdir init-hints)
  course="$start/my course"
  mkdir -p "$course/lessons/week1"
  printf 'import jax\nprint(jax.devices("cpu"))\n' >"$course/lessons/week1/intro.py"
  printf 'import jax\nprint(jax.devices())\n' >"$course/lessons/hello.py"
  run_from "$start" -C "my course" --matrix course.json init --exercises-dir lessons
  expect_status 0
  expect_stdout_contains "created course.json for the scripts in lessons (2 scripts found, none reviewed)"
  expect_stdout_contains "tpulaunch -C 'my course' --matrix course.json classify lessons"
  expect_stdout_contains "tpulaunch -C 'my course' --matrix course.json check --strict"
  # The classify hint, pasted where init ran, reads every script, the subfolder's too.
  line=$(printf '%s\n' "$out" | grep ' classify ')
  hint=${line#*tpulaunch }
  hint=${hint%%#*}
  status=0
  out=$(cd "$start" && eval "\"\$TPULAUNCH\" $hint" 2>&1) || status=$?
  expect_status 0
  expect_stdout_contains "lessons/hello.py"
  expect_stdout_contains "lessons/week1/intro.py:2:7: cpu-selection [devices-cpu]"
  # The check hint works from there too.
  line=$(cd "$start" && "$TPULAUNCH" -C "my course" --matrix course.json check 2>&1) || true
  [[ "$line" == *"check: 2 scripts, 0 entries"* ]] || fail "check from init's folder: $line"
}

# --- (f) zones --------------------------------------------------------------------------------------

case_plan__zone_warnings_never_refuse() {
  local dir
  dir=$(workdir zone-warnings)
  run -C "$COURSE" plan collective-update --slice v5litepod-16 --tpu my-pod --zone us-west4-a --run-id r1
  expect_status 0
  expect_stderr_empty
  # A zone that does not offer the slice: the plan is printed, and one warning names where it is.
  run -C "$COURSE" plan collective-update --slice v5litepod-16 --tpu my-pod --zone us-east1-d --run-id r1
  expect_status 0
  expect_stdout_contains "--zone=us-east1-d"
  expect_stderr_lines 1
  expect_stderr_contains "tpulaunch: warning: v5litepod-16 is not offered in us-east1-d by the catalog's table of Cloud TPU zones; it lists v5litepod-16 in us-central1-a, us-south1-a, us-west1-c, us-west4-a, europe-west4-b"
  # A zone the table does not know: the nearest name.
  CLOUDSDK_COMPUTE_ZONE=us-west4-b run -C "$COURSE" plan collective-update --slice v5litepod-16 --tpu my-pod --run-id r1 --format sh
  expect_status 0
  expect_stdout_contains "us-west4-b"
  expect_stderr_lines 1
  expect_stderr_contains "tpulaunch: warning: zone 'us-west4-b' is not in the catalog's table of Cloud TPU zones (did you mean 'us-west4-a'?)"
  run discover --slice v6e-16 --tpu my-pod --zone us-west4-a --format json
  expect_status 0
  expect_stderr_contains "tpulaunch: warning: v6e-16 is not offered in us-west4-a"
  # The table is the catalog's: one without "zones" has nothing to say.
  python3 - "$SOURCE_DIR/catalog/slices.json" "$dir/no-zones.json" <<'PY'
import json, sys
catalog = json.load(open(sys.argv[1]))
del catalog["zones"]
json.dump(catalog, open(sys.argv[2], "w"))
PY
  run -C "$COURSE" plan collective-update --slice v5litepod-16 --tpu my-pod --zone us-east1-d --run-id r1 --catalog "$dir/no-zones.json"
  expect_status 0
  expect_stderr_empty
  run slice v2-32
  expect_stdout_contains "zones (catalog's table):    us-central1-a, europe-west4-a"
  run slice v5litepod-16 --format json
  python3 -c 'import json,sys; z=json.loads(sys.argv[1])["zones"]; assert "us-west4-a" in z and "us-east1-d" not in z, z' "$out" ||
    fail "slice --format json lacks the zones"
}

# --- (g) help, the quick start's build, the installed binary ---------------------------------------

case_help__top_level_shows_examples() {
  run --help
  expect_status 0
  expect_stdout_contains "Examples:"
  expect_stdout_contains "  tpulaunch plan distributed-02"
  expect_stdout_contains "  tpulaunch check --strict --format github"
  expect_stdout_contains "Exit codes:"
  # Each example names a command tpulaunch has.
  local command
  while read -r command; do
    run "$command" --help
    expect_status 0
  done < <(printf '%s\n' "$out" | sed -n '/^Examples:/,/^$/p' | grep -oE '^  tpulaunch( -C [^ ]+)? [a-z]+' | awk '{print $NF}')
}

case_install__the_binary_installs_and_runs() {
  local dir build
  dir=$(workdir install-prefix)
  build=$(dirname "$TPULAUNCH")
  cmake --install "$build" --prefix "$dir/prefix" >/dev/null || fail "cmake --install failed"
  [[ -x "$dir/prefix/bin/tpulaunch" ]] || fail "no bin/tpulaunch under the prefix"
  status=0
  out=$(PATH="$dir/prefix/bin:$PATH" tpulaunch -C "$COURSE" plan distributed-02) || status=$?
  expect_status 0
  expect_stdout_contains "route:  cpu"
  # The quick start builds that one target, and the README says how to install it.
  grep -q '^cmake --build --preset ci --target tpulaunch$' "$SOURCE_DIR/scripts/quickstart.sh" ||
    fail "scripts/quickstart.sh does not build the binary alone"
  grep -q 'cmake --install build/ci --prefix ~/.local' "$SOURCE_DIR/README.md" || fail "README does not say how to install"
}

if [[ $# -ne 1 ]] || ! declare -F "$1" >/dev/null; then
  echo "usage: messages_cases.sh case_<command>__<name>" >&2
  exit 2
fi
"$1"
finish
