"""What a pod of the loopback Kubernetes API (fakekube.py) is given: its volumes' files and its
environment, from the container spec, Kubernetes itself, GKE's TPU webhook and the "image" (this
machine with the stand-in jax and gcloud). README.md names the source of each value and says
which are inferences."""

import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE_DIR = HERE.parent.parent
STANDIN_DIR = SOURCE_DIR / "tests" / "gcloud-standin"
TPU = "google.com/tpu"
JOBSET = "jobset.sigs.k8s.io/"
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def volume_files(cluster, pod):
    """{volume name: {file name: text}} for the pod's ConfigMap volumes, or None while one of
    them names a ConfigMap that does not exist (the pod then waits, as a real one does)."""
    out = {}
    for volume in pod["spec"].get("volumes", []):
        ref = volume.get("configMap")
        if not ref:
            continue
        cm = cluster.objects.get(("configmaps", pod["metadata"]["namespace"], ref["name"]))
        if cm is None:
            return None
        data = cm.get("data", {})
        items = ref.get("items")
        out[volume["name"]] = {i["path"]: data[i["key"]] for i in items} if items else dict(data)
    return out


def _field(pod, path):
    """A downward-API fieldRef: metadata.name/namespace, metadata.labels['k'] or
    metadata.annotations['k'], spec.nodeName, status.podIP."""
    meta = pod["metadata"]
    match = re.fullmatch(r"metadata\.(labels|annotations)\['([^']+)'\]", path)
    if match:
        return meta.get(match.group(1), {}).get(match.group(2), "")
    return {"metadata.name": meta["name"], "metadata.namespace": meta["namespace"],
            "spec.nodeName": pod["spec"].get("nodeName", ""), "status.podIP": "127.0.0.1"}.get(path, "")


def _tpu_requested(pod):
    return any(int(c.get("resources", {}).get("limits", {}).get(TPU, 0)) > 0 for c in pod["spec"]["containers"])


def gke_tpu_environment(pod, job):
    """What GKE's TPU webhook adds, as Google's documentation states its conditions: an Indexed
    Job with a subdomain, parallelism > 1, and a google.com/tpu request get TPU_WORKER_ID (the
    completion index) and TPU_WORKER_HOSTNAMES (every pod's <hostname>.<subdomain>, by index).
    With more than one slice, MEGASCALE_* as JAX reads them on a Multislice TPU VM: an inference
    (README.md), since GKE's webhook source is not public."""
    spec, labels = job["spec"], pod["metadata"]["labels"]
    env = []
    subdomain = pod["spec"].get("subdomain")
    parallelism = spec.get("parallelism", 1)
    if spec.get("completionMode") == "Indexed" and subdomain and parallelism > 1 and _tpu_requested(pod):
        job_name = job["metadata"]["name"]
        env.append(("TPU_WORKER_ID", labels["batch.kubernetes.io/job-completion-index"]))
        env.append(("TPU_WORKER_HOSTNAMES", ",".join("{}-{}.{}".format(job_name, i, subdomain) for i in range(parallelism))))
    replicas = int(labels.get(JOBSET + "global-replicas", "1"))
    if replicas > 1 and _tpu_requested(pod):
        jobset = labels[JOBSET + "jobset-name"]
        rjob = labels[JOBSET + "replicatedjob-name"]
        env.append(("MEGASCALE_NUM_SLICES", str(replicas)))
        env.append(("MEGASCALE_SLICE_ID", labels[JOBSET + "job-global-index"]))
        env.append(("MEGASCALE_COORDINATOR_ADDRESS", "{}-{}-0-0.{}".format(jobset, rjob, subdomain)))
    return env


def image_environment(cluster, pod, job):
    """The stand-in image: this machine's programs, the stand-in gcloud first on PATH (gcloud
    storage into a folder that stands for Cloud Storage), the stand-in jax on PYTHONPATH, and the
    stand-in's own plumbing that groups the pods of a JobSet into one stand-in JAX process group
    (GCLOUD_STANDIN_*: not GKE's, see README.md)."""
    labels = pod["metadata"]["labels"]
    ns, jobset = pod["metadata"]["namespace"], labels.get(JOBSET + "jobset-name", job["metadata"]["name"])
    group = cluster.state / "jax" / ns / jobset
    shared = group / "slice-{}".format(labels.get(JOBSET + "job-global-index", "0"))
    for folder in (shared, group / "all"):
        folder.mkdir(parents=True, exist_ok=True)
    return [("PATH", "{}:{}".format(cluster.state / "image-bin", DEFAULT_PATH)),
            ("HOME", "/root"),
            ("PYTHONPATH", str(STANDIN_DIR / "fakejax")),
            ("GCLOUD_STANDIN_STATE", str(cluster.state / "gcloud-standin")),
            ("GCLOUD_STANDIN_GCS", str(cluster.state / "gcs")),
            ("GCLOUD_STANDIN_WORKER", labels["batch.kubernetes.io/job-completion-index"]),
            ("GCLOUD_STANDIN_WORKERS", str(job["spec"].get("parallelism", 1))),
            ("GCLOUD_STANDIN_SHARED", str(shared)),
            ("GCLOUD_STANDIN_MULTISLICE_SHARED", str(group / "all"))]


def pod_environment(cluster, pod, job):
    """The container's environment, in the order the entries are applied (a later one wins):
    the image's, Kubernetes' HOSTNAME, GKE's TPU webhook's, then the container's own env (value
    or the downward-API fieldRef)."""
    env = image_environment(cluster, pod, job)
    env.append(("HOSTNAME", pod["spec"].get("hostname", pod["metadata"]["name"])))
    env += gke_tpu_environment(pod, job)
    for entry in pod["spec"]["containers"][0].get("env", []):
        if "value" in entry:
            env.append((entry["name"], entry["value"]))
        elif "fieldRef" in entry.get("valueFrom", {}):
            env.append((entry["name"], _field(pod, entry["valueFrom"]["fieldRef"]["fieldPath"])))
    merged = {}
    for key, value in env:
        merged.pop(key, None)
        merged[key] = value
    return list(merged.items())
