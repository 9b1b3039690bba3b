import jax
if True:
	jax.devices()
print(1)