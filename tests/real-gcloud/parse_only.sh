#!/usr/bin/env bash
# parse_only.sh FILE: runs the gcloud command whose words FILE holds (NUL-separated, without the
# leading "gcloud") with an empty configuration, no account and no access token (no CLOUDSDK_* of the caller's), so that gcloud
# stops right after parsing, at the missing account. A project is set (resource arguments need
# one before any account is looked for), and the local folders the command names (./…/, which a
# plan's prepare step creates) exist in the scratch folder it runs in. Writes FILE.status,
# FILE.out and FILE.err. Used by cases.sh's grammar case.
set -uo pipefail
file=$1
home=$(mktemp -d)
config=$(mktemp -d)
scratch=$(mktemp -d)
mapfile -d '' -t argv <"$file"
for word in "${argv[@]}"; do
  if [[ "$word" == ./*/ ]]; then
    mkdir -p "$scratch/$word"
  fi
done
mapfile -t drop < <(compgen -e | sed -n 's/^CLOUDSDK_/-u&/p')
status=0
(cd "$scratch" && env "${drop[@]}" \
  HOME="$home" CLOUDSDK_CONFIG="$config" CLOUDSDK_CORE_PROJECT=lab-project-1 CLOUDSDK_CORE_DISABLE_USAGE_REPORTING=1 \
  CLOUDSDK_COMPONENT_MANAGER_DISABLE_UPDATE_CHECK=1 \
  gcloud "${argv[@]}" </dev/null >"$file.out" 2>"$file.err") || status=$?
echo "$status" >"$file.status"
rm -rf "$home" "$config" "$scratch"
