"""TPU nodes and queued resources: `tpu-vm create|describe|delete` (§10.1, §10.3) and
`queued-resources create|describe|delete` (§10.2), the state progressions a describe walks
through, and the accelerator types' workers (§4)."""

import json
import os
import re
import time

from .console import Exit, STANDIN_TAG, confirm, fail, print_formatted, quiet, status
from .grammar import QUEUED, SPECS, TPU_VM, parse_error, reject_not_emulated
from .state import (
    ConfigLock, Node, check_credentials, get_node, internal_ip, load_config, operation_name,
    resource_name, resource_zone_project, state_dir, write_atomic)
from .vm import kill_worker_processes, make_fake_root, stop_holders, write_worker_bin


NAME_RE = re.compile(r"^[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?$")   # §5

# Node states (§10.3); a describe of a node that is being created sees them in order.
NODE_STATES = ["CREATING", "READY", "RESTARTING", "REIMAGING", "DELETING", "REPAIRING",
               "STOPPED", "STOPPING", "STARTING", "PREEMPTED", "TERMINATED", "HIDING",
               "HIDDEN", "UNHIDING", "UNKNOWN"]
# Queued resource state.state values (§10.2).
QR_STATES = ["CREATING", "ACCEPTED", "PROVISIONING", "FAILED", "DELETING", "ACTIVE",
             "SUSPENDING", "SUSPENDED", "WAITING_FOR_RESOURCES"]

# The defaults are the hard case: a new node is not READY at once, and a queued resource
# waits for capacity before it is provisioned, so callers must poll.
DEFAULT_NODE_STATES = "CREATING:2,READY"
DEFAULT_QR_STATES = "WAITING_FOR_RESOURCES:2,PROVISIONING:1,ACTIVE"


def parse_progression(prog, knob, text, allowed):
    """'A:2,B:1,C' -> [["A", 2], ["B", 1], ["C", None]]: the state each describe call
    sees, in order; the last one stays.  A malformed knob is a stand-in usage error."""
    steps = []
    items = [item.strip() for item in text.split(",")]
    for k, item in enumerate(items):
        name, sep, count = item.partition(":")
        last = k == len(items) - 1
        if name not in allowed or (sep and not count.isdigit()) or (sep and int(count) < 1) \
                or (last and sep) or (not last and not sep):
            fail(prog, "{} {} must be STATE:COUNT,...,STATE (states {}), not {!r}".format(
                STANDIN_TAG, knob, "|".join(allowed), text), 2)
        steps.append([name, int(count) if sep else None])
    return steps


def advance(config):
    """One describe call: the state it sees, consuming one step of the progression."""
    steps = config.get("progression")
    if not steps:
        return config.get("state")
    state, count = steps[0]
    if count is not None:
        if count <= 1:
            steps.pop(0)
        else:
            steps[0][1] = count - 1
    if not steps:
        config.pop("progression", None)
    config["state"] = state
    return state


