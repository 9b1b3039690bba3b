"""What a stand-in TPU VM worker is (NOT a TPU VM): its fake root with the TPU devices and
libtpu's lock, the processes that may hold them, the environment its login shell gets, and
the per-TPU bin/ (gcloud, curl and its metadata server, hostname, python3 -m venv, pip)."""

import os
import re
import select
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from .console import STANDIN_TAG, fail
from .state import state_dir, write_atomic


# tests/gcloud-standin: the launcher, gcloud.py and the fake jax.
HERE = Path(__file__).resolve().parent.parent
FAKEJAX_DIR = HERE / "fakejax"

# Generations whose TPU VMs expose /dev/accel* (v4 and older); the others expose
# /dev/vfio/* (§10.4).
ACCEL_GENERATIONS = ("v2", "v3", "v4")


def device_kind(accelerator_type):
    return "accel" if accelerator_type.split("-")[0] in ACCEL_GENERATIONS else "vfio"


def make_fake_root(root, accelerator_type, chips):
    """dev/accel<i> or dev/vfio/<i> (regular files standing for the device nodes), an
    empty tmp/: where a TPU VM has its devices and libtpu its lock file."""
    (root / "tmp").mkdir(parents=True, exist_ok=True)
    if device_kind(accelerator_type) == "accel":
        (root / "dev").mkdir(parents=True, exist_ok=True)
        for i in range(chips):
            (root / "dev" / "accel{}".format(i)).touch()
    else:
        (root / "dev" / "vfio").mkdir(parents=True, exist_ok=True)
        (root / "dev" / "vfio" / "vfio").touch()
        for i in range(chips):
            (root / "dev" / "vfio" / str(i)).touch()


HOLDER_LIFETIME = 300       # seconds: a holder never outlives a test run by much


def worker_set(prog, knob):
    """'2,3' or '2:stubborn' items -> {worker: flags}."""
    out = {}
    for item in os.environ.get(knob, "").split(","):
        item = item.strip()
        if not item:
            continue
        worker, _, flags = item.partition(":")
        if not worker.isdigit() or flags not in ("", "stubborn"):
            fail(prog, "{} {} must be a comma list of WORKER[:stubborn], not {!r}".format(
                STANDIN_TAG, knob, item), 2)
        out[int(worker)] = flags
    return out


def device_paths(fake_root):
    paths = sorted((fake_root / "dev").glob("accel*")) + sorted((fake_root / "dev" / "vfio").glob("*"))
    return [p for p in paths if p.is_file()]


def start_holder(node, worker, stubborn):
    """A real process on the worker that holds its TPU devices and libtpu's lock open, as
    a program from an earlier run that never ended does (§10.4): detached, so it outlives
    the ssh call; its pid in <root>/holder.pid.  `stubborn` ignores SIGTERM."""
    root = node.fake_root(worker)
    pid_file = root / "holder.pid"
    held = open_holder(pid_file)
    if held is not None:
        os.close(held)
        return                          # still holding
    lock = root / "tmp" / "libtpu_lockfile"
    lock.touch()
    code = ("import os, signal, sys, time\n"
            "{}"
            "fds = [os.open(p, os.O_RDWR) for p in sys.argv[1:]]\n"
            "time.sleep({})\n").format("signal.signal(signal.SIGTERM, signal.SIG_IGN)\n" if stubborn else "",
                                       HOLDER_LIFETIME)
    paths = [str(p) for p in device_paths(root)] + [str(lock)]
    proc = subprocess.Popen(["bash", "-c", 'exec -a stale-train.py "$0" "$@"', sys.executable, "-S", "-c", code]
                            + paths, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True)
    write_atomic(pid_file, "{}\n".format(proc.pid))
    # Wait until it holds the files, so the run that follows sees a busy TPU.
    deadline = time.time() + 5
    while time.time() < deadline:
        try:
            if len(os.listdir("/proc/{}/fd".format(proc.pid))) >= 3 + len(paths):
                break
        except OSError:
            break
        time.sleep(0.01)


