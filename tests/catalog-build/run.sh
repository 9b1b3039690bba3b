#!/usr/bin/env bash
# ctest build.catalog-table.*: the catalog build rule on the real catalog/slices.json (the build
# succeeds and the table holds its slices) and on malformed copies of it (the build fails, the
# output names the copy with line and column, and no table is written).
#
# Environment: CMAKE_COMMAND, CMAKE_GENERATOR, GENERATOR (the built tpulaunch_catalog_table),
# SOURCE_DIR, WORK_ROOT.
set -euo pipefail
: "${CMAKE_COMMAND:?}" "${CMAKE_GENERATOR:?}" "${GENERATOR:?}" "${SOURCE_DIR:?}" "${WORK_ROOT:?}"
work="$WORK_ROOT/catalog-build"
rm -rf "$work"
mkdir -p "$work"
failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# build NAME CATALOG: configures and builds the tiny project on CATALOG; sets $status and $log.
build() {
  local dir="$work/$1"
  status=0
  log=$( { "$CMAKE_COMMAND" -S "$SOURCE_DIR/tests/catalog-build" -B "$dir" -G "$CMAKE_GENERATOR" \
             -DTPULAUNCH_SOURCE_DIR="$SOURCE_DIR" -DGENERATOR="$GENERATOR" -DCATALOG="$2" >/dev/null &&
           "$CMAKE_COMMAND" --build "$dir"; } 2>&1) || status=$?
  table="$dir/generated/catalog_table.cpp"
}

# expect_refused NAME CATALOG LINE COLUMN TEXT: the build of CATALOG fails at LINE:COLUMN.
expect_refused() {
  build "$1" "$2"
  if ((status == 0)); then
    fail "$1: the build succeeded on a malformed catalog"
  fi
  local expected="tpulaunch-catalog-table: error: $2:$3:$4: $5"
  [[ "$log" == *"$expected"* ]] || fail "$1: the build output lacks '$expected':"$'\n'"$log"
  [[ ! -e "$table" && ! -e "$table.tmp" ]] || fail "$1: a table was written for a malformed catalog"
}

good="$SOURCE_DIR/catalog/slices.json"
build good "$good"
((status == 0)) || fail "the build of catalog/slices.json failed:"$'\n'"$log"
slices=$(grep -c '"name":' "$good")
rows=$(grep -cE '^    \{"(v[0-9]|tpu7x)' "$table" 2>/dev/null || true)
# Seven generation rows (v2, v3, v4, v5e, v5p, v6e, tpu7x) and one row per slice.
((rows == slices + 7)) || fail "the table has $rows rows, expected $slices slices + 7 generations"

# A number where the parser wants an integer: v5litepod-16's "hosts": 4 becomes 4.5.
bad="$work/slices-hosts-float.json"
sed 's/\("name": "v5litepod-16", "generation": "v5e", "hosts": \)4,/\14.5,/' "$good" >"$bad"
line=$(grep -n '"v5litepod-16"' "$bad" | cut -d: -f1)
prefix=$(sed -n "${line}p" "$bad")
prefix=${prefix%%4.5,*}
expect_refused hosts-float "$bad" "$line" "$((${#prefix} + 1))" \
  "slice 'v5litepod-16': field \"hosts\" must be an integer, not a number"

# A duplicate key, which a plain JSON parser would silently accept.
bad="$work/slices-duplicate-key.json"
sed 's/"version": 1,/"version": 1, "version": 1,/' "$good" >"$bad"
expect_refused duplicate-key "$bad" 2 17 'duplicate key "version"'

if ((failures > 0)); then
  echo "$failures check(s) failed" >&2
  exit 1
fi
