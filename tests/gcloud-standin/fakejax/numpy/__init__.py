"""STAND-IN `numpy` for the gcloud stand-in's workers (tests/gcloud-standin/fakejax).  NOT NumPy.

The workers' Python has no NumPy on this build machine; the course's lesson
programs use numpy only to read JAX results back (asarray, allclose,
indexing).  This module offers exactly that over the fake jax's arrays and
raises for anything else.  It is on the path only of the stand-in's venv
python (fakejax/), never of the machine's own python3.
"""

from jax._standin_array import Array as ndarray, allclose, asarray

float32 = "float32"
float64 = "float64"
STANDIN = True


def __getattr__(name):
    raise AttributeError("fakejax (stand-in): numpy.{} is not modelled".format(name))


__all__ = ["allclose", "asarray", "float32", "float64", "ndarray"]