def open_holder(pid_file):
    """A pidfd of the holder that `pid_file` names, or None when that process is gone. The
    pid in the file may by now be another process's (pids wrap at pid_max, and many tests
    run at once): it is the holder only while its command line is stale-train.py's, naming
    this worker's lock file. The pidfd pins that one process, so a signal sent through it
    cannot reach a later process that gets the same pid."""
    try:
        pid = int(pid_file.read_text())
        fd = os.pidfd_open(pid)
    except (OSError, ValueError):
        return None
    try:
        with open("/proc/{}/cmdline".format(pid), "rb") as f:
            argv = f.read().split(b"\0")
    except OSError:
        argv = []
    lock = str(pid_file.parent / "tmp" / "libtpu_lockfile").encode()
    if argv[:1] == [b"stale-train.py"] and lock in argv:
        return fd
    os.close(fd)
    return None


def stop_holders(node_root):
    """Deleting a node ends its processes: no holder outlives its stand-in TPU. Only a pid
    that is still the holder is signalled (open_holder)."""
    fds = []
    for pid_file in node_root.glob("worker-*/root/holder.pid"):
        fd = open_holder(pid_file)
        if fd is None:
            continue
        fds.append(fd)
        try:
            signal.pidfd_send_signal(fd, signal.SIGKILL)
        except OSError:
            pass
    deadline = time.time() + 5
    while fds and time.time() < deadline:
        # A pidfd reads as ready once its process has ended.
        done = [fd for fd in fds if select.select([fd], [], [], 0)[0]]
        for fd in done:
            os.close(fd)
        fds = [fd for fd in fds if fd not in done]
        time.sleep(0.01)
    for fd in fds:
        os.close(fd)


def kill_worker_processes(node):
    """A node that is gone ends every process of its workers at once (SIGKILL), also one that
    left the ssh call's session (the run guard starts the program with setsid): each carries
    the node's shared folder in its environment (remote_env), as fakecloud.py finds them."""
    marker = "GCLOUD_STANDIN_SHARED={}".format(node.shared).encode()
    deadline = time.time() + 5
    while time.time() < deadline:
        pids = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) == os.getpid():
                continue
            try:
                with open("/proc/{}/environ".format(entry), "rb") as environ:
                    if marker in environ.read().split(b"\0"):
                        pids.append(int(entry))
            except OSError:
                continue
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.01)


def prepare_workers(prog, node, workers):
    """Applies the per-run knobs before a command runs on `workers`."""
    holders = worker_set(prog, "GCLOUD_STANDIN_TPU_HOLDER")
    stale = worker_set(prog, "GCLOUD_STANDIN_TPU_STALE_LOCK")
    for worker in workers:
        if worker in holders:
            start_holder(node, worker, holders[worker] == "stubborn")
        if worker in stale:
            (node.fake_root(worker) / "tmp" / "libtpu_lockfile").touch()


# A TPU VM login shell's PATH after the stand-in's bin/: the system folders only, not the
# caller's PATH, so a worker has python3 but no `python` from this machine's pyenv or venv
# (a fresh TPU VM often has no `python` at all, §6).
WORKER_SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"

# The stand-in's own knobs a worker's commands see too: its gcloud (bin/gcloud, for
# `gcloud storage`) reads them. GCLOUD_STANDIN_NO_AUTH stays behind: a TPU VM's gcloud
# acts as the VM's service account, whatever the user's credentials.
WORKER_KNOBS = ("GCLOUD_STANDIN_GCS", "GCLOUD_STANDIN_GCS_FAIL_WORKERS", "GCLOUD_STANDIN_DELAY",
                "GCLOUD_STANDIN_WORKER_DELAY", "GCLOUD_STANDIN_PYTHON")


