#!/usr/bin/env python3
"""gcloud STAND-IN for tpulaunch's tests.  This is NOT the Google Cloud SDK.

It emulates exactly three commands of gcloud 578.0.0 (GA track) against local
folders, so generated pipelines can be run end to end on a machine without
network, credentials or TPUs:

  gcloud compute tpus tpu-vm ssh    [USER@]TPU --zone=Z [--worker=W] [--command=C] [-- SSH_ARGS]
  gcloud compute tpus tpu-vm scp    [--recurse] SRC... DEST --zone=Z [--worker=W]
  gcloud compute tpus tpu-vm delete TPU --zone=Z [--quiet] [--async]

plus stand-in-only helpers (`gcloud standin create|set-state`).  Grammar and
behaviour follow docs/gcloud.md (cited below as §n), which states what
gcloud's own sources say and what the real gcloud printed.  Where gcloud's
behaviour is surprising (argparse's positional chunking, the lost exit status
of high worker indexes, the 255 retries) the stand-in reproduces it on purpose:
a stand-in more lenient than gcloud would hide bugs in the pipelines it tests.
Deviations are listed in README.md next to this file.  Nothing run through it
is a TPU result.
"""

import getpass
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
FAKEJAX_DIR = HERE / "fakejax"

# gcloud's CommandError names the client binary it ran (§1.3, §2.2).
SSH_CLIENT = "/usr/bin/ssh"
SCP_CLIENT = "/usr/bin/scp"
MAX_ATTEMPTS = 10          # AttemptRunWithRetries: 10 attempts, 5 s apart (§1.3)
OPENSSH_FAILURE = 255      # SSH_EXIT_CODES[OPENSSH]: ssh itself failed (§1.3)

HELP_SEARCH_HINT = ("To search the help text of gcloud commands, run:\n"
                    "  gcloud help -- SEARCH_TERMS")
STANDIN_TAG = "[gcloud stand-in]"

# Node states as in the TPU v2 API; ValidateTPUState (§1.3) sorts them.
STATES_WARN = {"CREATING", "STARTING", "REPAIRING", "HIDING", "UNHIDING"}
STATES_UNUSABLE = {"STOPPED", "STOPPING", "DELETING", "HIDDEN"}
STATES_TERMINAL = {"PREEMPTED", "TERMINATED"}
ALL_STATES = ({"READY", "STATE_UNSPECIFIED", "RESTARTING", "REIMAGING",
               "SUSPENDING", "SUSPENDED"}
              | STATES_WARN | STATES_UNUSABLE | STATES_TERMINAL)

_print_lock = threading.Lock()


def status(*lines):
    """Writes gcloud 'status' lines (log.status goes to stderr), thread-safely."""
    with _print_lock:
        sys.stderr.write("".join(line + "\n" for line in lines))
        sys.stderr.flush()


class Exit(Exception):
    """Ends the invocation with `code`; whatever must be printed was printed."""

    def __init__(self, code):
        super().__init__(code)
        self.code = code


def fail(prog, message, code=1):
    """gcloud's top-level error handler: `ERROR: (prog) message`, exit 1
    (or the error's own exit_code, as CommandError carries)."""
    status("ERROR: ({}) {}".format(prog, message))
    raise Exit(code)


def close_matches(word, choices, n):
    """difflib's suggestion, imported only on the error paths that need it (it is a third of
    the stand-in's start-up imports)."""
    import difflib
    return difflib.get_close_matches(word, choices, n)


def not_emulated(prog, what):
    """Valid gcloud grammar that this stand-in does not emulate: exit 2."""
    fail(prog, "{} {} is valid gcloud grammar but is not emulated by this "
               "stand-in (see tests/gcloud-standin/README.md).".format(STANDIN_TAG, what), 2)


