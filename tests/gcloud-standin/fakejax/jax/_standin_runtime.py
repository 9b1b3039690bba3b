"""The process group behind the STAND-IN jax (tests/gcloud-standin/fakejax).

Workers of one stand-in TPU are separate processes on this machine, started
at once by the gcloud stand-in, sharing the folder $GCLOUD_STANDIN_SHARED (the
slices of a multi-node queued resource: $GCLOUD_STANDIN_MULTISLICE_SHARED, with
process ids and count from MEGASCALE_SLICE_ID and MEGASCALE_NUM_SLICES).

Rendezvous (jax.distributed.initialize): under an exclusive flock, a process
joins the oldest open session of its TPU (same process count, younger than
the timeout, its index still free, every member alive) or opens a new one,
then waits until all process_count members have joined.  Like real JAX on a
TPU slice, the group is formed by the slice rather than by one ssh call, so
workers started by separate `ssh --worker=i` calls meet as well.

Without jax.distributed.initialize() a process of a multi-host slice forms no
job, as with real JAX: it sees itself only (process 0 of 1, its own local
devices), and a collective, which needs the other hosts, blocks until
$FAKEJAX_TIMEOUT and then fails saying why.  So a multi-host run of a script
that never initializes fails on the stand-in too, or reports the wrong
topology, and a test can tell.  (Until issue 35 the stand-in formed the group
anyway, and such a run "succeeded".)

Collectives: the k-th collective of each process writes
<session>/c<k>/p<index>.json atomically (temp file + os.replace) and waits for
every process's file.  A peer that died without contributing, a mismatched
call (different collective or sync name at step k) or the timeout raises
instead of hanging: real JAX would hang or fail only after its heartbeat
timeout, which helps no test.
"""

import fcntl
import json
import os
import time
from pathlib import Path

# Waiting polls a folder listing (one syscall, whatever the process count), starting at
# _POLL_MIN_S and backing off to _POLL_MAX_S; peers' liveness is checked every _ALIVE_EVERY_S.
# Polling every file of every peer every few milliseconds would make the wait O(N^2) and, with
# 64 workers on 2 cores, the stand-in's own cost would swamp what the tests and benchmarks time.
_POLL_MIN_S = 0.002
_POLL_MAX_S = 0.05
_ALIVE_EVERY_S = 0.25

_state = {
    "backend_initialized": False,   # any jax.* call has "started the backend"
    "initialized": False,           # jax.distributed.initialize() was called
    "session": None,                # Path of the joined session
    "members": None,                # index -> pid
    "step": 0,                      # collectives made so far by this process
}


class StandinError(RuntimeError):
    """An error of the stand-in process group."""


def _env_int(name, default):
    raw = os.environ.get(name, "")
    if raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise StandinError("fakejax (stand-in): {}={!r} is not an integer".format(name, raw))


def _index():
    """JAX's process id on a Cloud TPU VM: the worker's index in its slice plus
    MEGASCALE_SLICE_ID x the slice's VMs (docs/multislice.md §3)."""
    slice_id, _ = _slices()
    return _env_int("GCLOUD_STANDIN_WORKER", 0) + slice_id * _env_int("GCLOUD_STANDIN_WORKERS", 1)


def _count():
    return _env_int("GCLOUD_STANDIN_WORKERS", 1) * _slices()[1]


def _slices():
    """(MEGASCALE_SLICE_ID, MEGASCALE_NUM_SLICES), as JAX reads them: the environment first,
    then the metadata server's tpu-env; unset or empty means slice 0 of 1.  Only a worker of a
    multi-node queued resource (GCLOUD_STANDIN_MULTISLICE_SHARED set) asks the metadata server:
    a node made alone has no MEGASCALE_* value there, so the answer is known without the call."""
    if "slices" not in _state:
        env = {}
        if os.environ.get("GCLOUD_STANDIN_MULTISLICE_SHARED") and not all(
                os.environ.get(k) for k in ("MEGASCALE_SLICE_ID", "MEGASCALE_NUM_SLICES")):
            env = _tpu_env()
        values = []
        for key, default in (("MEGASCALE_SLICE_ID", 0), ("MEGASCALE_NUM_SLICES", 1)):
            raw = os.environ.get(key) or env.get(key, "")
            try:
                values.append(int(raw) if raw else default)
            except ValueError:
                raise StandinError("fakejax (stand-in): {}={!r} is not an integer".format(key, raw))
        _state["slices"] = tuple(values)
    return _state["slices"]


