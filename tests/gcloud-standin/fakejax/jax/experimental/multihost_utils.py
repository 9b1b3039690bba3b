"""STAND-IN `jax.experimental.multihost_utils` (tests/gcloud-standin/fakejax).

NOT JAX: values are exchanged as JSON through files, not over an accelerator
interconnect.  Every process must make the same calls in the same order, as
with real JAX; a mismatch raises instead of hanging.
"""

from .._standin_runtime import collective, process_index


def process_allgather(in_tree, tiled=False):
    """Returns a list with every process's `in_tree`, in process order.

    Real JAX returns a numpy array stacked on a new axis 0 (concatenated on
    axis 0 when `tiled`); the stand-in returns a list (with `tiled`, the
    concatenation of the processes' lists).
    """
    values = collective("process_allgather", "", in_tree)
    if tiled:
        return [item for value in values for item in value]
    return values


def sync_global_devices(name):
    """Blocks until every process has called sync_global_devices(name)."""
    collective("sync_global_devices", name, None)


def broadcast_one_to_all(in_tree, is_source=None):
    """Returns the source process's `in_tree` (by default process 0's)."""
    if is_source is None:
        is_source = process_index() == 0
    values = collective("broadcast_one_to_all", "", [bool(is_source), in_tree])
    sources = [value for flag, value in values if flag]
    if not sources:
        raise ValueError("fakejax (stand-in): broadcast_one_to_all without a source process")
    return sources[0]


__all__ = ["process_allgather", "sync_global_devices", "broadcast_one_to_all"]
