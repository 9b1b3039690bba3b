# tpulaunch's discovery program, run by `tpulaunch discover` on every worker of a slice at once.
# Each process joins the JAX cluster, prints where it stands and writes the same facts to
# $TPU_RUN_DIR/discovery-<process index>.json. A discovery receipt describes the topology only;
# it is never a training result. The plan ships this file base64-encoded (so no shell quoting can
# touch it) and decodes it into the run folder, where it comes back with the receipts.
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