def remote_env(node, worker, user):
    """The environment a worker's login shell gets.  Like a real sshd, it does
    not inherit the caller's environment: only the variables below, plus the
    test knobs FAKEJAX_* and LESSON_* (so failure tests can reach the lesson)."""
    bash = shutil.which("bash") or "/bin/bash"
    env = {
        "HOME": str(node.home(worker)),
        "PWD": str(node.home(worker)),
        "USER": user,
        "LOGNAME": user,
        "SHELL": bash,
        "LANG": "C.UTF-8",
        "PATH": "{}:{}".format(node.bin, WORKER_SYSTEM_PATH),
        "GCLOUD_STANDIN_WORKER": str(worker),
        "GCLOUD_STANDIN_WORKERS": str(node.workers),
        "GCLOUD_STANDIN_TPU": node.name,
        "GCLOUD_STANDIN_SHARED": str(node.shared),
        # The run guard's one test seam: where this worker's /dev and /tmp are.
        "TPULAUNCH_GUARD_ROOT": str(node.fake_root(worker)),
    }
    if node.config.get("multisliceShared"):
        # The fake jax's meeting place for all slices of a multi-node queued resource.
        env["GCLOUD_STANDIN_MULTISLICE_SHARED"] = node.config["multisliceShared"]
    for key, value in os.environ.items():
        if key.startswith(("FAKEJAX_", "LESSON_")) or key in WORKER_KNOBS:
            env[key] = value
    return env, bash


def write_worker_bin(staging_bin, final_bin, host_tag="standin0"):
    """The per-TPU fake commands that come first on every worker's PATH; `host_tag` stands
    for the 8 hex digits of the TPU's worker host names (t1v-n-<tag>-w-<i>)."""
    staging_bin.mkdir()
    real_python = shlex.quote(sys.executable)
    me = shlex.quote(str(HERE / "gcloud.py"))
    scripts = {
        "gcloud": """#!/bin/sh
# gcloud stand-in on a stand-in TPU worker (NOT a TPU VM). TPU VM images ship the gcloud CLI,
# acting as the VM's service account; this runs the same stand-in with this TPU's state, and
# GCLOUD_STANDIN_WORKER tells it the call is made on worker $GCLOUD_STANDIN_WORKER.
GCLOUD_STANDIN_STATE={state}
export GCLOUD_STANDIN_STATE
exec {launcher} "$@"
""".format(state=shlex.quote(str(state_dir())), launcher=shlex.quote(str(HERE / "gcloud"))),
        "curl": """#!/bin/sh
# gcloud stand-in: a stand-in TPU worker's curl reaches only its metadata server (README.md),
# which answers from this TPU's record.
GCLOUD_STANDIN_NODE_ROOT={node}
export GCLOUD_STANDIN_NODE_ROOT
exec {py} -S {me} standin _curl "$@"
""".format(py=real_python, me=me, node=shlex.quote(str(final_bin.parent))),
        "hostname": """#!/bin/bash
# gcloud stand-in: fake `hostname` of a stand-in TPU worker (NOT a TPU VM).
# Real TPU VM workers are named t1v-n-<8 hex>-w-<index> (§5).
if [ $# -eq 0 ] || [ "$1" = -s ] || [ "$1" = --short ]; then
  printf 't1v-n-{tag}-w-%s\\n' "${{GCLOUD_STANDIN_WORKER:?not on a stand-in worker}}"
else
  echo "hostname (gcloud stand-in): option '$1' is not emulated" >&2
  exit 1
fi
""".format(tag=host_tag),
        "pip": """#!/bin/bash
# gcloud stand-in: pip installs nothing on a stand-in worker (no network).
printf 'stand-in: pip %s (nothing installed)\\n' "$*" >&2
exit 0
""",
        "python3": """#!/bin/bash
# gcloud stand-in: fake `python3` on a stand-in TPU worker.
# `python3 -m venv DIR` makes a stand-in venv whose bin/python sees the fake
# jax (tests/gcloud-standin/fakejax); `python3 -m pip ...` installs nothing;
# anything else runs the real python3.
if [ "${{1-}}" = -m ]; then
  case "${{2-}}" in
    venv) shift 2; exec {py} -S {me} standin _venv "$@" ;;
    pip|pip3) shift 2; exec {pip} "$@" ;;
  esac
fi
exec {py} "$@"
""".format(py=real_python, me=me, pip=shlex.quote(str(final_bin / "pip"))),
    }
    for name, text in scripts.items():
        write_atomic(staging_bin / name, text, 0o755)
    os.symlink("pip", str(staging_bin / "pip3"))


