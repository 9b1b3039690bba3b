# expected rows: devices-cpu devices-cpu config-platforms-cpu devices-cpu devices-cpu devices-cpu devices-cpu backend-cpu-kwarg devices-cpu devices-cpu config-platforms-cpu platform-unresolved
# CPU selections in unusual places: each is found.
import functools
import jax

f = lambda d=jax.devices("cpu"): d
x = [d for d in ds if d in jax.devices("cpu")]
ok = flag or jax.config.update("jax_platforms", "cpu")
y = table[jax.devices("cpu")[0]]
if (d := jax.devices("cpu")):
    pass
print(f"on {jax.devices('cpu')[0]}")
print(f"{x:>{len(jax.devices('cpu'))}}")


@functools.partial(jax.jit, backend="cpu")
def g(v):
    yield jax.devices("cpu")


def outer():
    def inner():
        return jax.devices("cpu")
    return inner


match mode:
    case "debug":
        jax.config.update("jax_platforms", "cpu")
cpus = functools.partial(jax.devices, "cpu")
