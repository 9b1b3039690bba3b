"""STAND-IN `jax` for tpulaunch's tests (tests/gcloud-standin/fakejax).  NOT JAX.

It does no computation on any accelerator, and it never claims to be a TPU:
`default_backend()` is "standin".  It offers the few multi-process calls the
stand-in lessons use, with JAX's names and rules:

  jax.distributed.initialize()   every process joins one group (a file
                                 rendezvous in $GCLOUD_STANDIN_SHARED); it must
                                 come first and only once, as in JAX; without
                                 it a process of a multi-host slice is alone
                                 (process 0 of 1) and its collectives block,
                                 then fail after $FAKEJAX_TIMEOUT
  jax.process_index() / process_count()
  jax.local_device_count()       the devices per host of the stand-in node's
                                 accelerator type ($GCLOUD_STANDIN_LOCAL_DEVICES;
                                 $FAKEJAX_LOCAL_DEVICES overrides it)
  jax.device_count()             local devices x processes
  jax.devices() / local_devices()
  jax.experimental.multihost_utils.process_allgather / sync_global_devices /
                                 broadcast_one_to_all
  jax.pmap / jax.lax.psum / jax.block_until_ready / jax.numpy.full, zeros
                                 one-dimensional float32 arrays; psum sums over
                                 every device of every process (see
                                 _standin_pmap.py); fakejax/numpy offers the
                                 asarray/allclose the lessons read results with

Processes are the workers started by the gcloud stand-in's
`ssh --worker=...`: GCLOUD_STANDIN_WORKER / GCLOUD_STANDIN_WORKERS give the
index and count (0 / 1 outside the stand-in).  Collectives wait at most
$FAKEJAX_TIMEOUT seconds (default 60).  Values travel as JSON.
"""

__version__ = "0.0.0+standin"
STANDIN = True   # lets a test check it is talking to the stand-in

from . import distributed  # noqa: E402  (jax.distributed.initialize)
from . import lax, numpy  # noqa: E402  (jax.lax.psum, jax.numpy.full/zeros)
from ._standin_pmap import block_until_ready, pmap  # noqa: E402
from ._standin_runtime import (  # noqa: E402
    default_backend,
    device_count,
    devices,
    local_device_count,
    local_devices,
    process_count,
    process_index,
)

__all__ = ["distributed", "lax", "numpy", "pmap", "block_until_ready", "default_backend", "device_count", "devices",
           "local_device_count", "local_devices", "process_count", "process_index"]
