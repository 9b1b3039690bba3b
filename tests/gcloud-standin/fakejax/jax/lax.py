"""STAND-IN `jax.lax` (tests/gcloud-standin/fakejax).  NOT JAX: psum only."""

from ._standin_pmap import psum


def __getattr__(name):
    raise AttributeError("fakejax (stand-in): jax.lax.{} is not modelled".format(name))


__all__ = ["psum"]