def append_line(path, obj):
    """Appends one JSON line with a single O_APPEND write, so concurrent
    invocations never interleave inside a line."""
    data = (json.dumps(obj, sort_keys=False) + "\n").encode()
    fd = os.open(str(path), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


# --------------------------------------------------------------------------
# Grammar: an emulation of gcloud's argparse (calliope parser_extensions).
# --------------------------------------------------------------------------

class Flag:
    def __init__(self, name, value=True, choices=None, emulated=True,
                 append=False, short=None, dest=None, note=""):
        self.name = name
        self.note = note            # why it is not emulated, for the error
        self.value = value          # takes one argument (False: store_true)
        self.choices = choices
        self.emulated = emulated
        self.append = append
        self.short = short
        self.dest = dest or name.lstrip("-").replace("-", "_")

    @property
    def display(self):
        # argparse names a flag by all its option strings joined with '/'.
        return self.name + ("/" + self.short if self.short else "")


# gcloud-wide flags (§1.1); they are valid at every level of the command tree.
GLOBAL_FLAGS = [
    Flag("--project"),
    Flag("--quiet", value=False, short="-q"),
    Flag("--verbosity", choices=["debug", "info", "warning", "error", "critical", "none"]),
    Flag("--access-token-file", emulated=False),
    Flag("--account", emulated=False),
    Flag("--billing-project", emulated=False),
    Flag("--configuration", emulated=False),
    Flag("--flags-file", emulated=False),
    Flag("--flatten", emulated=False),
    Flag("--format", emulated=False),
    Flag("--help", value=False, short="-h", emulated=False),
    Flag("--impersonate-service-account", emulated=False),
    Flag("--log-http", value=False, emulated=False),
    Flag("--no-log-http", value=False, emulated=False),
    Flag("--trace-token", emulated=False),
    Flag("--user-output-enabled", value=False, emulated=False),
    Flag("--no-user-output-enabled", value=False, emulated=False),
]

# BaseSSHCLIHelper.Args + AddTPUSSHArgs (GA: no --batch-size, no IAP) (§1.1).
# The key/host-key flags change nothing observable here, so they are accepted.
SSH_COMMON_FLAGS = [
    Flag("--dry-run", value=False, emulated=False),
    Flag("--force-key-file-overwrite", value=False),
    Flag("--plain", value=False),
    Flag("--ssh-key-file"),
    Flag("--strict-host-key-checking", choices=["yes", "no", "ask"]),
    Flag("--ssh-key-expiration"),
    Flag("--ssh-key-expire-after"),
    Flag("--worker"),
    Flag("--internal-ip", value=False),
    Flag("--zone"),
]


class Positional:
    def __init__(self, dest, nargs, metavar):
        self.dest, self.nargs, self.metavar = dest, nargs, metavar


class CommandSpec:
    def __init__(self, verb, flags, positionals, remainder=False, usage=""):
        self.verb = verb
        self.prog = "gcloud.compute.tpus.tpu-vm." + verb
        self.flags = flags + GLOBAL_FLAGS
        self.positionals = positionals
        self.remainder = remainder      # ssh: `-- SSH_ARGS` (RemainderAction)
        self.usage = usage


SPECS = {
    "ssh": CommandSpec(
        "ssh",
        SSH_COMMON_FLAGS + [
            Flag("--ssh-flag", append=True),
            Flag("--command"),
            Flag("--output-directory", emulated=False,
                 note="gcloud 443-578 writes it to None/<worker>.log, §1.3"),
        ],
        [Positional("user_tpu", None, "[USER@]TPU")],
        remainder=True,
        usage="[USER@]TPU [optional flags] [-- SSH_ARGS ...]"),
    "scp": CommandSpec(
        "scp",
        SSH_COMMON_FLAGS + [
            Flag("--scp-flag", append=True, emulated=False),
            Flag("--recurse", value=False),
            Flag("--compress", value=False),
        ],
        [Positional("sources", "+", "[[USER@]INSTANCE:]SRC"),
         Positional("destination", None, "[[USER@]INSTANCE:]DEST")],
        usage="[[USER@]INSTANCE:]SRC [[[USER@]INSTANCE:]SRC ...] "
              "[[USER@]INSTANCE:]DEST [optional flags]"),
    "delete": CommandSpec(
        "delete",
        [Flag("--zone"), Flag("--async", value=False, dest="async_")],
        [Positional("tpu", None, "TPU")],
        usage="(TPU : --zone=ZONE) [optional flags]"),
}

# Every `gcloud compute tpus tpu-vm` verb of gcloud 578.0.0; only three are emulated.
TPU_VM_VERBS = ["accelerator-types", "attach-disk", "create", "delete", "describe",
                "detach-disk", "get-guest-attributes", "list", "scp",
                "service-identity", "simulate-maintenance-event", "ssh", "start",
                "stop", "update", "versions"]

_NEGATIVE_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")


class Namespace:
    def __init__(self, spec):
        for flag in spec.flags:
            setattr(self, flag.dest, [] if flag.append else (None if flag.value else False))
        for pos in spec.positionals:
            setattr(self, pos.dest, None)
        self.ssh_args = None
        self.specified = []        # flags given on the command line, in order


def usage_text(spec):
    """An approximation of calliope's GetUsage(): command flags, not gcloud-wide ones."""
    import textwrap
    own = [f for f in spec.flags if f not in GLOBAL_FLAGS]
    names = " | ".join(sorted({f.name for f in own} | {"--help"}))
    lead = "  optional flags may be  "
    flags = textwrap.fill(names, width=80, initial_indent=lead,
                          subsequent_indent=" " * len(lead), break_on_hyphens=False)
    return ("Usage: gcloud compute tpus tpu-vm {} {}\n{}\n\n"
            "For detailed information on this command and its flags, run:\n"
            "  gcloud compute tpus tpu-vm {} --help\n").format(spec.verb, spec.usage, flags, spec.verb)


def parse_error(spec, message):
    """calliope ArgumentParser.error(): exit 2; a one-line message gets usage."""
    status("ERROR: ({}) {}".format(spec.prog, message))
    if "\n" not in message:
        with _print_lock:
            sys.stderr.write(usage_text(spec))
            sys.stderr.flush()
    raise Exit(2)


def suggest_unknown(spec, unknown):
    """ArgumentParser._Suggest: the 'unrecognized arguments' error, with a
    difflib suggestion (TextChoiceSuggester) for flag-looking arguments."""
    choices = []
    for f in spec.flags:
        choices.append(f.name)
        if f.short:
            choices.append(f.short)
    messages = []
    for arg in unknown:
        parts = arg.split("=")
        flag = parts[0]
        value = parts[1] if len(parts) > 1 else None
        suggestion = None
        if flag.startswith("--") or value:
            match = close_matches(flag.lower(), choices, 1)
            suggestion = match[0] if match else None
        if arg in messages:
            continue
        if suggestion:
            messages.append(arg + " (did you mean '{0}'?)".format(suggestion))
        else:
            messages.append(arg)
    if len(messages) > 1:
        separator, prefix = "\n  ", ""
    else:
        separator, prefix = " ", "\n\n"
    messages.append(prefix + HELP_SEARCH_HINT)
    parse_error(spec, "unrecognized arguments:{0}{1}".format(separator, separator.join(messages)))


def parse_command(spec, tokens):
    """Parses `tokens` the way Python 3 argparse + calliope would for `spec`.

    Reproduced on purpose: `--flag value` and `--flag=value`, flags anywhere,
    `--` ending the flags, argparse's chunked matching of positionals (so
    `scp a --zone=z b c` leaves `c` unrecognized), last-one-wins flags, and the
    error precedence: bad flag value > unrecognized arguments > missing
    positionals.  Not reproduced: abbreviated flag names (argparse's
    allow_abbrev), which the stand-in rejects; see README.md.
    """
    by_name = {}
    for f in spec.flags:
        by_name[f.name] = f
        if f.short:
            by_name[f.short] = f
    ns = Namespace(spec)

    if spec.remainder and "--" in tokens:
        # RemainderAction.ParseKnownArgs: everything after the first `--`
        # belongs to ssh, before any other parsing.
        cut = tokens.index("--")
        tokens, ns.ssh_args = tokens[:cut], tokens[cut + 1:]

    pattern, options = [], {}
    after_dashes = False
    for i, tok in enumerate(tokens):
        if after_dashes:
            pattern.append("A")
            continue
        if tok == "--":
            pattern.append("-")
            after_dashes = True
            continue
        opt = _classify_optional(tok, by_name)
        if opt is None:
            pattern.append("A")
        else:
            pattern.append("O")
            options[i] = opt
    pattern = "".join(pattern)

    extras = []
    positionals = list(spec.positionals)

    def store(flag, value):
        if flag.choices is not None and value not in flag.choices:
            suggestion = close_matches(value, flag.choices, 1)
            hint = (" Did you mean '{}'?".format(suggestion[0]) if suggestion else
                    "\n\nValid choices are [{}].".format(", ".join(sorted(flag.choices))))
            parse_error(spec, "argument {}: Invalid choice: '{}'.{}".format(
                flag.display, value, hint))
        if flag.append:
            getattr(ns, flag.dest).append(value)
        else:
            setattr(ns, flag.dest, value)
        ns.specified.append(flag.name)

    def consume_optional(start):
        flag, explicit = options[start]
        if flag is None:
            extras.append(tokens[start])
            return start + 1
        if explicit is not None:
            if not flag.value:
                parse_error(spec, "argument {}: ignored explicit argument '{}'".format(
                    flag.display, explicit))
            store(flag, explicit)
            return start + 1
        if not flag.value:
            store(flag, True)
            return start + 1
        if start + 1 < len(tokens) and pattern[start + 1] == "A":
            store(flag, tokens[start + 1])
            return start + 2
        parse_error(spec, "argument {}: expected one argument".format(flag.display))

    def consume_positionals(start):
        counts = _match_partial(positionals, pattern[start:])
        for pos, count in zip(list(positionals), counts):
            values = tokens[start:start + count]
            start += count
            if "--" in values:
                values.remove("--")
            setattr(ns, pos.dest, values if pos.nargs == "+" else values[0])
        del positionals[:len(counts)]
        return start

    # The loop of argparse._parse_known_args (Python 3.11).
    option_indices = sorted(options)
    start = 0
    max_option = option_indices[-1] if option_indices else -1
    while start <= max_option:
        next_option = min(i for i in option_indices if i >= start)
        if start != next_option:
            end = consume_positionals(start)
            if end > start:
                start = end
                continue
            start = end
        if start not in options:
            extras.extend(tokens[start:next_option])
            start = next_option
        start = consume_optional(start)
    stop = consume_positionals(start)
    extras.extend(tokens[stop:])

    if extras:
        suggest_unknown(spec, extras)
    if positionals:
        parse_error(spec, "argument {}: Must be specified.".format(
            " ".join(p.metavar for p in positionals)))
    if ns.specified.count("--ssh-key-expiration") and ns.specified.count("--ssh-key-expire-after"):
        parse_error(spec, "argument --ssh-key-expiration: At most one of "
                          "--ssh-key-expiration | --ssh-key-expire-after can be specified.")
    return ns


def _classify_optional(tok, by_name):
    """argparse._parse_optional: (flag or None, explicit value) for an option
    token, or None for a positional token."""
    if not tok or tok[0] != "-":
        return None
    if tok in by_name:
        return by_name[tok], None
    if len(tok) == 1:
        return None
    if "=" in tok:
        name, value = tok.split("=", 1)
        if name in by_name:
            return by_name[name], value
    if _NEGATIVE_NUMBER.match(tok):
        return None
    if " " in tok:
        return None
    return None, None


def _match_partial(positionals, pattern):
    """argparse._match_arguments_partial with the nargs patterns we need."""
    for i in range(len(positionals), 0, -1):
        regex = "".join("(-*A[A-]*)" if p.nargs == "+" else "(-*A-*)" for p in positionals[:i])
        match = re.match(regex, pattern)
        if match:
            return [len(g) for g in match.groups()]
    return []


def split_command_path(argv):
    """Walks `gcloud [FLAGS] compute [FLAGS] tpus [FLAGS] tpu-vm [FLAGS] VERB`.

    Returns (verb, tokens for the verb's parser, misplaced flags).
    gcloud-wide flags given before the verb are handed on to the verb's
    parser, as every level of gcloud's parser tree accepts them; any other
    flag there is unknown at its level and ends up unrecognized.
    """
    by_name = {}
    for f in GLOBAL_FLAGS:
        by_name[f.name] = f
        if f.short:
            by_name[f.short] = f
    expected = [("gcloud", "compute"), ("gcloud.compute", "tpus"),
                ("gcloud.compute.tpus", "tpu-vm")]
    carried, misplaced, level, i = [], [], 0, 0
    while i < len(argv):
        tok = argv[i]
        if tok.startswith("-") and tok != "-":
            flag = by_name.get(tok.split("=", 1)[0])
            if flag is None:
                misplaced.append(tok)
            else:
                carried.append(tok)
                if flag.value and "=" not in tok and i + 1 < len(argv):
                    carried.append(argv[i + 1])
                    i += 1
            i += 1
            continue
        if level < len(expected):
            prog, want = expected[level]
            if tok != want:
                # Many other gcloud groups exist; the stand-in knows only this path.
                if prog == "gcloud" and tok in ("alpha", "beta"):
                    what = "the `{}` release track".format(tok)
                else:
                    what = "`{} {}`".format(prog.replace(".", " "), tok)
                status("ERROR: ({}) {} {} is not emulated: only `gcloud compute tpus tpu-vm "
                       "ssh|scp|delete` and `gcloud standin ...` are (see "
                       "tests/gcloud-standin/README.md).".format(prog, STANDIN_TAG, what))
                raise Exit(2)
            level += 1
            i += 1
            continue
        if tok not in TPU_VM_VERBS:
            _bad_choice("gcloud.compute.tpus.tpu-vm", tok, TPU_VM_VERBS)
        if tok not in SPECS:
            status("ERROR: (gcloud.compute.tpus.tpu-vm.{}) {} `gcloud compute tpus tpu-vm {}` "
                   "is valid gcloud but is not emulated by this stand-in (it emulates ssh, "
                   "scp and delete; see tests/gcloud-standin/README.md).".format(tok, STANDIN_TAG, tok))
            raise Exit(2)
        return tok, carried + argv[i + 1:], misplaced
    prog = expected[level][0] if level < len(expected) else "gcloud.compute.tpus.tpu-vm"
    status("ERROR: ({}) {} only `gcloud compute tpus tpu-vm ssh|scp|delete` and "
           "`gcloud standin ...` are emulated; command incomplete.".format(prog, STANDIN_TAG))
    raise Exit(2)


def _bad_choice(prog, tok, choices):
    message = "Invalid choice: '{}'.".format(tok)
    match = close_matches(tok, choices, 1)
    status("ERROR: ({}) {}".format(prog, message))
    if match:
        status("Maybe you meant:", "  {} {}".format(prog.replace(".", " "), match[0]), "",
               HELP_SEARCH_HINT)
    raise Exit(2)


# --------------------------------------------------------------------------
# State: TPUs are folders under $GCLOUD_STANDIN_STATE/tpus/.
# --------------------------------------------------------------------------

def state_dir():
    raw = os.environ.get("GCLOUD_STANDIN_STATE", "")
    if not raw:
        status("ERROR: {} GCLOUD_STANDIN_STATE is not set: it must name the folder that "
               "holds the stand-in's TPUs (see tests/gcloud-standin/README.md).".format(STANDIN_TAG))
        raise Exit(2)
    path = Path(raw).resolve()
    path.mkdir(parents=True, exist_ok=True)
    return path


class Node:
    """One stand-in TPU node."""

    def __init__(self, root, name, config):
        self.root, self.name, self.config = root, name, config
        self.zone = config["zone"]
        self.workers = int(config["workers"])
        self.state = config.get("state", "READY")
        self.health = config.get("health", "HEALTHY")
        self.project = config.get("project")

    def home(self, worker):
        return self.root / "worker-{}".format(worker) / "home"

    @property
    def bin(self):
        return self.root / "bin"

    @property
    def shared(self):
        return self.root / "shared"


def resolve_property(value, env_name):
    """A flag value, else the property's environment variable (gcloud's
    CLOUDSDK_<SECTION>_<NAME>), else None."""
    if value is not None:
        return value
    return os.environ.get(env_name) or None


def required_property_error(prog, prop, flag, section):
    # properties.RequiredPropertyError, as printed by the real gcloud.
    fail(prog, "The required property [{0}] is not currently set.\n"
               "It can be set on a per-command basis by re-running your command "
               "with the [{1}] flag.\n\n"
               "You may set it for your current workspace by running:\n\n"
               "  $ gcloud config set {2} VALUE\n\n"
               "or it can be set temporarily by the environment variable "
               "[CLOUDSDK_{3}]".format(prop, flag, section + "/" + prop if section != "core" else prop,
                                       (section + "_" + prop).upper()))


def check_credentials(prog):
    """§7: without credentials every API call fails with exit 1."""
    if os.environ.get("GCLOUD_STANDIN_NO_AUTH"):
        fail(prog, "You do not currently have an active account selected.\n"
                   "Please run:\n\n  $ gcloud auth login\n\n"
                   "to obtain new credentials.\n\n"
                   "If you have already logged in with a different account, run:\n\n"
                   "  $ gcloud config set account ACCOUNT\n\n"
                   "to select an already authenticated account to use.")


def get_node(prog, name, zone, project):
    """TPUNode.Get: the node, or the API's NOT_FOUND error (exit 1)."""
    check_credentials(prog)
    resource = "projects/{}/locations/{}/nodes/{}".format(project, zone, name)
    root = state_dir() / "tpus" / name
    config = None
    if name and "/" not in name and name not in (".", "..") and (root / "config.json").is_file():
        try:
            config = json.loads((root / "config.json").read_text())
        except (OSError, ValueError) as exc:
            fail(prog, "{} corrupt {}: {}".format(STANDIN_TAG, root / "config.json", exc), 2)
    if (config is None or config.get("zone") != zone
            or (config.get("project") not in (None, project))):
        fail(prog, "NOT_FOUND: Resource '{0}' was not found\n"
                   "- '@type': type.googleapis.com/google.rpc.ResourceInfo\n"
                   "  resourceName: {0}".format(resource))
    return Node(root, name, config)


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


# --------------------------------------------------------------------------
# Running per-worker actions with gcloud's retry and exit-status rules.
# --------------------------------------------------------------------------

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
        code = attempt_fn(worker)
        append_line(runs_log, dict(log_extra, pid=os.getpid(), worker=worker,
                                   attempt=attempt, t_start=t0, t_end=time.time(), exit=code))
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


# --------------------------------------------------------------------------
# ssh
# --------------------------------------------------------------------------

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


def remote_env(node, worker, user):
    """The environment a worker's login shell gets.  Like a real sshd, it does
    not inherit the caller's environment: only the variables below, plus the
    test knobs FAKEJAX_* and LESSON_* (so failure tests can reach the lesson)."""
    bash = shutil.which("bash") or "/bin/bash"
    env = {
        "HOME": str(node.home(worker)),
        "PWD": str(node.home(worker)),
        "USER": user,
        "LOGNAME": user,
        "SHELL": bash,
        "LANG": "C.UTF-8",
        "PATH": "{}:{}".format(node.bin, os.environ.get("PATH", "/usr/bin:/bin")),
        "GCLOUD_STANDIN_WORKER": str(worker),
        "GCLOUD_STANDIN_WORKERS": str(node.workers),
        "GCLOUD_STANDIN_TPU": node.name,
        "GCLOUD_STANDIN_SHARED": str(node.shared),
    }
    for key, value in os.environ.items():
        if key.startswith(("FAKEJAX_", "LESSON_")):
            env[key] = value
    return env, bash


def cmd_ssh(ns):
    spec = SPECS["ssh"]
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

    status("Using ssh batch size of 1. Attempting to SSH into 1 nodes with a total of "
           "{} workers.".format(len(workers)))

    stdin_is_tty = sys.stdin is not None and sys.stdin.isatty()

    def attempt(worker):
        env, bash = remote_env(node, worker, user)
        if want_tty and not stdin_is_tty:
            status("Pseudo-terminal will not be allocated because stdin is not a terminal.")
        if remote_command is not None:
            argv = [bash, "-c", remote_command]
        elif stdin_is_tty and not stdin_null:
            argv = [bash, "-i"]
        else:
            argv = [bash, "-s"]     # a login shell reading commands from stdin
        try:
            proc = subprocess.Popen(argv, cwd=env["HOME"], env=env,
                                    stdin=subprocess.DEVNULL if stdin_null else None)
            code = proc.wait()
        except OSError as exc:
            status("ssh: connect to host {}: {}".format(node.name, exc))
            return OPENSSH_FAILURE
        return 128 - code if code < 0 else code

    run_on_workers(prog, "SSH", workers, attempt,
                   {"command": "ssh", "tpu": node.name})


def reject_not_emulated(spec, ns):
    """Grammar was valid; refuse flags whose behaviour is not emulated."""
    for flag in spec.flags:
        if not flag.emulated and flag.name in ns.specified:
            not_emulated(spec.prog, flag.name + (" ({})".format(flag.note) if flag.note else ""))


# --------------------------------------------------------------------------
# scp
# --------------------------------------------------------------------------

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
    spec = SPECS["scp"]
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

    status("Using scp batch size of 1.Attempting to SCP into 1 nodes with a total of "
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


# --------------------------------------------------------------------------
# delete
# --------------------------------------------------------------------------

def cmd_delete(ns):
    spec = SPECS["delete"]
    prog = spec.prog
    reject_not_emulated(spec, ns)
    zone = resolve_property(ns.zone, "CLOUDSDK_COMPUTE_ZONE")
    project = resolve_property(ns.project, "CLOUDSDK_CORE_PROJECT")
    for attribute, flag, prop in (("zone", "--zone", "compute/zone"),
                                  ("project", "--project", "core/project")):
        if (zone if attribute == "zone" else project) is None:
            # A declarative command's resource argument (§3).
            fail(prog, "Error parsing [tpu].\nThe [tpu] resource is not properly specified.\n"
                       "Failed to find attribute [{}]. The attribute can be set in the "
                       "following ways: \n- provide the argument `{}` on the command line\n"
                       "- set the property `{}`".format(attribute, flag, prop))

    quiet = ns.quiet or os.environ.get("CLOUDSDK_CORE_DISABLE_PROMPTS", "").lower() in ("1", "true")
    if not quiet:
        confirm_delete(prog, ns.tpu)

    node = get_node(prog, ns.tpu, zone, project)
    status("Delete request issued for: [{}]".format(node.name))
    graveyard = state_dir() / "deleted"
    graveyard.mkdir(exist_ok=True)
    # Keep the homes for inspection; later calls to the name get NOT_FOUND.
    os.rename(str(node.root), str(graveyard / "{}.{}".format(node.name, time.time_ns())))
    if ns.async_:
        status("Check operation [projects/{}/locations/{}/operations/operation-{}] for "
               "status.".format(project, zone, time.time_ns()))
    else:
        status("Deleted tpu [{}].".format(node.name))
    raise Exit(0)


def confirm_delete(prog, name):
    """console_io.PromptContinue(throw_if_unattended=True, cancel_on_no=True),
    as the declarative delete calls it (§3, §7)."""
    with _print_lock:
        sys.stderr.write("You are about to delete tpu [{}]\n\nDo you want to continue (Y/n)?  ".format(name))
        sys.stderr.flush()
    interactive = sys.stdin is not None and sys.stdin.isatty()
    while True:
        line = sys.stdin.readline() if sys.stdin is not None else ""
        if line == "":          # EOF: nobody can answer
            sys.stderr.write("\n")
            if not interactive:
                fail(prog, "This prompt could not be answered because you are not in an "
                           "interactive session.  You can re-run the command with the --quiet "
                           "flag to accept default answers for all prompts.")
            return
        answer = line.rstrip("\n").strip().lower()
        if answer in ("", "y", "yes"):      # '' is Enter: the default, yes
            sys.stderr.write("\n")
            return
        if answer in ("n", "no"):
            sys.stderr.write("\n")
            fail(prog, "Aborted by user.")
        sys.stderr.write("Please enter 'y' or 'n':  ")
        sys.stderr.flush()


# --------------------------------------------------------------------------
# Stand-in-only helpers: `gcloud standin ...` (not gcloud grammar).
# --------------------------------------------------------------------------

_NAME_RE = re.compile(r"^[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?$")   # §5


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
    set_state = sub.add_parser("set-state", help="change a stand-in TPU's state")
    set_state.add_argument("name")
    set_state.add_argument("state", choices=sorted(ALL_STATES))
    if args[:1] == ["_venv"]:       # internal: the fake python3's `-m venv`
        return make_venv(args[1:])
    ns = parser.parse_args(args)
    root = state_dir() / "tpus" / ns.name
    if ns.action == "set-state":
        config_path = root / "config.json"
        if not config_path.is_file():
            parser.error("no stand-in TPU named {!r}".format(ns.name))
        config = json.loads(config_path.read_text())
        config["state"] = ns.state
        write_atomic(config_path, json.dumps(config, indent=2) + "\n")
        return 0
    if not _NAME_RE.match(ns.name):
        parser.error("TPU name {!r} must match {}".format(ns.name, _NAME_RE.pattern))
    if ns.workers < 1:
        parser.error("--workers must be at least 1")
    if root.exists():
        parser.error("a stand-in TPU named {!r} already exists in {}".format(ns.name, root.parent))
    config = {"zone": ns.zone, "workers": ns.workers, "state": ns.state}
    if ns.project:
        config["project"] = ns.project
    if ns.health != "HEALTHY":
        config["health"] = ns.health
    staging = root.parent / ".{}.creating-{}".format(ns.name, os.getpid())
    staging.mkdir(parents=True)
    for i in range(ns.workers):
        (staging / "worker-{}".format(i) / "home").mkdir(parents=True)
    (staging / "shared").mkdir()
    write_worker_bin(staging / "bin", root / "bin")
    write_atomic(staging / "config.json", json.dumps(config, indent=2) + "\n")
    os.rename(str(staging), str(root))
    print(root)
    return 0


def write_atomic(path, text, mode=0o644):
    tmp = path.with_name(".{}.tmp-{}".format(path.name, os.getpid()))
    with open(tmp, "w") as fh:
        fh.write(text)
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def write_worker_bin(staging_bin, final_bin):
    """The per-TPU fake commands that come first on every worker's PATH."""
    staging_bin.mkdir()
    real_python = shlex.quote(sys.executable)
    me = shlex.quote(str(Path(__file__).resolve()))
    scripts = {
        "hostname": """#!/bin/bash
# gcloud stand-in: fake `hostname` of a stand-in TPU worker (NOT a TPU VM).
# Real TPU VM workers are named t1v-n-<8 hex>-w-<index> (§5).
if [ $# -eq 0 ] || [ "$1" = -s ] || [ "$1" = --short ]; then
  printf 't1v-n-standin0-w-%s\\n' "${GCLOUD_STANDIN_WORKER:?not on a stand-in worker}"
else
  echo "hostname (gcloud stand-in): option '$1' is not emulated" >&2
  exit 1
fi
""",
        "pip": """#!/bin/bash
# gcloud stand-in: pip installs nothing on a stand-in worker (no network).
printf 'stand-in: pip %s (nothing installed)\\n' "$*" >&2
exit 0
""",
        "python3": """#!/bin/bash
# gcloud stand-in: fake `python3` on a stand-in TPU worker.
# `python3 -m venv DIR` makes a stand-in venv whose bin/python sees the fake
# jax (tests/gcloud-standin/fakejax); `python3 -m pip ...` installs nothing;
# anything else runs the real python3.
if [ "${{1-}}" = -m ]; then
  case "${{2-}}" in
    venv) shift 2; exec {py} -S {me} standin _venv "$@" ;;
    pip|pip3) shift 2; exec {pip} "$@" ;;
  esac
fi
exec {py} "$@"
""".format(py=real_python, me=me, pip=shlex.quote(str(final_bin / "pip"))),
    }
    for name, text in scripts.items():
        write_atomic(staging_bin / name, text, 0o755)
    os.symlink("pip", str(staging_bin / "pip3"))


def make_venv(args):
    """`python3 -m venv` on a stand-in worker: DIR/bin/python runs the real
    python3 with the fake jax on PYTHONPATH; DIR/bin/pip installs nothing."""
    import argparse
    parser = argparse.ArgumentParser(prog="venv", description="stand-in venv")
    parser.add_argument("dirs", metavar="ENV_DIR", nargs="+")
    for flag in ("--system-site-packages", "--symlinks", "--copies", "--clear",
                 "--upgrade", "--without-pip", "--upgrade-deps"):
        parser.add_argument(flag, action="store_true")
    parser.add_argument("--prompt")
    ns = parser.parse_args(args)
    for d in ns.dirs:
        env_dir = Path(d).resolve()
        bin_dir = env_dir / "bin"
        bin_dir.mkdir(parents=True, exist_ok=True)
        pip = shlex.quote(str(bin_dir / "pip"))
        write_atomic(bin_dir / "pip", """#!/bin/bash
# gcloud stand-in venv: pip installs nothing (no network on a stand-in worker).
printf 'stand-in: pip %s (nothing installed)\\n' "$*" >&2
exit 0
""", 0o755)
        write_atomic(bin_dir / "python", """#!/bin/bash
# gcloud stand-in venv python: the real python3 plus the FAKE jax of
# tests/gcloud-standin/fakejax (no TPU, backend "standin").
if [ "${{1-}}" = -m ] && {{ [ "${{2-}}" = pip ] || [ "${{2-}}" = pip3 ]; }}; then
  shift 2; exec {pip} "$@"
fi
export PYTHONPATH={fakejax}${{PYTHONPATH:+:$PYTHONPATH}}
export PYTHONDONTWRITEBYTECODE=1
exec {py} "$@"
""".format(pip=pip, fakejax=shlex.quote(str(FAKEJAX_DIR)), py=shlex.quote(sys.executable)), 0o755)
        for alias, target in (("python3", "python"), ("pip3", "pip")):
            if not (bin_dir / alias).exists():
                os.symlink(target, str(bin_dir / alias))
        write_atomic(bin_dir / "activate", """# gcloud stand-in venv activate (source it from bash)
deactivate () {{
  PATH=$_OLD_VIRTUAL_PATH; export PATH
  unset VIRTUAL_ENV _OLD_VIRTUAL_PATH
  unset -f deactivate
  hash -r 2>/dev/null
}}
VIRTUAL_ENV={env}; export VIRTUAL_ENV
_OLD_VIRTUAL_PATH=$PATH
PATH="$VIRTUAL_ENV/bin:$PATH"; export PATH
hash -r 2>/dev/null
""".format(env=shlex.quote(str(env_dir))))
        write_atomic(env_dir / "pyvenv.cfg", "home = {}\nstand-in = true\n".format(
            Path(sys.executable).parent))
    return 0


# --------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------

COMMANDS = {"ssh": cmd_ssh, "scp": cmd_scp, "delete": cmd_delete}


def download_worker(argv):
    """The worker a recursive download (a fetch) of the calls log comes from, else None."""
    if len(argv) > 3 and argv[3] == "scp" and "--recurse" in argv:
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


def gcloud_main(argv):
    delay = float(os.environ.get("GCLOUD_STANDIN_DELAY", "0") or 0)
    if delay > 0:
        time.sleep(delay)     # real gcloud costs ~1-3 s per call
    verb, tokens, misplaced = split_command_path(argv)
    if misplaced:
        suggest_unknown(SPECS[verb], misplaced)
    ns = parse_command(SPECS[verb], tokens)
    COMMANDS[verb](ns)
    return 0


def main():
    argv = sys.argv[1:]
    if argv[:1] == ["standin"]:
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
        append_line(state / "calls.jsonl",
                    {"argv": argv, "t_start": t_start, "t_end": time.time(), "exit": code})
        append_line(state / "events.jsonl", {"event": "end", "pid": os.getpid(), "argv": argv, "exit": code})
    return code


if __name__ == "__main__":
    sys.exit(main())
