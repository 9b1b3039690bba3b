"""STAND-IN `jax.experimental` (tests/gcloud-standin/fakejax).  NOT JAX."""