def _tpu_env():
    """The `KEY: 'value'` lines of the tpu-env metadata attribute, read with the worker's curl
    as JAX reads the metadata server (jax/_src/clusters/cloud_tpu_cluster.py)."""
    import subprocess
    url = "http://metadata.google.internal/computeMetadata/v1/instance/attributes/tpu-env"
    try:
        text = subprocess.run(["curl", "-s", "-f", "-H", "Metadata-Flavor: Google", url],
                              capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            out[key.strip()] = value.strip().strip("'")
    return out


def _timeout():
    return float(os.environ.get("FAKEJAX_TIMEOUT", "") or 60)


def _touch():
    _state["backend_initialized"] = True


# --- the jax.* queries ------------------------------------------------------

def _in_job():
    """Whether this process is part of its slice's job: it called jax.distributed.initialize(),
    or it is its slice's only process.  Any other sees itself only."""
    return _state["initialized"] or _count() == 1


def process_index():
    _touch()
    return _index() if _in_job() else 0


def process_count():
    _touch()
    return _count() if _in_job() else 1


def local_device_count():
    """FAKEJAX_LOCAL_DEVICES when a test sets it; else what the stand-in worker's accelerator
    type has per host (GCLOUD_STANDIN_LOCAL_DEVICES, from the node's acceleratorType); else 4."""
    _touch()
    name = "FAKEJAX_LOCAL_DEVICES" if os.environ.get("FAKEJAX_LOCAL_DEVICES") else "GCLOUD_STANDIN_LOCAL_DEVICES"
    n = _env_int(name, 4)
    if n < 1:
        raise StandinError("fakejax (stand-in): {} must be >= 1".format(name))
    return n


def device_count():
    return local_device_count() * process_count()


def default_backend():
    _touch()
    return "standin"      # never "tpu": this is not a TPU


class StandinDevice:
    platform = "standin"
    device_kind = "stand-in device (no accelerator)"

    def __init__(self, id, process_index):
        self.id = id
        self.process_index = process_index

    def __repr__(self):
        return "StandinDevice(id={}, process_index={})".format(self.id, self.process_index)


def devices():
    local = local_device_count()
    return [StandinDevice(p * local + k, p) for p in range(process_count()) for k in range(local)]


def local_devices():
    me = process_index()
    return [d for d in devices() if d.process_index == me]


# --- jax.distributed ----------------------------------------------------------

def initialize(coordinator_address=None, num_processes=None, process_id=None,
               local_device_ids=None, cluster_detection_method=None,
               initialization_timeout=300, **kwargs):
    """jax.distributed.initialize with JAX's two ordering rules."""
    del coordinator_address, local_device_ids, cluster_detection_method
    del initialization_timeout, kwargs
    if _state["backend_initialized"]:
        raise RuntimeError(
            "jax.distributed.initialize() must be called before any JAX calls that might "
            "initialise the XLA backend. This includes any computation, but also calls to "
            "jax.devices, jax.device_put, and others.")
    if _state["initialized"]:
        raise RuntimeError("distributed.initialize should only be called once.")
    if num_processes is not None and num_processes != _count():
        raise ValueError("fakejax (stand-in): num_processes={} but this stand-in TPU has {} "
                         "workers".format(num_processes, _count()))
    if process_id is not None and process_id != _index():
        raise ValueError("fakejax (stand-in): process_id={} but this is worker {}".format(
            process_id, _index()))
    _state["initialized"] = True
    _join()


def shutdown():
    """Nothing to tear down: the group lives in files."""


# --- rendezvous ---------------------------------------------------------------

def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:   # a zombie has exited already
        with open("/proc/{}/stat".format(pid)) as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def _write_json_atomic(path, obj):
    tmp = path.with_name(".{}.tmp-{}".format(path.name, os.getpid()))
    with open(tmp, "w") as fh:
        json.dump(obj, fh)
    os.replace(tmp, path)


class _Poll:
    """Backing-off sleeps, and whether a (throttled) liveness check is due."""

    def __init__(self):
        self.sleep_s = _POLL_MIN_S
        self.next_alive = time.monotonic() + _ALIVE_EVERY_S

    def alive_check_due(self):
        now = time.monotonic()
        if now < self.next_alive:
            return False
        self.next_alive = now + _ALIVE_EVERY_S
        return True

    def wait(self):
        time.sleep(self.sleep_s)
        self.sleep_s = min(self.sleep_s * 1.5, _POLL_MAX_S)


def _listing(folder, prefix):
    """Names in `folder` starting with `prefix` (temp files start with '.')."""
    try:
        return [n for n in os.listdir(folder) if n.startswith(prefix)]
    except FileNotFoundError:
        return []


def _members(session):
    found = {}
    for f in session.glob("member-*.json"):
        try:
            found[int(f.stem.split("-", 1)[1])] = json.loads(f.read_text())["pid"]
        except (OSError, ValueError, KeyError):
            continue
    return found


def _join():
    """Joins (or opens) this TPU's session and waits for every process."""
    index, count = _index(), _count()
    if count == 1:
        _state["session"], _state["members"] = None, {0: os.getpid()}
        return
    # The slices of a Multislice job form one group: their workers meet in the queued
    # resource's folder, not in their own TPU's.
    shared = os.environ.get("GCLOUD_STANDIN_MULTISLICE_SHARED" if _slices()[1] > 1
                            else "GCLOUD_STANDIN_SHARED", "")
    if not shared:
        raise StandinError("fakejax (stand-in): GCLOUD_STANDIN_SHARED is not set; a "
                           "multi-process run needs the gcloud stand-in's ssh")
    root = Path(shared) / "fakejax-sessions"
    root.mkdir(parents=True, exist_ok=True)
    timeout = _timeout()
    with open(root / ".lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        now = time.time()
        session = None
        for candidate in sorted(p for p in root.iterdir() if p.is_dir()):
            try:
                meta = json.loads((candidate / "meta.json").read_text())
            except (OSError, ValueError):
                continue
            if meta.get("process_count") != count or now - meta.get("created", 0) >= timeout:
                continue
            members = _members(candidate)
            if (len(members) < count and index not in members
                    and all(_alive(pid) for pid in members.values())):
                session = candidate
                break
        if session is None:
            session = root / "{:020d}-{}".format(time.time_ns(), os.getpid())
            session.mkdir()
            _write_json_atomic(session / "meta.json", {"process_count": count, "created": now})
        _write_json_atomic(session / "member-{}.json".format(index),
                           {"pid": os.getpid(), "t": now})
    deadline = time.monotonic() + timeout
    poll = _Poll()
    while True:
        if len(_listing(session, "member-")) == count:
            members = _members(session)
            if len(members) == count:
                break
        timed_out = time.monotonic() > deadline
        if not (timed_out or poll.alive_check_due()):
            poll.wait()
            continue
        members = _members(session)
        dead = sorted(i for i, pid in members.items() if not _alive(pid))
        if dead:
            raise StandinError("fakejax (stand-in): process(es) {} exited during "
                               "jax.distributed.initialize()".format(dead))
        if timed_out:
            missing = sorted(set(range(count)) - set(members))
            raise StandinError(
                "fakejax (stand-in): jax.distributed.initialize() timed out after {:g} s "
                "waiting for process(es) {} of {} to join. Did you run your code on all "
                "TPU hosts? (e.g. gcloud compute tpus tpu-vm ssh ... --worker=all)".format(
                    timeout, missing, count))
        poll.wait()
    _state["session"], _state["members"] = session, members


def _wait_alone(kind, count):
    """A collective of a process that never joined its slice's job: the other hosts never answer,
    so it blocks, as real JAX would, here for $FAKEJAX_TIMEOUT only, then fails saying why."""
    timeout = _timeout()
    time.sleep(timeout)
    raise StandinError(
        "fakejax (stand-in): {} waited {:g} s for the other {} hosts of this {}-host slice, which never "
        "answer: jax.distributed.initialize() was not called, so this process is in no job (it sees "
        "process 0 of 1 and its own {} devices only) and a collective across hosts never completes; call "
        "jax.distributed.initialize() first".format(kind, timeout, count - 1, count, local_device_count()))


def collective(kind, name, value):
    """Every process contributes `value`; returns all values in process order."""
    _touch()
    try:
        payload = json.loads(json.dumps({"kind": kind, "name": name, "value": value}))
    except (TypeError, ValueError) as exc:
        raise TypeError("fakejax (stand-in): {} only carries JSON values (numbers, strings, "
                        "lists, dicts): {}".format(kind, exc))
    count = _count()
    if count == 1:
        return [payload["value"]]
    if not _state["initialized"]:
        _wait_alone(kind, count)
    _state["step"] += 1
    step = _state["step"]
    where = _state["session"] / "c{:06d}".format(step)
    where.mkdir(exist_ok=True)
    _write_json_atomic(where / "p{}.json".format(_index()), payload)
    deadline = time.monotonic() + _timeout()
    poll = _Poll()
    while True:
        if len(_listing(where, "p")) == count:
            break
        timed_out = time.monotonic() > deadline
        if not (timed_out or poll.alive_check_due()):
            poll.wait()
            continue
        present = set(_listing(where, "p"))
        missing = [j for j in range(count) if "p{}.json".format(j) not in present]
        if not missing:
            break
        dead = [j for j in missing if not _alive(_state["members"][j])]
        if dead:
            raise StandinError("fakejax (stand-in): process(es) {} exited before reaching "
                               "collective #{} ({}{})".format(dead, step, kind,
                                                             "('{}')".format(name) if name else ""))
        if timed_out:
            raise StandinError("fakejax (stand-in): timed out after {:g} s in collective #{} "
                               "({}) waiting for process(es) {}".format(_timeout(), step, kind, missing))
        poll.wait()
    records = [json.loads((where / "p{}.json".format(j)).read_text()) for j in range(count)]
    for j, record in enumerate(records):
        if record["kind"] != kind:
            raise StandinError("fakejax (stand-in): collective #{} mismatch: this process called "
                               "{} but process {} called {} (every process must make the same "
                               "calls in the same order)".format(step, kind, j, record["kind"]))
        if record["name"] != name and kind == "sync_global_devices":
            raise AssertionError("sync_global_devices name mismatch ('{}')".format(name))
    return [record["value"] for record in records]
