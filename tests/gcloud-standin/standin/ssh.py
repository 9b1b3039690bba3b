"""`gcloud compute tpus tpu-vm ssh`: the command runs as `bash -c` in each worker's home, with
the life-of-a-run knobs (an unreachable worker, a busy TPU, a preemption)."""

import getpass
import json
import os
import signal
import subprocess
import sys
import threading
import time

from .console import STANDIN_TAG, fail, not_emulated, status
from .grammar import reject_not_emulated
from .state import ConfigLock, get_node, required_property_error, resolve_property, write_atomic
from .vm import kill_worker_processes, prepare_workers, remote_env, stop_holders, worker_set
from .workers import (
    OPENSSH_FAILURE, SSH_KEY_FOUND, health_warning, parse_worker_flag, run_on_workers,
    validate_state)


# What OpenSSH's ssh prints when the server side of its connection goes away (clientloop.c's
# quit_message ends it with \r\n, as seen with the real ssh in tests/real-gcloud).
CLOSED_BY_REMOTE = "Connection to {} closed by remote host.\r"

# OpenSSH options the stand-in can honour (all but -n change nothing here).
SSH_NOARG_OK = set("46AaCqTtvXxYn")
SSH_ARG_OK = set("oipFEl")


def parse_ssh_options(prog, words, where):
    """Consumes OpenSSH options from `words` like ssh's getopt does (stopping
    at `--` or the first non-option word).  Returns (stdin_null, rest)."""
    stdin_null = False
    i = 0
    while i < len(words):
        w = words[i]
        if w == "--":
            i += 1
            break
        if not w.startswith("-") or w == "-":
            break
        j = 1
        while j < len(w):
            c = w[j]
            if c in SSH_NOARG_OK:
                stdin_null = stdin_null or c == "n"
                j += 1
                continue
            if c in SSH_ARG_OK:
                if not w[j + 1:]:
                    if i + 1 >= len(words):
                        not_emulated(prog, "ssh option -{} without its argument ({})".format(c, where))
                    i += 1
                break
            not_emulated(prog, "the ssh option -{} ({})".format(c, where))
        i += 1
    return stdin_null, words[i:]


def cmd_ssh(ns):
    spec = ns.spec             # GA or alpha
    prog = spec.prog
    reject_not_emulated(spec, ns)

    # ssh_utils.GetUserAndInstance
    parts = ns.user_tpu.split("@")
    if len(parts) == 1:
        user, tpu = getpass.getuser(), parts[0]
    elif len(parts) == 2:
        user, tpu = parts
    else:
        fail(prog, "Expected argument of the form [USER@]INSTANCE; received [{}].".format(ns.user_tpu))

    zone = resolve_property(ns.zone, "CLOUDSDK_COMPUTE_ZONE")
    if zone is None:
        required_property_error(prog, "zone", "--zone", "compute")
    project = resolve_property(ns.project, "CLOUDSDK_CORE_PROJECT")
    if project is None:
        required_property_error(prog, "project", "--project", "core")

    # --ssh-flag values are split on whitespace and go before the host;
    # SSH_ARGS go after it (SSHCommand.Build).
    flag_words = [part for value in ns.ssh_flag if value and value != "--" for part in value.split()]
    stdin_null, leftover = parse_ssh_options(prog, flag_words, "--ssh-flag")
    if leftover:
        not_emulated(prog, "--ssh-flag value {!r} (not an ssh option)".format(leftover[0]))
    command_list = ns.command.split(" ") if ns.command else None
    remote_words = []
    if ns.ssh_args:
        null2, remote_words = parse_ssh_options(prog, ns.ssh_args, "SSH_ARGS")
        stdin_null = stdin_null or null2
    if remote_words:
        # ssh stops option parsing at the first word; the rest, including a
        # literal `--` and gcloud's command, is the remote command.
        words = remote_words + (["--"] + command_list if command_list else [])
        remote_command = " ".join(words)
    else:
        remote_command = " ".join(command_list) if command_list else None
    want_tty = not command_list     # SSHCommand.Build: -t unless --command

    node = get_node(prog, tpu, zone, project)
    validate_state(prog, node)
    workers = parse_worker_flag(prog, ns.worker if ns.worker is not None else "0", node.workers)
    if len(workers) > 1 and not ns.command:
        fail(prog, "Invalid value for [--worker]: cannot target multiple workers without the "
                   "`--command` flag.")
    health_warning(node)

    status(SSH_KEY_FOUND, "Using ssh batch size of 1. Attempting to SSH into 1 nodes with a total of "
           "{} workers.".format(len(workers)))

    stdin_is_tty = sys.stdin is not None and sys.stdin.isatty()
    unreachable = worker_set(prog, "GCLOUD_STANDIN_SSH_FAIL_WORKERS")
    if remote_command is not None:
        prepare_workers(prog, node, workers)
    preemption = Preemption(prog, node) if remote_command is not None else None
    drops = None
    if remote_command is not None and os.environ.get("GCLOUD_STANDIN_DROP_WORKERS"):
        # Imported only when asked for: every call compiles what it imports (README.md).
        from .drop import DropKnobs, Relay, wait_or_drop
        drops = DropKnobs(prog)

    def attempt(worker):
        address = node.address(worker)
        if worker in unreachable:
            status("ssh: connect to host {} port 22: Connection refused".format(address))
            return OPENSSH_FAILURE
        if preemption is not None and preemption.happened:
            status("ssh: connect to host {} port 22: Connection timed out".format(address))
            return OPENSSH_FAILURE
        env, bash = remote_env(node, worker, user)
        if want_tty and not stdin_is_tty:
            status("Pseudo-terminal will not be allocated because stdin is not a terminal.")
        if remote_command is not None:
            argv = [bash, "-c", remote_command]
        elif stdin_is_tty and not stdin_null:
            argv = [bash, "-i"]
        else:
            argv = [bash, "-s"]     # a login shell reading commands from stdin
        worker_folder = node.home(worker).parent
        relay = Relay() if drops is not None and drops.pending(worker_folder, worker) else None
        try:
            started = time.monotonic()
            # A worker's processes are one session, as under sshd, so a preemption can end
            # them all at once.
            proc = subprocess.Popen(argv, cwd=env["HOME"], env=env,
                                    stdin=subprocess.DEVNULL if stdin_null else None,
                                    stdout=relay.child_fds()[0] if relay else None,
                                    stderr=relay.child_fds()[1] if relay else None,
                                    start_new_session=preemption is not None and preemption.armed)
            if preemption is not None:
                preemption.watch(proc)
            if relay is not None:
                relay.start()
                if wait_or_drop(drops, proc, relay, worker_folder, node.home(worker), started,
                                "gcloud pid {} worker {}".format(os.getpid(), worker)):
                    # GCLOUD_STANDIN_DROP_*: the connection is gone, the session's shell runs on.
                    status(CLOSED_BY_REMOTE.format(address))
                    return OPENSSH_FAILURE, {"dropped": True}
            code = proc.wait()
        except OSError as exc:
            status("ssh: connect to host {}: {}".format(node.name, exc))
            return OPENSSH_FAILURE
        if preemption is not None and preemption.happened:
            status(CLOSED_BY_REMOTE.format(address))
            return OPENSSH_FAILURE
        return 128 - code if code < 0 else code

    try:
        run_on_workers(prog, "SSH", workers, attempt,
                       {"command": "ssh", "tpu": node.name})
    finally:
        if preemption is not None:
            preemption.cancel()


