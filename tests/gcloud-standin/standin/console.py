"""What the stand-in writes and reads on the terminal, as gcloud does: status lines on stderr,
`ERROR: (prog) ...` and the exit that ends a call, the delete prompt, describe's --format."""

import json
import os
import re
import sys
import threading


HELP_SEARCH_HINT = ("To search the help text of gcloud commands, run:\n"
                    "  gcloud help -- SEARCH_TERMS")
STANDIN_TAG = "[gcloud stand-in]"

print_lock = threading.Lock()


def status(*lines):
    """Writes gcloud 'status' lines (log.status goes to stderr), thread-safely."""
    with print_lock:
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


def confirm(prog, what):
    """The declarative DELETE prompt (§3, §7), unless --quiet or prompts are disabled."""
    with print_lock:
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


# Flags whose value gcloud formats: --format is emulated for describe only (value(...), json).
DESCRIBE_FORMAT_NOTE = "only for describe (value(FIELD), json, yaml)"


def print_formatted(prog, fmt, record, default_yaml=True):
    """gcloud's --format for describe: value(FIELD[,FIELD]) (a FIELD may index a list:
    networkEndpoints[0].ipAddress) prints the fields tab-separated (an absent field, such as a
    metadata key the node does not have, prints as empty: an empty line for one field), json
    pretty-prints, yaml (the default) prints as gcloud's yaml printer (yaml_lines). Other
    formats are valid gcloud but not emulated."""
    def field(path):
        value = record
        for key in re.findall(r"[^.\[\]]+|\[[0-9]+\]", path):
            if key.startswith("["):         # a list index: networkEndpoints[0].ipAddress
                index = int(key[1:-1])
                if not isinstance(value, list) or index >= len(value):
                    return ""
                value = value[index]
            elif not isinstance(value, dict) or key not in value:
                return ""
            else:
                value = value[key]
        # A map prints as KEY=VALUE;... (sorted), a list as its items joined by ';' (gcloud 528).
        if isinstance(value, dict):
            return ";".join("{}={}".format(key, value[key]) for key in sorted(value))
        if isinstance(value, list):
            return ";".join(repr(item) if isinstance(item, dict) else str(item) for item in value)
        return str(value)

    fmt = (fmt or "yaml").strip()
    match = re.match(r"^value\(([A-Za-z0-9_.\[\]]+(?:\s*,\s*[A-Za-z0-9_.\[\]]+)*)\)$", fmt)
    if match:
        print("\t".join(field(f.strip()) for f in match.group(1).split(",")))
    elif fmt == "json":
        print(json.dumps(record, indent=2, sort_keys=True))
    elif fmt == "yaml":
        print("\n".join(yaml_lines(record, 0)))
    else:
        not_emulated(prog, "--format={!r} ({})".format(fmt, DESCRIBE_FORMAT_NOTE))
    sys.stdout.flush()


def yaml_lines(mapping, indent):
    """gcloud's yaml printer (ruamel, YAML 1.2, block style) for a describe record: sorted keys,
    a list's items at its key's indent, `{}` and `[]` for empty ones (seen with gcloud 528)."""
    pad = " " * indent
    for key in sorted(mapping):
        value = mapping[key]
        if isinstance(value, dict) and value:
            yield pad + key + ":"
            yield from yaml_lines(value, indent + 2)
        elif isinstance(value, list) and value:
            yield pad + key + ":"
            for item in value:
                if isinstance(item, dict) and item:
                    lines = list(yaml_lines(item, indent + 2))
                    yield pad + "- " + lines[0][indent + 2:]
                    yield from lines[1:]
                else:
                    yield pad + "- " + yaml_scalar(item)
        elif isinstance(value, str) and "\n" in value:
            # gcloud's _LiteralLinesPresenter: a value of several lines as a literal block.
            yield pad + key + ": |" + ("" if value.endswith("\n") else "-")
            yield from (pad + "  " + line for line in value.rstrip("\n").split("\n"))
        else:
            yield pad + key + ": " + yaml_scalar(value)


# Plain strings that YAML 1.2 (ruamel's resolver) would read as something else: gcloud's yaml
# quotes them ('0123456789012345', '1e5', 'true', 'null', '2026-01-01T00:00:00Z').
_YAML_NOT_STR = re.compile(
    r"^(?:true|True|TRUE|false|False|FALSE|~|null|Null|NULL"
    r"|[-+]?0b[0-1_]+|[-+]?0o?[0-7_]+|[-+]?[0-9_]+|[-+]?0x[0-9a-fA-F_]+"
    r"|[-+]?[0-9][0-9_]*\.[0-9_]*(?:[eE][-+]?[0-9]+)?|[-+]?[0-9][0-9_]*[eE][-+]?[0-9]+"
    r"|\.[0-9_]+(?:[eE][-+][0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)"
    r"|[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:[Tt ][0-9]{1,2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]*)?"
    r"(?:[ \t]*(?:Z|[-+][0-9]{1,2}(?::[0-9]{2})?))?)?)$")


def yaml_scalar(value):
    """One scalar as gcloud's yaml prints it: a string that would read as another type, is empty,
    starts with an indicator or has `: `, ` #` or an outer space, in single quotes (double quotes
    when it starts with one); yaml_lines prints a string of several lines as a block."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return "{}" if isinstance(value, dict) else "[]"
    if not isinstance(value, str):
        return str(value)
    if value.startswith("'"):
        return json.dumps(value)
    if (not value or _YAML_NOT_STR.match(value) or value[0] in "#,[]{}&*!|>\"%@`"
            or value[0] in "-?:" and (len(value) == 1 or value[1] == " ") or ": " in value
            or " #" in value or value != value.strip() or "\n" in value or value.endswith(":")):
        return "'" + value.replace("'", "''") + "'"
    return value
