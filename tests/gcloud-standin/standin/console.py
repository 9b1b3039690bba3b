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
    networkEndpoints[0].ipAddress) prints the fields tab-separated
    (an absent field prints as empty), json pretty-prints, yaml (the default) prints
    key: value lines.  Other formats are valid gcloud but not emulated."""
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
        if isinstance(value, (dict, list)):
            return json.dumps(value)
        return str(value)

    fmt = (fmt or "yaml").strip()
    match = re.match(r"^value\(([A-Za-z0-9_.\[\]]+(?:\s*,\s*[A-Za-z0-9_.\[\]]+)*)\)$", fmt)
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
