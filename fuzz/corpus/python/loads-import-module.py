# expected rows: import-unresolved import-unresolved import-unresolved
# expected modules: common.backends common.backends a.x .backends
# Modules loaded by name (docs/matrix.md, "Code loaded by a call"): literals are followed like
# imports; anything else makes the row undecided.
import importlib
from importlib import import_module as load

backend = importlib.import_module("common.backends")
backend = load(".backends", package="common")
other = importlib.import_module("..x", "a.b")
here = importlib.import_module(".backends", __package__)
chosen = importlib.import_module(NAME)
chosen = importlib.import_module(f"common.{name}")
chosen = importlib.import_module(".x", package=pkg)
