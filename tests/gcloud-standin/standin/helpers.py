"""Stand-in-only helpers: `gcloud standin create|set-state|create-bucket` (not gcloud
grammar), and the internal `_venv` and `_curl` of a worker's python3 and curl."""

import json
import os
import re

from .grammar import FlagValueError, arg_dict
from .nodes import NAME_RE, create_node, workers_for
from .state import state_dir, write_atomic
from .storage import gcs_root
from .vm import fake_curl, make_venv
from .workers import ALL_STATES


def standin_main(args):
    import argparse
    parser = argparse.ArgumentParser(
        prog="gcloud standin",
        description="Stand-in-only helpers (NOT gcloud grammar) for tests/gcloud-standin.")
    sub = parser.add_subparsers(dest="action", required=True)
    create = sub.add_parser("create", help="create a stand-in TPU with one home per worker")
    create.add_argument("name")
    create.add_argument("--zone", required=True)
    create.add_argument("--workers", type=int, required=True)
    create.add_argument("--project", help="if given, calls must use this project")
    create.add_argument("--state", default="READY", choices=sorted(ALL_STATES))
    create.add_argument("--health", default="HEALTHY", choices=["HEALTHY", "UNHEALTHY_MAINTENANCE"])
    # GCLOUD_STANDIN_PREPARED=1: every worker already has ~/jax-tpu-lab/.venv (default: a fresh VM).
    create.add_argument("--accelerator-type", help="default: a v5e or v5p type with that many workers; "
                        "decides /dev/vfio/* or /dev/accel* in each worker's fake root")
    create.add_argument("--spot", action="store_true", help="a spot node (GCLOUD_STANDIN_PREEMPT_AFTER applies)")
    create.add_argument("--preemptible", action="store_true", help="a preemptible node (likewise)")
    create.add_argument("--metadata", type=metadata_arg, metavar="KEY=VALUE[,KEY=VALUE...]",
                        help="the node's metadata, as tpu-vm create --metadata sets it (default: none)")
    set_state = sub.add_parser("set-state", help="change a stand-in TPU's state")
    set_state.add_argument("name")
    set_state.add_argument("state", choices=sorted(ALL_STATES))
    bucket = sub.add_parser("create-bucket", help="create a stand-in Cloud Storage bucket (a folder)")
    bucket.add_argument("name")
    if args[:1] == ["_venv"]:       # internal: the fake python3's `-m venv`
        return make_venv(args[1:])
    if args[:1] == ["_curl"]:       # internal: a worker's curl, for its metadata server
        return fake_curl(args[1:])
    ns = parser.parse_args(args)
    if ns.action == "create-bucket":
        problem = bucket_name_problem(ns.name)
        if problem:
            parser.error("bucket name {!r}: {}".format(ns.name, problem))
        folder = gcs_root() / ns.name
        folder.mkdir(parents=True, exist_ok=True)
        print(folder)
        return 0
    root = state_dir() / "tpus" / ns.name
    if ns.action == "set-state":
        config_path = root / "config.json"
        if not config_path.is_file():
            parser.error("no stand-in TPU named {!r}".format(ns.name))
        config = json.loads(config_path.read_text())
        config["state"] = ns.state
        write_atomic(config_path, json.dumps(config, indent=2) + "\n")
        return 0
    if not NAME_RE.match(ns.name):
        parser.error("TPU name {!r} must match {}".format(ns.name, NAME_RE.pattern))
    if ns.workers < 1:
        parser.error("--workers must be at least 1")
    if root.exists():
        parser.error("a stand-in TPU named {!r} already exists in {}".format(ns.name, root.parent))
    accelerator = ns.accelerator_type or default_accelerator(ns.workers)
    if workers_for(accelerator) != ns.workers:
        parser.error("--accelerator-type {} does not have {} workers".format(accelerator, ns.workers))
    config = {"zone": ns.zone, "workers": ns.workers, "state": ns.state, "acceleratorType": accelerator}
    if ns.project:
        config["project"] = ns.project
    if ns.health != "HEALTHY":
        config["health"] = ns.health
    if ns.spot:
        config["spot"] = True
    if ns.preemptible:
        config["preemptible"] = True
    if ns.metadata:
        config["metadata"] = ns.metadata
    root = create_node(ns.name, config)
    # A fresh TPU VM by default (§6): a home folder and python3, nothing else. On request, one
    # prepared as the course's set-up leaves it: ~/jax-tpu-lab/.venv with (the fake) jax.
    if os.environ.get("GCLOUD_STANDIN_PREPARED") == "1":
        for i in range(ns.workers):
            make_venv([str(root / "worker-{}".format(i) / "home" / "jax-tpu-lab" / ".venv")])
    print(root)
    return 0


def metadata_arg(value):
    """--metadata as gcloud parses it (grammar.arg_dict), for argparse."""
    import argparse
    try:
        return arg_dict(value)
    except FlagValueError as exc:
        raise argparse.ArgumentTypeError(str(exc))


def default_accelerator(workers):
    """A v5e or v5p type (their devices are /dev/vfio/*) with `workers` VMs."""
    if workers == 1:
        return "v5litepod-8"
    if workers % 4 == 0:
        return "v5litepod-{}".format(4 * workers)
    return "v5p-{}".format(8 * workers)


def bucket_name_problem(name):
    """Cloud Storage's bucket naming rules (cloud.google.com/storage/docs/buckets#naming),
    or None when `name` follows them."""
    if not re.match(r"^[a-z0-9][a-z0-9._-]*[a-z0-9]$", name):
        return "only lowercase letters, digits, '-', '_' and '.', a letter or digit at each end"
    limit = 222 if "." in name else 63
    if not 3 <= len(name) <= limit or any(len(part) > 63 or not part for part in name.split(".")):
        return "3-63 characters (222 with dots, at most 63 between dots)"
    if re.match(r"^\d{1,3}(\.\d{1,3}){3}$", name):
        return "not an IP address"
    if name.startswith("goog") or "google" in name.replace("0", "o"):
        return "no 'goog' prefix and no 'google'"
    return None
