"""Grammar: an emulation of gcloud's argparse (calliope parser_extensions), with every
command the stand-in knows: its flags, positionals and usage, and the command groups it walks."""

import re
import sys

from .console import (
    Exit, HELP_SEARCH_HINT, STANDIN_TAG, close_matches, not_emulated, print_lock, status)


class Flag:
    def __init__(self, name, value=True, choices=None, emulated=True,
                 append=False, short=None, dest=None, note="", aliases=(), required=False,
                 type=None):
        self.name = name
        # int: argparse's "invalid int value"; arg_dict: calliope's ArgDict (both exit 2)
        self.type = type
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


class FlagValueError(Exception):
    """calliope's ArgumentTypeError: `argument --flag: MESSAGE` (exit 2)."""


ESCAPING_HINT = ("Please see `gcloud topic flags-file` or `gcloud topic escaping` for information on "
                 "providing list or dictionary flag values with special characters.")


def arg_dict(value):
    """calliope's ArgDict() with no spec (`arg_parsers.ArgDict`, the type of `--metadata` in
    `command_lib/compute/tpus/flags.yaml`): items split on `,` (or on the delimiter D of a value
    `^D^...`), each `KEY=VALUE` split at its first `=` (a value may hold `=` and be empty); a
    later key replaces an earlier one in its place. Raises FlagValueError with calliope's text,
    as gcloud 528 printed them (docs/gcloud.md §11)."""
    delim = ","
    if value.startswith("^") and "^" in value[1:]:
        delim, value = value[1:].split("^", 1)
        if not delim:
            raise FlagValueError("Invalid delimeter. " + ESCAPING_HINT)
    items = [] if not value else (value if value.endswith(delim) else value + delim).split(delim)[:-1]
    result = {}
    for item in items:
        match = re.match(r"([^=]+)(=?)(.*)", item, re.DOTALL)
        if not match:
            raise FlagValueError("Invalid flag value [{}]".format(item))
        key, op, val = match.groups()
        if not op:
            raise FlagValueError("Bad syntax for dict arg: [{}]. {}".format(key, ESCAPING_HINT))
        result[key] = val
    return result


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
         Flag("--metadata", type=arg_dict), Flag("--metadata-from-file", emulated=False),
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
         Flag("--node-id"), Flag("--node-count", type=int), Flag("--node-prefix"),
         Flag("--accelerator-type"), Flag("--type", emulated=False),
         Flag("--topology", emulated=False), Flag("--async", value=False, dest="async_"),
         Flag("--spot", value=False), Flag("--reserved", value=False),
         Flag("--guaranteed", value=False),
         Flag("--valid-until-duration"), Flag("--valid-until-time", emulated=False),
         Flag("--valid-after-duration", emulated=False), Flag("--valid-after-time", emulated=False),
         Flag("--description"), Flag("--internal-ips", value=False), Flag("--labels"),
         Flag("--metadata", type=arg_dict), Flag("--metadata-from-file", emulated=False),
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

# The alpha track's tpu-vm ssh and scp: the GA flags, and --tunnel-through-iap and --batch-size
# (gcloud 528 and 578 have IAP for tpu-vm on alpha only; docs/private-network.md §3). The tunnel
# itself is not modelled: a call reaches the worker as any other does.
ALPHA_TPU_VM = ("alpha",) + TPU_VM
ALPHA_SSH_FLAGS = [Flag("--tunnel-through-iap", value=False), Flag("--batch-size")]
ALPHA_ONLY = {verb: tuple(f.name for f in ALPHA_SSH_FLAGS) for verb in ("ssh", "scp")}
for _verb in ("ssh", "scp"):
    _ga = SPECS[TPU_VM, _verb]
    SPECS[ALPHA_TPU_VM, _verb] = CommandSpec(
        _verb, [f for f in _ga.flags if f not in GLOBAL_FLAGS] + ALPHA_SSH_FLAGS, _ga.positionals,
        remainder=_ga.remainder, usage=_ga.usage, group="alpha compute tpus tpu-vm")

# Every verb of the two groups in gcloud 578.0.0; the stand-in emulates the ones in SPECS.
GROUP_VERBS = {
    "tpu-vm": ["accelerator-types", "attach-disk", "create", "delete", "describe",
               "detach-disk", "get-guest-attributes", "list", "scp",
               "service-identity", "simulate-maintenance-event", "ssh", "start",
               "stop", "update", "versions"],
    "queued-resources": ["create", "delete", "describe", "list", "reset", "scp", "ssh"],
}

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
        self.spec = spec           # the command as called (GA or alpha: its prog names the track)


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
        with print_lock:
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
        if spec.group_path == TPU_VM and flag in ALPHA_ONLY.get(spec.verb, ()):
            # calliope names the track that has the flag (gcloud 528: --tunnel-through-iap).
            messages.append("\n {0} flag is available in one or more alternate release tracks. Try:\n"
                            .format(flag))
            messages.append("gcloud alpha {0} {1} {2}\n".format(spec.group, spec.verb, flag))
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
        if flag.type is int:
            try:
                value = int(value)
            except ValueError:
                parse_error(spec, "argument {}: invalid int value: '{}'".format(flag.display, value))
        elif flag.type is not None:
            try:
                value = flag.type(value)
            except FlagValueError as exc:
                parse_error(spec, "argument {}: {}".format(flag.display, exc))
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
    # One mutually exclusive group in gcloud wherever both flags exist (docs/private-network.md §4).
    if "--internal-ip" in ns.specified and "--tunnel-through-iap" in ns.specified:
        parse_error(spec, "argument --internal-ip: At most one of --internal-ip | --tunnel-through-iap "
                          "can be specified.")
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
    ALPHA_TPU_VM: GROUP_VERBS["tpu-vm"],
    QUEUED: GROUP_VERBS["queued-resources"],
    STORAGE: STORAGE_VERBS,
}
EMULATED_SUMMARY = ("`gcloud compute tpus tpu-vm ssh|scp|create|describe|delete`, "
                    "`gcloud alpha compute tpus tpu-vm ssh|scp`, "
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


def reject_not_emulated(spec, ns):
    """Grammar was valid; refuse flags whose behaviour is not emulated."""
    for flag in spec.flags:
        if flag.name == "--format" and spec.verb == "describe":
            continue            # describe emulates value(FIELD), json and yaml
        if not flag.emulated and flag.name in ns.specified:
            not_emulated(spec.prog, flag.name + (" ({})".format(flag.note) if flag.note else ""))
