x = """unterminated
  jax.devices("cpu")
