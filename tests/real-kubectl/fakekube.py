#!/usr/bin/env python3
"""A loopback Kubernetes API for the real kubectl (tests only): discovery of the core, batch and
jobset.x-k8s.io groups, ConfigMaps, JobSets, their Jobs and pods, pod logs and watches. The
cluster behind it (fakekube_cluster.py) runs each pod as a local process. README.md lists every
request served and what is modelled.

  fakekube.py --state DIR --port-file FILE [--node-pool ACCEL/TOPOLOGY/NODES/CHIPS]...
              [--schedule-seconds N]

Every request is logged to DIR/requests.jsonl (method, path, query, Accept, user agent)."""

import argparse
import json
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fakekube_cluster import Cluster, dumps, public  # noqa: E402

VERSION = {"major": "1", "minor": "32", "gitVersion": "v1.32.0-fakekube", "platform": "linux/amd64"}

# group/version -> [(resource, kind, namespaced, verbs)]
RESOURCES = {
    "v1": [("pods", "Pod", True, ["get", "list", "watch", "delete"]), ("pods/log", "Pod", True, ["get"]),
           ("configmaps", "ConfigMap", True, ["create", "get", "list", "watch", "delete"]),
           ("namespaces", "Namespace", False, ["get", "list"])],
    "batch/v1": [("jobs", "Job", True, ["get", "list", "watch"])],
    "jobset.x-k8s.io/v1alpha2": [("jobsets", "JobSet", True, ["create", "get", "list", "watch", "delete"]),
                                 ("jobsets/status", "JobSet", True, ["get"])],
}
# The resources this API stores, by URL: (group/version, resource).
STORED = {("v1", "pods"), ("v1", "configmaps"), ("batch/v1", "jobs"), ("jobset.x-k8s.io/v1alpha2", "jobsets")}
KINDS = {r: k for gv in RESOURCES.values() for r, k, _, _ in gv}
GROUP_OF = {"pods": "", "configmaps": "", "jobs": "batch", "jobsets": "jobset.x-k8s.io"}
DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")


def resource_list(gv):
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv,
            "resources": [{"name": r, "singularName": "" if "/" in r else k.lower(), "namespaced": ns, "kind": k,
                           "verbs": verbs} for r, k, ns, verbs in RESOURCES[gv]]}


def group_list():
    groups = []
    for gv in RESOURCES:
        if "/" in gv:
            group, version = gv.split("/")
            entry = {"groupVersion": gv, "version": version}
            groups.append({"name": group, "versions": [entry], "preferredVersion": entry})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def openapi_path(gv):
    return "api/v1" if gv == "v1" else "apis/" + gv


def openapi_root():
    """/openapi/v3: where each group-version's document is, as a real API server lists them."""
    return {"paths": {openapi_path(gv): {"serverRelativeURL": "/openapi/v3/{}?hash=fakekube".format(openapi_path(gv))}
                      for gv in RESOURCES}}


def openapi_document(gv):
    """A group-version's OpenAPI v3 document with no schemas: only each stored kind's PATCH
    operation, tagged with its group-version-kind and declaring the fieldValidation query
    parameter, which is what kubectl 1.32 reads to learn that the server validates fields itself
    (server-side field validation, GA in Kubernetes 1.27). kubectl then sends
    fieldValidation=Strict and skips its own schema check: on a real cluster the API server
    judges the object against the JobSet CRD's schema; here nothing does (README.md)."""
    group, _, version = gv.rpartition("/")
    paths = {}
    for resource, kind, namespaced, _ in RESOURCES[gv]:
        if (gv, resource) not in STORED:
            continue
        prefix = "/" + openapi_path(gv) + ("/namespaces/{namespace}" if namespaced else "")
        paths[prefix + "/" + resource + "/{name}"] = {"patch": {
            "x-kubernetes-group-version-kind": {"group": group, "version": version, "kind": kind},
            "parameters": [{"name": "fieldValidation", "in": "query", "schema": {"type": "string"}}],
            "responses": {"200": {"description": "OK"}}}}
    return {"openapi": "3.0.0", "info": {"title": "fakekube", "version": "v1.32.0-fakekube"}, "paths": paths}


