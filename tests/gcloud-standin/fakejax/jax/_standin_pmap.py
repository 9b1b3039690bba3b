"""STAND-IN `jax.pmap` and `jax.lax.psum` (tests/gcloud-standin/fakejax).  NOT JAX.

`pmap(f, axis_name=...)` maps f over the leading axis, which must have one
entry per local device, as JAX requires.  The stand-in calls f once on the
whole per-device arrays (every operation it models is elementwise), so inside
f a value is the array of every local device's value.  `psum(x, axis_name)`
sums over the named axis: every local device and, through the stand-in's
process group, every device of every other process, as pmap's collectives do
on a multi-host slice.  A psum outside pmap, or over an axis that no
enclosing pmap binds, raises NameError as JAX does.
"""

import functools

from ._standin_array import Array
from ._standin_runtime import collective, local_device_count

_axes = []  # axis names bound by the pmaps being traced, innermost last


def pmap(fun=None, axis_name=None, **_options):
    if fun is None:
        return functools.partial(pmap, axis_name=axis_name, **_options)

    @functools.wraps(fun)
    def mapped(*args):
        devices = local_device_count()
        for arg in args:
            if not isinstance(arg, Array) or len(arg) != devices:
                raise ValueError("fakejax (stand-in): pmap's leading axis must have {} entries (one per local "
                                 "device), got {!r}".format(devices, arg))
        _axes.append(axis_name)
        try:
            return fun(*args)
        finally:
            _axes.pop()

    return mapped


def psum(x, axis_name):
    if axis_name not in _axes:
        raise NameError("unbound axis name: {}".format(axis_name))
    devices = local_device_count()
    if isinstance(x, Array):
        local = sum(x)
        dtype = x.dtype
    else:
        local = float(x) * devices  # a value that is the same on every device
        dtype = "float32"
    total = sum(collective("psum", str(axis_name), local))
    return Array([total] * devices, dtype)


def block_until_ready(tree):
    return tree
