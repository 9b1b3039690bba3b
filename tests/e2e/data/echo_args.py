"""For tpulaunch's --env and -- tests: writes the arguments it got and the PROBE_* variables as
JSON (into $TPU_RUN_DIR on a TPU route, else the current folder), then exits with $ECHO_EXIT."""
import json
import os
import sys

out = os.path.join(os.environ.get("TPU_RUN_DIR", "."), "echo-args.json")
with open(out, "w", encoding="utf-8") as f:
    json.dump({"args": sys.argv[1:], "env": {k: os.environ.get(k) for k in ("PROBE_A", "PROBE_B")}}, f)
print("echo-args: wrote", out)
sys.exit(int(os.environ.get("ECHO_EXIT", "0")))
