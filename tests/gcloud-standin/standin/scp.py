"""`gcloud compute tpus tpu-vm scp`: gcloud's remote/local split and direction rules (§2.2), then
OpenSSH scp's semantics between this machine and the workers' folders, with the download
knobs (a failing, slow or held worker)."""

import json
import os
import re
import shutil
import time
from pathlib import Path

from .console import STANDIN_TAG, fail, not_emulated, status
from .grammar import reject_not_emulated
from .state import get_node, required_property_error, resolve_property, state_dir
from .workers import (
    SSH_KEY_FOUND, health_warning, parse_worker_flag, run_on_workers, validate_state)


# Remote._REMOTE_REGEX (§2.2): user may not hold ':' '@'; host may not start
# with '.' nor hold ':' '/' '\' '@'.
_REMOTE_REGEX = re.compile(r"^(?:([^:@]+)@)?([^.:/\\@][^:/\\@]*)$")


class FileRef:
    def __init__(self, path, user=None, host=None):
        self.path, self.user, self.host = path, user, host

    @property
    def remote(self):
        return None if self.host is None else (self.user, self.host)

    @classmethod
    def from_path(cls, arg):
        """FileReference.FromPath: split at the FIRST ':'."""
        remote_arg, sep, file_path = arg.partition(":")
        if sep:
            match = _REMOTE_REGEX.match(remote_arg)
            if match:
                return cls(file_path, match.group(1), match.group(2))
        return cls(arg)

    def __repr__(self):
        if self.host is None:
            return self.path
        return "{}{}:{}".format(self.user + "@" if self.user else "", self.host, self.path)


def scp_verify(prog, srcs, dst):
    """SCPCommand.Verify(single_remote=True) (§2.2)."""
    def invalid(message):
        fail(prog, "{}  Got sources: [{}], destination: {}".format(
            message, ", ".join(repr(s) for s in srcs), repr(dst)))

    if dst.remote:
        if any(s.remote for s in srcs):
            invalid("All sources must be local files when destination is remote.")
    else:
        if not all(s.remote for s in srcs):
            invalid("Source(s) must be remote when destination is local.")
        if len({s.remote for s in srcs}) != 1:
            invalid("All sources must refer to the same remote when destination is local.")


def remote_path(node, worker, path):
    """How the worker's sshd resolves a remote path: '' and relative paths are
    in the home, '~' and '~/x' are expanded; absolute paths are taken as they
    are (the workers share this machine's filesystem outside their homes)."""
    home = node.home(worker)
    if path in ("", "~"):
        return home
    if path.startswith("~/"):
        return home / path[2:]
    if path.startswith("~"):
        return None      # ~otheruser: not emulated
    if path.startswith("/"):
        return Path(path)
    return home / path


def scp_copy(sources, dest, dest_label, recurse):
    """OpenSSH scp semantics for already-resolved paths.  Returns (status,
    error lines).  Each source is tried; any error makes the status 1."""
    errors = []
    dest_is_dir = dest.is_dir()
    if not dest_is_dir and dest_label.endswith("/"):
        return 1, ["scp: {}: No such file or directory".format(dest_label)]
    if not dest_is_dir and len(sources) > 1:
        return 1, ["scp: {}: Not a directory".format(dest_label)]
    if not dest_is_dir and not dest.parent.is_dir():
        return 1, ["scp: {}: No such file or directory".format(dest_label)]
    for src, src_label in sources:
        if not src.exists():
            errors.append("scp: {}: No such file or directory".format(src_label))
            continue
        name = Path(str(src).rstrip("/")).name or src.name
        target = dest / name if dest_is_dir else dest
        try:
            if src.is_dir():
                if not recurse:
                    errors.append("scp: {}: not a regular file".format(src_label))
                    continue
                if target.exists() and not target.is_dir():
                    errors.append("scp: {}: Not a directory".format(target))
                    continue
                shutil.copytree(src, target, dirs_exist_ok=True)
            else:
                if target.is_dir():
                    errors.append("scp: {}: Is a directory".format(target))
                    continue
                shutil.copy(src, target)
        except OSError as exc:
            errors.append("scp: {}: {}".format(target, exc.strerror or exc))
    return (1 if errors else 0), errors


