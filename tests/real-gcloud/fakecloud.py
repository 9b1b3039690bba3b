#!/usr/bin/env python3
"""A loopback stand-in of the Cloud TPU API (v2) and of the two Compute Engine calls that
gcloud's `tpu-vm ssh|scp` make, for tests/real-gcloud only.  NOT Google's API, and nothing it
serves is a TPU.

The real gcloud (its parser, its ssh/scp fan-out, retries and exit statuses) is pointed here
with CLOUDSDK_API_ENDPOINT_OVERRIDES_TPU / _COMPUTE; the workers it reaches are real OpenSSH
`sshd`s, one per worker, each in its own mount and UTS namespaces (`unshare`, as root) on
127.0.0.(2+i):22, with the worker's home folder mounted over /root.

Nodes and queued resources live in the gcloud stand-in's state folder
($GCLOUD_STANDIN_STATE, tests/gcloud-standin/README.md), made by the stand-in's own code
(imported from tests/gcloud-standin/standin/): a worker's home, its fake TPU devices, the
folder the fake jax meets in, the fake `python3 -m venv` that installs the fake jax.  The same
knobs drive both: GCLOUD_STANDIN_NODE_STATES, GCLOUD_STANDIN_QR_STATES (one state per describe
call, read from the command gcloud names in its User-Agent),
GCLOUD_STANDIN_TPU_HOLDER, GCLOUD_STANDIN_TPU_STALE_LOCK, FAKEJAX_* and LESSON_* (given to
every worker's sshd as SetEnv).  One knob is this server's own:
REALGCLOUD_PREEMPT_WHEN=GLOB (relative to the node's folder): once a file matches, a spot or
preemptible node becomes PREEMPTED and its workers are gone (every process that came through
their sshd is killed, so ssh sees the connection close and its retries are refused).  The
stand-in's GCLOUD_STANDIN_DROP_WORKERS, _AFTER and _WHEN drop a worker's connection here by
killing its per-connection sshd (watch_drops); lib.sh's drop_worker_connection does it on demand.

The download side of Cloud Storage (gcloud storage cp from gs://) is fakestorage.py's, over the
stand-in's bucket folders, which the workers' stand-in gcloud uploads into
(CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE points here too).

Every request is appended to requests.jsonl in the state folder ({"method", "path", "query",
"body", "gcloud": the command, "invocation": the gcloud process's invocation id}).

Usage: fakecloud.py --state DIR --pubkey FILE --port-file FILE   (runs until SIGTERM)
"""

import argparse
import glob
import http.server
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.parse
import zlib
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.dont_write_bytecode = True      # no __pycache__ in the source tree for the import below
sys.path.insert(0, str(HERE.parent / "gcloud-standin"))
sys.path.insert(0, str(HERE))
from standin import drop, nodes, vm  # noqa: E402  (the gcloud stand-in's package: its nodes and workers)
from standin.state import append_line, resource_name, write_atomic  # noqa: E402
from fakecloud_workers import Workers  # noqa: E402  (one sshd per worker)
import fakestorage  # noqa: E402  (the read side of the Cloud Storage JSON API, over the stand-in's buckets)
from standin.storage import gcs_root  # noqa: E402

PROG = "fakecloud"
LOCK = threading.RLock()


def log(message):
    sys.stderr.write("fakecloud: {}\n".format(message))
    sys.stderr.flush()


class ApiError(Exception):
    def __init__(self, code, status, message):
        super().__init__(message)
        self.code, self.status, self.message = code, status, message


def not_found(resource):
    return ApiError(404, "NOT_FOUND", "Resource '{}' was not found".format(resource))


# --------------------------------------------------------------------------
# The API.
# --------------------------------------------------------------------------

