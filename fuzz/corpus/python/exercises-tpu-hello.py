"""Single-host TPU check: run a small matmul on every local chip.

Meant for a 1-host TPU VM (v5litepod-4, v5litepod-8, v6e-8, ...). It asserts
that JAX really runs on the TPU, so a misconfigured VM fails loudly instead of
quietly computing on the CPU.
"""
import jax
import jax.numpy as jnp

backend = jax.default_backend()
assert backend == "tpu", f"expected the tpu backend, got {backend!r}"

n = jax.local_device_count()
print(f"backend={backend} local_device_count={n} device_count={jax.device_count()}")

# One 1024x1024 matmul per chip with pmap, to prove every chip computes.
x = jnp.ones((n, 1024, 1024), dtype=jnp.bfloat16)
y = jax.pmap(lambda a: a @ a)(x)
per_chip = [float(v) for v in y[:, 0, 0]]
print("per-chip result:", per_chip)
assert all(v == 1024.0 for v in per_chip), "every chip must return 1024"
