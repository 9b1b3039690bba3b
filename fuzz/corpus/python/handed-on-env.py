# expected rows: env-platforms-cpu env-platforms-cpu env-platforms-cpu env-platforms-cpu env-platforms-cpu env-platforms-cpu xla-force-host-devices platform-unresolved platform-unresolved
# A CPU platform handed on to programs the script starts.
import os
import subprocess
import sys

subprocess.run([sys.executable, "x.py"], env={**os.environ, "JAX_PLATFORMS": "cpu"})
subprocess.run([sys.executable, "x.py"], env=dict(os.environ, JAX_PLATFORMS="cpu"))
env = os.environ.copy()
env["JAX_PLATFORMS"] = "cpu"
subprocess.run("JAX_PLATFORMS=cpu python x.py", shell=True)
subprocess.check_call(["env", "JAX_PLATFORMS=cpu", sys.executable, "x.py"])
os.execve(sys.executable, [sys.executable, "x.py"], {"JAX_PLATFORMS": "cpu"})
os.system("XLA_FLAGS='--xla_force_host_platform_device_count=4' python x.py")
os.system(f"JAX_PLATFORMS={platform} python x.py")
env["JAX_PLATFORMS"], n = "cpu", 2
print("run with JAX_PLATFORMS=cpu python x.py to test")