class Cloud:
    def __init__(self, state, pubkey, ssh_dir):
        self.state, self.pubkey, self.ssh_dir = state, pubkey, ssh_dir
        self.host_key = ssh_dir / "host_ed25519"
        self.workers = {}           # node name -> Workers
        self.next_base = 2
        self.op_count = 0
        self.ops = {}               # operation name -> (resource, kind, done_when)
        self.project_metadata = {"ssh-keys": "root:" + pubkey.read_text().strip() + " root"}
        self.preempt_glob = os.environ.get("REALGCLOUD_PREEMPT_WHEN", "")
        self.drops = drop.DropKnobs(PROG) if os.environ.get("GCLOUD_STANDIN_DROP_WORKERS") else None

    # --- state -------------------------------------------------------------
    def tpus(self):
        return self.state / "tpus"

    def node_config(self, name):
        path = self.tpus() / name / "config.json"
        if not name or "/" in name or not path.is_file():
            return None
        return json.loads(path.read_text())

    def save_node(self, name, config):
        write_atomic(self.tpus() / name / "config.json", json.dumps(config, indent=2) + "\n")

    def start_workers(self, name):
        config = self.node_config(name)
        workers = Workers(self, name, self.tpus() / name, self.next_base)
        self.next_base += int(config["workers"])
        workers.start(config)
        self.workers[name] = workers
        log("node {}: {} worker(s) on {}..{}".format(name, config["workers"], workers.address(0),
                                                     workers.address(int(config["workers"]) - 1)))

    def node_json(self, project, zone, name, config):
        workers = self.workers.get(name)
        record = nodes.node_record(self.tpus() / name, name, dict(config, project=project))
        record["apiVersion"] = "V2"
        record["id"] = str(zlib.crc32(name.encode()))
        record["networkEndpoints"] = [
            {"ipAddress": workers.address(i) if workers else "10.0.0.{}".format(i + 2), "port": 8470,
             "accessConfig": {"externalIp": workers.address(i) if workers else "10.0.0.{}".format(i + 2)}}
            for i in range(int(config["workers"]))]
        record["createTime"] = "2026-01-01T00:00:00Z"
        return record

    def operation(self, project, zone, done_when=None, response=None):
        """A long-running operation, never done in the response that starts it (a real one
        takes a while): done at the first look (GET) at it, or with `done_when`, at the first
        look that finds done_when() true."""
        self.op_count += 1
        name = "projects/{}/locations/{}/operations/operation-{}".format(project, zone, self.op_count)
        self.ops[name] = (done_when, response)
        return self.op_json(name, look=False)

    def op_json(self, name, look=True):
        done_when, response = self.ops[name]
        op = {"name": name, "metadata": {"@type": "type.googleapis.com/google.cloud.tpu.v2.OperationMetadata"}}
        if look and (done_when is None or done_when()):
            self.ops[name] = (None, response)
            op["done"] = True
            op["response"] = response() if callable(response) else (response or {})
        return op

    def find_node(self, project, zone, name):
        config = self.node_config(name)
        if config is None or config.get("zone") != zone or config.get("project", project) != project:
            raise not_found("projects/{}/locations/{}/nodes/{}".format(project, zone, name))
        return config

    def get_node(self, project, zone, name, look):
        config = self.find_node(project, zone, name)
        if look:
            nodes.advance(config)
            self.save_node(name, config)
        return self.node_json(project, zone, name, config)

    def create_node(self, project, zone, node_id, body):
        if not node_id or not nodes.NAME_RE.match(node_id):
            raise ApiError(400, "INVALID_ARGUMENT", "[loopback API] invalid node id {!r}".format(node_id))
        accelerator = body.get("acceleratorType", "")
        workers = nodes.workers_for(accelerator)
        if workers is None:
            raise ApiError(400, "INVALID_ARGUMENT",
                           "[loopback API] accelerator type {!r} is not modelled".format(accelerator))
        if (self.tpus() / node_id).exists():
            raise ApiError(409, "ALREADY_EXISTS", "Resource 'projects/{}/locations/{}/nodes/{}' already exists"
                           .format(project, zone, node_id))
        scheduling = body.get("schedulingConfig", {})
        config = {"zone": zone, "project": project, "workers": workers, "acceleratorType": accelerator,
                  "runtimeVersion": body.get("runtimeVersion", ""), "spot": bool(scheduling.get("spot")),
                  "preemptible": bool(scheduling.get("preemptible")),
                  "reserved": bool(scheduling.get("reserved"))}
        if body.get("metadata"):
            # The node's metadata map (create's --metadata): GET returns it, and every worker's
            # metadata server serves each key (the stand-in's vm.fake_curl reads it here).
            config["metadata"] = dict(body["metadata"])
        config["progression"] = nodes.parse_progression(
            PROG, "GCLOUD_STANDIN_NODE_STATES",
            os.environ.get("GCLOUD_STANDIN_NODE_STATES") or nodes.DEFAULT_NODE_STATES, nodes.NODE_STATES)
        config["state"] = config["progression"][0][0]
        nodes.create_node(node_id, config)
        self.start_workers(node_id)

        def done():
            # A look at the operation is a look at the node: it is created once its state
            # progression has run to the end.
            current = self.node_config(node_id)
            if current is None:
                return True
            state = nodes.advance(current)
            self.save_node(node_id, current)
            steps = current.get("progression") or [[state, None]]
            return len(steps) == 1 and steps[0][0] == state
        return self.operation(project, zone, done,
                              lambda: self.node_json(project, zone, node_id, self.node_config(node_id) or config))

    def delete_node(self, project, zone, name):
        self.find_node(project, zone, name)
        self.remove_node(name)
        return self.operation(project, zone)

    def remove_node(self, name):
        workers = self.workers.pop(name, None)
        if workers:
            workers.stop()
        root = self.tpus() / name
        vm.stop_holders(root)
        graveyard = self.state / "deleted"
        graveyard.mkdir(exist_ok=True)
        os.rename(str(root), str(graveyard / "{}.{}".format(name, time.time_ns())))

    def patch_node(self, project, zone, name, body, mask):
        config = self.find_node(project, zone, name)
        if "metadata" in mask.split(","):
            config["metadata"] = body.get("metadata", {})
        self.save_node(name, config)
        return self.operation(project, zone, None,
                              lambda: self.node_json(project, zone, name, self.node_config(name)))

    def guest_attributes(self, project, zone, name, body):
        config = self.find_node(project, zone, name)
        key = (self.host_key.with_suffix(".pub")).read_text().split()
        # No worker id (gcloud sends [""]) asks for every worker.
        wanted = [w for w in body.get("workerIds", []) if w] or [str(i) for i in range(int(config["workers"]))]
        return {"guestAttributes": [
            {"queryPath": body.get("queryPath", ""),
             "queryValue": {"items": [{"namespace": "hostkeys", "key": key[0], "value": key[1]}]}}
            for _ in wanted]}

    # --- queued resources -------------------------------------------------
    def qr_folder(self, name):
        return self.state / "queued-resources" / name

    def find_qr(self, project, zone, name):
        path = self.qr_folder(name) / "config.json"
        if not name or "/" in name or not path.is_file():
            raise not_found("projects/{}/locations/{}/queuedResources/{}".format(project, zone, name))
        config = json.loads(path.read_text())
        if config.get("zone") != zone or config.get("project") != project:
            raise not_found("projects/{}/locations/{}/queuedResources/{}".format(project, zone, name))
        return config

    def get_qr(self, project, zone, name, look):
        with LOCK:
            config = self.find_qr(project, zone, name)
            state = nodes.advance(config) if look else config["state"]
            if state == "ACTIVE" and not config.get("nodeCreated"):
                self.create_qr_nodes(project, zone, name, config)
                config["nodeCreated"] = True
            write_atomic(self.qr_folder(name) / "config.json", json.dumps(config, indent=2) + "\n")
        return nodes.qr_record(name, config)

    def create_qr_nodes(self, project, zone, name, config):
        """The nodes of an ACTIVE queued resource, all at once (gang-scheduled).  Those of a node
        count are the slices of one Multislice job, with the stand-in's tpu-env values
        (nodes.create_qr_nodes), the coordinator being slice 0's worker 0 on this loopback."""
        names = nodes.qr_node_ids(config)
        multi = bool(config.get("nodeCount"))
        subnets = nodes.allocate_subnets(len(names)) if multi else [0]
        shared = self.qr_folder(name) / "shared"
        shared.mkdir(exist_ok=True)
        coordinator = "127.0.0.{}:{}".format(self.next_base, nodes.MEGASCALE_COORDINATOR_PORT)
        for slice_id, (node_id, subnet) in enumerate(zip(names, subnets)):
            node = {"zone": zone, "project": project, "workers": config["workers"],
                    "acceleratorType": config["acceleratorType"], "runtimeVersion": config["runtimeVersion"],
                    "state": "READY", "spot": config.get("spot", False),
                    "queuedResource": resource_name(project, zone, "queuedResources", name)}
            if config.get("metadata"):
                node["metadata"] = config["metadata"]
            if multi:
                node.update(subnet=subnet, multisliceShared=str(shared), tpuEnv={
                    "MEGASCALE_COORDINATOR_ADDRESS": coordinator, "MEGASCALE_NUM_SLICES": str(len(names)),
                    "MEGASCALE_SLICE_ID": str(slice_id)})
            nodes.create_node(node_id, node)
            self.start_workers(node_id)

    def create_qr(self, project, zone, qr_id, body):
        specs = body.get("tpu", {}).get("nodeSpec", [])
        if not qr_id or not nodes.NAME_RE.match(qr_id) or len(specs) != 1:
            raise ApiError(400, "INVALID_ARGUMENT", "[loopback API] one node spec and a queued resource id")
        node = specs[0].get("node", {})
        # A node id, or (Multislice) a node count and a prefix: the GA API's multisliceParams,
        # the alpha one's multiNodeParams (docs/multislice.md §2.2).
        multi = specs[0].get("multisliceParams") or specs[0].get("multiNodeParams") or {}
        count = int(multi.get("nodeCount") or 0)
        node_id = specs[0].get("nodeId", "") or ("{}-0".format(multi.get("nodeIdPrefix") or qr_id) if count else "")
        workers = nodes.workers_for(node.get("acceleratorType", ""))
        if workers is None or not nodes.NAME_RE.match(node_id) or count == 1:
            raise ApiError(400, "INVALID_ARGUMENT", "[loopback API] accelerator type or node id not modelled")
        if self.qr_folder(qr_id).exists():
            raise ApiError(409, "ALREADY_EXISTS", "Resource '{}' already exists".format(
                resource_name(project, zone, "queuedResources", qr_id)))
        progression = nodes.parse_progression(
            PROG, "GCLOUD_STANDIN_QR_STATES",
            os.environ.get("GCLOUD_STANDIN_QR_STATES") or nodes.DEFAULT_QR_STATES, nodes.QR_STATES)
        config = {"zone": zone, "project": project, "nodeId": node_id, "workers": workers,
                  "acceleratorType": node["acceleratorType"], "runtimeVersion": node.get("runtimeVersion", ""),
                  "spot": "spot" in body, "reserved": bool(body.get("reservationName")) or "reserved" in body,
                  "guaranteed": "guaranteed" in body,
                  "validUntilDuration": body.get("queueingPolicy", {}).get("validUntilDuration"),
                  "state": "ACCEPTED", "progression": progression}
        if count:
            config.update(nodeCount=count, nodePrefix=multi.get("nodeIdPrefix") or qr_id)
        if node.get("metadata"):
            config["metadata"] = dict(node["metadata"])     # on every node the QR makes
        self.qr_folder(qr_id).mkdir(parents=True)
        write_atomic(self.qr_folder(qr_id) / "config.json", json.dumps(config, indent=2) + "\n")
        return self.operation(project, zone, None, lambda: nodes.qr_record(qr_id, config))

    def delete_qr(self, project, zone, name, force):
        config = self.find_qr(project, zone, name)
        held = [node_id for node_id in nodes.qr_node_ids(config) if (self.tpus() / node_id).exists()]
        if held and not force:
            raise ApiError(400, "FAILED_PRECONDITION",
                           "[loopback API] queued resource {} still has node {}".format(name, held[0]))
        for node_id in held:
            self.remove_node(node_id)
        graveyard = self.state / "deleted"
        graveyard.mkdir(exist_ok=True)
        os.rename(str(self.qr_folder(name)), str(graveyard / "qr-{}.{}".format(name, time.time_ns())))
        return self.operation(project, zone)

    # --- preemption --------------------------------------------------------
    def watch_preemption(self):
        while True:
            time.sleep(0.1)
            with LOCK:
                for name in list(self.workers):
                    config = self.node_config(name)
                    if not config or not (config.get("spot") or config.get("preemptible")):
                        continue
                    if glob.glob(str(self.tpus() / name / self.preempt_glob), recursive=True):
                        log("node {}: PREEMPTED ({} matched)".format(name, self.preempt_glob))
                        config["state"] = "PREEMPTED"
                        config.pop("progression", None)
                        self.save_node(name, config)
                        self.workers.pop(name).stop()
                        vm.stop_holders(self.tpus() / name)

    # --- dropped connections ----------------------------------------------
    def watch_drops(self):
        """GCLOUD_STANDIN_DROP_WORKERS, _AFTER, _WHEN as the stand-in reads them (standin/drop.py):
        the first command session on each listed worker of a node whose command has run DROP_AFTER
        seconds (and that sees DROP_WHEN under the worker's home) loses its connection, as its per-connection
        sshd is killed; once per worker, with the stand-in's own mark in the worker's folder."""
        while True:
            time.sleep(0.05)
            with LOCK:
                current = list(self.workers.items())
            for name, workers in current:
                for worker in sorted(self.drops.workers):
                    folder = self.tpus() / name / "worker-{}".format(worker)
                    if not self.drops.pending(folder, worker):
                        continue
                    for pid, age in workers.sessions(worker):
                        if self.drops.ripe(folder / "home", age) and drop.claim(
                                folder, "fakecloud: sshd session {} of worker {}".format(pid, worker)):
                            log("node {}: worker {}'s connection dropped (sshd session {} killed)".format(
                                name, worker, pid))
                            try:
                                os.kill(pid, signal.SIGKILL)
                            except OSError:
                                pass
                            break

    def stop(self):
        for workers in self.workers.values():
            workers.stop()
        for root in self.tpus().glob("*"):
            vm.stop_holders(root)