def _proto_string(field, text):
    data = text.encode()
    return bytes([field << 3 | 2, len(data)]) + data


def openapi_v2():
    """/openapi/v2 as kubectl asks for it (protobuf, gnostic's openapi_v2.Document): swagger
    "2.0", an info, and no definitions, so no schemas either. kubectl 1.32 reads it only for a
    document it validates itself: a v1 List, whose kind takes no fieldValidation parameter
    (k8s.io/cli-runtime pkg/resource/query_param_verifier_v3.go), so kubectl validates each item
    against this document (k8s.io/kubectl pkg/validation/validation.go: a kind it does not find
    is skipped) and then creates each with fieldValidation=Strict. A real API server serves its
    full schema here, the JobSet CRD's included; this one serves none (README.md)."""
    info = _proto_string(1, "fakekube") + _proto_string(2, VERSION["gitVersion"])
    return _proto_string(1, "2.0") + bytes([2 << 3 | 2, len(info)]) + info


def status(code, reason, message, name=None, resource=None):
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": reason, "code": code}
    if name is not None:
        body["details"] = {"name": name, "group": GROUP_OF.get(resource, ""), "kind": resource}
    return code, body


def not_found(resource, name):
    group = GROUP_OF.get(resource, "")
    return status(404, "NotFound", '{}{} "{}" not found'.format(resource, "." + group if group else "", name),
                  name, resource)


def selector_matches(text, labels):
    """A label selector: k=v, k==v, k!=v, k, !k, k in (a,b), k notin (a,b), comma-separated."""
    if not text:
        return True
    for term in re.findall(r"[^,(]+(?:\([^)]*\))?", text):
        term = term.strip()
        m = re.fullmatch(r"([^\s!=]+)\s+(in|notin)\s+\(([^)]*)\)", term)
        if m:
            values = {v.strip() for v in m.group(3).split(",")}
            if (labels.get(m.group(1)) in values) != (m.group(2) == "in"):
                return False
            continue
        m = re.fullmatch(r"([^!=]+?)\s*(==|=|!=)\s*(.*)", term)
        if m:
            equal = labels.get(m.group(1)) == m.group(3)
            if equal != (m.group(2) != "!="):
                return False
        elif term.startswith("!"):
            if term[1:] in labels:
                return False
        elif term not in labels:
            return False
    return True


