"""Multi-host collective update: one SGD step whose gradient is averaged over every chip.

Run on every host of a slice at once (gcloud ... ssh --worker=all). Each process
owns a distinct slice of the inputs, computes its local gradient, and the global
mean gradient comes from a psum over all devices of all hosts. The result is
checked against a value derived independently from the formula, each process
writes a receipt worker-<i>.json into $TPU_RUN_DIR, and process 0 alone
publishes checkpoint.json, after a global barrier, atomically.
"""
import json
import os
import socket

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize()

process = jax.process_index()
processes = jax.process_count()
local = jax.local_device_count()
run_dir = os.environ["TPU_RUN_DIR"]

# Loss per example: 0.5 * (w * x - y)^2 with y = 3x, so dL/dw = (w * x - y) * x.
w0 = 0.5
examples_per_device = 4
global_examples = jax.device_count() * examples_per_device

# Every process owns its own contiguous block of example ids: no two processes share one.
first = process * local * examples_per_device
owned = np.arange(first, first + local * examples_per_device, dtype=np.float32)
x_local = owned.reshape(local, examples_per_device) / global_examples
y_local = 3.0 * x_local


def local_grad_sum(x, y):
    return jnp.sum((w0 * x - y) * x)


# psum over the "hosts" axis of pmap reaches every device of every process.
summed = jax.pmap(lambda x, y: jax.lax.psum(local_grad_sum(x, y), "i"), axis_name="i")(x_local, y_local)
mean_grad = float(summed[0]) / global_examples

# Independent check: the same mean from the closed form over all example ids.
all_x = np.arange(global_examples, dtype=np.float64) / global_examples
expected = float(np.mean((w0 * all_x - 3.0 * all_x) * all_x))
if abs(mean_grad - expected) > 1e-5:
    raise SystemExit(f"process {process}: mean gradient {mean_grad} != expected {expected}")

w1 = w0 - 0.1 * mean_grad
receipt = {
    "kind": "training",
    "script": "collective-update",
    "process_index": process,
    "process_count": processes,
    "local_device_count": local,
    "device_count": jax.device_count(),
    "backend": jax.default_backend(),
    "hostname": socket.gethostname(),
    "owned_inputs": [int(v) for v in owned],
    "global_mean_gradient": mean_grad,
    "expected_mean_gradient": expected,
    "params_before": [w0],
    "params_after": [w1],
    "check": "passed",
}
with open(os.path.join(run_dir, f"worker-{process}.json"), "w") as f:
    json.dump(receipt, f)
print(json.dumps(receipt))

# Nobody publishes until every process has its receipt on disk.
multihost_utils.sync_global_devices("receipts-written")
if process == 0:
    checkpoint = {"kind": "checkpoint", "written_by": 0, "process_count": processes, "step": 1,
                  "params": [w1], "global_mean_gradient": mean_grad}
    tmp = os.path.join(run_dir, "checkpoint.json.tmp")
    with open(tmp, "w") as f:
        json.dump(checkpoint, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, os.path.join(run_dir, "checkpoint.json"))
