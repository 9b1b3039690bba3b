"""The test program of the real-kubectl cases: one process per pod, in one (stand-in) JAX group
over every pod of every slice. Prints what each pod was told and what JAX made of it."""
import os

import jax
from jax.experimental import multihost_utils

jax.distributed.initialize()
print("worker {} process {} of {} slice {} of {} host {} hostnames {} devices {}".format(
    os.environ.get("TPU_WORKER_ID", "-"), jax.process_index(), jax.process_count(),
    os.environ.get("MEGASCALE_SLICE_ID", "-"), os.environ.get("MEGASCALE_NUM_SLICES", "-"),
    os.uname().nodename, os.environ.get("TPU_WORKER_HOSTNAMES", "-"), jax.device_count()), flush=True)
multihost_utils.sync_global_devices("tpulaunch-real-kubectl")
