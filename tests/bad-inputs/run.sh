#!/usr/bin/env bash
# Runs the bad-input cases of tests/bad-inputs/cases.tsv against the built binary ($TPULAUNCH).
# Each case gets a fresh copy of examples/course with fixtures/ beside it, and must give: the
# documented exit code, exactly one line on stderr starting "tpulaunch: error: " that contains
# the case's EXPECT text, nothing on stdout, and every file and folder in the copy untouched
# (contents, inode, mode; so no rewrite, temp file or lock left behind).
#
#   TPULAUNCH=build/dev/tpulaunch SOURCE_DIR=. bash tests/bad-inputs/run.sh [CASE...]   (no CASE: all)
set -euo pipefail
export LC_ALL=C

: "${TPULAUNCH:?set TPULAUNCH to the built binary}"
: "${SOURCE_DIR:?set SOURCE_DIR to the source tree}"
: "${WORK_ROOT:=${TMPDIR:-/tmp}/tpulaunch-e2e}"
HERE="$SOURCE_DIR/tests/bad-inputs"
CASES="$HERE/cases.tsv"
SCRIPT=public/exercises/tpu-hello.py
TIMEOUT=${BAD_INPUT_TIMEOUT:-60}

# --- setup functions: each runs in the case folder ---------------------------------------------

make_catalog_binary() { printf '\000\001\002\377\376binary\000' >fixtures/catalog-binary.json; }
make_catalog_not_utf8() { printf '{"version": 1, "note": "caf\351"}\n' >fixtures/catalog-not-utf8.json; }
# 100,000 levels of nesting: the reader must stop at its depth limit, not exhaust the stack.
make_catalog_deep() { head -c 100000 /dev/zero | tr '\0' '[' >fixtures/catalog-deep.json; }
# 50 MB: a string that never ends.
make_catalog_huge() {
  {
    printf '{"version": 1, "note": "'
    head -c 50000000 /dev/zero | tr '\0' x
  } >fixtures/catalog-huge.json
}
make_catalog_directory() { mkdir fixtures/catalog-directory.json; }
make_catalog_fifo() { mkfifo fixtures/catalog-fifo.json; }
make_matrix_directory() { mkdir fixtures/matrix-directory.json; }
install_matrix_nul() { cp fixtures/matrix-exercises-dir-nul.json execution-matrix.json; }
remove_script() { rm "$SCRIPT"; }
script_directory() { rm "$SCRIPT" && mkdir "$SCRIPT"; }
script_fifo() { rm "$SCRIPT" && mkfifo "$SCRIPT"; }
script_binary() { printf 'print(1)\000\n' >"$SCRIPT"; }
script_latin1() { printf 'print("caf\351")\n' >"$SCRIPT"; }
# PEP 263: a declared encoding tpulaunch does not decode is refused by its name.
script_shift_jis() { printf '# -*- coding: shift_jis -*-\nprint("\202\240")\n' >"$SCRIPT"; }
script_symlink_outside() { mv "$SCRIPT" outside.py && ln -s ../../outside.py "$SCRIPT"; }
script_too_large() { truncate -s 17M "$SCRIPT"; }
matrix_read_only() { chmod 444 execution-matrix.json; }
# A lock held by a review still running (this shell stands for it), and one left by a review that
# was killed (a process that has exited).
matrix_locked() { printf '%s\n' "$$" >execution-matrix.json.lock; }
matrix_lock_stale() {
  local pid
  sh -c 'exit 0' &
  pid=$!
  wait "$pid"
  printf '%s\n' "$pid" >execution-matrix.json.lock
}

# --- the runner --------------------------------------------------------------------------------

# Every entry of the folder: path, type, mode, and for non-folders size, inode, link target and
# content digest. (A folder's own size can change when an entry is added and removed again.)
snapshot() {
  (
    cd "$1"
    find . -type d -printf 'd %P %m\n'
    find . ! -type d -printf 'f %P %y %m %s %i %l\n'
    find . -type f -print0 | xargs -0 -r sha256sum
  ) | sort
}

failures=0
fail() {
  echo "FAIL: $case_name: $*" >&2
  failures=$((failures + 1))
}

run_case() {
  local expected_code=$1 expect=$2 setup=$3 args_text=$4
  local dir="$WORK_ROOT/bad-inputs/$case_name"
  rm -rf "$dir"
  mkdir -p "$dir"
  cp -R "$SOURCE_DIR/examples/course/." "$dir/"
  cp -R "$HERE/fixtures" "$dir/fixtures"
  if [[ "$setup" != - ]]; then
    (cd "$dir" && "$setup")
  fi
  local args=() word
  if [[ -n "$args_text" ]]; then
    read -r -a args <<<"$args_text"
  fi
  for word in "${!args[@]}"; do
    [[ "${args[$word]}" == '<empty>' ]] && args[word]=''
  done

  local before after status=0
  before=$(snapshot "$dir")
  (cd "$dir" && timeout "$TIMEOUT" "$TPULAUNCH" "${args[@]}" >"$dir.out" 2>"$dir.err" </dev/null) || status=$?
  after=$(snapshot "$dir")

  if ((status == 124)); then
    fail "tpulaunch ${args_text} did not finish within ${TIMEOUT}s (it hangs on this input)"
  elif [[ "$status" != "$expected_code" ]]; then
    fail "exit status $status, expected $expected_code"
  fi
  if [[ -s "$dir.out" ]]; then
    fail "stdout should be empty, got: $(head -c 300 "$dir.out" | tr -d '\000')"
  fi
  local lines bytes first
  lines=$(wc -l <"$dir.err")
  bytes=$(wc -c <"$dir.err")
  first=$(head -n 1 "$dir.err")
  if [[ "$lines" != 1 || "$bytes" != $((${#first} + 1)) || "$first" != "tpulaunch: error: "* ]]; then
    fail "expected exactly one 'tpulaunch: error:' line on stderr, got $lines line(s): $(head -c 400 "$dir.err")"
  elif [[ "$first" != *"$expect"* ]]; then
    fail "the error does not name '$expect': $first"
  fi
  if [[ "$before" != "$after" ]]; then
    fail "files changed:"$'\n'"$(diff <(printf '%s\n' "$before") <(printf '%s\n' "$after") || true)"
  fi
  if ((failures == 0)); then
    rm -rf "$dir" "$dir.out" "$dir.err"
  fi
}

# Runs the named cases (all when none is named); a name that is not in the table fails.
main() {
  local wanted=("$@") found=0 name code expect setup args
  while IFS=$'\t' read -r name code expect setup args || [[ -n "$name" ]]; do
    [[ -z "$name" || "$name" == '#'* ]] && continue
    if ((${#wanted[@]} > 0)) && [[ " ${wanted[*]} " != *" $name "* ]]; then
      continue
    fi
    found=$((found + 1))
    case_name=$name
    local before_case=$failures
    run_case "$code" "$expect" "$setup" "$args"
    if ((failures == before_case)); then
      echo "ok: $name" >&2
    fi
  done <"$CASES"
  if ((${#wanted[@]} > 0 && found != ${#wanted[@]})); then
    echo "FAIL: unknown case name(s) among: ${wanted[*]}" >&2
    exit 1
  fi
  if ((failures > 0)); then
    echo "$failures check(s) failed" >&2
    exit 1
  fi
}

case_name=''
main "$@"
