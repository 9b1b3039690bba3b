"""The stand-in's state folder ($GCLOUD_STANDIN_STATE): TPUs are folders under tpus/, queued
resources under queued-resources/; calls.jsonl, events.jsonl and runs.jsonl are its logs, one
JSON line per O_APPEND write.  Also what every API call resolves first: the zone and project
properties, the credentials, the node it names."""

import json
import os
import time
from pathlib import Path

from .console import Exit, STANDIN_TAG, fail, status


def state_dir():
    raw = os.environ.get("GCLOUD_STANDIN_STATE", "")
    if not raw:
        status("ERROR: {} GCLOUD_STANDIN_STATE is not set: it must name the folder that "
               "holds the stand-in's TPUs (see tests/gcloud-standin/README.md).".format(STANDIN_TAG))
        raise Exit(2)
    path = Path(raw).resolve()
    path.mkdir(parents=True, exist_ok=True)
    return path


def append_line(path, obj):
    """Appends one JSON line with a single O_APPEND write, so concurrent
    invocations never interleave inside a line."""
    data = (json.dumps(obj, sort_keys=False) + "\n").encode()
    fd = os.open(str(path), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def write_atomic(path, text, mode=0o644):
    tmp = path.with_name(".{}.tmp-{}".format(path.name, os.getpid()))
    with open(tmp, "w") as fh:
        fh.write(text)
    os.chmod(tmp, mode)
    os.replace(tmp, path)


class ConfigLock:
    """An exclusive flock on a record's folder for a read-modify-write of its config."""

    def __init__(self, folder):
        self.path = folder / ".lock"

    def __enter__(self):
        import fcntl
        self.fd = os.open(str(self.path), os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        os.close(self.fd)


def load_config(prog, path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        fail(prog, "{} corrupt {}: {}".format(STANDIN_TAG, path, exc), 2)


def on_worker():
    """The stand-in worker this call runs on (its `gcloud` is the TPU's bin/gcloud), or None
    for a call on the user's machine."""
    worker = os.environ.get("GCLOUD_STANDIN_WORKER")
    return int(worker) if worker is not None and worker.isdigit() else None


class Node:
    """One stand-in TPU node."""

    def __init__(self, root, name, config):
        self.root, self.name, self.config = root, name, config
        self.zone = config["zone"]
        self.workers = int(config["workers"])
        self.state = config.get("state", "READY")
        self.health = config.get("health", "HEALTHY")
        self.project = config.get("project")

    def home(self, worker):
        return self.root / "worker-{}".format(worker) / "home"

    def fake_root(self, worker):
        """The worker's fake `/` for its TPU devices and libtpu's lock (dev/, tmp/):
        handed to the run guard through its one test seam, TPULAUNCH_GUARD_ROOT."""
        return self.root / "worker-{}".format(worker) / "root"

    def address(self, worker):
        return internal_ip(self.config, worker)

    @property
    def preemptible(self):
        """Spot and preemptible nodes are the ones Google may preempt (§10.1)."""
        return bool(self.config.get("spot") or self.config.get("preemptible"))

    @property
    def bin(self):
        return self.root / "bin"

    @property
    def shared(self):
        return self.root / "shared"


def internal_ip(config, worker):
    """A worker's internal address (networkEndpoints[worker].ipAddress): 10.0.SUBNET.(worker+2).
    A node made alone has subnet 0 (every such node the same addresses, as before); each node of
    a multi-node queued resource has its own subnet, so no two slices' workers share an address."""
    return "10.0.{}.{}".format(int(config.get("subnet", 0)), worker + 2)


def resource_name(project, zone, kind, name):
    return "projects/{}/locations/{}/{}/{}".format(project, zone, kind, name)


def operation_name(project, zone):
    return "projects/{}/locations/{}/operations/operation-{}".format(project, zone, time.time_ns())


def resolve_property(value, env_name):
    """A flag value, else the property's environment variable (gcloud's
    CLOUDSDK_<SECTION>_<NAME>), else None."""
    if value is not None:
        return value
    return os.environ.get(env_name) or None


def required_property_error(prog, prop, flag, section):
    # properties.RequiredPropertyError, as printed by the real gcloud.
    fail(prog, "The required property [{0}] is not currently set.\n"
               "It can be set on a per-command basis by re-running your command "
               "with the [{1}] flag.\n\n"
               "You may set it for your current workspace by running:\n\n"
               "  $ gcloud config set {2} VALUE\n\n"
               "or it can be set temporarily by the environment variable "
               "[CLOUDSDK_{3}]".format(prop, flag, section + "/" + prop if section != "core" else prop,
                                       (section + "_" + prop).upper()))


def resource_zone_project(prog, ns, resource):
    """A declarative command's resource argument (§3.2): --zone and --project, else
    their properties, else the 'Failed to find attribute' error."""
    zone = resolve_property(ns.zone, "CLOUDSDK_COMPUTE_ZONE")
    project = resolve_property(ns.project, "CLOUDSDK_CORE_PROJECT")
    for attribute, value, flag, prop in (("zone", zone, "--zone", "compute/zone"),
                                         ("project", project, "--project", "core/project")):
        if value is None:
            fail(prog, "Error parsing [{0}].\nThe [{0}] resource is not properly specified.\n"
                       "Failed to find attribute [{1}]. The attribute can be set in the "
                       "following ways: \n- provide the argument `{2}` on the command line\n"
                       "- set the property `{3}`".format(resource, attribute, flag, prop))
    return zone, project


def check_credentials(prog):
    """§7: without credentials every API call fails with exit 1."""
    if os.environ.get("GCLOUD_STANDIN_NO_AUTH"):
        fail(prog, "You do not currently have an active account selected.\n"
                   "Please run:\n\n  $ gcloud auth login\n\n"
                   "to obtain new credentials.\n\n"
                   "If you have already logged in with a different account, run:\n\n"
                   "  $ gcloud config set account ACCOUNT\n\n"
                   "to select an already authenticated account to use.")


def get_node(prog, name, zone, project):
    """TPUNode.Get: the node, or the API's NOT_FOUND error (exit 1)."""
    check_credentials(prog)
    resource = "projects/{}/locations/{}/nodes/{}".format(project, zone, name)
    root = state_dir() / "tpus" / name
    config = None
    if name and "/" not in name and name not in (".", "..") and (root / "config.json").is_file():
        try:
            config = json.loads((root / "config.json").read_text())
        except (OSError, ValueError) as exc:
            fail(prog, "{} corrupt {}: {}".format(STANDIN_TAG, root / "config.json", exc), 2)
    if (config is None or config.get("zone") != zone
            or (config.get("project") not in (None, project))):
        fail(prog, "NOT_FOUND: Resource '{0}' was not found\n"
                   "- '@type': type.googleapis.com/google.rpc.ResourceInfo\n"
                   "  resourceName: {0}".format(resource))
    return Node(root, name, config)
