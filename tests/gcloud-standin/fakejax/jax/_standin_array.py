"""STAND-IN arrays for the fake `jax.numpy` and `numpy` (tests/gcloud-standin/fakejax).  NOT JAX.

A one-dimensional array of floats, stored as a Python list and rounded to
float32 after every operation (as a TPU computes in float32), with the few
operations the course's lesson programs use: arithmetic with scalars and
arrays of the same length, indexing, len() and float() of a one-element
array.  Anything else raises at once, so a program that needs more of JAX
fails loudly on the stand-in instead of computing something wrong.
"""

import struct


def _f32(value):
    return struct.unpack("f", struct.pack("f", float(value)))[0]


class Array:
    def __init__(self, values, dtype="float32"):
        self.dtype = dtype
        self._values = [_f32(v) if dtype == "float32" else float(v) for v in values]

    @property
    def shape(self):
        return (len(self._values),)

    def tolist(self):
        return list(self._values)

    def __len__(self):
        return len(self._values)

    def __iter__(self):
        return iter(self._values)

    def __getitem__(self, index):
        if not isinstance(index, int):
            raise TypeError("fakejax (stand-in): arrays take integer indices only")
        return self._values[index]

    def __float__(self):
        if len(self._values) != 1:
            raise TypeError("fakejax (stand-in): only a one-element array converts to float")
        return self._values[0]

    def __repr__(self):
        return "StandinArray({!r})".format(self._values)

    def _zip(self, other, op):
        if isinstance(other, Array):
            if len(other) != len(self):
                raise ValueError("fakejax (stand-in): shapes {} and {} do not match".format(self.shape, other.shape))
            return Array([op(a, b) for a, b in zip(self._values, other._values)], self.dtype)
        if isinstance(other, (int, float)):
            return Array([op(a, other) for a in self._values], self.dtype)
        return NotImplemented

    def __add__(self, other):
        return self._zip(other, lambda a, b: a + b)

    def __radd__(self, other):
        return self._zip(other, lambda a, b: b + a)

    def __sub__(self, other):
        return self._zip(other, lambda a, b: a - b)

    def __rsub__(self, other):
        return self._zip(other, lambda a, b: b - a)

    def __mul__(self, other):
        return self._zip(other, lambda a, b: a * b)

    def __rmul__(self, other):
        return self._zip(other, lambda a, b: b * a)

    def __truediv__(self, other):
        return self._zip(other, lambda a, b: a / b)

    def __neg__(self):
        return Array([-a for a in self._values], self.dtype)


def one_dimensional(shape):
    """The length of a 1-D shape given as n or (n,); anything else raises."""
    if isinstance(shape, int):
        return shape
    if isinstance(shape, tuple) and len(shape) == 1 and isinstance(shape[0], int):
        return shape[0]
    raise ValueError("fakejax (stand-in): only one-dimensional arrays, not shape {!r}".format(shape))


def dtype_name(dtype):
    return "float64" if dtype in ("float64", float) else "float32"


def asarray(value, dtype=None):
    if isinstance(value, Array):
        return value
    if isinstance(value, (int, float)):
        return Array([value], dtype_name(dtype))
    return Array(list(value), dtype_name(dtype))


def allclose(a, b, rtol=1e-05, atol=1e-08):
    xs = asarray(a, "float64")
    ys = asarray(b, "float64")
    if len(ys) == 1 and len(xs) != 1:
        ys = Array([ys[0]] * len(xs), "float64")
    if len(xs) != len(ys):
        raise ValueError("fakejax (stand-in): allclose of shapes {} and {}".format(xs.shape, ys.shape))
    return all(abs(x - y) <= atol + rtol * abs(y) for x, y in zip(xs, ys))
