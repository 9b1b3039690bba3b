"""Work in progress: a sketch of 2D sharding. Not reviewed yet, so tpulaunch gives it no route."""
import jax
from jax.sharding import Mesh, PartitionSpec as P
import numpy as np

devices = np.array(jax.devices()).reshape(2, -1)
mesh = Mesh(devices, ("data", "model"))
print(mesh, P("data", "model"))