PATH_RE = re.compile(r"^/(v2|v2alpha1)/projects/([^/]+)/locations/([^/]+)/(nodes|queuedResources|operations)"
                     r"(?:/([^/:]+))?(?::([A-Za-z]+))?$")
COMPUTE_RE = re.compile(r"^/compute/v1/projects/([^/]+)(/setCommonInstanceMetadata|/global/operations/([^/]+))?$")


def make_handler(cloud):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):
            pass

        def reply(self, code, obj):
            data = json.dumps(obj).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json; charset=UTF-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def handle_any(self):
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            url = urllib.parse.urlsplit(self.path)
            query = dict(urllib.parse.parse_qsl(url.query))
            command, invocation = self.gcloud_command()
            append_line(cloud.state / "requests.jsonl", {
                "method": self.command, "path": url.path, "query": query, "body": raw.decode()[:500],
                "gcloud": command, "invocation": invocation})
            if fakestorage.handles(url.path):
                return self.storage(url.path, query)
            try:
                body = json.loads(raw) if raw else {}
                if not (self.headers.get("Authorization") or "").startswith("Bearer "):
                    raise ApiError(401, "UNAUTHENTICATED", "[loopback API] no access token")
                with LOCK:
                    self.reply(200, self.route(url.path, query, body))
            except ApiError as e:
                self.reply(e.code, {"error": {"code": e.code, "message": e.message, "status": e.status}})
            except Exception as e:  # a bug here must show, not hang gcloud
                log("{} {}: {!r}".format(self.command, self.path, e))
                self.reply(500, {"error": {"code": 500, "message": "[loopback API] {!r}".format(e),
                                           "status": "INTERNAL"}})

        do_GET = do_POST = do_DELETE = do_PATCH = handle_any

        def storage(self, path, query):
            """A Cloud Storage request (fakestorage.py): bytes for alt=media, JSON otherwise."""
            try:
                if not (self.headers.get("Authorization") or "").startswith("Bearer "):
                    raise fakestorage.StorageError(401, "[loopback storage] no access token")
                base = "http://{}:{}".format(*self.server.server_address[:2])
                code, kind, data = fakestorage.answer(base, gcs_root(), self.command, path, query)
            except fakestorage.StorageError as e:
                code, kind = e.code, "application/json; charset=UTF-8"
                data = json.dumps({"error": {"code": e.code, "message": e.message}}).encode()
            self.send_response(code)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def gcloud_command(self):
            """The gcloud command that sent this request and its process's invocation id, from
            the User-Agent gcloud sends (`command/gcloud.compute.tpus.tpu-vm.describe
            invocation-id/…`)."""
            agent = self.headers.get("User-Agent", "")
            command = re.search(r"\bcommand/(\S+)", agent)
            invocation = re.search(r"\binvocation-id/(\S+)", agent)
            return (command.group(1) if command else ""), (invocation.group(1) if invocation else "")

        def look(self):
            """Whether this GET is a look at the state: as in the stand-in, a resource's state
            progression moves one step per describe call, not per GET that another command
            (create's own wait, ssh's and scp's node lookup) makes."""
            return self.gcloud_command()[0].endswith(".describe")

        def route(self, path, query, body):
            m = COMPUTE_RE.match(path)
            if m:
                return self.compute(m, body)
            m = PATH_RE.match(path)
            if not m:
                raise ApiError(404, "NOT_FOUND", "[loopback API] no such method: {} {}".format(self.command, path))
            _, project, zone, kind, name, verb = m.groups()
            method = self.command
            if kind == "operations" and name and method == "GET":
                op = "projects/{}/locations/{}/operations/{}".format(project, zone, name)
                if op not in cloud.ops:
                    raise not_found(op)
                return cloud.op_json(op)
            if kind == "nodes":
                if name is None and method == "GET":
                    return {"nodes": [cloud.node_json(project, zone, n, c) for n, c in
                                      ((p.name, cloud.node_config(p.name)) for p in sorted(cloud.tpus().glob("*")))
                                      if c and c.get("zone") == zone]}
                if name is None and method == "POST":
                    return cloud.create_node(project, zone, query.get("nodeId", ""), body)
                if verb == "getGuestAttributes" and method == "POST":
                    return cloud.guest_attributes(project, zone, name, body)
                if verb is None and method == "GET":
                    return cloud.get_node(project, zone, name, self.look())
                if verb is None and method == "DELETE":
                    return cloud.delete_node(project, zone, name)
                if verb is None and method == "PATCH":
                    return cloud.patch_node(project, zone, name, body, query.get("updateMask", ""))
            if kind == "queuedResources":
                if name is None and method == "POST":
                    return cloud.create_qr(project, zone, query.get("queuedResourceId", ""), body)
                if verb is None and method == "GET":
                    return cloud.get_qr(project, zone, name, self.look())
                if verb is None and method == "DELETE":
                    return cloud.delete_qr(project, zone, name, query.get("force", "").lower() == "true")
            raise ApiError(404, "NOT_FOUND", "[loopback API] no such method: {} {}".format(method, path))

        def compute(self, m, body):
            project, suffix, op = m.groups()
            base = "http://{}:{}/compute/v1/projects/{}".format(*self.server.server_address[:2], project)
            if suffix is None and self.command == "GET":
                items = [{"key": k, "value": v} for k, v in sorted(cloud.project_metadata.items())]
                return {"kind": "compute#project", "name": project, "id": "1",
                        "selfLink": base, "commonInstanceMetadata": {"kind": "compute#metadata",
                                                                     "fingerprint": "ZmFrZWNsb3Vk", "items": items}}
            if suffix == "/setCommonInstanceMetadata" and self.command == "POST":
                cloud.project_metadata = {i["key"]: i.get("value", "") for i in body.get("items", [])}
            if suffix and self.command in ("GET", "POST"):
                return {"kind": "compute#operation", "name": op or "operation-metadata", "status": "DONE",
                        "progress": 100, "targetLink": base, "selfLink": base + "/global/operations/" +
                        (op or "operation-metadata"), "operationType": "setMetadata"}
            raise ApiError(404, "NOT_FOUND", "[loopback API] no such compute method")

    return Handler


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--state", required=True, help="the gcloud stand-in's state folder")
    parser.add_argument("--pubkey", required=True, help="the user's public key (every worker accepts it)")
    parser.add_argument("--port-file", required=True, help="written with the port once everything listens")
    ns = parser.parse_args()
    state = Path(ns.state).resolve()
    os.environ["GCLOUD_STANDIN_STATE"] = str(state)
    ssh_dir = state / "fakecloud"
    ssh_dir.mkdir(parents=True, exist_ok=True)
    cloud = Cloud(state, Path(ns.pubkey).resolve(), ssh_dir)
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "fakecloud-worker",
                    "-f", str(cloud.host_key)], check=True, stdin=subprocess.DEVNULL)
    for root in sorted(cloud.tpus().glob("*")):
        if (root / "config.json").is_file():
            cloud.start_workers(root.name)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), make_handler(cloud))
    server.daemon_threads = True

    def on_term(*_):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, on_term)
    if cloud.preempt_glob:
        threading.Thread(target=cloud.watch_preemption, daemon=True).start()
    if cloud.drops is not None:
        threading.Thread(target=cloud.watch_drops, daemon=True).start()
    write_atomic(Path(ns.port_file), "{}\n".format(server.server_address[1]))
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        with LOCK:
            cloud.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
