"""STAND-IN `jax.numpy` (tests/gcloud-standin/fakejax).  NOT JAX.

One-dimensional float32 arrays only (see _standin_array.py): full, zeros,
asarray, and the float32 dtype name.
"""

from ._standin_array import Array, asarray, dtype_name, one_dimensional

float32 = "float32"
float64 = "float64"


def full(shape, fill_value, dtype=None):
    return Array([fill_value] * one_dimensional(shape), dtype_name(dtype))


def zeros(shape, dtype=None):
    return full(shape, 0.0, dtype)


def __getattr__(name):
    raise AttributeError("fakejax (stand-in): jax.numpy.{} is not modelled".format(name))


__all__ = ["Array", "asarray", "float32", "float64", "full", "zeros"]
