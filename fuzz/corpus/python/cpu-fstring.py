import os
os.environ["JAX_PLATFORMS"] = "cpu"
import jax
devs = jax.devices("cpu")
f"{jax.devices('cpu')!r:>{10}}"
