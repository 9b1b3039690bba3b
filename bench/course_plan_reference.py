#!/usr/bin/env python3
"""Reference for bench/plan_bench.sh: the course's routing/planning function, in plain Python.

The course has no tpulaunch; its notebooks route a script with a small Python function. This is
a faithful, honest reimplementation of what such a function does for the same inputs as
`tpulaunch plan`: load the slice table, load execution-matrix.json, sha256 the script, decide
the route from the reviewed class, the digest and the slice's host count, build the stage / run
/ fetch command strings with shlex.quote, and print them. Standard library only, only the
modules the work needs, nothing deliberately slow. It does NOT classify the source again (the
tpulaunch plan does, so the comparison favours this reference).

Usage (same shape as tpulaunch):
  course_plan_reference.py [-C DIR] [--catalog FILE] plan ID [--slice S --tpu T --zone Z]
                           [--run-id R] [--parallel N] [--format text|json|sh]
"""
import hashlib
import json
import os
import shlex
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_CATALOG = os.path.join(HERE, "..", "catalog", "slices.json")
LAB = "jax-tpu-lab/"


def fail(message, code):
    sys.stderr.write("course_plan_reference: error: {}\n".format(message))
    sys.exit(code)


def parse_args(argv):
    opts = {"dir": "", "catalog": DEFAULT_CATALOG, "slice": "", "tpu": "", "zone": "",
            "run_id": "manual", "format": "text", "parallel": "8", "script": ""}
    flags = {"-C": "dir", "--catalog": "catalog", "--slice": "slice", "--tpu": "tpu",
             "--zone": "zone", "--run-id": "run_id", "--format": "format", "--parallel": "parallel"}
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in flags and i + 1 < len(argv):
            opts[flags[arg]] = argv[i + 1]
            i += 2
            continue
        if arg == "plan":
            pass
        elif not opts["script"] and not arg.startswith("-"):
            opts["script"] = arg
        else:
            fail("unexpected argument {!r}".format(arg), 2)
        i += 1
    if not opts["script"]:
        fail("usage: course_plan_reference.py plan ID [--slice S --tpu T --zone Z]", 2)
    return opts


def q(word):
    return shlex.quote(word)


def join(words):
    return " ".join(q(w) for w in words)


def home(rel):
    # "~/" must stay unquoted so the remote shell expands it; the rest is quoted.
    return "~/" + q(rel) if rel else "~/"


def plan(opts):
    with open(opts["catalog"], encoding="utf-8") as fh:
        slices = {s["name"]: s for s in json.load(fh)["slices"]}
    with open("execution-matrix.json", encoding="utf-8") as fh:
        matrix = json.load(fh)
    sid = opts["script"]
    path = os.path.join(matrix.get("exercises_dir", "public/exercises"), sid + ".py")
    entry = matrix["scripts"].get(sid)
    if entry is None:
        fail("{!r} has no entry in the execution matrix: review-required".format(sid), 3)
    with open(path, "rb") as fh:
        digest = hashlib.sha256(fh.read()).hexdigest()
    if digest != entry["sha256"]:
        fail("{!r} changed since it was reviewed: review-required".format(sid), 3)
    cls = entry["class"]
    if cls not in ("cpu-only", "single-host-compatible", "multi-host-qualified"):
        fail("{!r} has the unknown class {!r}: review-required".format(sid, cls), 3)

    result = {"script": sid, "path": path, "class": cls, "sha256": digest, "steps": []}
    if not opts["slice"]:
        result["route"] = "cpu"
        result["steps"].append({"name": "run", "command": join(["python", path])})
        return result
    s = slices.get(opts["slice"])
    if s is None:
        fail("unknown slice {!r}".format(opts["slice"]), 2)
    hosts = s["hosts"]
    if cls == "cpu-only":
        fail("{!r} is cpu-only: it gets no TPU route".format(sid), 3)
    if hosts > 1 and cls != "multi-host-qualified":
        fail("{} has {} hosts; {!r} is {}, not multi-host-qualified".format(s["name"], hosts, sid, cls), 3)
    if not opts["tpu"] or not opts["zone"]:
        fail("a TPU route needs --tpu and --zone", 2)
    tpu, zone, run_id = opts["tpu"], opts["zone"], opts["run_id"]
    multi = hosts > 1
    result["route"] = "multi-host" if multi else "single-host"
    result["slice"] = s["name"]
    result["hosts"] = hosts
    result["run_dir"] = "./tpu-runs/{}/{}/{}".format(tpu, sid, run_id)
    zone_flags = ["--zone=" + zone] + (["--worker=all"] if multi else [])
    stage = join(["gcloud", "compute", "tpus", "tpu-vm", "scp", path]) + " " + q(tpu + ":") + home(LAB)
    stage += " " + join(zone_flags)
    remote = ("set -o pipefail; JAX_PLATFORMS=tpu " + home(LAB + ".venv/bin/python") + " " +
              home(LAB + sid + ".py") + " | tee " + home(LAB + sid + "-tpu.txt"))
    run = join(["gcloud", "compute", "tpus", "tpu-vm", "ssh", tpu] + zone_flags + ["--command=" + remote])
    result["steps"].append({"name": "stage", "command": stage})
    result["steps"].append({"name": "run", "command": run})
    for w in range(hosts):
        fetch = (join(["gcloud", "compute", "tpus", "tpu-vm", "scp"]) + " " + q(tpu + ":") +
                 home(LAB + sid + "-tpu.txt") + " " +
                 join(["{}/worker-{}/".format(result["run_dir"], w), "--zone=" + zone, "--worker={}".format(w)]))
        result["steps"].append({"name": "fetch", "worker": w, "command": fetch})
    return result


def render(result, fmt, parallel):
    if fmt == "json":
        return json.dumps(result, indent=2) + "\n"
    if fmt == "sh":
        out = ["#!/usr/bin/env bash", "set -euo pipefail", "readonly SCRIPT=" + q(result["script"])]
        if result["route"] != "cpu":
            out.append("readonly PARALLEL={}".format(int(parallel)))
            out.append("mkdir -p " + " ".join(q("{}/worker-{}/".format(result["run_dir"], w))
                                              for w in range(result["hosts"])))
        for step in result["steps"]:
            if step["name"] == "fetch":
                out.append(step["command"] + " &")
                if (step["worker"] + 1) % int(parallel) == 0:
                    out.append("wait")
            else:
                out.append(step["command"])
        if result["route"] != "cpu":
            out.append("wait")
        return "\n".join(out) + "\n"
    lines = ["script: {} ({})".format(result["script"], result["path"]),
             "class:  {}".format(result["class"]), "route:  {}".format(result["route"]), "", "commands:"]
    for step in result["steps"]:
        lines.append("  # " + step["name"])
        lines.append("  " + step["command"])
    return "\n".join(lines) + "\n"


def main():
    opts = parse_args(sys.argv[1:])
    if opts["dir"]:
        os.chdir(opts["dir"])
    sys.stdout.write(render(plan(opts), opts["format"], opts["parallel"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
