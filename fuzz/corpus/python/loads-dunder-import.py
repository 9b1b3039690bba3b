# expected rows: import-unresolved import-unresolved import-unresolved
# expected modules: common.backends common .backends common.cfg
m = __import__("common.backends")
m = __import__("common", fromlist=["backends"])
m = __import__("backends", globals(), locals(), ["x"], 1)
import importlib
m = importlib.__import__("common.cfg")
m = __import__(mod)
m = __import__("common", fromlist=names)
m = __import__("common", None, None, [], level)