# The metadata server of a Compute Engine VM (a TPU VM is one): the host names it answers to.
METADATA_HOSTS = ("metadata.google.internal", "metadata", "169.254.169.254")
METADATA_ATTRIBUTES = "/computeMetadata/v1/instance/attributes/"


def fake_curl(args):
    """`curl` on a stand-in worker: answers the metadata server's (§9) `agent-worker-number`
    (the worker's index, as on a TPU VM), `tpu-env` and the node's own metadata keys when asked
    with `Metadata-Flavor: Google`, 403 without that header (as the real server does), 404 for
    other keys, and cannot resolve
    any other host (a stand-in worker has no network). Options: -s -S -f -L, -H, -m,
    --retry, --connect-timeout and their long forms."""
    flags, headers, urls = set(), [], []
    takes_value = {"-H": "header", "--header": "header", "-m": None, "--max-time": None,
                   "--connect-timeout": None, "--retry": None, "--retry-delay": None}
    no_value = {"-s": "s", "--silent": "s", "-S": "S", "--show-error": "S", "-f": "f", "--fail": "f",
                "-L": "L", "--location": "L"}
    i = 0
    while i < len(args):
        a = args[i]
        name, eq, inline = a.partition("=") if a.startswith("--") else (a, "", "")
        if name in takes_value:
            value = inline if eq else (args[i + 1] if i + 1 < len(args) else None)
            if value is None:
                sys.stderr.write("curl: option {}: requires parameter\n".format(a))
                return 2
            if takes_value[name] == "header":
                headers.append(value)
            i += 1 if eq else 2
            continue
        if a in no_value:
            flags.add(no_value[a])
        elif re.match(r"^-[sSfL]+[Hm]?$", a):
            flags.update(c for c in a[1:] if c in "sSfL")
            if a[-1] in "Hm":
                # `-sSfH VALUE`: the last option of a bundle takes the next word.
                args = args[:i] + ["-" + a[-1]] + args[i + 1:]
                continue
        elif a.startswith("-"):
            sys.stderr.write("curl (gcloud stand-in): option {} is not emulated\n".format(a))
            return 2
        else:
            urls.append(a)
        i += 1
    if len(urls) != 1:
        sys.stderr.write("curl (gcloud stand-in): exactly one URL is emulated\n")
        return 2

    def error(code, message):
        if "s" not in flags or "S" in flags:
            sys.stderr.write("curl: ({}) {}\n".format(code, message))
        return code

    match = re.match(r"^(?:https?://)?([^/:]+)(?::\d+)?(/.*)?$", urls[0])
    host, path = (match.group(1), match.group(2) or "/") if match else (urls[0], "/")
    if host not in METADATA_HOSTS:
        return error(6, "Could not resolve host: {}".format(host))
    flavored = any(h.replace(" ", "").lower() == "metadata-flavor:google" for h in headers)
    worker = os.environ.get("GCLOUD_STANDIN_WORKER")
    if not flavored:
        code, body = 403, ("Your client does not have permission to get URL {} from this server. "
                           "Missing Metadata-Flavor:Google header.\n".format(path))
    elif path == METADATA_ATTRIBUTES + "agent-worker-number" and worker is not None:
        code, body = 200, worker
    elif path == METADATA_ATTRIBUTES + "tpu-env" and worker is not None:
        code, body = 200, tpu_env()
    elif path.startswith(METADATA_ATTRIBUTES) and worker is not None and \
            path[len(METADATA_ATTRIBUTES):] in node_config().get("metadata", {}):
        # The node's own metadata (create's --metadata): each key an instance attribute, its
        # value the body as it was set (no newline added), as on a Compute Engine VM (§9).
        code, body = 200, node_config()["metadata"][path[len(METADATA_ATTRIBUTES):]]
    else:
        code, body = 404, "Not Found\n"
    if code != 200 and "f" in flags:
        return error(22, "The requested URL returned error: {}".format(code))
    sys.stdout.write(body)
    return 0


