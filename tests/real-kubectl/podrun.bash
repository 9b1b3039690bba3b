#!/bin/bash
# podrun.bash POD_DIR MOUNT_PATH HOST_NAME -- ARGV...
#
# One pod's container, for the loopback Kubernetes API (fakekube.py), which starts this under
# `unshare --mount --uts` (root). The container's file system is this machine's, bind-mounted
# into a fresh root (its "image"), with a /tmp of its own and the ConfigMap's files
# (POD_DIR/volume) mounted read-only at MOUNT_PATH; its host name is the pod's (JobSet's
# <jobset>-<job>-<index>-<pod> name); its environment is exactly POD_DIR/env (NUL-separated
# NAME=VALUE entries), as a container's is. Nothing here is a TPU.
set -euo pipefail
pod=$1 mount_path=$2 host_name=$3
shift 3
[[ "${1:-}" == "--" ]] && shift
root=$pod/root

# MOUNT_PATH's first folder must not exist on this machine: the volume is mounted on a folder of
# the pod's own root, and making it inside a folder bind-mounted from the machine would create it
# on the machine.
top=${mount_path#/}
top=/${top%%/*}
if [[ "$mount_path" != /* || "$top" == / || -e "$top" ]]; then
  echo "podrun: the volume's mountPath $mount_path must be under a top-level folder that does not exist on this machine (such as /tpulaunch)" >&2
  exit 125
fi

mkdir -p "$root"
mount -t tmpfs -o mode=0755 pod-root "$root"
for entry in /*; do
  name=${entry#/}
  if [[ -L "$entry" ]]; then
    cp -P "$entry" "$root/$name"
  elif [[ "$name" == tmp ]]; then
    mkdir -m 1777 "$root/tmp"
  elif [[ -d "$entry" ]]; then
    mkdir "$root/$name"
    mount --rbind "$entry" "$root/$name"
  fi
done
mkdir -p "$root$mount_path"
mount --bind "$pod/volume" "$root$mount_path"
mount -o remount,bind,ro "$root$mount_path"
hostname "$host_name"

env_entries=()
while IFS= read -r -d '' entry; do
  env_entries+=("$entry")
done <"$pod/env"
cd "$root"
# chroot changes to the new root's / (a container's working folder when the image sets none).
exec chroot . /usr/bin/env -i "${env_entries[@]}" "$@"
