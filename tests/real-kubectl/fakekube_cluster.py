"""The cluster behind the loopback Kubernetes API (fakekube.py): the objects, the JobSet and Job
controllers as far as a tpulaunch run meets them, GKE's TPU webhook and a kubelet whose pods are
local processes. Tests only; nothing here is a TPU, and README.md says what is modelled and from
which source.

Objects are plain dicts as the API serves them. Every change bumps one resourceVersion counter and
appends a watch event; `Cluster.lock` guards them (HTTP threads and the control loop share it)."""

import copy
import json
import os
import random
import signal
import string
import subprocess
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE_DIR = HERE.parent.parent

JOBSET_GROUP = "jobset.x-k8s.io"
JOBSET_LABELS = "jobset.sigs.k8s.io/"
TPU = "google.com/tpu"
EXCLUSIVE = "alpha.jobset.sigs.k8s.io/exclusive-topology"


def now():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class NodePool:
    """A GKE TPU slice node pool: `nodes` nodes labelled with an accelerator and a topology, each
    with `chips` google.com/tpu and GKE's google.com/tpu NoSchedule taint."""

    def __init__(self, name, text):
        accelerator, topology, nodes, chips = text.split("/")
        self.name, self.accelerator, self.topology = name, accelerator, topology
        self.nodes, self.chips = int(nodes), int(chips)
        self.holder = None     # the Job (namespace/name) using the pool, with exclusive topology

    def labels(self):
        return {"cloud.google.com/gke-tpu-accelerator": self.accelerator,
                "cloud.google.com/gke-tpu-topology": self.topology,
                "cloud.google.com/gke-nodepool": self.name}