def tpu_env():
    """The `tpu-env` attribute: `KEY: 'value'` lines (the form of JAX's own example,
    docs/multislice.md §3).  A real one holds more keys than the stand-in models; a node of a
    multi-node queued resource has its MEGASCALE_* values there (nodes.create_qr_nodes), a node
    made alone none of them (so the body is empty)."""
    env = node_config().get("tpuEnv", {})
    return "".join("{}: '{}'\n".format(key, value) for key, value in env.items())


def node_config():
    """The record of the TPU whose worker's curl this is (its bin/curl names its folder)."""
    import json
    root = os.environ.get("GCLOUD_STANDIN_NODE_ROOT", "")
    try:
        return json.loads((Path(root) / "config.json").read_text())
    except (OSError, ValueError):
        return {}


def make_venv(args):
    """`python3 -m venv` on a stand-in worker: DIR/bin/python runs the real
    python3 with the fake jax on PYTHONPATH; DIR/bin/pip installs nothing."""
    import argparse
    parser = argparse.ArgumentParser(prog="venv", description="stand-in venv")
    parser.add_argument("dirs", metavar="ENV_DIR", nargs="+")
    for flag in ("--system-site-packages", "--symlinks", "--copies", "--clear",
                 "--upgrade", "--without-pip", "--upgrade-deps"):
        parser.add_argument(flag, action="store_true")
    parser.add_argument("--prompt")
    ns = parser.parse_args(args)
    for d in ns.dirs:
        env_dir = Path(d).resolve()
        bin_dir = env_dir / "bin"
        bin_dir.mkdir(parents=True, exist_ok=True)
        pip = shlex.quote(str(bin_dir / "pip"))
        write_atomic(bin_dir / "pip", """#!/bin/bash
# gcloud stand-in venv: pip installs nothing (no network on a stand-in worker).
printf 'stand-in: pip %s (nothing installed)\\n' "$*" >&2
exit 0
""", 0o755)
        write_atomic(bin_dir / "python", """#!/bin/bash
# gcloud stand-in venv python: the real python3 plus the FAKE jax of
# tests/gcloud-standin/fakejax (no TPU, backend "standin").
if [ "${{1-}}" = -m ] && {{ [ "${{2-}}" = pip ] || [ "${{2-}}" = pip3 ]; }}; then
  shift 2; exec {pip} "$@"
fi
export PYTHONPATH={fakejax}${{PYTHONPATH:+:$PYTHONPATH}}
export PYTHONDONTWRITEBYTECODE=1
exec {py} "$@"
""".format(pip=pip, fakejax=shlex.quote(str(FAKEJAX_DIR)), py=shlex.quote(sys.executable)), 0o755)
        for alias, target in (("python3", "python"), ("pip3", "pip")):
            if not (bin_dir / alias).exists():
                os.symlink(target, str(bin_dir / alias))
        write_atomic(bin_dir / "activate", """# gcloud stand-in venv activate (source it from bash)
deactivate () {{
  PATH=$_OLD_VIRTUAL_PATH; export PATH
  unset VIRTUAL_ENV _OLD_VIRTUAL_PATH
  unset -f deactivate
  hash -r 2>/dev/null
}}
VIRTUAL_ENV={env}; export VIRTUAL_ENV
_OLD_VIRTUAL_PATH=$PATH
PATH="$VIRTUAL_ENV/bin:$PATH"; export PATH
hash -r 2>/dev/null
""".format(env=shlex.quote(str(env_dir))))
        write_atomic(env_dir / "pyvenv.cfg", "home = {}\nstand-in = true\n".format(
            Path(sys.executable).parent))
    return 0