class Preemption:
    """GCLOUD_STANDIN_PREEMPT_AFTER=SECONDS: that long into an ssh call that runs a command
    on a spot or preemptible node (only the node GCLOUD_STANDIN_PREEMPT_NODE names, when set:
    one slice of several), Google preempts the node: its state becomes PREEMPTED
    (§10.3), every worker's processes end at once (SIGKILL: the VMs are gone), and ssh
    sees the connection close (255, so gcloud retries, and the retries cannot connect)."""

    def __init__(self, prog, node):
        self.node, self.procs, self.happened = node, [], False
        self.lock = threading.Lock()
        raw = os.environ.get("GCLOUD_STANDIN_PREEMPT_AFTER", "")
        only = os.environ.get("GCLOUD_STANDIN_PREEMPT_NODE", "")
        self.armed = bool(raw) and node.preemptible and only in ("", node.name)
        self.timer = None
        if raw:
            try:
                seconds = float(raw)
            except ValueError:
                fail(prog, "{} GCLOUD_STANDIN_PREEMPT_AFTER must be a number of seconds, not "
                           "{!r}".format(STANDIN_TAG, raw), 2)
            if self.armed:
                self.timer = threading.Timer(seconds, self.preempt)
                self.timer.daemon = True
                self.timer.start()

    def watch(self, proc):
        with self.lock:
            self.procs.append(proc)
            if self.happened:
                # Started before the preemption's sweep but watched after it: its shell may have
                # left the session already (setsid), so sweep again once its group is gone.
                self.kill(proc)
                kill_worker_processes(self.node)

    def kill(self, proc):
        # A worker whose ssh call was already waited for is gone, and its pid (the session's
        # id) may be another test's process by now; kill_worker_processes ends what it left.
        if proc.returncode is not None:
            return
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass

    def preempt(self):
        with self.lock:
            self.happened = True
            with ConfigLock(self.node.root):
                path = self.node.root / "config.json"
                config = json.loads(path.read_text())
                config["state"] = "PREEMPTED"
                config.pop("progression", None)
                write_atomic(path, json.dumps(config, indent=2) + "\n")
            stop_holders(self.node.root)
            for proc in self.procs:
                self.kill(proc)
            kill_worker_processes(self.node)

    def cancel(self):
        if self.timer is not None:
            self.timer.cancel()
