"""Which workers a call reaches (--worker, the node's state) and how gcloud runs a per-worker
action on them: one thread each, 10 attempts, and its exit-status rules (§1.2, §1.3)."""

import os
import threading
import time

from .console import Exit, fail, status
from .state import append_line, state_dir


# gcloud's CommandError names the client binary it ran (§1.3, §2.2).
SSH_CLIENT = "/usr/bin/ssh"
SCP_CLIENT = "/usr/bin/scp"
MAX_ATTEMPTS = 10          # AttemptRunWithRetries: 10 attempts, 5 s apart (§1.3)
OPENSSH_FAILURE = 255      # SSH_EXIT_CODES[OPENSSH]: ssh itself failed (§1.3)

# What gcloud prints on every ssh and scp when the user's key is in the project's metadata
# already (AddSSHKeyIfNeeded), as it always is here: seen with the real gcloud in tests/real-gcloud.
SSH_KEY_FOUND = "SSH key found in project metadata; not updating instance."

# Node states as in the TPU v2 API; ValidateTPUState (§1.3) sorts them.
STATES_WARN = {"CREATING", "STARTING", "REPAIRING", "HIDING", "UNHIDING"}
STATES_UNUSABLE = {"STOPPED", "STOPPING", "DELETING", "HIDDEN"}
STATES_TERMINAL = {"PREEMPTED", "TERMINATED"}
ALL_STATES = ({"READY", "STATE_UNSPECIFIED", "RESTARTING", "REIMAGING",
               "SUSPENDING", "SUSPENDED"}
              | STATES_WARN | STATES_UNUSABLE | STATES_TERMINAL)


def validate_state(prog, node):
    """ValidateTPUState (§1.3)."""
    state = node.state
    if state == "STATE_UNSPECIFIED":
        status('WARNING: The TPU VM "{}" is in state "{}", therefore the TPU may not be '
               'available or reachable.'.format(node.name, state))
    elif state in STATES_WARN:
        status('WARNING: The TPU VM "{}" is in state "{}", therefore the TPU may not be '
               'available or reachable. If the connection fails, please try again '
               'later.'.format(node.name, state))
    elif state in STATES_UNUSABLE:
        fail(prog, 'This TPU has state "{}", so it cannot be currently connected to.'.format(state))
    elif state in STATES_TERMINAL:
        fail(prog, 'This TPU has terminal state "{}", so it cannot be used anymore.'.format(state))


def health_warning(node):
    if node.health == "UNHEALTHY_MAINTENANCE":
        status("WARNING: !!! This TPU is going through a maintenance event, and might be "
               "unavailable !!!")


def parse_worker_flag(prog, worker_flag, n_vms):
    """ParseWorkerFlag (§1.2), including its quirks: int() accepts ' 1' and
    '1_0'; a non-numeric range bound is an uncaught ValueError (gcloud crashes).
    Returns the worker indexes in the iteration order gcloud uses (a set's)."""
    def invalid(message):
        fail(prog, "Invalid value for [--worker]: " + message)

    if str(worker_flag).upper() == "ALL":
        indexes = list(range(n_vms))
    else:
        indexes = set()
        for r in worker_flag.split(","):
            if not r:
                continue
            if "-" in r:
                bounds = r.split("-")
                if len(bounds) != 2 or not bounds[0] or not bounds[1]:
                    invalid('found malformed range "{}".'.format(r))
                try:
                    start, end = int(bounds[0]), int(bounds[1])
                except ValueError as exc:
                    status("ERROR: gcloud crashed (ValueError): {}".format(exc), "",
                           "If you would like to report this issue, please run the following command:",
                           "  gcloud feedback", "",
                           "To check gcloud for common problems, please run the following command:",
                           "  gcloud info --run-diagnostics")
                    raise Exit(1)
                if start >= end:
                    invalid('found malformed range "{}".'.format(r))
                indexes.update(range(start, end + 1))
            else:
                try:
                    indexes.add(int(r))
                except ValueError:
                    invalid("unable to parse worker ID {}. Please only use numbers.".format(r))
    if not indexes:
        invalid("no worker specified, or none were parsed from the argument value.")
    mx = max(indexes)
    if mx >= n_vms:
        invalid("worker index {} is larger than the valid worker indexes on this TPU VM. "
                "Please only use indexes in the range [0, {}], inclusive.".format(mx, n_vms - 1))
    return list(indexes)






