"""Stand-in lesson for tpulaunch's tests.  It produces NO TPU result.

It runs on the workers emulated by tests/gcloud-standin/gcloud, against the
fake `jax` of tests/gcloud-standin/fakejax (backend "standin"), and is written
the way a real multi-host JAX lesson is written: every process calls
jax.distributed.initialize(), owns a distinct slice of the data, computes the
gradient of a one-parameter least-squares loss on it, all-gathers the
gradients, checks the global mean against the value derived independently
from the formula over all inputs, takes one SGD step and writes a receipt;
after a barrier, process 0 alone writes the checkpoint.

Environment:
  TPU_RUN_DIR         required; receipts go here (worker-<i>.json,
                      checkpoint.json on process 0, events.jsonl)
  LESSON_FAIL_WORKER  if equal to this process's index, exit 7 right after
                      initialize, writing nothing (for failure tests; the
                      other processes then fail at their first collective)
  LESSON_FAIL_NODE    a TPU's name (e.g. one slice of a multi-node queued resource):
                      every process on it does all its work, writes its receipt, then
                      exits 7, so that slice fails and the others' runs succeed
  LESSON_HANG_WORKER  I or I:stubborn: process I does all its work, writes its
                      receipt, then never ends (as a program stuck at exit does);
                      `stubborn` also ignores SIGTERM, so only SIGKILL ends it
"""

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import jax
from jax.experimental import multihost_utils

INPUTS_PER_PROCESS = 4
TRUE_SLOPE, TRUE_INTERCEPT = 3.0, 1.0      # targets y = 3x + 1
PARAM_BEFORE = 0.5
LEARNING_RATE = 0.01


def target(x):
    return TRUE_SLOPE * x + TRUE_INTERCEPT


def mean_gradient(w, xs):
    """d/dw of mean((w*x - y)^2) over xs."""
    return sum(2.0 * (w * x - target(x)) * x for x in xs) / len(xs)


def hostname():
    # The `hostname` on the worker's PATH, so each worker reports its own name.
    try:
        return subprocess.run(["hostname"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return socket.gethostname()


def write_json_atomic(path, obj):
    tmp = path.with_name(".{}.tmp-{}".format(path.name, os.getpid()))
    with open(tmp, "w") as fh:
        json.dump(obj, fh, indent=2)
        fh.write("\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def append_event(run_dir, event):
    fd = os.open(str(run_dir / "events.jsonl"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, (json.dumps(event) + "\n").encode())
    finally:
        os.close(fd)


def main():
    run_dir_value = os.environ.get("TPU_RUN_DIR", "")
    if not run_dir_value:
        print("lesson_standin: error: TPU_RUN_DIR is not set; set it to the folder for this "
              "run's receipts", file=sys.stderr)
        return 2
    script = Path(__file__).stem

    jax.distributed.initialize()
    index = jax.process_index()
    count = jax.process_count()
    if os.environ.get("LESSON_FAIL_WORKER", "") == str(index):
        print("[process {}] LESSON_FAIL_WORKER={}: failing on purpose with status 7".format(
            index, index), flush=True)
        return 7

    run_dir = Path(run_dir_value)
    run_dir.mkdir(parents=True, exist_ok=True)
    local, total = jax.local_device_count(), jax.device_count()
    host = hostname()
    print("[process {}/{}] host {} backend {} devices {} local / {} global".format(
        index, count, host, jax.default_backend(), local, total), flush=True)

    owned = [index * INPUTS_PER_PROCESS + k for k in range(INPUTS_PER_PROCESS)]
    local_gradient = mean_gradient(PARAM_BEFORE, owned)
    gradients = multihost_utils.process_allgather(local_gradient)
    global_gradient = sum(gradients) / len(gradients)
    all_inputs = range(count * INPUTS_PER_PROCESS)
    expected = mean_gradient(PARAM_BEFORE, list(all_inputs))
    assert abs(global_gradient - expected) < 1e-9, (
        "global mean gradient {} != expected {}".format(global_gradient, expected))
    param_after = PARAM_BEFORE - LEARNING_RATE * global_gradient
    print("[process {}] inputs {} local gradient {:.6f}; global mean {:.6f} (expected {:.6f}): "
          "check passed; w {} -> {:.6f}".format(index, owned, local_gradient, global_gradient,
                                                expected, PARAM_BEFORE, param_after), flush=True)

    write_json_atomic(run_dir / "worker-{}.json".format(index), {
        "kind": "training",
        "script": script,
        "process_index": index,
        "process_count": count,
        "local_device_count": local,
        "device_count": total,
        "backend": jax.default_backend(),
        "hostname": host,
        "owned_inputs": owned,
        "global_mean_gradient": global_gradient,
        "expected_mean_gradient": expected,
        "params_before": [PARAM_BEFORE],
        "params_after": [param_after],
        "check": "passed",
    })
    append_event(run_dir, {"event": "step", "script": script, "process_index": index,
                           "process_count": count, "t": time.time(), "check": "passed"})

    multihost_utils.sync_global_devices("checkpoint")
    if index == 0:
        write_json_atomic(run_dir / "checkpoint.json", {
            "kind": "checkpoint",
            "written_by": 0,
            "process_count": count,
            "step": 1,
            "params": [param_after],
            "global_mean_gradient": global_gradient,
        })
        append_event(run_dir, {"event": "checkpoint", "script": script, "process_index": 0,
                               "t": time.time()})
        print("[process 0] wrote {}".format(run_dir / "checkpoint.json"), flush=True)
    print("[process {}] done".format(index), flush=True)
    node = os.environ.get("GCLOUD_STANDIN_TPU", "")
    if node and os.environ.get("LESSON_FAIL_NODE", "") == node:
        print("[process {}] LESSON_FAIL_NODE={}: failing on purpose with status 7".format(
            index, node), flush=True)
        return 7
    hang = os.environ.get("LESSON_HANG_WORKER", "")
    if hang.partition(":")[0] == str(index):
        if hang.partition(":")[2] == "stubborn":
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        print("[process {}] LESSON_HANG_WORKER={}: hanging on purpose".format(index, hang), flush=True)
        while True:
            time.sleep(3600)
    return 0


if __name__ == "__main__":
    sys.exit(main())