def workers_for(accelerator_type):
    """VMs of an accelerator type by the rule of §4, or None for a type the TPU VM
    API does not offer (TPU7x and later are GKE / Compute Engine only, §10.5)."""
    match = re.match(r"^(v2|v3|v4|v5litepod|v5p|v6e)-([1-9][0-9]*)$", accelerator_type)
    if not match:
        return None
    gen, n = match.group(1), int(match.group(2))
    chips = n if gen in ("v5litepod", "v6e") else n // 2
    if chips < 1:
        return None
    per_vm = chips if gen in ("v5litepod", "v6e") and chips <= 8 else 4
    if chips % per_vm:
        return None
    return max(1, chips // per_vm)


def chips_per_worker(accelerator_type, workers):
    gen, _, n = accelerator_type.partition("-")
    chips = int(n) if gen in ("v5litepod", "v6e") else int(n) // 2
    return max(1, chips // workers)


def create_node(name, config):
    """Makes $GCLOUD_STANDIN_STATE/tpus/NAME atomically: one home and one fake root per
    worker, a shared folder for the fake jax, the per-TPU bin/.  Returns its root."""
    root = state_dir() / "tpus" / name
    staging = root.parent / ".{}.creating-{}".format(name, os.getpid())
    staging.mkdir(parents=True)
    accelerator = config.get("acceleratorType", "")
    chips = chips_per_worker(accelerator, config["workers"]) if accelerator else 4
    for i in range(config["workers"]):
        (staging / "worker-{}".format(i) / "home").mkdir(parents=True)
        make_fake_root(staging / "worker-{}".format(i) / "root", accelerator or "v5litepod-16", chips)
    (staging / "shared").mkdir()
    # Each slice of a multi-node queued resource has host names of its own (its subnet's).
    write_worker_bin(staging / "bin", root / "bin", "standin{}".format(int(config.get("subnet", 0))))
    write_atomic(staging / "config.json", json.dumps(config, indent=2) + "\n")
    os.rename(str(staging), str(root))
    return root


def node_record(node_root, name, config):
    project, zone = config.get("project", "-"), config["zone"]
    record = {
        "name": resource_name(project, zone, "nodes", name),
        "acceleratorType": config.get("acceleratorType", ""),
        "runtimeVersion": config.get("runtimeVersion", ""),
        "state": config.get("state", "READY"),
        "health": config.get("health", "HEALTHY"),
        "networkEndpoints": [{"ipAddress": internal_ip(config, i), "port": 8470}
                             for i in range(int(config["workers"]))],
        "schedulingConfig": {key: True for key in ("preemptible", "spot", "reserved")
                             if config.get(key)},
    }
    if config.get("metadata"):
        # The node's metadata as set at create (--metadata), a map the API leaves out when empty.
        record["metadata"] = dict(config["metadata"])
    if config.get("queuedResource"):
        record["queuedResource"] = config["queuedResource"]
    return record


def cmd_create(ns):
    spec = SPECS[TPU_VM, "create"]
    prog = spec.prog
    reject_not_emulated(spec, ns)
    zone, project = resource_zone_project(prog, ns, "tpu")
    check_credentials(prog)
    # --accelerator-type is lower-cased and defaults to v2-8 (§10.1).
    accelerator = (ns.accelerator_type or "v2-8").lower()
    workers = workers_for(accelerator)
    if workers is None:
        fail(prog, "INVALID_ARGUMENT: {} accelerator type {!r} is not offered by the TPU VM "
                   "API in the stand-in's model (v2|v3|v4|v5litepod|v5p|v6e-N, §4, §10.5)"
                   .format(STANDIN_TAG, accelerator))
    if not NAME_RE.match(ns.tpu):
        fail(prog, "INVALID_ARGUMENT: {} Invalid value for field 'resource.name': {!r}. Must "
                   "be a match of regex '(?:[a-z](?:[-a-z0-9]{{0,61}}[a-z0-9])?)' (§5)"
                   .format(STANDIN_TAG, ns.tpu))
    if (state_dir() / "tpus" / ns.tpu).exists():
        fail(prog, "ALREADY_EXISTS: Resource '{}' already exists".format(
            resource_name(project, zone, "nodes", ns.tpu)))
    config = {"zone": zone, "project": project, "workers": workers,
              "acceleratorType": accelerator, "runtimeVersion": ns.version,
              "spot": ns.spot, "preemptible": ns.preemptible, "reserved": ns.reserved}
    if ns.metadata:
        # Every worker's metadata server serves each key as an instance attribute (vm.fake_curl).
        config["metadata"] = ns.metadata
    config["progression"] = parse_progression(
        prog, "GCLOUD_STANDIN_NODE_STATES",
        os.environ.get("GCLOUD_STANDIN_NODE_STATES") or DEFAULT_NODE_STATES, NODE_STATES)
    config["state"] = config["progression"][0][0]
    status("Create request issued for: [{}]".format(ns.tpu))
    operation = operation_name(project, zone)
    if ns.async_:
        create_node(ns.tpu, config)
        status("Check operation [{}] for status.".format(operation))
        raise Exit(0)
    # Without --async gcloud waits for the operation, which ends when the node is created:
    # its progression has run to the end.
    config["state"] = config["progression"][-1][0]
    config.pop("progression")
    create_node(ns.tpu, config)
    wait_for_operation(operation)
    status("Created tpu [{}].".format(ns.tpu))
    raise Exit(0)


def wait_for_operation(operation):
    """What gcloud prints while it waits for a long-running operation with stderr not a
    terminal (seen with the real gcloud in tests/real-gcloud): the message, then one dot per
    tick of its progress tracker and "done." on the next line. One tick here."""
    status("Waiting for operation [{}] to complete...".format(operation), ".done.")


def describe_blip(prog):
    """GCLOUD_STANDIN_DESCRIBE_FAIL=N: the first N describe calls (tpu-vm or queued-resources) fail
    as a passing API error would (UNAVAILABLE, exit 1), as a real call sometimes does: a wait
    must look again, never give up on what it created."""
    budget = int(os.environ.get("GCLOUD_STANDIN_DESCRIBE_FAIL") or "0")
    if budget <= 0:
        return
    counter = state_dir() / "describe-failures"
    done = int(counter.read_text()) if counter.exists() else 0
    if done < budget:
        write_atomic(counter, "{}\n".format(done + 1))
        fail(prog, "UNAVAILABLE: {} the service is currently unavailable (GCLOUD_STANDIN_DESCRIBE_FAIL)"
             .format(STANDIN_TAG))


def cmd_describe(ns):
    spec = SPECS[TPU_VM, "describe"]
    prog = spec.prog
    reject_not_emulated(spec, ns)
    zone, project = resource_zone_project(prog, ns, "tpu")
    describe_blip(prog)
    node = get_node(prog, ns.tpu, zone, project)
    with ConfigLock(node.root):
        config = load_config(prog, node.root / "config.json")
        advance(config)
        write_atomic(node.root / "config.json", json.dumps(config, indent=2) + "\n")
    config.setdefault("project", project)
    print_formatted(prog, ns.format, node_record(node.root, node.name, config))
    raise Exit(0)


def cmd_delete(ns):
    spec = SPECS[TPU_VM, "delete"]
    prog = spec.prog
    reject_not_emulated(spec, ns)
    zone, project = resource_zone_project(prog, ns, "tpu")
    if not quiet(ns):
        # console_io.PromptContinue(throw_if_unattended=True, cancel_on_no=True) (§3, §7).
        confirm(prog, "tpu [{}]".format(ns.tpu))
    node = get_node(prog, ns.tpu, zone, project)
    status("Delete request issued for: [{}]".format(node.name))
    graveyard = state_dir() / "deleted"
    graveyard.mkdir(exist_ok=True)
    stop_holders(node.root)
    kill_worker_processes(node)     # a deleted VM's processes end, also those that left with setsid
    # Keep the homes for inspection; later calls to the name get NOT_FOUND.
    os.rename(str(node.root), str(graveyard / "{}.{}".format(node.name, time.time_ns())))
    if ns.async_:
        status("Check operation [{}] for status.".format(operation_name(project, zone)))
    else:
        wait_for_operation(operation_name(project, zone))
        status("Deleted tpu [{}].".format(node.name))
    raise Exit(0)


NODE_GROUP = "Exactly one of (--node-id | [--node-count : --node-prefix])"


def verify_node_count(prog, ns):
    """gcloud's request hooks for --node-count (exit 1, after parsing, before credentials): they
    test the count and the prefix for truth, so --node-count=0 reads as not given."""
    if ns.node_prefix and not ns.node_count:
        fail(prog, "arguments not allowed simultaneously: Can only specify --node-prefix if "
                   "--node-count is also specified.")
    if ns.node_count and ns.node_count <= 1:
        fail(prog, "Invalid value for [--node-count]: Node count must be greater than 1")


def qr_node_ids(config):
    """A queued resource's nodes: its node id, or PREFIX-0 ... PREFIX-(N-1) for a node count
    (docs/multislice.md §2.2; the prefix defaults to the queued resource's id)."""
    if config.get("nodeCount"):
        return ["{}-{}".format(config["nodePrefix"], i) for i in range(int(config["nodeCount"]))]
    return [config["nodeId"]]


# The Megascale coordinator's port as written into tpu-env. INFERRED: JAX's first Multislice
# code (2023) says the Megascale coordinator port is 8080 on Multislice GCE, and JAX drops any
# ":port" of MEGASCALE_COORDINATOR_ADDRESS; no page shows tpu-env's exact value
# (docs/multislice.md §3.1, §8). The stand-in writes IP:8080, the form a reader must cope with.
MEGASCALE_COORDINATOR_PORT = 8080


def allocate_subnets(count):
    """`count` subnets no node has had yet (1, 2, ...; 0 is the one of nodes made alone)."""
    counter = state_dir() / "subnets"
    with ConfigLock(state_dir()):
        last = int(counter.read_text()) if counter.exists() else 0
        write_atomic(counter, "{}\n".format(last + count))
    return list(range(last + 1, last + count + 1))


def create_qr_nodes(qr_name, config):
    """The nodes of an ACTIVE queued resource.  Those of a node count are the slices of one
    Multislice job: the Cloud TPU service writes each one's MEGASCALE_* values into its VMs'
    `tpu-env` metadata (docs/multislice.md §3.1: shown by JAX's and MaxText's code, not by a
    page of Google's; the metadata server serves them, vm.fake_curl).  Not into an ssh
    session's environment: that is an open question (§8), and a launcher must not rely on it."""
    names = qr_node_ids(config)
    multi = bool(config.get("nodeCount"))
    subnets = allocate_subnets(len(names)) if multi else [0]
    base = {"zone": config["zone"], "project": config["project"], "workers": config["workers"],
            "acceleratorType": config["acceleratorType"],
            "runtimeVersion": config["runtimeVersion"], "state": "READY",
            "spot": config.get("spot", False), "queuedResource": resource_name(
                config["project"], config["zone"], "queuedResources", qr_name)}
    if config.get("metadata"):
        base["metadata"] = config["metadata"]       # the node spec's, on every node it makes
    shared = qr_dir(qr_name) / "shared"        # the fake jax's, for all slices (vm.remote_env)
    shared.mkdir(exist_ok=True)
    coordinator = "{}:{}".format(internal_ip({"subnet": subnets[0]}, 0), MEGASCALE_COORDINATOR_PORT)
    for slice_id, (name, subnet) in enumerate(zip(names, subnets)):
        node = dict(base)
        if multi:
            node["subnet"] = subnet
            node["multisliceShared"] = str(shared)
            node["tpuEnv"] = {"MEGASCALE_COORDINATOR_ADDRESS": coordinator,
                              "MEGASCALE_NUM_SLICES": str(len(names)),
                              "MEGASCALE_SLICE_ID": str(slice_id)}
        create_node(name, node)


_DURATION_RE = re.compile(r"^(?:[0-9]+[dhms])+$|^[0-9]+$")


def qr_dir(name):
    return state_dir() / "queued-resources" / name


def get_qr(prog, name, zone, project):
    check_credentials(prog)
    folder = qr_dir(name)
    config = None
    if name and "/" not in name and name not in (".", "..") and (folder / "config.json").is_file():
        config = load_config(prog, folder / "config.json")
    if config is None or config.get("zone") != zone or config.get("project") != project:
        fail(prog, "NOT_FOUND: Resource '{0}' was not found\n"
                   "- '@type': type.googleapis.com/google.rpc.ResourceInfo\n"
                   "  resourceName: {0}".format(resource_name(project, zone, "queuedResources", name)))
    return folder, config


def qr_record(name, config):
    node = {"acceleratorType": config["acceleratorType"], "runtimeVersion": config["runtimeVersion"]}
    if config.get("metadata"):
        node["metadata"] = dict(config["metadata"])
    # The v2 API's NodeSpec: a node id, or multisliceParams (nodeCount, nodeIdPrefix).
    spec = ({"multisliceParams": {"nodeCount": config["nodeCount"], "nodeIdPrefix": config["nodePrefix"]}}
            if config.get("nodeCount") else {"nodeId": config["nodeId"]})
    record = {
        "name": resource_name(config["project"], config["zone"], "queuedResources", name),
        "tpu": {"nodeSpec": [dict(spec, parent="projects/{}/locations/{}".format(config["project"], config["zone"]),
                                  node=node)]},
        "state": {"state": config["state"]},
    }
    for key in ("spot", "guaranteed"):
        if config.get(key):
            record[key] = {}
    if config.get("reserved"):
        record["reservationName"] = "projects/{}/locations/{}/reservations/-".format(
            config["project"], config["zone"])
    if config.get("validUntilDuration"):
        record["queueingPolicy"] = {"validUntilDuration": config["validUntilDuration"]}
    return record


def cmd_qr_create(ns):
    spec = SPECS[QUEUED, "create"]
    prog = spec.prog
    # Required mutex groups (calliope checks them with the grammar, exit 2): whether a flag was
    # given, not its value; the texts are gcloud 528's (tests/real-gcloud, docs/multislice.md §2.1).
    given = set(ns.specified)
    if "--node-prefix" in given and "--node-count" not in given:
        parse_error(spec, "argument --node-prefix: --node-count must be specified.")
    if "--node-id" in given and "--node-count" in given:
        parse_error(spec, "argument --node-id: " + NODE_GROUP + " must be specified.")
    if "--node-id" not in given and "--node-count" not in given:
        parse_error(spec, NODE_GROUP + " must be specified.")
    if not ns.accelerator_type and not (ns.type or ns.topology):
        parse_error(spec, "Exactly one of (--accelerator-type | --topology --type) must be specified.")
    if ns.valid_until_duration is not None and not _DURATION_RE.match(ns.valid_until_duration):
        parse_error(spec, "argument --valid-until-duration: Failed to parse duration: {}".format(
            ns.valid_until_duration))
    reject_not_emulated(spec, ns)
    zone, project = resource_zone_project(prog, ns, "queued_resource")
    verify_node_count(prog, ns)
    check_credentials(prog)
    accelerator = ns.accelerator_type.lower()
    workers = workers_for(accelerator)
    if workers is None:
        fail(prog, "INVALID_ARGUMENT: {} accelerator type {!r} is not offered by the TPU VM "
                   "API in the stand-in's model (§4, §10.5)".format(STANDIN_TAG, accelerator))
    if not ns.node_id and not ns.node_count:
        # --node-count=0 alone passes gcloud's checks (they test the count for truth) and
        # reaches the API with a node spec that has neither an id nor a count.
        fail(prog, "INVALID_ARGUMENT: {} the node spec has neither a node id nor a node count "
                   "(--node-count=0)".format(STANDIN_TAG))
    config = {"nodeId": ns.node_id} if ns.node_id else {
        "nodeCount": ns.node_count, "nodePrefix": ns.node_prefix or ns.queued_resource}
    names = qr_node_ids(config)
    if not NAME_RE.match(ns.queued_resource) or not all(NAME_RE.match(n) for n in names):
        fail(prog, "INVALID_ARGUMENT: {} the stand-in takes queued resource and node ids of the "
                   "form {} (§5)".format(STANDIN_TAG, NAME_RE.pattern))
    if qr_dir(ns.queued_resource).exists():
        fail(prog, "ALREADY_EXISTS: Resource '{}' already exists".format(
            resource_name(project, zone, "queuedResources", ns.queued_resource)))
    for name in names:
        if (state_dir() / "tpus" / name).exists():
            fail(prog, "ALREADY_EXISTS: {} a node named {!r} already exists".format(STANDIN_TAG, name))
    progression = parse_progression(prog, "GCLOUD_STANDIN_QR_STATES",
                                    os.environ.get("GCLOUD_STANDIN_QR_STATES") or DEFAULT_QR_STATES,
                                    QR_STATES)
    config.update({"zone": zone, "project": project, "workers": workers,
              "acceleratorType": accelerator, "runtimeVersion": ns.runtime_version,
              "spot": ns.spot, "reserved": ns.reserved, "guaranteed": ns.guaranteed,
              "validUntilDuration": ns.valid_until_duration,
              "state": "ACCEPTED", "progression": progression})
    if ns.metadata:
        config["metadata"] = ns.metadata
    folder = qr_dir(ns.queued_resource)
    staging = folder.parent / ".{}.creating-{}".format(ns.queued_resource, os.getpid())
    staging.mkdir(parents=True)
    write_atomic(staging / "config.json", json.dumps(config, indent=2) + "\n")
    os.rename(str(staging), str(folder))
    status("Create request issued for: [{}]".format(ns.queued_resource))
    operation = operation_name(project, zone)
    if ns.async_:
        status("Check operation [{}] for status.".format(operation))
    else:
        # The create operation ends when the queued resource exists, not when it is ACTIVE.
        wait_for_operation(operation)
        # The resource kind as gcloud 528 names it (seen in tests/real-gcloud), underscore and all.
        status("Created queued_resource [{}].".format(ns.queued_resource))
    raise Exit(0)


def cmd_qr_describe(ns):
    spec = SPECS[QUEUED, "describe"]
    prog = spec.prog
    reject_not_emulated(spec, ns)
    zone, project = resource_zone_project(prog, ns, "queued_resource")
    describe_blip(prog)
    folder, _ = get_qr(prog, ns.queued_resource, zone, project)
    with ConfigLock(folder):
        config = load_config(prog, folder / "config.json")
        state = advance(config)
        if state == "ACTIVE" and not config.get("nodeCreated"):
            # The queued resource's nodes exist once it is ACTIVE (§10.2; all of them at once:
            # Multislice is gang-scheduled, docs/multislice.md §1), with its spot scheduling,
            # and are then managed with the tpu-vm commands.
            create_qr_nodes(ns.queued_resource, config)
            config["nodeCreated"] = True
        write_atomic(folder / "config.json", json.dumps(config, indent=2) + "\n")
    print_formatted(prog, ns.format, qr_record(ns.queued_resource, config))
    raise Exit(0)


def cmd_qr_delete(ns):
    spec = SPECS[QUEUED, "delete"]
    prog = spec.prog
    reject_not_emulated(spec, ns)
    zone, project = resource_zone_project(prog, ns, "queued_resource")
    if not quiet(ns):
        confirm(prog, "queued resource [{}]".format(ns.queued_resource))
    folder, config = get_qr(prog, ns.queued_resource, zone, project)
    nodes = [name for name in qr_node_ids(config) if (state_dir() / "tpus" / name).exists()]
    if nodes and not ns.force:
        # A queued resource whose nodes still exist is deleted with --force (which also
        # deletes them, §10.2) or after them.
        fail(prog, "FAILED_PRECONDITION: {} queued resource {!r} still has node {!r}; pass "
                   "--force to delete both".format(STANDIN_TAG, ns.queued_resource, nodes[0]))
    status("Delete request issued for: [{}]".format(ns.queued_resource))
    graveyard = state_dir() / "deleted"
    graveyard.mkdir(exist_ok=True)
    stamp = time.time_ns()
    for name in nodes:
        node_root = state_dir() / "tpus" / name
        stop_holders(node_root)
        kill_worker_processes(Node(node_root, name, load_config(prog, node_root / "config.json")))
        os.rename(str(node_root), str(graveyard / "{}.{}".format(name, stamp)))
    os.rename(str(folder), str(graveyard / "qr-{}.{}".format(ns.queued_resource, stamp)))
    if ns.async_:
        status("Check operation [{}] for status.".format(operation_name(project, zone)))
    else:
        wait_for_operation(operation_name(project, zone))
        status("Deleted queued_resource [{}].".format(ns.queued_resource))
    raise Exit(0)
