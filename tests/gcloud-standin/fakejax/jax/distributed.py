"""STAND-IN `jax.distributed` (tests/gcloud-standin/fakejax).  NOT JAX."""

from ._standin_runtime import initialize, shutdown

__all__ = ["initialize", "shutdown"]
