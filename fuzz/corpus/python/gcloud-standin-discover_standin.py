"""Stand-in discovery lesson for tpulaunch's tests.  It produces NO TPU result.

Runs on the workers emulated by tests/gcloud-standin/gcloud against the fake
`jax` of tests/gcloud-standin/fakejax (backend "standin"): each process calls
jax.distributed.initialize(), reports what it sees and writes
discovery-<i>.json into $TPU_RUN_DIR (required).
"""

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import jax


def hostname():
    # The `hostname` on the worker's PATH, so each worker reports its own name.
    try:
        return subprocess.run(["hostname"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return socket.gethostname()


def main():
    run_dir_value = os.environ.get("TPU_RUN_DIR", "")
    if not run_dir_value:
        print("discover_standin: error: TPU_RUN_DIR is not set; set it to the folder for this "
              "run's receipts", file=sys.stderr)
        return 2
    jax.distributed.initialize()
    receipt = {
        "kind": "discovery",
        "process_index": jax.process_index(),
        "process_count": jax.process_count(),
        "local_device_count": jax.local_device_count(),
        "device_count": jax.device_count(),
        "backend": jax.default_backend(),
        "hostname": hostname(),
    }
    run_dir = Path(run_dir_value)
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / "discovery-{}.json".format(receipt["process_index"])
    tmp = path.with_name(".{}.tmp-{}".format(path.name, os.getpid()))
    tmp.write_text(json.dumps(receipt, indent=2) + "\n")
    os.replace(tmp, path)
    print("[process {process_index}/{process_count}] host {hostname} backend {backend} "
          "devices {local_device_count} local / {device_count} global".format(**receipt))
    return 0


if __name__ == "__main__":
    sys.exit(main())
