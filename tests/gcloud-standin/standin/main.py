"""One gcloud call: the modelled delay, the grammar, the command, and the call's lines in
calls.jsonl and events.jsonl."""

import importlib
import os
import sys
import time

from .console import Exit, status
from .grammar import ALPHA_TPU_VM, QUEUED, STORAGE, TPU_VM, parse_command, split_command_path, suggest_unknown
from .state import append_line, on_worker, state_dir


# The module and function that emulate each command. A call imports its command's module only
# (and what that imports): every import is compiled again at each call, as bytecode is not
# cached (gcloud.py), and a download need not compile the storage, node or helper code.
COMMANDS = {(TPU_VM, "ssh"): ("ssh", "cmd_ssh"), (TPU_VM, "scp"): ("scp", "cmd_scp"),
            (TPU_VM, "delete"): ("nodes", "cmd_delete"), (TPU_VM, "create"): ("nodes", "cmd_create"),
            (TPU_VM, "describe"): ("nodes", "cmd_describe"),
            (QUEUED, "create"): ("nodes", "cmd_qr_create"), (QUEUED, "describe"): ("nodes", "cmd_qr_describe"),
            (QUEUED, "delete"): ("nodes", "cmd_qr_delete"),
            (STORAGE, "cp"): ("storage", "cmd_storage_cp"), (STORAGE, "rsync"): ("storage", "cmd_storage_rsync"),
            (ALPHA_TPU_VM, "ssh"): ("ssh", "cmd_ssh"), (ALPHA_TPU_VM, "scp"): ("scp", "cmd_scp")}


def run_command(spec, ns):
    module, function = COMMANDS[spec.group_path, spec.verb]
    getattr(importlib.import_module("." + module, __package__), function)(ns)


def gcloud_main(argv):
    delay = os.environ.get("GCLOUD_STANDIN_DELAY", "0")
    if on_worker() is not None:
        delay = os.environ.get("GCLOUD_STANDIN_WORKER_DELAY", delay)
    delay = float(delay or 0)
    if delay > 0:
        time.sleep(delay)     # real gcloud costs ~1-3 s per call
    spec, tokens, misplaced = split_command_path(argv)
    if misplaced:
        suggest_unknown(spec, misplaced)
    ns = parse_command(spec, tokens)
    run_command(spec, ns)
    return 0


def main():
    argv = sys.argv[1:]
    if argv[:1] == ["standin"]:
        from .helpers import standin_main
        return standin_main(argv[1:])
    t_start = time.time()
    code = 1
    try:
        state = state_dir()
    except Exit as e:
        return e.code
    append_line(state / "events.jsonl", {"event": "start", "pid": os.getpid(), "argv": argv})
    try:
        code = gcloud_main(argv)
    except Exit as e:
        code = e.code
    except KeyboardInterrupt:
        status("", "", "Command killed by keyboard interrupt", "")
        code = 1
    finally:
        record = {"argv": argv, "t_start": t_start, "t_end": time.time(), "exit": code}
        if on_worker() is not None:
            # A call made on a stand-in TPU worker (by its own gcloud), not on the user's machine.
            record.update(tpu=os.environ.get("GCLOUD_STANDIN_TPU"), worker=on_worker())
        append_line(state / "calls.jsonl", record)
        append_line(state / "events.jsonl", {"event": "end", "pid": os.getpid(), "argv": argv, "exit": code})
    return code
