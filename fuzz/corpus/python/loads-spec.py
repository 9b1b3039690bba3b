# expected rows: import-unresolved import-unresolved import-unresolved import-unresolved import-unresolved
# expected files: common/cfg.py ./common/cfg.py cfg.py cfg.py
import importlib.machinery
import importlib.util
import imp
from pathlib import Path

spec = importlib.util.spec_from_file_location("cfg", "common/cfg.py")
spec = importlib.util.spec_from_file_location("cfg", Path(__file__).parent / "common" / "cfg.py")
module = importlib.machinery.SourceFileLoader("cfg", "cfg.py").load_module()
module = imp.load_source("cfg", "cfg.py")
spec = importlib.util.spec_from_file_location("cfg", location)
