#!/usr/bin/env bash
# tools/remote_payload.cpp, the build step that packs the remote programs: it refuses a
# here-document (whose lines its comment rule could cut), keeps shellcheck directives and the
# program's lines, writes the same bytes at every run, and a failure writes nothing.
#   bash tests/remote/payload_tool_test.bash TOOL
set -u -o pipefail

TOOL=${1:?usage: payload_tool_test.bash TOOL}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/payload-tool-test.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
passed=0
failed=0
# check NAME COMMAND...: passes when COMMAND succeeds.
check() {
  local name=$1
  shift
  if "$@"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    printf 'FAIL %s\n' "$name"
  fi
}
same_text() { [[ "$(cat "$1")" == "$2" ]]; }
decodes_to() { cmp -s <(printf '%s' "$1" | base64 --decode | gunzip) "$2"; }

printf '%s\n' '# a comment' '' 'echo one  # a trailing comment stays' '  # an indented comment' \
  '# shellcheck disable=SC2016' "echo 'two'" >"$WORK/ok.bash"
status=0
"$TOOL" --strip-comment-lines "$WORK/ok.bash" ok "$WORK/ok.hpp" "$WORK/ok.shipped" || status=$?
check "packs a program" test "$status" = 0
check "ships the program's lines and shellcheck's directives" same_text "$WORK/ok.shipped" \
  $'echo one  # a trailing comment stays\n# shellcheck disable=SC2016\necho \'two\''
payload=$(sed -n 's/^inline constexpr char ok_payload\[\] = "\(.*\)";$/\1/p' "$WORK/ok.hpp")
check "the payload decodes to the shipped text" decodes_to "$payload" "$WORK/ok.shipped"
cp "$WORK/ok.hpp" "$WORK/first.hpp"
"$TOOL" --strip-comment-lines "$WORK/ok.bash" ok "$WORK/ok.hpp" "$WORK/ok.shipped"
check "the same bytes at every run" cmp -s "$WORK/first.hpp" "$WORK/ok.hpp"

printf '%s\n' 'cat <<EOF' '# not a comment here' 'EOF' >"$WORK/heredoc.bash"
status=0
"$TOOL" --strip-comment-lines "$WORK/heredoc.bash" bad "$WORK/bad.hpp" 2>"$WORK/err" || status=$?
check "refuses a here-document" test "$status" = 1
check "names the file and line" grep -q 'heredoc.bash:1: a here-document' "$WORK/err"
check "writes nothing when it fails" test ! -e "$WORK/bad.hpp"

printf '%d passed, %d failed\n' "$passed" "$failed"
((failed == 0))
