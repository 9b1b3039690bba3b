# tpulaunch's discovery program (`tpulaunch discover`), run on every worker of a slice at once:
# each process joins the JAX cluster and reports where it stands, on stdout and in
# $TPU_RUN_DIR/discovery-<process index>.json. A discovery receipt is never a training result.
import json
import os
import socket

import jax

jax.distributed.initialize()
receipt = {
    "kind": "discovery",
    "process_index": jax.process_index(),
    "process_count": jax.process_count(),
    "device_count": jax.device_count(),
    "local_device_count": jax.local_device_count(),
    "backend": jax.default_backend(),
    "hostname": socket.gethostname(),
}
print(json.dumps(receipt))
path = os.path.join(os.environ["TPU_RUN_DIR"], "discovery-%d.json" % receipt["process_index"])
with open(path + ".tmp", "w", encoding="utf-8") as out:
    out.write(json.dumps(receipt))
os.replace(path + ".tmp", path)