def cmd_scp(ns):
    spec = ns.spec             # GA or alpha
    prog = spec.prog
    reject_not_emulated(spec, ns)

    dst = FileRef.from_path(ns.destination)
    srcs = [FileRef.from_path(s) for s in ns.sources]
    scp_verify(prog, srcs, dst)
    remote = dst if dst.remote else srcs[0]
    download = not dst.remote

    zone = resolve_property(ns.zone, "CLOUDSDK_COMPUTE_ZONE")
    if zone is None:
        required_property_error(prog, "zone", "--zone", "compute")
    project = resolve_property(ns.project, "CLOUDSDK_CORE_PROJECT")
    if project is None:
        required_property_error(prog, "project", "--project", "core")

    node = get_node(prog, remote.host, zone, project)
    workers = parse_worker_flag(prog, ns.worker if ns.worker is not None else "0", node.workers)
    if len(workers) > 1 and download:
        fail(prog, "Invalid value for [--worker]: cannot target multiple workers while "
                   "copying files to client.")
    validate_state(prog, node)
    health_warning(node)
    # USER@ changes nothing: a stand-in worker has one home (README.md).

    for ref in ([dst] if dst.remote else srcs):
        if remote_path(node, 0, ref.path) is None:
            not_emulated(prog, "the remote path {!r} (~user)".format(ref.path))

    fail_workers = set()
    for item in os.environ.get("GCLOUD_STANDIN_SCP_FAIL_WORKERS", "").split(","):
        if item.strip():
            if not item.strip().isdigit():
                fail(prog, "{} GCLOUD_STANDIN_SCP_FAIL_WORKERS must be a comma list of worker "
                           "indexes, not {!r}".format(STANDIN_TAG, item), 2)
            fail_workers.add(int(item))

    slow_workers = {}
    for item in os.environ.get("GCLOUD_STANDIN_SCP_SLOW_WORKERS", "").split(","):
        if item.strip():
            worker, _, seconds = item.strip().partition(":")
            try:
                if not worker.isdigit():
                    raise ValueError(worker)
                slow_workers[int(worker)] = float(seconds)
            except ValueError:
                fail(prog, "{} GCLOUD_STANDIN_SCP_SLOW_WORKERS must be a comma list of "
                           "WORKER:SECONDS, not {!r}".format(STANDIN_TAG, item), 2)

    held_workers = {}
    for item in os.environ.get("GCLOUD_STANDIN_SCP_HOLD_WORKERS", "").split(","):
        if item.strip():
            worker, _, count = item.strip().partition(":")
            if not worker.isdigit() or not count.isdigit():
                fail(prog, "{} GCLOUD_STANDIN_SCP_HOLD_WORKERS must be a comma list of "
                           "WORKER:COUNT, not {!r}".format(STANDIN_TAG, item), 2)
            held_workers[int(worker)] = int(count)

    status(SSH_KEY_FOUND, "Using scp batch size of 1.Attempting to SCP into 1 nodes with a total of "
           "{} workers.".format(len(workers)))

    def attempt(worker):
        if download:
            if worker in slow_workers:
                time.sleep(slow_workers[worker])     # a slow link or host: a longer call
            if worker in held_workers:
                hold_download(worker, held_workers[worker])
            if worker in fail_workers:
                status("scp: {}: stand-in injected failure (GCLOUD_STANDIN_SCP_FAIL_WORKERS)"
                       .format(repr(srcs[0])))
                return 1
            sources = [(remote_path(node, worker, s.path), s.path or ".") for s in srcs]
            dest, label = Path(dst.path), dst.path
        else:
            sources = [(Path(s.path), s.path) for s in srcs]
            dest, label = remote_path(node, worker, dst.path), dst.path or "."
        code, errors = scp_copy(sources, dest, label, ns.recurse)
        if errors:
            status(*errors)
        return code

    run_on_workers(prog, "SCP", workers, attempt, {"command": "scp", "tpu": node.name})


def download_worker(argv):
    """The worker a recursive download (a fetch) of the calls log comes from, else None (an
    upload, the stage step's `scp --recurse LOCAL NODE:`, names no worker it comes from)."""
    operands = [a for a in argv[4:] if not a.startswith("--")]
    if len(argv) > 3 and argv[3] == "scp" and "--recurse" in argv and operands and ":" in operands[0]:
        for arg in argv:
            if arg.startswith("--worker="):
                return arg.split("=", 1)[1]
    return None


def hold_download(worker, count):
    """GCLOUD_STANDIN_SCP_HOLD_WORKERS: a slow worker whose download ends only once `count`
    downloads from other workers have ended (all of the state's events.jsonl), so an order between downloads follows
    from cause, not from clocks. Gives up after HOLD_TIMEOUT_S (what a scheduler that waits for the
    held download gets; the order a test reads from events.jsonl then shows it)."""
    deadline = time.monotonic() + HOLD_TIMEOUT_S
    events = state_dir() / "events.jsonl"
    while time.monotonic() < deadline:
        ended = 0
        for line in events.read_text().splitlines():
            event = json.loads(line)
            other = download_worker(event["argv"])
            ended += event["event"] == "end" and other is not None and other != str(worker)
        if ended >= count:
            return
        time.sleep(0.02)


HOLD_TIMEOUT_S = 30
