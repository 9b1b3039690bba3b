# expected rows: import-unresolved import-unresolved import-unresolved import-unresolved
# expected modules: common.setup
# expected files: common/setup.py ./common/setup.py
import os
import runpy

runpy.run_module("common.setup")
runpy.run_path("common/setup.py")
runpy.run_path(os.path.join(os.path.dirname(__file__), "common", "setup.py"))
runpy.run_path(path)
runpy.run_module(mod_name=m)
