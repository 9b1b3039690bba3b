#!/usr/bin/env bash
# function_size.sh BUILD_DIR: no function in src/ over 80 lines without a comment saying why it
# is long (CONTRIBUTING.md). clang-tidy's readability-function-size finds the long functions
# (headers included), from BUILD_DIR's compile_commands.json; each must have, in the comment block
# right above it, a sentence starting "Long (" that gives the reason. Exits 1 naming each
# function that has none.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:?usage: function_size.sh BUILD_DIR}
if ! command -v clang-tidy >/dev/null; then
  echo "function_size: clang-tidy is not installed (bash scripts/setup.sh installs it)" >&2
  exit 1
fi
if [[ ! -f $build/compile_commands.json ]]; then
  echo "function_size: no $build/compile_commands.json" >&2
  exit 1
fi

config='{CheckOptions: [{key: readability-function-size.LineThreshold, value: 80}]}'
tidy=$(mktemp)
report=$(mktemp)
trap 'rm -f "$tidy" "$report"' EXIT
# Every translation unit of src/; a header's long function is reported once per unit including it.
# clang-tidy fails on a unit it cannot parse: then so does this check (finding nothing proves nothing).
if ! find "$root/src" -name '*.cpp' -print0 | sort -z |
  xargs -0 -P "$(nproc)" -n 8 clang-tidy -p "$build" --quiet --checks='-*,readability-function-size' \
    --header-filter="^$root/src/" --config="$config" >"$tidy" 2>&1; then
  cat "$tidy" >&2
  echo "function_size: clang-tidy failed (above)" >&2
  exit 1
fi
sed -n "s|^\($root/src/[^:]*\):\([0-9]*\):[0-9]*: warning: function '\([^']*\)' exceeds.*|\1 \2 \3|p" "$tidy" |
  sort -u >"$report"

long=0 unexplained=0
while read -r file line name; do
  long=$((long + 1))
  # The comment block right above the function (a template line may sit between them).
  explained=$(awk -v at="$line" '
    NR < at { lines[NR] = $0 }
    END {
      n = at - 1
      if (n > 0 && lines[n] ~ /^[[:space:]]*template[[:space:]]*</) n--
      while (n > 0 && lines[n] ~ /^[[:space:]]*\/\//) { if (lines[n] ~ /Long \(/) { print "yes"; exit } n-- }
    }' "$file")
  if [[ $explained != yes ]]; then
    echo "function_size: ${file#"$root"/}:$line: $name is over 80 lines and the comment above it does not say why (\"Long (about N lines) because ...\")" >&2
    unexplained=$((unexplained + 1))
  fi
done <"$report"
echo "function_size: $long functions over 80 lines in src/, $unexplained without a reason" >&2
[[ $unexplained == 0 ]]