def field_matches(text, obj):
    for term in filter(None, (text or "").split(",")):
        key, _, value = term.partition("=")
        key = key.rstrip("=!")
        actual = {"metadata.name": obj["metadata"]["name"],
                  "metadata.namespace": obj["metadata"].get("namespace"),
                  "status.phase": obj.get("status", {}).get("phase")}.get(key)
        if (actual == value) == ("!=" in term):
            return False
    return True


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    cluster = None
    log_file = None

    def log_message(self, fmt, *args):  # the requests log says it all
        del fmt, args

    def _send(self, code, body, content_type="application/json"):
        data = body if isinstance(body, bytes) else dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self):
        length = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(length) or b"{}") if length else {}

    def _route(self, method):
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        with open(self.log_file, "a") as log:
            log.write(json.dumps({"method": method, "path": url.path, "query": query,
                                  "accept": self.headers.get("Accept", ""),
                                  "agent": self.headers.get("User-Agent", "")}) + "\n")
        body = self._body() if method in ("POST", "PUT", "PATCH", "DELETE") else {}
        code, reply = self._dispatch(method, url.path, query, body)
        if code is not None:
            self._send(code, reply)

    do_GET = lambda self: self._route("GET")  # noqa: E731
    do_POST = lambda self: self._route("POST")  # noqa: E731
    do_DELETE = lambda self: self._route("DELETE")  # noqa: E731
    do_PUT = lambda self: self._route("PUT")  # noqa: E731
    do_PATCH = lambda self: self._route("PATCH")  # noqa: E731

    def _dispatch(self, method, path, query, body):
        if method == "GET":
            static = {"/version": VERSION, "/api": {"kind": "APIVersions", "versions": ["v1"]}, "/apis": group_list(),
                      "/api/v1": resource_list("v1")}
            if path in static:
                return 200, static[path]
            if path == "/openapi/v3":
                return 200, openapi_root()
            if path == "/openapi/v2":
                self._send(200, openapi_v2(), "application/com.github.proto-openapi.spec.v2.v1.0+protobuf")
                return None, None
            m = re.fullmatch(r"/openapi/v3/(?:api/(v1)|apis/([^/]+/[^/]+))", path)
            if m and (m.group(1) or m.group(2)) in RESOURCES:
                return 200, openapi_document(m.group(1) or m.group(2))
            m = re.fullmatch(r"/apis/([^/]+/[^/]+)", path)
            if m and m.group(1) in RESOURCES:
                return 200, resource_list(m.group(1))
        m = re.fullmatch(r"/(?:api/(v1)|apis/([^/]+/[^/]+))(?:/namespaces/([^/]+))?/([a-z]+)(?:/([^/]+))?(/log)?", path)
        if not m or ((m.group(1) or m.group(2)), m.group(4)) not in STORED:
            if m and m.group(4) == "namespaces" and m.group(5) is None and m.group(1):
                pass
            return status(404, "NotFound", "the server could not find the requested resource")
        gv, ns, resource, name, log = (m.group(1) or m.group(2)), m.group(3), m.group(4), m.group(5), m.group(6)
        if log:
            return self._log(ns, name, query)
        if method == "GET" and name is None and query.get("watch") in ("true", "1"):
            return self._watch(resource, ns, query)
        if method == "GET":
            return self._get(gv, resource, ns, name, query)
        if method == "POST" and name is None and resource in ("configmaps", "jobsets"):
            return self._create(gv, resource, ns, body)
        if method == "DELETE" and name is not None and resource in ("configmaps", "jobsets", "pods"):
            return self._delete(resource, ns, name)
        return status(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")

    def _get(self, gv, resource, ns, name, query):
        c = self.cluster
        with c.lock:
            if name is not None:
                obj = c.objects.get((resource, ns, name))
                return (200, obj) if obj is not None else not_found(resource, name)
            items = [o for o in c.listing(resource, ns)
                     if selector_matches(query.get("labelSelector"), o["metadata"].get("labels", {}))
                     and field_matches(query.get("fieldSelector"), o)]
            return 200, {"kind": KINDS[resource] + "List", "apiVersion": gv,
                         "metadata": {"resourceVersion": str(c.rv)}, "items": items}

    def _create(self, gv, resource, ns, obj):
        c = self.cluster
        meta = obj.get("metadata", {})
        name = meta.get("name", "")
        if obj.get("apiVersion") != gv or obj.get("kind") != KINDS[resource]:
            return status(400, "BadRequest", "the API version in the data ({}) does not match the expected API version "
                          "({})".format(obj.get("apiVersion"), gv))
        if meta.get("namespace", ns) != ns:
            return status(400, "BadRequest", "the namespace of the provided object does not match the namespace "
                          "sent on the request")
        if not DNS_LABEL.fullmatch(name):
            return status(422, "Invalid", '{} "{}" is invalid: metadata.name: Invalid value: "{}": a lowercase RFC '
                          "1123 label must consist of lower case alphanumeric characters or '-'".format(
                              KINDS[resource], name, name), name, resource)
        meta["namespace"] = ns
        with c.lock:
            if (resource, ns, name) in c.objects:
                group = GROUP_OF[resource]
                return status(409, "AlreadyExists", '{}{} "{}" already exists'.format(
                    resource, "." + group if group else "", name), name, resource)
            if resource == "jobsets":
                c.admit_jobset(obj)
            c.put(resource, obj, created=True)
            return 201, obj

    def _delete(self, resource, ns, name):
        c = self.cluster
        with c.lock:
            obj = c.delete_jobset(ns, name) if resource == "jobsets" else c.delete(resource, ns, name)
            return (200, obj) if obj is not None else not_found(resource, name)

    def _log(self, ns, name, query):
        c = self.cluster
        with c.lock:
            pod = c.objects.get(("pods", ns, name))
            if pod is None:
                return not_found("pods", name)
            if pod["status"]["phase"] == "Pending":
                return status(400, "BadRequest", 'container "{}" in pod "{}" is waiting to start: ContainerCreating'
                              .format(pod["spec"]["containers"][0]["name"], name))
        log = c.state / "pods" / ns / name / "log"
        if query.get("follow") in ("true", "1"):
            return self._follow(ns, name, log)
        data = log.read_bytes() if log.exists() else b""
        if query.get("tailLines"):
            data = b"".join(data.splitlines(True)[-int(query["tailLines"]):])
        self._send(200, data, "text/plain")
        return None, None

    def _follow(self, ns, name, log):
        """follow=true: the log so far, then what the container writes, until it has ended (as
        the kubelet streams it); chunked."""
        c = self.cluster
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        sent = 0
        try:
            while True:
                with c.lock:
                    proc = c.procs.get((ns, name))
                    running = proc is not None and proc.poll() is None
                data = log.read_bytes()[sent:] if log.exists() else b""
                if data:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                    self.wfile.flush()
                    sent += len(data)
                if not running:
                    break
                time.sleep(0.1)
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass
        self.close_connection = True
        return None, None

    def _watch(self, resource, ns, query):
        """A stream of JSON watch events, chunked, until timeoutSeconds (or the client leaves)."""
        c = self.cluster
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        deadline = time.time() + float(query.get("timeoutSeconds") or 1800)
        since = int(query.get("resourceVersion") or 0)

        def matches(obj):
            return (ns is None or obj["metadata"].get("namespace") == ns) and \
                selector_matches(query.get("labelSelector"), obj["metadata"].get("labels", {})) and \
                field_matches(query.get("fieldSelector"), obj)
        with c.lock:
            if since == 0:
                pending = [("ADDED", o) for o in c.listing(resource, ns) if matches(o)]
                since = c.rv
            else:
                pending = [(k, o) for rv, r, _, k, o in c.events if rv > since and r == resource and matches(o)]
                since = c.rv
        try:
            while True:
                for kind, obj in pending:
                    data = (json.dumps({"type": kind, "object": public(obj)}) + "\n").encode()
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()
                if time.time() >= deadline:
                    break
                with c.lock:
                    c.lock.wait(timeout=min(1.0, max(0.0, deadline - time.time())))
                    pending = [(k, o) for rv, r, _, k, o in c.events if rv > since and r == resource and matches(o)]
                    since = c.rv
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass
        self.close_connection = True
        return None, None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--state", required=True)
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--node-pool", action="append", default=[])
    parser.add_argument("--schedule-seconds", type=float, default=0.0)
    args = parser.parse_args()
    state = Path(args.state).resolve()
    state.mkdir(parents=True, exist_ok=True)
    Handler.cluster = Cluster(state, args.node_pool, args.schedule_seconds)
    Handler.log_file = state / "requests.jsonl"
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    stop = threading.Event()
    control = threading.Thread(target=Handler.cluster.run, args=(stop,), daemon=True)
    control.start()
    import signal
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
    Path(args.port_file).write_text(str(server.server_address[1]))
    try:
        server.serve_forever()
    finally:
        stop.set()
        control.join(timeout=10)


if __name__ == "__main__":
    main()
