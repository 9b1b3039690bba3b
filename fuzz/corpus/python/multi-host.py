import jax
import jax.numpy as jnp
from jax.experimental import multihost_utils as mu
jax.distributed.initialize()
x = jnp.ones(jax.local_device_count())
y = jax.pmap(lambda v: jax.lax.psum(v, "i"), axis_name="i")(x)
mu.sync_global_devices("done")
assert jax.default_backend() == "tpu"