class Cluster:
    def __init__(self, state, pools, schedule_seconds):
        self.state = Path(state)
        self.lock = threading.Condition()
        self.rv = 1
        self.objects = {}      # (resource, namespace, name) -> object
        self.events = []       # (rv, resource, namespace, type, object)
        self.pools = [NodePool("tpu-pool-{}".format(i), text) for i, text in enumerate(pools)]
        self.schedule_seconds = schedule_seconds
        self.procs = {}        # (namespace, pod name) -> Popen

    # --- the store -------------------------------------------------------------------------
    def _bump(self, resource, obj, kind):
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        self.events.append((self.rv, resource, obj["metadata"].get("namespace"), kind, copy.deepcopy(obj)))
        self.lock.notify_all()

    def put(self, resource, obj, created=False):
        meta = obj["metadata"]
        if created:
            meta["uid"] = "{:08x}-0000-4000-8000-{:012x}".format(random.getrandbits(32), random.getrandbits(48))
            meta["creationTimestamp"] = now()
            meta.setdefault("generation", 1)
        self.objects[(resource, meta.get("namespace"), meta["name"])] = obj
        self._bump(resource, obj, "ADDED" if created else "MODIFIED")

    def delete(self, resource, namespace, name):
        """Removes an object now; a pod whose container still runs is terminated first
        (terminate_pod), as a DELETE of a pod is graceful."""
        if resource == "pods":
            return self.terminate_pod(namespace, name)
        return self._remove(resource, namespace, name)

    def _remove(self, resource, namespace, name):
        obj = self.objects.pop((resource, namespace, name), None)
        if obj is not None:
            self._bump(resource, obj, "DELETED")
        return obj

    def terminate_pod(self, namespace, name):
        """A pod's graceful deletion, as the kubelet does it (Kubernetes' "Termination of Pods"):
        deletionTimestamp set, SIGTERM to the container's main process, SIGKILL to all of its
        processes after terminationGracePeriodSeconds (default 30), and once the container has
        ended the pod object goes, and its log with it. A pod with no running container goes at
        once."""
        pod = self.objects.get(("pods", namespace, name))
        if pod is None or pod["metadata"].get("deletionTimestamp"):
            return pod
        proc = self.procs.get((namespace, name))
        if proc is None or proc.poll() is not None:
            self.procs.pop((namespace, name), None)
            return self._remove("pods", namespace, name)
        grace = int(pod["spec"].get("terminationGracePeriodSeconds", 30))
        pod["metadata"]["deletionTimestamp"] = now()
        pod["metadata"]["deletionGracePeriodSeconds"] = grace
        pod["_kill_at"] = time.time() + grace
        try:
            os.kill(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        self.put("pods", pod)
        return pod

    def listing(self, resource, namespace):
        return [o for (r, ns, _), o in sorted(self.objects.items()) if r == resource and (namespace is None or ns == namespace)]

    # --- JobSet: its webhook's defaults and its controller --------------------------------
    def admit_jobset(self, js):
        spec = js.setdefault("spec", {})
        network = spec.setdefault("network", {})
        network.setdefault("enableDNSHostnames", True)
        network.setdefault("subdomain", js["metadata"]["name"])
        spec.setdefault("successPolicy", {"operator": "All"})
        spec.setdefault("startupPolicy", {"startupPolicyOrder": "AnyOrder"})
        for rjob in spec.get("replicatedJobs", []):
            job = rjob["template"].setdefault("spec", {})
            job.setdefault("completionMode", "Indexed")
            job["template"].setdefault("spec", {}).setdefault("restartPolicy", "OnFailure")
        js["status"] = {"replicatedJobsStatus": [], "restarts": 0}

    def _create_jobs(self, js):
        meta, spec = js["metadata"], js["spec"]
        ns, name = meta["namespace"], meta["name"]
        global_index = 0
        global_replicas = sum(r.get("replicas", 1) for r in spec["replicatedJobs"])
        for rjob in spec["replicatedJobs"]:
            replicas = rjob.get("replicas", 1)
            for index in range(replicas):
                marks = {JOBSET_LABELS + "jobset-name": name,
                         JOBSET_LABELS + "replicatedjob-name": rjob["name"],
                         JOBSET_LABELS + "replicatedjob-replicas": str(replicas),
                         JOBSET_LABELS + "job-index": str(index),
                         JOBSET_LABELS + "job-global-index": str(global_index),
                         JOBSET_LABELS + "global-replicas": str(global_replicas)}
                if EXCLUSIVE in meta.get("annotations", {}):
                    marks[EXCLUSIVE] = meta["annotations"][EXCLUSIVE]
                job = {"apiVersion": "batch/v1", "kind": "Job",
                       "metadata": {"name": "{}-{}-{}".format(name, rjob["name"], index), "namespace": ns,
                                    "labels": dict(marks), "annotations": dict(marks),
                                    "ownerReferences": [{"apiVersion": JOBSET_GROUP + "/v1alpha2", "kind": "JobSet",
                                                         "name": name, "uid": meta["uid"], "controller": True}]},
                       "spec": copy.deepcopy(rjob["template"]["spec"]),
                       "status": {"active": 0, "succeeded": 0, "failed": 0}}
                tmpl = job["spec"]["template"]
                tmpl.setdefault("metadata", {})
                tmpl["metadata"].setdefault("labels", {}).update(marks)
                tmpl["metadata"].setdefault("annotations", {}).update(marks)
                if spec["network"].get("enableDNSHostnames"):
                    tmpl["spec"]["subdomain"] = spec["network"]["subdomain"]
                self.put("jobs", job, created=True)
                self._create_pods(js, job, index)
                global_index += 1

    def _create_pods(self, js, job, job_index):
        spec = job["spec"]
        count = spec.get("parallelism", 1)
        for pod_index in range(count):
            tmpl = copy.deepcopy(spec["template"])
            host = "{}-{}".format(job["metadata"]["name"], pod_index)
            suffix = "".join(random.choice(string.ascii_lowercase + string.digits) for _ in range(5))
            meta = tmpl["metadata"]
            meta.update({"name": "{}-{}".format(host, suffix), "namespace": job["metadata"]["namespace"],
                         "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": job["metadata"]["name"],
                                              "uid": job["metadata"]["uid"], "controller": True}]})
            for marks in (meta["labels"], meta["annotations"]):
                marks["batch.kubernetes.io/job-completion-index"] = str(pod_index)
            meta["labels"]["batch.kubernetes.io/job-name"] = job["metadata"]["name"]
            meta["labels"]["job-name"] = job["metadata"]["name"]
            tmpl["spec"]["hostname"] = host
            pod = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": tmpl["spec"],
                   "status": {"phase": "Pending", "conditions": [
                       {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                        "message": "waiting for a TPU node pool"}]}}
            pod["_created"] = time.time()
            self.put("pods", pod, created=True)

    # --- scheduling and the kubelet --------------------------------------------------------
    def _pool_for(self, job):
        """A free node pool whose labels, taint and chips the Job's pods fit (one Job per pool,
        as the exclusive-topology annotation asks), or None."""
        pod_spec = job["spec"]["template"]["spec"]
        selector = pod_spec.get("nodeSelector", {})
        tolerates = any(t.get("key") == TPU and t.get("operator") == "Exists" for t in pod_spec.get("tolerations", []))
        limit = max(int(c.get("resources", {}).get("limits", {}).get(TPU, 0)) for c in pod_spec["containers"])
        for pool in self.pools:
            labels = pool.labels()
            if pool.holder is None and tolerates and limit <= pool.chips and pool.nodes >= job["spec"].get("parallelism", 1) \
                    and all(labels.get(k) == v for k, v in selector.items()):
                return pool
        return None

    def step(self):
        """One pass of the controllers; called every 50 ms under the lock."""
        for js in self.listing("jobsets", None):
            if not js["status"].get("_started"):
                js["status"]["_started"] = True
                self._create_jobs(js)
        for job in self.listing("jobs", None):
            self._schedule(job)
        for (ns, name), proc in list(self.procs.items()):
            pod = self.objects.get(("pods", ns, name))
            if proc.poll() is None and pod is not None and time.time() >= pod.get("_kill_at", float("inf")):
                self._kill(ns, name)
                proc.wait()
            if proc.poll() is not None:
                self._finished(ns, name, proc.returncode)
                if pod is not None and pod["metadata"].get("deletionTimestamp"):
                    self._remove("pods", ns, name)
        for job in self.listing("jobs", None):
            if job["metadata"].get("deletionTimestamp"):
                if not self._pods_of(job):
                    self._release(job)
                    self._remove("jobs", job["metadata"]["namespace"], job["metadata"]["name"])
                continue
            self._job_status(job)
        for js in self.listing("jobsets", None):
            self._jobset_status(js)

    def _schedule(self, job):
        pods = [p for p in self.listing("pods", job["metadata"]["namespace"])
                if p["metadata"]["labels"].get("job-name") == job["metadata"]["name"]]
        pending = [p for p in pods if p["status"]["phase"] == "Pending"]
        if not pending or time.time() - pending[0]["_created"] < self.schedule_seconds:
            return
        pool = next((p for p in self.pools if p.holder == job["metadata"]["uid"]), None) or self._pool_for(job)
        if pool is None:
            return
        pool.holder = job["metadata"]["uid"]
        for pod in pending:
            index = int(pod["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"])
            pod["spec"]["nodeName"] = "gke-{}-node-{}".format(pool.name, index)
            if not self._start(pod, job):
                del pod["spec"]["nodeName"]

    def _start(self, pod, job):
        from fakekube_pods import pod_environment, volume_files  # noqa: E402  (sibling module)
        meta = pod["metadata"]
        folder = self.state / "pods" / meta["namespace"] / meta["name"]
        (folder / "volume").mkdir(parents=True, exist_ok=True)
        container = pod["spec"]["containers"][0]
        volumes = volume_files(self, pod)
        if volumes is None:
            return False
        for files in volumes.values():
            for key, text in files.items():
                (folder / "volume" / key).write_text(text)
        env = pod_environment(self, pod, job)
        (folder / "env").write_bytes(b"".join(("{}={}".format(k, v)).encode() + b"\0" for k, v in env))
        mount = next((m["mountPath"] for m in container.get("volumeMounts", [])), "/nonexistent-volume")
        log = open(folder / "log", "wb")
        argv = ["unshare", "--mount", "--uts", "--", "bash", str(HERE / "podrun.bash"), str(folder), mount,
                pod["spec"]["hostname"], "--"] + list(container.get("command", [])) + list(container.get("args", []))
        self.procs[(meta["namespace"], meta["name"])] = subprocess.Popen(
            argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()
        pod["status"] = {"phase": "Running", "startTime": now(), "hostIP": "127.0.0.1", "podIP": "127.0.0.1",
                         "conditions": [{"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "True"}],
                         "containerStatuses": [{"name": container["name"], "ready": True, "restartCount": 0,
                                                "image": container.get("image", ""),
                                                "state": {"running": {"startedAt": now()}}}]}
        self.put("pods", pod)
        return True

    def _finished(self, ns, name, code):
        self.procs.pop((ns, name), None)
        pod = self.objects.get(("pods", ns, name))
        if pod is None:
            return
        status = pod["status"]
        status["phase"] = "Succeeded" if code == 0 else "Failed"
        status["conditions"] = [{"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "False"}]
        status["containerStatuses"][0]["ready"] = False
        status["containerStatuses"][0]["state"] = {"terminated": {
            "exitCode": code if code >= 0 else 128 - code, "reason": "Completed" if code == 0 else "Error",
            "finishedAt": now()}}
        self.put("pods", pod)

    def _kill(self, ns, name):
        """SIGKILL to every process of the pod's container (its process group)."""
        proc = self.procs.get((ns, name))
        if proc is not None and proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()

    # --- Job and JobSet status -------------------------------------------------------------
    def _pods_of(self, job):
        return [p for p in self.listing("pods", job["metadata"]["namespace"])
                if p["metadata"]["labels"].get("job-name") == job["metadata"]["name"]]

    def _job_status(self, job):
        """The Job controller of Kubernetes 1.32 (pkg/controller/job/job_controller.go), for
        restartPolicy Never: when more pods failed than backoffLimit, the interim FailureTarget
        condition (BackoffLimitExceeded) and every active pod deleted (gracefully); when
        `completions` pods succeeded, SuccessCriteriaMet. The terminal Failed or Complete comes
        only once no pod of the Job is still terminating (JobPodReplacementPolicy and JobManagedBy,
        both on by default in 1.32)."""
        st = job["status"]
        conditions = st.setdefault("conditions", [])
        if any(c["type"] in ("Complete", "Failed") for c in conditions):
            return
        pods = self._pods_of(job)
        for pod in pods:
            phase = pod["status"]["phase"]
            if phase in ("Succeeded", "Failed"):
                job.setdefault("_ended", {})[pod["metadata"]["uid"]] = phase
        ended = list(job.get("_ended", {}).values())
        terminating = sum(bool(p["metadata"].get("deletionTimestamp")) for p in pods
                          if p["status"]["phase"] in ("Pending", "Running"))
        active = [p for p in pods if p["status"]["phase"] in ("Pending", "Running")
                  and not p["metadata"].get("deletionTimestamp")]
        counts = {"active": len(active), "succeeded": ended.count("Succeeded"), "failed": ended.count("Failed"),
                  "terminating": terminating}
        changed = any(st.get(k) != v for k, v in counts.items())
        st.update(counts)
        target = next((c for c in conditions if c["type"] in ("FailureTarget", "SuccessCriteriaMet")), None)
        if target is None and counts["failed"] > job["spec"].get("backoffLimit", 6):
            target = {"type": "FailureTarget", "status": "True", "reason": "BackoffLimitExceeded",
                      "message": "Job has reached the specified backoff limit", "lastTransitionTime": now()}
            conditions.append(target)
            changed = True
        elif target is None and counts["succeeded"] >= job["spec"].get("completions", 1):
            target = {"type": "SuccessCriteriaMet", "status": "True", "reason": "CompletionsReached",
                      "message": "Reached expected number of succeeded pods", "lastTransitionTime": now()}
            conditions.append(target)
            changed = True
        if target is not None and target["type"] == "FailureTarget":
            for pod in active:
                self.terminate_pod(pod["metadata"]["namespace"], pod["metadata"]["name"])
                changed = True
            active = []
        if target is not None and not active and not any(
                p["status"]["phase"] in ("Pending", "Running") for p in self._pods_of(job)):
            final = "Failed" if target["type"] == "FailureTarget" else "Complete"
            conditions.append(dict(target, type=final, lastTransitionTime=now()))
            self._release(job)
            changed = True
        if changed:
            self.put("jobs", job)

    def _release(self, job):
        for pool in self.pools:
            if pool.holder == job["metadata"]["uid"]:
                pool.holder = None

    def _jobset_status(self, js):
        st = js["status"]
        if st.get("terminalState"):
            return
        name, ns = js["metadata"]["name"], js["metadata"]["namespace"]
        jobs = [j for j in self.listing("jobs", ns)
                if j["metadata"]["labels"].get(JOBSET_LABELS + "jobset-name") == name]
        done = {t: [j for j in jobs if any(c["type"] == t for c in j["status"].get("conditions", []))]
                for t in ("Complete", "Failed")}
        rjobs = []
        for rjob in js["spec"]["replicatedJobs"]:
            mine = [j for j in jobs if j["metadata"]["labels"][JOBSET_LABELS + "replicatedjob-name"] == rjob["name"]]
            rjobs.append({"name": rjob["name"], "ready": sum(j["status"]["active"] > 0 for j in mine),
                          "succeeded": sum(j in done["Complete"] for j in mine),
                          "failed": sum(j in done["Failed"] for j in mine), "active": 0, "suspended": 0})
        terminal = None
        if done["Failed"]:
            # failurePolicy unset: FailedJobs; set, with maxRestarts (0 here) reached:
            # ReachedMaxRestarts (jobset pkg/controllers/failure_policy.go, pkg/constants).
            # Restarts (maxRestarts > 0) are not modelled.
            terminal = ("Failed", "ReachedMaxRestarts", "jobset failed due to reaching max number of restarts") \
                if js["spec"].get("failurePolicy") is not None else \
                ("Failed", "FailedJobs", "jobset failed due to one or more job failures")
        elif jobs and len(done["Complete"]) == len(jobs):
            terminal = ("Completed", "AllJobsCompleted", "jobset completed successfully")
        if terminal is None and rjobs == st.get("replicatedJobsStatus"):
            return
        st["replicatedJobsStatus"] = rjobs
        if terminal is not None:
            kind, reason, message = terminal
            st["conditions"] = [{"type": kind, "status": "True", "reason": reason, "message": message,
                                 "lastTransitionTime": now()}]
            st["terminalState"] = kind
            # A finished JobSet's controller deletes its still-active child Jobs, with foreground
            # propagation: their pods are terminated first (pkg/controllers/jobset_controller.go,
            # deleteJobs).
            for job in jobs:
                if job not in done["Complete"] and job not in done["Failed"]:
                    self._delete_job(job)
        self.put("jobsets", js)

    def _delete_job(self, job):
        """A Job's deletion, foreground: its pods terminated, the Job removed once they are gone
        (step)."""
        if job["metadata"].get("deletionTimestamp"):
            return
        job["metadata"]["deletionTimestamp"] = now()
        for pod in self._pods_of(job):
            self.terminate_pod(pod["metadata"]["namespace"], pod["metadata"]["name"])
        self.put("jobs", job)

    def delete_jobset(self, ns, name):
        js = self._remove("jobsets", ns, name)
        if js is not None:
            for job in self.listing("jobs", ns):
                if job["metadata"]["labels"].get(JOBSET_LABELS + "jobset-name") == name:
                    self._delete_job(job)
        return js

    def run(self, stop):
        while not stop.is_set():
            with self.lock:
                self.step()
            time.sleep(0.05)
        with self.lock:
            for key, proc in list(self.procs.items()):
                self._kill(*key)
                proc.wait()


def public(obj):
    """The object as the API serves it: without this model's own keys (those starting with _)."""
    if isinstance(obj, dict):
        return {k: public(v) for k, v in obj.items() if not k.startswith("_")}
    if isinstance(obj, list):
        return [public(v) for v in obj]
    return obj


def dumps(obj):
    return json.dumps(public(obj))