class CommandError(Exception):
    """ssh.CommandError: '[/usr/bin/ssh] exited with return code [255].'"""

    def __init__(self, client, code):
        super().__init__("[{}] exited with return code [{}].".format(client, code))
        self.code = code


def thread_traceback(thread_no, line, error):
    """What Python's threading.excepthook prints for an exception escaping
    one of gcloud's worker threads (abridged)."""
    status("Exception in thread Thread-{} (AttemptRunWithRetries):".format(thread_no),
           "Traceback (most recent call last):",
           '  File ".../googlecloudsdk/command_lib/compute/tpus/tpu_vm/ssh.py", '
           'in AttemptRunWithRetries',
           "    " + line,
           error)


def run_on_workers(prog, label, workers, attempt_fn, log_extra):
    """SSHIntoPreppedNodes / SCPIntoPreppedNodes + AttemptRunWithRetries (§1.3).

    `attempt_fn(worker)` runs one attempt and returns its exit status; for ssh,
    255 means the ssh client failed; for scp every non-zero status raises
    CommandError (§2.2).  One worker: exit with its status.  Several workers:
    one thread each, all started at once (GA has no batching), then the first
    non-zero status in exit_statuses order.  Reproduced from gcloud:
    exit_statuses has one slot per *selected* worker but is indexed by worker
    number, so a failure on worker w >= len(workers) (e.g. `--worker=2,3`)
    raises IndexError inside its thread and is lost.
    """
    client = SSH_CLIENT if label == "SSH" else SCP_CLIENT
    delay = float(os.environ.get("GCLOUD_STANDIN_RETRY_DELAY", "0") or 0)
    multiple = len(workers) > 1
    exit_statuses = [None] * len(workers)
    runs_log = state_dir() / "runs.jsonl"

    def one_attempt(worker, attempt):
        t0 = time.time()
        code, extra = attempt_fn(worker), {}
        if isinstance(code, tuple):         # (status, what else runs.jsonl notes: "dropped")
            code, extra = code
        append_line(runs_log, dict(log_extra, pid=os.getpid(), worker=worker,
                                   attempt=attempt, t_start=t0, t_end=time.time(), exit=code, **extra))
        if label == "SCP" and code:
            raise CommandError(client, code)
        if label == "SSH" and code == OPENSSH_FAILURE:
            raise CommandError(client, code)
        return code

    def attempt_with_retries(worker, thread_no):
        """Returns the exit code for a single worker (None: success)."""
        for i in range(MAX_ATTEMPTS):
            status("{}: Attempting to connect to worker {}...".format(label, worker))
            try:
                code = one_attempt(worker, i + 1)
            except CommandError as err:
                if i == MAX_ATTEMPTS - 1:
                    if multiple:
                        if worker < len(exit_statuses):
                            exit_statuses[worker] = OPENSSH_FAILURE
                            thread_traceback(thread_no, "exit_status = run_cmd(env, cmd, output_file)",
                                             "googlecloudsdk.command_lib.util.ssh.ssh.CommandError: "
                                             + str(err))
                        else:
                            thread_traceback(thread_no, "exit_statuses[worker] = 255",
                                             "IndexError: list assignment index out of range")
                        return None
                    fail(prog, str(err), err.code)
                if multiple:
                    status('Failed to execute command on multiple workers. This may have '
                           'happened if you have not added your SSH key to your ssh-agent '
                           'using "ssh-add ~/.ssh/google_compute_engine".')
                status("Retrying: {} command error: {}".format(label, err))
                time.sleep(delay)
                continue
            if code:
                if multiple:
                    status("##### Command execution on worker {} failed with exit status {}. "
                           "Continuing.".format(worker, code))
                    if worker < len(exit_statuses):
                        exit_statuses[worker] = code
                    else:
                        thread_traceback(thread_no, "exit_statuses[worker] = exit_status",
                                         "IndexError: list assignment index out of range")
                return code
            return None

    if not multiple:
        code = attempt_with_retries(workers[0], 0)
        raise Exit(code or 0)
    threads = []
    for k, worker in enumerate(workers):
        t = threading.Thread(target=attempt_with_retries, args=(worker, k + 1), daemon=True)
        threads.append(t)
        t.start()
    for t in threads:
        t.join()
    for code in exit_statuses:       # WaitForBatchCompletion
        if code:
            raise Exit(code)
    raise Exit(0)
