# expected rows: import-unresolved import-unresolved import-unresolved import-unresolved config-platforms-cpu import-unresolved import-unresolved
# expected modules: jax
# expected files: common/cpu.py cpu.py cpu.py ./cpu.py
import pathlib
from pathlib import Path

exec(open("common/cpu.py").read())
exec(compile(open("cpu.py").read(), "cpu.py", "exec"))
exec(Path("cpu.py").read_text())
exec(pathlib.Path(__file__).with_name("cpu.py").read_text())
exec("import jax\njax.config.update('jax_platforms', 'cpu')")
exec(code)
eval(expression)
