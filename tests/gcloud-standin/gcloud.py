#!/usr/bin/env python3
"""gcloud STAND-IN for tpulaunch's tests.  This is NOT the Google Cloud SDK.

It emulates these commands of gcloud 578.0.0 (GA track) against local
folders, so generated pipelines can be run end to end on a machine without
network, credentials or TPUs:

  gcloud compute tpus tpu-vm ssh      [USER@]TPU --zone=Z [--worker=W] [--command=C] [-- SSH_ARGS]
  gcloud compute tpus tpu-vm scp      [--recurse] SRC... DEST --zone=Z [--worker=W]
  gcloud compute tpus tpu-vm delete   TPU --zone=Z [--quiet] [--async]
  gcloud compute tpus tpu-vm create   TPU --zone=Z --version=V [--accelerator-type=T] [--spot|...] [--async]
  gcloud compute tpus tpu-vm describe TPU --zone=Z [--format=...]
  gcloud compute tpus queued-resources create|describe|delete QR --zone=Z ...
  gcloud storage cp    [--recursive] SOURCE... DESTINATION     (a folder stands in for gs://)
  gcloud storage rsync [--recursive] SOURCE DESTINATION

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
import signal
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
                 append=False, short=None, dest=None, note="", aliases=(), required=False):
        self.name = name
        self.required = required    # calliope: "argument --x: Must be specified."
        self.note = note            # why it is not emulated, for the error
        self.value = value          # takes one argument (False: store_true)
        self.choices = choices
        self.emulated = emulated
        self.append = append
        # Every other option string: the short one, or several (storage's `-R, -r`).
        self.aliases = tuple(aliases) + ((short,) if short else ())
        self.dest = dest or name.lstrip("-").replace("-", "_")

    @property
    def display(self):
        # argparse names a flag by all its option strings joined with '/'.
        return "/".join((self.name,) + self.aliases)


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
    def __init__(self, verb, flags, positionals, remainder=False, usage="",
                 group="compute tpus tpu-vm"):
        self.verb = verb
        self.group = group
        self.group_path = tuple(group.split())
        self.prog = "gcloud.{}.{}".format(group.replace(" ", "."), verb)
        self.flags = flags + GLOBAL_FLAGS
        self.positionals = positionals
        self.remainder = remainder      # ssh: `-- SSH_ARGS` (RemainderAction)
        self.usage = usage


TPU_VM = ("compute", "tpus", "tpu-vm")
QUEUED = ("compute", "tpus", "queued-resources")
STORAGE = ("storage",)

SPECS = {
    (TPU_VM, "ssh"): CommandSpec(
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
    (TPU_VM, "scp"): CommandSpec(
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
    (TPU_VM, "delete"): CommandSpec(
        "delete",
        [Flag("--zone"), Flag("--async", value=False, dest="async_")],
        [Positional("tpu", None, "TPU")],
        usage="(TPU : --zone=ZONE) [optional flags]"),
    # tpu-vm create (GA, §10.1): --version is required; --accelerator-type defaults to v2-8,
    # so a caller that forgets it gets a v2-8 (the hard case, on purpose).
    (TPU_VM, "create"): CommandSpec(
        "create",
        [Flag("--zone"), Flag("--version", required=True),
         Flag("--accelerator-type"), Flag("--async", value=False, dest="async_"),
         Flag("--spot", value=False), Flag("--preemptible", value=False),
         Flag("--reserved", value=False), Flag("--description"),
         Flag("--internal-ips", value=False), Flag("--labels"),
         Flag("--topology", emulated=False), Flag("--type", emulated=False),
         Flag("--boot-disk", emulated=False), Flag("--data-disk", emulated=False, append=True),
         Flag("--metadata", emulated=False), Flag("--metadata-from-file", emulated=False),
         Flag("--network", emulated=False), Flag("--subnetwork", emulated=False),
         Flag("--queue-count", emulated=False), Flag("--range", emulated=False),
         Flag("--scopes", emulated=False), Flag("--service-account", emulated=False),
         Flag("--shielded-secure-boot", value=False, emulated=False),
         Flag("--tags", emulated=False)],
        [Positional("tpu", None, "TPU")],
        usage="(TPU : --zone=ZONE) --version=VERSION [optional flags]"),
    (TPU_VM, "describe"): CommandSpec(
        "describe",
        [Flag("--zone")],
        [Positional("tpu", None, "TPU")],
        usage="(TPU : --zone=ZONE) [optional flags]"),
    # queued-resources create (GA, §10.2): --runtime-version (not --version);
    # exactly one of --node-id | --node-count; exactly one of --accelerator-type | --type+--topology.
    (QUEUED, "create"): CommandSpec(
        "create",
        [Flag("--zone"), Flag("--runtime-version", required=True),
         Flag("--node-id"), Flag("--node-count", emulated=False),
         Flag("--node-prefix", emulated=False),
         Flag("--accelerator-type"), Flag("--type", emulated=False),
         Flag("--topology", emulated=False), Flag("--async", value=False, dest="async_"),
         Flag("--spot", value=False), Flag("--reserved", value=False),
         Flag("--guaranteed", value=False),
         Flag("--valid-until-duration"), Flag("--valid-until-time", emulated=False),
         Flag("--valid-after-duration", emulated=False), Flag("--valid-after-time", emulated=False),
         Flag("--description"), Flag("--internal-ips", value=False), Flag("--labels"),
         Flag("--metadata", emulated=False), Flag("--metadata-from-file", emulated=False),
         Flag("--network", emulated=False), Flag("--subnetwork", emulated=False),
         Flag("--service-account", emulated=False), Flag("--scopes", emulated=False),
         Flag("--tags", emulated=False), Flag("--data-disk", emulated=False, append=True),
         Flag("--range", emulated=False), Flag("--shielded-secure-boot", value=False, emulated=False),
         Flag("--reservation-host-project", emulated=False),
         Flag("--reservation-host-folder", emulated=False),
         Flag("--reservation-host-organization", emulated=False)],
        [Positional("queued_resource", None, "QUEUED_RESOURCE")],
        usage="(QUEUED_RESOURCE : --zone=ZONE) --runtime-version=RUNTIME_VERSION "
              "(--accelerator-type=ACCELERATOR_TYPE | --topology=TOPOLOGY --type=TYPE) "
              "(--node-id=NODE_ID | [--node-count=NODE_COUNT : --node-prefix=NODE_PREFIX]) "
              "[optional flags]",
        group="compute tpus queued-resources"),
    (QUEUED, "describe"): CommandSpec(
        "describe",
        [Flag("--zone")],
        [Positional("queued_resource", None, "QUEUED_RESOURCE")],
        usage="(QUEUED_RESOURCE : --zone=ZONE) [optional flags]",
        group="compute tpus queued-resources"),
    (QUEUED, "delete"): CommandSpec(
        "delete",
        [Flag("--zone"), Flag("--force", value=False), Flag("--async", value=False, dest="async_")],
        [Positional("queued_resource", None, "QUEUED_RESOURCE")],
        usage="(QUEUED_RESOURCE : --zone=ZONE) [optional flags]",
        group="compute tpus queued-resources"),
}

# Every verb of the two groups in gcloud 578.0.0; the stand-in emulates the ones in SPECS.
GROUP_VERBS = {
    "tpu-vm": ["accelerator-types", "attach-disk", "create", "delete", "describe",
               "detach-disk", "get-guest-attributes", "list", "scp",
               "service-identity", "simulate-maintenance-event", "ssh", "start",
               "stop", "update", "versions"],
    "queued-resources": ["create", "delete", "describe", "list", "reset", "scp", "ssh"],
}

# Flags whose value gcloud formats: --format is emulated for describe only (value(...), json).
DESCRIBE_FORMAT_NOTE = "only for describe (value(FIELD), json, yaml)"

# Every `gcloud storage` command group or verb of gcloud 578.0.0; only cp and rsync are emulated.
STORAGE_VERBS = ["batch-operations", "buckets", "cat", "cp", "du", "folders", "hash", "insights",
                 "intelligence-configs", "ls", "managed-folders", "mv", "objects", "operations",
                 "restore", "rm", "rsync", "service-agent", "sign-url"]


def _not_emulated_flags(*names):
    """Flags gcloud storage accepts whose behaviour the stand-in does not emulate: each
    entry is "--long" or "--long/-s" (value-less flags end in "!")."""
    flags = []
    for entry in names:
        value = not entry.endswith("!")
        long_name, *aliases = entry.rstrip("!").split("/")
        flags.append(Flag(long_name, value=value, aliases=aliases, emulated=False))
    return flags


# Flags cp and rsync share (cp_command_util.add_cp_mv_rsync_flags and the metadata,
# precondition and encryption flags), none emulated.
STORAGE_COMMON_FLAGS = _not_emulated_flags(
    "--additional-headers", "--continue-on-error/-c!", "--content-md5", "--preserve-posix/-P!",
    "--skip-unsupported/-U!", "--canned-acl/--predefined-acl/-a", "--decryption-keys",
    "--encryption-key", "--cache-control", "--content-disposition", "--content-encoding",
    "--content-language", "--content-type", "--custom-time", "--clear-custom-metadata!",
    "--custom-metadata", "--remove-custom-metadata", "--update-custom-metadata",
    "--if-generation-match", "--if-metageneration-match", "--gzip-in-flight/-j",
    "--gzip-in-flight-all/-J!", "--include-managed-folders!")

# -R, -r, --recursive (cp.py Args, rsync) and -n, --no-clobber (add_cp_mv_rsync_flags).
STORAGE_RECURSIVE = Flag("--recursive", value=False, aliases=("-R", "-r"))
STORAGE_NO_CLOBBER = Flag("--no-clobber", value=False, aliases=("-n",))

SPECS[STORAGE, "cp"] = CommandSpec(
    "cp",
    [STORAGE_RECURSIVE, STORAGE_NO_CLOBBER] + STORAGE_COMMON_FLAGS + _not_emulated_flags(
        "--all-versions/-A!", "--do-not-decompress!", "--daisy-chain/-D!", "--ignore-symlinks!",
        "--preserve-symlinks!", "--manifest-path/-L", "--print-created-message/-v!",
        "--storage-class/-s", "--gzip-local-all/-Z!", "--gzip-local/-z", "--preserve-acl/-p!",
        "--no-preserve-acl!", "--read-paths-from-stdin/-I!", "--retain-until", "--retention-mode"),
    [Positional("source", "*", "[SOURCE ...]"), Positional("destination", None, "DESTINATION")],
    usage="[SOURCE ...] DESTINATION [optional flags]",
    group="storage")

SPECS[STORAGE, "rsync"] = CommandSpec(
    "rsync",
    [STORAGE_RECURSIVE, STORAGE_NO_CLOBBER,
     Flag("--delete-unmatched-destination-objects", value=False)] + STORAGE_COMMON_FLAGS
    + _not_emulated_flags("--checksums-only!", "--dry-run!", "--exclude/-x", "--no-ignore-symlinks!",
                          "--skip-if-dest-has-newer-mtime/-u!"),
    [Positional("source", None, "SOURCE"), Positional("destination", None, "DESTINATION")],
    usage="SOURCE DESTINATION [optional flags]",
    group="storage")

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
    return ("Usage: gcloud {0} {1} {2}\n{3}\n\n"
            "For detailed information on this command and its flags, run:\n"
            "  gcloud {0} {1} --help\n").format(spec.group, spec.verb, spec.usage, flags)


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
        choices.extend(f.aliases)
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
        for alias in f.aliases:
            by_name[alias] = f
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
            setattr(ns, pos.dest, values if pos.nargs in ("+", "*") else values[0])
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
    for flag in spec.flags:
        if flag.required and flag.name not in ns.specified:
            parse_error(spec, "argument {}: Must be specified.".format(flag.display))
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


# argparse._get_nargs_pattern for the nargs the emulated commands use.
_NARGS_PATTERN = {None: "(-*A-*)", "+": "(-*A[A-]*)", "*": "(-*[A-]*)"}


def _match_partial(positionals, pattern):
    """argparse._match_arguments_partial with the nargs patterns we need."""
    for i in range(len(positionals), 0, -1):
        regex = "".join(_NARGS_PATTERN[p.nargs] for p in positionals[:i])
        match = re.match(regex, pattern)
        if match:
            return [len(g) for g in match.groups()]
    return []


# The command groups the stand-in walks, each with every verb gcloud 578.0.0 has there; only
# the verbs in SPECS are emulated.
COMMAND_GROUPS = {
    TPU_VM: GROUP_VERBS["tpu-vm"],
    QUEUED: GROUP_VERBS["queued-resources"],
    STORAGE: STORAGE_VERBS,
}
EMULATED_SUMMARY = ("`gcloud compute tpus tpu-vm ssh|scp|create|describe|delete`, "
                    "`gcloud compute tpus queued-resources create|describe|delete`, "
                    "`gcloud storage cp|rsync` and `gcloud standin ...`")


def split_command_path(argv):
    """Walks `gcloud [FLAGS] GROUP... [FLAGS] VERB` for the groups in COMMAND_GROUPS
    (`compute tpus tpu-vm`, `storage`).

    Returns (spec, tokens for the verb's parser, misplaced flags).
    gcloud-wide flags given before the verb are handed on to the verb's
    parser, as every level of gcloud's parser tree accepts them; any other
    flag there is unknown at its level and ends up unrecognized.
    """
    by_name = {}
    for f in GLOBAL_FLAGS:
        by_name[f.name] = f
        for alias in f.aliases:
            by_name[alias] = f
    path, carried, misplaced, i = (), [], [], 0
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
        prog = ".".join(("gcloud",) + path)
        if path in COMMAND_GROUPS:
            verbs = COMMAND_GROUPS[path]
            if tok not in verbs:
                _bad_choice(prog, tok, verbs)
            spec = SPECS.get((path, tok))
            if spec is None:
                status("ERROR: ({}.{}) {} `gcloud {} {}` is valid gcloud but is not emulated by "
                       "this stand-in (it emulates {}; see tests/gcloud-standin/README.md).".format(
                           prog, tok, STANDIN_TAG, " ".join(path), tok, EMULATED_SUMMARY))
                raise Exit(2)
            return spec, carried + argv[i + 1:], misplaced
        if not any(group[:len(path) + 1] == path + (tok,) for group in COMMAND_GROUPS):
            # Many other gcloud groups exist; the stand-in knows only these paths.
            if not path and tok in ("alpha", "beta"):
                what = "the `{}` release track".format(tok)
            else:
                what = "`{}`".format(" ".join(("gcloud",) + path + (tok,)))
            status("ERROR: ({}) {} {} is not emulated: only {} are (see "
                   "tests/gcloud-standin/README.md).".format(prog, STANDIN_TAG, what, EMULATED_SUMMARY))
            raise Exit(2)
        path += (tok,)
        i += 1
    status("ERROR: ({}) {} only {} are emulated; command incomplete.".format(
        ".".join(("gcloud",) + path), STANDIN_TAG, EMULATED_SUMMARY))
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

    def fake_root(self, worker):
        """The worker's fake `/` for its TPU devices and libtpu's lock (dev/, tmp/):
        handed to the run guard through its one test seam, TPULAUNCH_GUARD_ROOT."""
        return self.root / "worker-{}".format(worker) / "root"

    @property
    def preemptible(self):
        """Spot and preemptible nodes are the ones Google may preempt (§10.1)."""
        return bool(self.config.get("spot") or self.config.get("preemptible"))

    @property
    def bin(self):
        return self.root / "bin"

    @property
    def shared(self):
        return self.root / "shared"


# --------------------------------------------------------------------------
# Node and queued-resource records, state progressions, the fake TPU devices.
# --------------------------------------------------------------------------

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

# Generations whose TPU VMs expose /dev/accel* (v4 and older); the others expose
# /dev/vfio/* (§10.4).
ACCEL_GENERATIONS = ("v2", "v3", "v4")


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


def load_config(prog, path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        fail(prog, "{} corrupt {}: {}".format(STANDIN_TAG, path, exc), 2)


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


def device_kind(accelerator_type):
    return "accel" if accelerator_type.split("-")[0] in ACCEL_GENERATIONS else "vfio"


def make_fake_root(root, accelerator_type, chips):
    """dev/accel<i> or dev/vfio/<i> (regular files standing for the device nodes), an
    empty tmp/: where a TPU VM has its devices and libtpu its lock file."""
    (root / "tmp").mkdir(parents=True, exist_ok=True)
    if device_kind(accelerator_type) == "accel":
        (root / "dev").mkdir(parents=True, exist_ok=True)
        for i in range(chips):
            (root / "dev" / "accel{}".format(i)).touch()
    else:
        (root / "dev" / "vfio").mkdir(parents=True, exist_ok=True)
        (root / "dev" / "vfio" / "vfio").touch()
        for i in range(chips):
            (root / "dev" / "vfio" / str(i)).touch()


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
    write_worker_bin(staging / "bin", root / "bin")
    write_atomic(staging / "config.json", json.dumps(config, indent=2) + "\n")
    os.rename(str(staging), str(root))
    return root


class ConfigLock:
    """An exclusive flock on a record's folder for a read-modify-write of its config."""

    def __init__(self, folder):
        self.path = folder / ".lock"

    def __enter__(self):
        import fcntl
        self.fd = os.open(str(self.path), os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        os.close(self.fd)


def resource_name(project, zone, kind, name):
    return "projects/{}/locations/{}/{}/{}".format(project, zone, kind, name)


def operation_name(project, zone):
    return "projects/{}/locations/{}/operations/operation-{}".format(project, zone, time.time_ns())


def resource_zone_project(prog, ns, resource):
    """A declarative command's resource argument (§3.2): --zone and --project, else
    their properties, else the 'Failed to find attribute' error."""
    zone = resolve_property(ns.zone, "CLOUDSDK_COMPUTE_ZONE")
    project = resolve_property(ns.project, "CLOUDSDK_CORE_PROJECT")
    for attribute, value, flag, prop in (("zone", zone, "--zone", "compute/zone"),
                                         ("project", project, "--project", "core/project")):
        if value is None:
            fail(prog, "Error parsing [{0}].\nThe [{0}] resource is not properly specified.\n"
                       "Failed to find attribute [{1}]. The attribute can be set in the "
                       "following ways: \n- provide the argument `{2}` on the command line\n"
                       "- set the property `{3}`".format(resource, attribute, flag, prop))
    return zone, project


def confirm(prog, what):
    """The declarative DELETE prompt (§3, §7), unless --quiet or prompts are disabled."""
    with _print_lock:
        sys.stderr.write("You are about to delete {}\n\nDo you want to continue (Y/n)?  ".format(what))
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


def quiet(ns):
    return ns.quiet or os.environ.get("CLOUDSDK_CORE_DISABLE_PROMPTS", "").lower() in ("1", "true")


def print_formatted(prog, fmt, record, default_yaml=True):
    """gcloud's --format for describe: value(FIELD[,FIELD]) prints the fields tab-separated
    (an absent field prints as empty), json pretty-prints, yaml (the default) prints
    key: value lines.  Other formats are valid gcloud but not emulated."""
    def field(path):
        value = record
        for key in path.split("."):
            if not isinstance(value, dict) or key not in value:
                return ""
            value = value[key]
        if isinstance(value, (dict, list)):
            return json.dumps(value)
        return str(value)

    fmt = (fmt or "yaml").strip()
    match = re.match(r"^value\(([A-Za-z0-9_.]+(?:\s*,\s*[A-Za-z0-9_.]+)*)\)$", fmt)
    if match:
        print("\t".join(field(f.strip()) for f in match.group(1).split(",")))
    elif fmt == "json":
        print(json.dumps(record, indent=2, sort_keys=True))
    elif fmt == "yaml":
        def emit(obj, indent):
            for key in sorted(obj):
                value = obj[key]
                if isinstance(value, dict):
                    print("{}{}:".format(" " * indent, key))
                    emit(value, indent + 2)
                else:
                    print("{}{}: {}".format(" " * indent, key, json.dumps(value) if isinstance(value, list)
                                             else value))
        emit(record, 0)
    else:
        not_emulated(prog, "--format={!r} ({})".format(fmt, DESCRIBE_FORMAT_NOTE))
    sys.stdout.flush()


# --------------------------------------------------------------------------
# tpu-vm create / describe (§10.1, §10.3)
# --------------------------------------------------------------------------

def node_record(node_root, name, config):
    project, zone = config.get("project", "-"), config["zone"]
    record = {
        "name": resource_name(project, zone, "nodes", name),
        "acceleratorType": config.get("acceleratorType", ""),
        "runtimeVersion": config.get("runtimeVersion", ""),
        "state": config.get("state", "READY"),
        "health": config.get("health", "HEALTHY"),
        "networkEndpoints": [{"ipAddress": "10.0.0.{}".format(i + 2), "port": 8470}
                             for i in range(int(config["workers"]))],
        "schedulingConfig": {key: True for key in ("preemptible", "spot", "reserved")
                             if config.get(key)},
    }
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
    if not _NAME_RE.match(ns.tpu):
        fail(prog, "INVALID_ARGUMENT: {} Invalid value for field 'resource.name': {!r}. Must "
                   "be a match of regex '(?:[a-z](?:[-a-z0-9]{{0,61}}[a-z0-9])?)' (§5)"
                   .format(STANDIN_TAG, ns.tpu))
    if (state_dir() / "tpus" / ns.tpu).exists():
        fail(prog, "ALREADY_EXISTS: Resource '{}' already exists".format(
            resource_name(project, zone, "nodes", ns.tpu)))
    config = {"zone": zone, "project": project, "workers": workers,
              "acceleratorType": accelerator, "runtimeVersion": ns.version,
              "spot": ns.spot, "preemptible": ns.preemptible, "reserved": ns.reserved}
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


# --------------------------------------------------------------------------
# queued-resources create / describe / delete (§10.2)
# --------------------------------------------------------------------------

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
    record = {
        "name": resource_name(config["project"], config["zone"], "queuedResources", name),
        "tpu": {"nodeSpec": [{"parent": "projects/{}/locations/{}".format(config["project"], config["zone"]),
                              "nodeId": config["nodeId"], "node": node}]},
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
    # Required mutex groups (calliope checks them with the grammar, exit 2).
    if not ns.node_id and not ns.node_count:
        parse_error(spec, "Exactly one of (--node-count : --node-prefix | --node-id) must be specified.")
    if not ns.accelerator_type and not (ns.type or ns.topology):
        parse_error(spec, "Exactly one of (--accelerator-type | --topology --type) must be specified.")
    if ns.valid_until_duration is not None and not _DURATION_RE.match(ns.valid_until_duration):
        parse_error(spec, "argument --valid-until-duration: Failed to parse duration: {}".format(
            ns.valid_until_duration))
    reject_not_emulated(spec, ns)
    zone, project = resource_zone_project(prog, ns, "queued_resource")
    check_credentials(prog)
    accelerator = ns.accelerator_type.lower()
    workers = workers_for(accelerator)
    if workers is None:
        fail(prog, "INVALID_ARGUMENT: {} accelerator type {!r} is not offered by the TPU VM "
                   "API in the stand-in's model (§4, §10.5)".format(STANDIN_TAG, accelerator))
    if not _NAME_RE.match(ns.queued_resource) or not _NAME_RE.match(ns.node_id):
        fail(prog, "INVALID_ARGUMENT: {} the stand-in takes queued resource and node ids of the "
                   "form {} (§5)".format(STANDIN_TAG, _NAME_RE.pattern))
    if qr_dir(ns.queued_resource).exists():
        fail(prog, "ALREADY_EXISTS: Resource '{}' already exists".format(
            resource_name(project, zone, "queuedResources", ns.queued_resource)))
    if (state_dir() / "tpus" / ns.node_id).exists():
        fail(prog, "ALREADY_EXISTS: {} a node named {!r} already exists".format(STANDIN_TAG, ns.node_id))
    progression = parse_progression(prog, "GCLOUD_STANDIN_QR_STATES",
                                    os.environ.get("GCLOUD_STANDIN_QR_STATES") or DEFAULT_QR_STATES,
                                    QR_STATES)
    config = {"zone": zone, "project": project, "nodeId": ns.node_id, "workers": workers,
              "acceleratorType": accelerator, "runtimeVersion": ns.runtime_version,
              "spot": ns.spot, "reserved": ns.reserved, "guaranteed": ns.guaranteed,
              "validUntilDuration": ns.valid_until_duration,
              "state": "ACCEPTED", "progression": progression}
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
            # The queued resource's node exists once it is ACTIVE (§10.2), with its spot
            # scheduling, and is then managed with the tpu-vm commands.
            create_node(config["nodeId"], {
                "zone": zone, "project": project, "workers": config["workers"],
                "acceleratorType": config["acceleratorType"],
                "runtimeVersion": config["runtimeVersion"], "state": "READY",
                "spot": config.get("spot", False), "queuedResource": resource_name(
                    project, zone, "queuedResources", ns.queued_resource)})
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
    node_root = state_dir() / "tpus" / config["nodeId"]
    has_node = node_root.exists()
    if has_node and not ns.force:
        # A queued resource whose node still exists is deleted with --force (which also
        # deletes the node, §10.2) or after the node.
        fail(prog, "FAILED_PRECONDITION: {} queued resource {!r} still has node {!r}; pass "
                   "--force to delete both".format(STANDIN_TAG, ns.queued_resource, config["nodeId"]))
    status("Delete request issued for: [{}]".format(ns.queued_resource))
    graveyard = state_dir() / "deleted"
    graveyard.mkdir(exist_ok=True)
    stamp = time.time_ns()
    if has_node:
        stop_holders(node_root)
        os.rename(str(node_root), str(graveyard / "{}.{}".format(config["nodeId"], stamp)))
    os.rename(str(folder), str(graveyard / "qr-{}.{}".format(ns.queued_resource, stamp)))
    if ns.async_:
        status("Check operation [{}] for status.".format(operation_name(project, zone)))
    else:
        wait_for_operation(operation_name(project, zone))
        status("Deleted queued_resource [{}].".format(ns.queued_resource))
    raise Exit(0)


# --------------------------------------------------------------------------
# Knobs for the life of a run: a busy TPU, a worker that cannot be reached, a preemption.
# --------------------------------------------------------------------------

HOLDER_LIFETIME = 300       # seconds: a holder never outlives a test run by much


def worker_set(prog, knob):
    """'2,3' or '2:stubborn' items -> {worker: flags}."""
    out = {}
    for item in os.environ.get(knob, "").split(","):
        item = item.strip()
        if not item:
            continue
        worker, _, flags = item.partition(":")
        if not worker.isdigit() or flags not in ("", "stubborn"):
            fail(prog, "{} {} must be a comma list of WORKER[:stubborn], not {!r}".format(
                STANDIN_TAG, knob, item), 2)
        out[int(worker)] = flags
    return out


def device_paths(fake_root):
    paths = sorted((fake_root / "dev").glob("accel*")) + sorted((fake_root / "dev" / "vfio").glob("*"))
    return [p for p in paths if p.is_file()]


def start_holder(node, worker, stubborn):
    """A real process on the worker that holds its TPU devices and libtpu's lock open, as
    a program from an earlier run that never ended does (§10.4): detached, so it outlives
    the ssh call; its pid in <root>/holder.pid.  `stubborn` ignores SIGTERM."""
    root = node.fake_root(worker)
    pid_file = root / "holder.pid"
    if pid_file.exists():
        try:
            os.kill(int(pid_file.read_text()), 0)
            return                      # still holding
        except (OSError, ValueError):
            pass
    lock = root / "tmp" / "libtpu_lockfile"
    lock.touch()
    code = ("import os, signal, sys, time\n"
            "{}"
            "fds = [os.open(p, os.O_RDWR) for p in sys.argv[1:]]\n"
            "time.sleep({})\n").format("signal.signal(signal.SIGTERM, signal.SIG_IGN)\n" if stubborn else "",
                                       HOLDER_LIFETIME)
    paths = [str(p) for p in device_paths(root)] + [str(lock)]
    proc = subprocess.Popen(["bash", "-c", 'exec -a stale-train.py "$0" "$@"', sys.executable, "-S", "-c", code]
                            + paths, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True)
    write_atomic(pid_file, "{}\n".format(proc.pid))
    # Wait until it holds the files, so the run that follows sees a busy TPU.
    deadline = time.time() + 5
    while time.time() < deadline:
        try:
            if len(os.listdir("/proc/{}/fd".format(proc.pid))) >= 3 + len(paths):
                break
        except OSError:
            break
        time.sleep(0.01)


def stop_holders(node_root):
    """Deleting a node ends its processes: no holder outlives its stand-in TPU."""
    pids = []
    for pid_file in node_root.glob("worker-*/root/holder.pid"):
        try:
            pids.append(int(pid_file.read_text()))
            os.kill(pids[-1], signal.SIGKILL)
        except (OSError, ValueError):
            pass
    deadline = time.time() + 5
    while pids and time.time() < deadline:
        pids = [pid for pid in pids if os.path.exists("/proc/{}".format(pid))
                and not open("/proc/{}/stat".format(pid)).read().rsplit(")", 1)[-1].startswith(" Z")]
        time.sleep(0.01)


def prepare_workers(prog, node, workers):
    """Applies the per-run knobs before a command runs on `workers`."""
    holders = worker_set(prog, "GCLOUD_STANDIN_TPU_HOLDER")
    stale = worker_set(prog, "GCLOUD_STANDIN_TPU_STALE_LOCK")
    for worker in workers:
        if worker in holders:
            start_holder(node, worker, holders[worker] == "stubborn")
        if worker in stale:
            (node.fake_root(worker) / "tmp" / "libtpu_lockfile").touch()


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


# A TPU VM login shell's PATH after the stand-in's bin/: the system folders only, not the
# caller's PATH, so a worker has python3 but no `python` from this machine's pyenv or venv
# (a fresh TPU VM often has no `python` at all, §6).
WORKER_SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"


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
        "PATH": "{}:{}".format(node.bin, WORKER_SYSTEM_PATH),
        "GCLOUD_STANDIN_WORKER": str(worker),
        "GCLOUD_STANDIN_WORKERS": str(node.workers),
        "GCLOUD_STANDIN_TPU": node.name,
        "GCLOUD_STANDIN_SHARED": str(node.shared),
        # The run guard's one test seam: where this worker's /dev and /tmp are.
        "TPULAUNCH_GUARD_ROOT": str(node.fake_root(worker)),
    }
    for key, value in os.environ.items():
        if key.startswith(("FAKEJAX_", "LESSON_")) or key in WORKER_KNOBS:
            env[key] = value
    return env, bash


# The stand-in's own knobs a worker's commands see too: its gcloud (bin/gcloud, for
# `gcloud storage`) reads them. GCLOUD_STANDIN_NO_AUTH stays behind: a TPU VM's gcloud
# acts as the VM's service account, whatever the user's credentials.
WORKER_KNOBS = ("GCLOUD_STANDIN_GCS", "GCLOUD_STANDIN_GCS_FAIL_WORKERS", "GCLOUD_STANDIN_DELAY",
                "GCLOUD_STANDIN_WORKER_DELAY", "GCLOUD_STANDIN_PYTHON")


def cmd_ssh(ns):
    spec = SPECS[TPU_VM, "ssh"]
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

    def attempt(worker):
        address = "10.0.0.{}".format(worker + 2)
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
        try:
            # A worker's processes are one session, as under sshd, so a preemption can end
            # them all at once.
            proc = subprocess.Popen(argv, cwd=env["HOME"], env=env,
                                    stdin=subprocess.DEVNULL if stdin_null else None,
                                    start_new_session=preemption is not None and preemption.armed)
            if preemption is not None:
                preemption.watch(proc)
            code = proc.wait()
        except OSError as exc:
            status("ssh: connect to host {}: {}".format(node.name, exc))
            return OPENSSH_FAILURE
        if preemption is not None and preemption.happened:
            status("Connection to {} closed by remote host.".format(address))
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
    on a spot or preemptible node, Google preempts the node: its state becomes PREEMPTED
    (§10.3), every worker's processes end at once (SIGKILL: the VMs are gone), and ssh
    sees the connection close (255, so gcloud retries, and the retries cannot connect)."""

    def __init__(self, prog, node):
        self.node, self.procs, self.happened = node, [], False
        self.lock = threading.Lock()
        raw = os.environ.get("GCLOUD_STANDIN_PREEMPT_AFTER", "")
        self.armed = bool(raw) and node.preemptible
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
                self.kill(proc)

    def kill(self, proc):
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

    def cancel(self):
        if self.timer is not None:
            self.timer.cancel()


def reject_not_emulated(spec, ns):
    """Grammar was valid; refuse flags whose behaviour is not emulated."""
    for flag in spec.flags:
        if flag.name == "--format" and spec.verb == "describe":
            continue            # describe emulates value(FIELD), json and yaml
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
    spec = SPECS[TPU_VM, "scp"]
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


# --------------------------------------------------------------------------
# storage cp / rsync: a local folder stands in for Cloud Storage.
# --------------------------------------------------------------------------
# gs://BUCKET/NAME is the file $GCLOUD_STANDIN_GCS/BUCKET/NAME (default
# $GCLOUD_STANDIN_STATE/gcs); a bucket exists when its folder does. Objects are
# the regular files under it, named by their path with '/'; a "prefix" (gcloud's
# PrefixResource, what the console calls a folder) exists while an object is
# under it. The naming rules (§8) follow gcloud 578's copy_task_iterator.py
# (_get_copy_destination, _complete_destination,
# _get_destination_suffix_for_recursion) and name_expansion.py.

_WILDCARD = re.compile(r"[*?\[\]]")
_GENERATION = re.compile(r"#\d+$")


def gcs_root():
    raw = os.environ.get("GCLOUD_STANDIN_GCS", "")
    return Path(raw).resolve() if raw else state_dir() / "gcs"


class SUrl:
    """A storage URL as gcloud's storage_url: `gs://BUCKET/NAME` or a local file path
    (`file://PATH` or a plain path). `text` is the versionless URL string gcloud
    compares and splits: file URLs are written `file://PATH`."""

    def __init__(self, prog, raw):
        self.raw = raw
        if raw.startswith("gs://"):
            self.cloud = True
            rest = raw[len("gs://"):]
            self.bucket, _, self.name = rest.partition("/")
            if _GENERATION.search(raw):
                not_emulated(prog, "a version-specific URL ({})".format(raw))
            self.text = raw
        elif re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", raw) and not raw.startswith("file://"):
            not_emulated(prog, "the URL scheme of {!r} (only gs:// and local paths are)".format(raw))
        else:
            self.cloud = False
            path = raw[len("file://"):] if raw.startswith("file://") else raw
            if path == "-":
                not_emulated(prog, "streaming to or from stdin/stdout ('-')")
            self.path = os.path.expanduser(path)
            self.text = "file://" + self.path

    @property
    def delimiter(self):
        return "/" if self.cloud else os.sep

    def is_bucket(self):
        return self.cloud and self.name == ""

    def join(self, suffix):
        """storage_url.join: this URL (without a final delimiter) plus suffix."""
        base = self.text.rstrip(self.delimiter) if not self.is_bucket() else self.text.rstrip("/")
        return base + self.delimiter + suffix.lstrip(self.delimiter)


class SRes:
    """A resource: an object or file (container=False), or a prefix, bucket or
    directory (container=True). `text` is its URL string, `path` the file that holds it."""

    def __init__(self, text, container, path, exists=True):
        self.text, self.container, self.path, self.exists = text, container, path, exists


def bucket_folder(prog, url):
    folder = gcs_root() / url.bucket
    if not url.bucket or "/" in url.bucket or url.bucket in (".", "..") or not folder.is_dir():
        fail(prog, "HTTPError 404: The specified bucket does not exist.")
    return folder


def cloud_objects(folder):
    """Every object name in a bucket folder, sorted as the listing API returns them."""
    names = []
    for root, _, files in os.walk(str(folder)):
        for f in files:
            names.append(os.path.relpath(os.path.join(root, f), str(folder)).replace(os.sep, "/"))
    return sorted(names)


def _wildcard_regex(pattern):
    """gcloud's wildcards: `*` within one level, `**` across levels, `?`, `[...]`."""
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            end = pattern.find("]", i + 1)
            if end < 0:
                out.append(re.escape(c))
                i += 1
            else:
                body = pattern[i + 1:end]
                out.append("[" + ("^" + body[1:] if body.startswith("!") else body) + "]")
                i = end + 1
        else:
            out.append(re.escape(c))
            i += 1
    return re.compile("".join(out) + r"\Z")


def top_level(prog, url):
    """The resources a URL names before recursion (wildcard_iterator): for a cloud URL
    the object, else the prefix (`gs://b/p/`), else nothing; with wildcards, every
    object and prefix that matches. For a local path, the file or directory; with
    wildcards, what glob finds."""
    if url.cloud:
        folder = bucket_folder(prog, url)
        if url.is_bucket():
            return [SRes("gs://{}/".format(url.bucket), True, folder)]
        names = cloud_objects(folder)
        if not _WILDCARD.search(url.name):
            name = url.name.rstrip("/")
            found = []
            if not url.name.endswith("/") and name in names:
                found.append(SRes("gs://{}/{}".format(url.bucket, name), False, folder / name))
            elif any(n.startswith(name + "/") for n in names):
                found.append(SRes("gs://{}/{}/".format(url.bucket, name), True, folder / name))
            return found
        regex = _wildcard_regex(url.name.rstrip("/"))
        objects, prefixes = [], []
        for n in names:
            if regex.match(n):
                objects.append(n)
            parts = n.split("/")
            for k in range(1, len(parts)):
                p = "/".join(parts[:k])
                if regex.match(p) and p not in prefixes:
                    prefixes.append(p)
        found = [SRes("gs://{}/{}".format(url.bucket, n), False, folder / n) for n in objects]
        found += [SRes("gs://{}/{}/".format(url.bucket, p), True, folder / p) for p in sorted(prefixes)]
        return sorted(found, key=lambda r: r.text)
    import glob
    paths = sorted(glob.glob(url.path, recursive=True)) if _WILDCARD.search(url.path) else (
        [url.path] if os.path.lexists(url.path) else [])
    return [SRes("file://" + p, os.path.isdir(p), Path(p)) for p in paths]


def nested(resource):
    """Every object or file under a container (recursion: `container/**`)."""
    if resource.text.startswith("gs://"):
        base = resource.text.rstrip("/")
        folder = resource.path
        return [SRes(base + "/" + n, False, folder / n) for n in cloud_objects(folder)]
    found = []
    for root, dirs, files in os.walk(str(resource.path)):
        dirs.sort()
        for f in sorted(files):
            p = os.path.join(root, f)
            found.append(SRes("file://" + p, False, Path(p)))
    return found


class Expanded:
    """name_expansion.NameExpansionResult: a resource and the URL it was expanded from."""

    def __init__(self, resource, expanded_url):
        self.resource, self.expanded_url = resource, expanded_url


def expand_sources(prog, urls, recursive):
    """NameExpansionIterator: (results, has_multiple_top_level_sources); prints gcloud's
    warning for containers without recursion and fails, after copying nothing, when a
    URL matched nothing (the error gcloud raises once its iteration is over)."""
    results, unmatched, top_count = [], [], 0
    for url in urls:
        matched = False
        for top in top_level(prog, url):
            top_count += 1
            if not top.container:
                results.append(Expanded(top, top.text))
                matched = True
            elif recursive:
                for child in nested(top):
                    results.append(Expanded(child, top.text))
                    matched = True
            else:
                status("WARNING: Omitting {} because it is a container, and recursion is not "
                       "enabled.".format(top.text))
        if not matched:
            unmatched.append(url.raw)
    return results, len(urls) > 1 or top_count > 1, unmatched


def raw_destination(prog, url):
    """_get_raw_destination: the destination resource, or one that does not exist."""
    if url.cloud:
        if not url.bucket:
            fail(prog, "The cp command does not support provider-only destination URLs.")
        if _WILDCARD.search(url.name):
            matches = top_level(prog, url)
            if len(matches) != 1:
                fail(prog, "Destination ({}) {}.".format(
                    url.raw, "must match exactly one URL" if matches else "contains an unexpected wildcard"))
            return matches[0]
        bucket_folder(prog, url)
        found = top_level(prog, url)
        if found:
            return found[0]
        return SRes(url.text, False, None, exists=False)
    if _WILDCARD.search(url.path):
        matches = top_level(prog, url)
        if len(matches) != 1:
            fail(prog, "Destination ({}) {}.".format(
                url.raw, "must match exactly one URL" if matches else "contains an unexpected wildcard"))
        return matches[0]
    if os.path.lexists(url.path):
        return SRes(url.text, os.path.isdir(url.path), Path(url.path))
    return SRes(url.text, False, None, exists=False)


def destination_is_container(dest, url):
    """_destination_is_container."""
    if dest.exists and dest.container:
        return True
    if not url.cloud:
        return os.path.isdir(url.path)
    return url.text.endswith("/") or url.is_bucket()


def _strip_scheme(text):
    return text.split("://", 1)[1] if "://" in text else text


def complete_destination(dest, dest_url, source, multiple_top_level):
    """_complete_destination and _get_destination_suffix_for_recursion: the URL string a
    source lands at inside the destination container."""
    src = source.resource.text
    delim = "/" if src.startswith("gs://") else os.sep
    if src != source.expanded_url:
        # Recursion: keep the path below the expanded URL, and its last part too when the
        # destination is (or is to be treated as) an existing folder.
        prefix = source.expanded_url
        if prefix.endswith(delim):
            prefix = prefix[:-len(delim)]
        leaf = prefix.rpartition(delim)[2]
        valid_parent = src.startswith("gs://") or _strip_scheme(leaf) not in (".", "..")
        if not valid_parent and multiple_top_level:
            fail("gcloud.storage.cp", "Presence of multiple top-level sources and invalid expanded URL "
                 "make file name conflicts possible for URL: {}".format(src))
        conflict = not dest.exists and multiple_top_level
        treat_as_dir = (dest.exists and dest.container) or (not dest.exists and dest_url.text.endswith(dest_url.delimiter))
        if conflict or (valid_parent and treat_as_dir):
            if leaf not in (".", "..") and _strip_scheme(prefix) not in (".", ".."):
                prefix = prefix.rpartition(delim)[0]
            if not prefix:
                prefix = src.split("://", 1)[0] + "://"
        # gcloud splits the whole URL at the prefix and keeps what follows its first occurrence.
        suffix = delim + src.split(prefix)[1].lstrip(delim)
    else:
        bare = _strip_scheme(src)
        trimmed = bare[:-len(delim)] if bare.endswith(delim) else bare
        suffix = trimmed.rpartition(delim)[2] + (delim if trimmed != bare else "")
    if delim != dest_url.delimiter:
        suffix = suffix.replace(delim, dest_url.delimiter)
    base = dest_url.text.rstrip(dest_url.delimiter) if not dest_url.is_bucket() else dest_url.text.rstrip("/")
    return base + dest_url.delimiter + suffix.lstrip(dest_url.delimiter)


def storage_target(prog, text):
    """The file that holds URL string `text` (a gs:// object or a file:// path)."""
    if text.startswith("gs://"):
        url = SUrl(prog, text)
        return bucket_folder(prog, url) / url.name
    return Path(_strip_scheme(text))


def storage_copy(prog, src, target_text, no_clobber):
    """One copy task; returns an error line or None. Prints gcloud's `Copying` line."""
    target = storage_target(prog, target_text)
    if no_clobber and target.exists():
        status("Skipping existing destination item (no-clobber): {}".format(target_text))
        return None
    status("Copying {} to {}".format(src.text, target_text))
    try:
        if target_text.startswith("gs://"):
            # An object's name may not hold a prefix of another object's name as a file
            # here; the real bucket has no such limit (README: deviations).
            for parent in reversed(target.parents):
                if parent.is_file():
                    return "{} stand-in: {} is an object, so it cannot also be a prefix".format(
                        STANDIN_TAG, parent)
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_dir():
            return "{} stand-in: {} is a prefix, so it cannot also be an object".format(STANDIN_TAG, target_text)
        tmp = target.with_name(".{}.standin-{}".format(target.name, os.getpid()))
        shutil.copyfile(str(src.path), str(tmp))
        os.replace(str(tmp), str(target))
    except OSError as exc:
        return "{}: {}".format(target_text, exc.strerror or exc)
    return None


def upload_refused_on_this_worker(prog, urls):
    """GCLOUD_STANDIN_GCS_FAIL_WORKERS: an upload from those stand-in workers fails as a
    service account without write access to the bucket does."""
    worker = os.environ.get("GCLOUD_STANDIN_WORKER")
    if worker is None or not any(u.cloud for u in urls):
        return
    failing = set()
    for item in os.environ.get("GCLOUD_STANDIN_GCS_FAIL_WORKERS", "").split(","):
        if item.strip():
            if not item.strip().isdigit():
                fail(prog, "{} GCLOUD_STANDIN_GCS_FAIL_WORKERS must be a comma list of worker "
                           "indexes, not {!r}".format(STANDIN_TAG, item), 2)
            failing.add(int(item))
    if int(worker) in failing:
        fail(prog, "HTTPError 403: 123456789012-compute@developer.gserviceaccount.com does not "
                   "have storage.objects.create access to the Google Cloud Storage object. "
                   "Permission 'storage.objects.create' denied on resource (or it may not exist). "
                   "{} GCLOUD_STANDIN_GCS_FAIL_WORKERS".format(STANDIN_TAG))


def completed_line(count, size):
    status("  Completed files {0}/{0} | {1}B/{1}B".format(count, size))


def cmd_storage_cp(ns):
    spec = SPECS[STORAGE, "cp"]
    prog = spec.prog
    reject_not_emulated(spec, ns)
    if not ns.source:
        fail(prog, "Must have URL arguments if not reading paths from stdin.")
    check_credentials(prog)
    sources = [SUrl(prog, s) for s in ns.source]
    dest_url = SUrl(prog, ns.destination)
    upload_refused_on_this_worker(prog, [dest_url])
    dest = raw_destination(prog, dest_url)
    results, multiple_top_level, unmatched = expand_sources(prog, sources, ns.recursive)
    multiple = len(results) > 1
    if not dest_url.cloud:
        if multiple and not (dest.exists and dest.container):
            fail(prog, "Destination URL must name an existing directory. Provided: {}.".format(dest_url.path))
        if not multiple and dest_url.path.endswith(os.sep) and not os.path.isdir(dest_url.path):
            fail(prog, "Destination URL must name an existing directory if it ends with a delimiter. "
                       "Provided: {}.".format(dest_url.path))
    errors, size = [], 0
    for source in results:
        if (not multiple and not dest_url.cloud and source.resource.text != source.expanded_url
                and not (dest.exists and dest.container)):
            # _raise_if_destination_is_file_url_and_not_a_directory_or_pipe, for one file
            # found by recursion.
            fail(prog, "Destination URL must name an existing directory. Provided: {}.".format(dest_url.path))
        complete = (destination_is_container(dest, dest_url) or multiple
                    or source.resource.text != source.expanded_url)
        target = (complete_destination(dest, dest_url, source, multiple_top_level) if complete
                  else dest_url.text)
        if source.resource.text == target:
            fail(prog, "Destination URL {} already exists.".format(target))
        error = storage_copy(prog, source.resource, target, ns.no_clobber)
        if error:
            errors.append(error)
        else:
            size += source.resource.path.stat().st_size
    if errors:
        fail(prog, "\n".join(errors))
    if unmatched:
        fail(prog, "The following URLs matched no objects or files:\n{}".format("\n".join(unmatched)))
    completed_line(len(results), size)
    raise Exit(0)


def container_contents(prog, resource, recursive):
    """{relative name: resource} under a container; one level only without recursion."""
    out = {}
    for child in nested(resource):
        base = resource.text.rstrip("/") if resource.text.startswith("gs://") else resource.text.rstrip(os.sep)
        rel = child.text[len(base):].lstrip("/" if resource.text.startswith("gs://") else os.sep)
        if not recursive and ("/" in rel or os.sep in rel):
            continue
        out[rel.replace(os.sep, "/")] = child
    return out


def cmd_storage_rsync(ns):
    """rsync_command_util: SOURCE must be an existing container; DESTINATION is one, or
    where one is made. Copies what is missing or differs, deletes only with
    --delete-unmatched-destination-objects."""
    spec = SPECS[STORAGE, "rsync"]
    prog = spec.prog
    reject_not_emulated(spec, ns)
    check_credentials(prog)
    src_url, dest_url = SUrl(prog, ns.source), SUrl(prog, ns.destination)
    upload_refused_on_this_worker(prog, [dest_url])
    found = top_level(prog, src_url)
    if not found:
        fail(prog, "{}Did not find existing container at: {}".format(
            "Wildcard pattern matched nothing. " if _WILDCARD.search(src_url.raw) else "", src_url.raw))
    if len(found) > 1:
        fail(prog, "{} matched more than one URL: {}".format(src_url.raw, [r.text for r in found]))
    if not found[0].container:
        fail(prog, "{} matched non-container URL: {}".format(src_url.raw, found[0].text))
    dest_found = top_level(prog, dest_url)
    if len(dest_found) > 1:
        fail(prog, "{} matched more than one URL: {}".format(dest_url.raw, [r.text for r in dest_found]))
    if dest_found and not dest_found[0].container:
        fail(prog, "{} matched non-container URL: {}".format(dest_url.raw, dest_found[0].text))
    source_items = container_contents(prog, found[0], ns.recursive)
    dest_items = container_contents(prog, dest_found[0], ns.recursive) if dest_found else {}
    errors, count, size = [], 0, 0
    for rel, item in sorted(source_items.items()):
        there = dest_items.get(rel)
        if there is not None and (ns.no_clobber or _same_bytes(item.path, there.path)):
            continue
        error = storage_copy(prog, item, dest_url.join(rel.replace("/", dest_url.delimiter)), False)
        if error:
            errors.append(error)
        else:
            count += 1
            size += item.path.stat().st_size
    if ns.delete_unmatched_destination_objects:
        for rel, item in sorted(dest_items.items()):
            if rel not in source_items:
                status("Removing {}".format(item.text))
                os.remove(str(item.path))
    if errors:
        fail(prog, "\n".join(errors))
    completed_line(count, size)
    raise Exit(0)


def _same_bytes(a, b):
    try:
        if a.stat().st_size != b.stat().st_size:
            return False
        return a.read_bytes() == b.read_bytes()
    except OSError:
        return False


# --------------------------------------------------------------------------
# delete
# --------------------------------------------------------------------------

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
    # Keep the homes for inspection; later calls to the name get NOT_FOUND.
    os.rename(str(node.root), str(graveyard / "{}.{}".format(node.name, time.time_ns())))
    if ns.async_:
        status("Check operation [{}] for status.".format(operation_name(project, zone)))
    else:
        wait_for_operation(operation_name(project, zone))
        status("Deleted tpu [{}].".format(node.name))
    raise Exit(0)


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
    # GCLOUD_STANDIN_PREPARED=1: every worker already has ~/jax-tpu-lab/.venv (default: a fresh VM).
    create.add_argument("--accelerator-type", help="default: a v5e or v5p type with that many workers; "
                        "decides /dev/vfio/* or /dev/accel* in each worker's fake root")
    create.add_argument("--spot", action="store_true", help="a spot node (GCLOUD_STANDIN_PREEMPT_AFTER applies)")
    create.add_argument("--preemptible", action="store_true", help="a preemptible node (likewise)")
    set_state = sub.add_parser("set-state", help="change a stand-in TPU's state")
    set_state.add_argument("name")
    set_state.add_argument("state", choices=sorted(ALL_STATES))
    bucket = sub.add_parser("create-bucket", help="create a stand-in Cloud Storage bucket (a folder)")
    bucket.add_argument("name")
    if args[:1] == ["_venv"]:       # internal: the fake python3's `-m venv`
        return make_venv(args[1:])
    if args[:1] == ["_curl"]:       # internal: a worker's curl, for its metadata server
        return fake_curl(args[1:])
    ns = parser.parse_args(args)
    if ns.action == "create-bucket":
        problem = bucket_name_problem(ns.name)
        if problem:
            parser.error("bucket name {!r}: {}".format(ns.name, problem))
        folder = gcs_root() / ns.name
        folder.mkdir(parents=True, exist_ok=True)
        print(folder)
        return 0
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
    accelerator = ns.accelerator_type or default_accelerator(ns.workers)
    if workers_for(accelerator) != ns.workers:
        parser.error("--accelerator-type {} does not have {} workers".format(accelerator, ns.workers))
    config = {"zone": ns.zone, "workers": ns.workers, "state": ns.state, "acceleratorType": accelerator}
    if ns.project:
        config["project"] = ns.project
    if ns.health != "HEALTHY":
        config["health"] = ns.health
    if ns.spot:
        config["spot"] = True
    if ns.preemptible:
        config["preemptible"] = True
    root = create_node(ns.name, config)
    # A fresh TPU VM by default (§6): a home folder and python3, nothing else. On request, one
    # prepared as the course's set-up leaves it: ~/jax-tpu-lab/.venv with (the fake) jax.
    if os.environ.get("GCLOUD_STANDIN_PREPARED") == "1":
        for i in range(ns.workers):
            make_venv([str(root / "worker-{}".format(i) / "home" / "jax-tpu-lab" / ".venv")])
    print(root)
    return 0


def default_accelerator(workers):
    """A v5e or v5p type (their devices are /dev/vfio/*) with `workers` VMs."""
    if workers == 1:
        return "v5litepod-8"
    if workers % 4 == 0:
        return "v5litepod-{}".format(4 * workers)
    return "v5p-{}".format(8 * workers)


def bucket_name_problem(name):
    """Cloud Storage's bucket naming rules (cloud.google.com/storage/docs/buckets#naming),
    or None when `name` follows them."""
    if not re.match(r"^[a-z0-9][a-z0-9._-]*[a-z0-9]$", name):
        return "only lowercase letters, digits, '-', '_' and '.', a letter or digit at each end"
    limit = 222 if "." in name else 63
    if not 3 <= len(name) <= limit or any(len(part) > 63 or not part for part in name.split(".")):
        return "3-63 characters (222 with dots, at most 63 between dots)"
    if re.match(r"^\d{1,3}(\.\d{1,3}){3}$", name):
        return "not an IP address"
    if name.startswith("goog") or "google" in name.replace("0", "o"):
        return "no 'goog' prefix and no 'google'"
    return None


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
        "gcloud": """#!/bin/sh
# gcloud stand-in on a stand-in TPU worker (NOT a TPU VM). TPU VM images ship the gcloud CLI,
# acting as the VM's service account; this runs the same stand-in with this TPU's state, and
# GCLOUD_STANDIN_WORKER tells it the call is made on worker $GCLOUD_STANDIN_WORKER.
GCLOUD_STANDIN_STATE={state}
export GCLOUD_STANDIN_STATE
exec {launcher} "$@"
""".format(state=shlex.quote(str(state_dir())), launcher=shlex.quote(str(HERE / "gcloud"))),
        "curl": """#!/bin/sh
# gcloud stand-in: a stand-in TPU worker's curl reaches only its metadata server (README.md).
exec {py} -S {me} standin _curl "$@"
""".format(py=real_python, me=me),
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


# The metadata server of a Compute Engine VM (a TPU VM is one): the host names it answers to.
METADATA_HOSTS = ("metadata.google.internal", "metadata", "169.254.169.254")
METADATA_ATTRIBUTES = "/computeMetadata/v1/instance/attributes/"


def fake_curl(args):
    """`curl` on a stand-in worker: answers the metadata server's (§9) `agent-worker-number`
    (the worker's index, as on a TPU VM) when asked with `Metadata-Flavor: Google`, 403
    without that header (as the real server does), 404 for other keys, and cannot resolve
    any other host (a stand-in worker has no network). Options: -s -S -f -L, -H, -m,
    --retry, --connect-timeout and their long forms."""
    flags, headers, urls = set(), [], []
    takes_value = {"-H": "header", "--header": "header", "-m": None, "--max-time": None,
                   "--connect-timeout": None, "--retry": None, "--retry-delay": None}
    no_value = {"-s": "s", "--silent": "s", "-S": "S", "--show-error": "S", "-f": "f", "--fail": "f",
                "-L": "L", "--location": "L"}
    i = 0
    while i < len(args):
        a = args[i]
        name, eq, inline = a.partition("=") if a.startswith("--") else (a, "", "")
        if name in takes_value:
            value = inline if eq else (args[i + 1] if i + 1 < len(args) else None)
            if value is None:
                sys.stderr.write("curl: option {}: requires parameter\n".format(a))
                return 2
            if takes_value[name] == "header":
                headers.append(value)
            i += 1 if eq else 2
            continue
        if a in no_value:
            flags.add(no_value[a])
        elif re.match(r"^-[sSfL]+[Hm]?$", a):
            flags.update(c for c in a[1:] if c in "sSfL")
            if a[-1] in "Hm":
                # `-sSfH VALUE`: the last option of a bundle takes the next word.
                args = args[:i] + ["-" + a[-1]] + args[i + 1:]
                continue
        elif a.startswith("-"):
            sys.stderr.write("curl (gcloud stand-in): option {} is not emulated\n".format(a))
            return 2
        else:
            urls.append(a)
        i += 1
    if len(urls) != 1:
        sys.stderr.write("curl (gcloud stand-in): exactly one URL is emulated\n")
        return 2

    def error(code, message):
        if "s" not in flags or "S" in flags:
            sys.stderr.write("curl: ({}) {}\n".format(code, message))
        return code

    match = re.match(r"^(?:https?://)?([^/:]+)(?::\d+)?(/.*)?$", urls[0])
    host, path = (match.group(1), match.group(2) or "/") if match else (urls[0], "/")
    if host not in METADATA_HOSTS:
        return error(6, "Could not resolve host: {}".format(host))
    flavored = any(h.replace(" ", "").lower() == "metadata-flavor:google" for h in headers)
    worker = os.environ.get("GCLOUD_STANDIN_WORKER")
    if not flavored:
        code, body = 403, ("Your client does not have permission to get URL {} from this server. "
                           "Missing Metadata-Flavor:Google header.\n".format(path))
    elif path == METADATA_ATTRIBUTES + "agent-worker-number" and worker is not None:
        code, body = 200, worker
    else:
        code, body = 404, "Not Found\n"
    if code != 200 and "f" in flags:
        return error(22, "The requested URL returned error: {}".format(code))
    sys.stdout.write(body)
    return 0


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

COMMANDS = {(TPU_VM, "ssh"): cmd_ssh, (TPU_VM, "scp"): cmd_scp, (TPU_VM, "delete"): cmd_delete,
            (TPU_VM, "create"): cmd_create, (TPU_VM, "describe"): cmd_describe,
            (QUEUED, "create"): cmd_qr_create, (QUEUED, "describe"): cmd_qr_describe,
            (QUEUED, "delete"): cmd_qr_delete,
            (STORAGE, "cp"): cmd_storage_cp, (STORAGE, "rsync"): cmd_storage_rsync}


def on_worker():
    """The stand-in worker this call runs on (its `gcloud` is the TPU's bin/gcloud), or None
    for a call on the user's machine."""
    worker = os.environ.get("GCLOUD_STANDIN_WORKER")
    return int(worker) if worker is not None and worker.isdigit() else None


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
    COMMANDS[spec.group_path, spec.verb](ns)
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
        record = {"argv": argv, "t_start": t_start, "t_end": time.time(), "exit": code}
        if on_worker() is not None:
            # A call made on a stand-in TPU worker (by its own gcloud), not on the user's machine.
            record.update(tpu=os.environ.get("GCLOUD_STANDIN_TPU"), worker=on_worker())
        append_line(state / "calls.jsonl", record)
        append_line(state / "events.jsonl", {"event": "end", "pid": os.getpid(), "argv": argv, "exit": code})
    return code


if __name__ == "__main__":
    sys.exit(main())
