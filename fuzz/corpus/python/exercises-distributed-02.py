"""Distributed JAX, exercise 2: simulate an 8-device mesh on the CPU.

This exercise runs on a laptop. It asks JAX for CPU devices on purpose, so the
sharding ideas can be explored without a TPU. Do not start it on a TPU VM: it
would use the host CPU while the TPU chips sit idle.
"""
import os

# Eight fake CPU devices, so that a mesh of 8 can be built on one machine.
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import jax
import jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

devices = jax.devices("cpu")
print(f"{len(devices)} CPU devices: {devices}")

mesh = Mesh(devices, axis_names=("data",))
x = jnp.arange(32.0).reshape(8, 4)
sharded = jax.device_put(x, NamedSharding(mesh, P("data", None)))

# Each device holds one row; the sum is computed across all of them.
total = jnp.sum(sharded)
print("global sum:", float(total))
assert float(total) == float(jnp.sum(x)), "the sharded sum must equal the plain sum"
