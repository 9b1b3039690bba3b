#!/usr/bin/env python3
"""Differential test of tpulaunch's Python lexer against Python's own tokenizer.

For every Python file in the repository and a generated corpus, the token kinds and the start
and end positions (line, byte column) that tests/tools/lexer_dump prints must equal those of
`python3 -m tokenize`, after mapping Python's tokens onto the lexer's documented subset:
no ENCODING/COMMENT/NL/INDENT/DEDENT/ENDMARKER, NAME/NUMBER/STRING/OP/NEWLINE one to one, and an
f-string (FSTRING_START .. FSTRING_END on Python 3.12+) as one string token. Where Python's
tokenizer reports an error, the tokens before it must agree and the lexer must report an error
too (except for indentation errors, which the lexer does not check: it has no INDENT tokens).

Two differences are the tokenize module's, not the interpreter's, and are taken out first: a lone
carriage return ends a line for the interpreter (universal newlines) but not for tokenize, so it
is read as "\n" (the same length, so positions do not move); and a repository file that this
Python cannot parse (PEP 701 f-strings on Python < 3.12) is not compared, unless tokenize fails
on it, where the error must agree. Every generated file must parse. And tokenize adds the NEWLINE that ends a file without a final
line break only when the last physical line does not start with "#", even when that "#" is
inside a string: the lexer's NEWLINE there is not counted as a difference.

usage: lexer_diff.py --dump PATH/lexer_dump --source-dir DIR [--generated N] [--seed S] [--keep DIR]
"""
import argparse
import ast
import io
import os
import random
import re
import subprocess
import sys
import tempfile
import tokenize

KINDS = {tokenize.NAME: "name", tokenize.NUMBER: "number", tokenize.STRING: "string", tokenize.OP: "op",
         tokenize.NEWLINE: "newline"}
SKIP = {tokenize.ENCODING, tokenize.COMMENT, tokenize.NL, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER}
FSTRING_START = getattr(tokenize, "FSTRING_START", None)
FSTRING_END = getattr(tokenize, "FSTRING_END", None)


def byte_col(lines, line, col):
    """Python reports columns in characters of the decoded line; the lexer in bytes."""
    if line - 1 >= len(lines):
        return col
    return len(lines[line - 1][:col].encode("utf-8"))


def as_interpreter_reads(data):
    """`data` with each lone carriage return as a newline: how the interpreter splits lines."""
    return re.sub(rb"\r(?!\n)", b"\n", data)


def parses(data):
    try:
        ast.parse(as_interpreter_reads(data))
        return True
    except (SyntaxError, ValueError):
        return False


def python_tokens(data):
    """(tokens, error): tokens as (kind, line, col, end_line, end_col), byte columns; error is None,
    'indent' or a message."""
    data = as_interpreter_reads(data)
    text = data.decode("utf-8-sig", errors="surrogateescape")
    # Only \r\n, \r and \n end lines (str.splitlines would also split at \f and \x1c).
    lines = re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$", text)
    out, error, depth, start = [], None, 0, None
    try:
        for tok in tokenize.tokenize(io.BytesIO(data).readline):
            if FSTRING_START is not None and tok.type == FSTRING_START:
                if depth == 0:
                    start = tok.start
                depth += 1
                continue
            if depth > 0:
                if tok.type == FSTRING_END:
                    depth -= 1
                    if depth == 0:
                        out.append(("string", start[0], byte_col(lines, *start), tok.end[0],
                                    byte_col(lines, *tok.end)))
                continue
            if tok.type in SKIP:
                continue
            if tok.type == tokenize.ERRORTOKEN:
                error = f"error token {tok.string!r} at {tok.start}"
                break
            kind = KINDS.get(tok.type)
            if kind is None:
                error = f"token type {tokenize.tok_name[tok.type]} at {tok.start}"
                break
            out.append((kind, tok.start[0], byte_col(lines, *tok.start), tok.end[0], byte_col(lines, *tok.end)))
    except IndentationError:
        error = "indent"
    except (tokenize.TokenError, SyntaxError) as e:
        error = str(e)
    return out, error


def lexer_tokens(dump, paths):
    """{path: (tokens, error)} from lexer_dump."""
    result, current = {}, None
    proc = subprocess.run([dump, *paths], capture_output=True, check=True)
    for raw in proc.stdout.decode("utf-8", errors="replace").splitlines():
        if raw.startswith("FILE "):
            current = raw[5:]
            result[current] = ([], None)
            continue
        fields = raw.split(" ")
        if fields[0] == "ERROR":
            result[current] = (result[current][0], " ".join(fields[1:]))
            continue
        result[current][0].append((fields[0], *map(int, fields[1:5])))
    return result


def compare(path, data, mine, theirs):
    """A list of problems (empty when the lexers agree)."""
    ours, our_error = mine
    python, python_error = theirs
    problems = []
    last_line = re.split(rb"\r\n|\r|\n", data)[-1]
    if (not python_error and len(ours) == len(python) + 1 and ours[-1][0] == "newline" and last_line
            and last_line.strip().startswith(b"#")):
        ours = ours[:-1]  # tokenize's own heuristic, see the module comment
    count = len(python) if python_error else max(len(python), len(ours))
    for i in range(count):
        p = python[i] if i < len(python) else None
        o = ours[i] if i < len(ours) else None
        if p is None or o is None:
            problems.append(f"{path}: token {i}: python {p}, lexer {o}")
            break
        # NEWLINE: only the start (Python's end of "\r\n" stays on the line; the text is the same).
        same = p[:3] == o[:3] if p[0] == "newline" else p == o
        if not same:
            problems.append(f"{path}: token {i}: python {p}, lexer {o}")
            break
    if python_error and python_error != "indent" and our_error is None:
        problems.append(f"{path}: python's tokenizer fails ({python_error}) but the lexer reports no error")
    if not python_error and our_error is not None:
        problems.append(f"{path}: the lexer reports an error ({our_error}) that python's tokenizer does not")
    return problems


# --- the generated corpus ----------------------------------------------------------------------

NAMES = ["x", "jax", "devices", "backend", "_private", "CamelCase", "a1", "π", "naïve", "longidentifier" * 3,
         "match", "case", "type", "print", "self", "i"]
NUMBERS = ["0", "7", "1_000", "0x1F", "0XdeadBEEF", "0o17", "0b1011", "1.5", ".5", "5.", "1e10", "1E-3", "2.5e+7",
           "3j", "1.5J", "0_0", "1_0.0_1e1_0"]
PREFIXES = ["", "r", "R", "b", "B", "u", "f", "F", "br", "Rb", "fr", "rF"]
OPS = ["+", "-", "*", "/", "//", "%", "**", "@", "<<", ">>", "&", "|", "^", "<", ">", "<=", ">=", "==", "!=",
       "and", "or", "in", "not in", "is", "is not"]
AUG = ["+=", "-=", "*=", "/=", "//=", "%=", "**=", ">>=", "<<=", "&=", "|=", "^=", "@="]


def gen_string(rng, depth=0):
    prefix = rng.choice(PREFIXES)
    quote = rng.choice(["'", '"', "'''", '"""'])
    raw = "r" in prefix.lower()
    fstring = "f" in prefix.lower()
    parts = []
    for _ in range(rng.randint(0, 4)):
        choice = rng.random()
        if choice < 0.3:
            parts.append(rng.choice(["hello", "jax.devices('cpu')", "# not a comment", "ünïcode", "a b c"]))
        elif choice < 0.45 and not raw:
            parts.append(rng.choice(["\\n", "\\t", "\\\\", "\\x41", "\\101", "\\N{BULLET}" if "b" not in prefix.lower()
                                     else "\\x42"]))
        elif choice < 0.55 and len(quote) == 3:
            parts.append(rng.choice(["\n", "line\nbreak", "'" if quote[0] == '"' else '"']))
        elif choice < 0.75 and fstring and depth < 2:
            other = '"' if quote[0] == "'" else "'"
            inner = rng.choice(["x", "x + 1", "f(y)", f"d[{other}k{other}]", "x!r", "x:>10", "x:{width}",
                                "({1: 2})[1]", "[i for i in range(3)]"])
            parts.append("{" + inner + "}")
        elif fstring:
            parts.append("{{literal braces}}")
        else:
            parts.append("text")
    other = '"' if quote[0] == "'" else "'"
    body = "".join(part if part.startswith("{") else part.replace(quote[0], other) for part in parts)
    if "b" in prefix.lower():
        body = body.encode("ascii", errors="replace").decode("ascii").replace("?", "q")
    # A body must not end in the quote or a lone backslash.
    if body.endswith(quote[0]) or (body.endswith("\\") and not body.endswith("\\\\")):
        body += "x"
    return prefix + quote + body + quote


def gen_expr(rng, depth=0):
    r = rng.random()
    if depth > 3 or r < 0.25:
        return rng.choice([rng.choice(NAMES), rng.choice(NUMBERS), gen_string(rng), "None", "..."])
    if r < 0.45:
        return gen_expr(rng, depth + 1) + " " + rng.choice(OPS) + " " + gen_expr(rng, depth + 1)
    if r < 0.6:
        sep = rng.choice([", ", ",\n    ", ",\n\t"])
        args = sep.join(gen_expr(rng, depth + 1) for _ in range(rng.randint(0, 3)))
        return rng.choice(NAMES) + "." + rng.choice(NAMES) + "(" + args + ")"
    if r < 0.7:
        return "[" + ", ".join(gen_expr(rng, depth + 1) for _ in range(rng.randint(0, 3))) + "]"
    if r < 0.78:
        return "{" + gen_expr(rng, depth + 1) + ": " + gen_expr(rng, depth + 1) + "}"
    if r < 0.84:
        return "(lambda a, *b, c=1, **d: " + gen_expr(rng, depth + 1) + ")"
    if r < 0.9:
        return "(" + rng.choice(NAMES) + " := " + gen_expr(rng, depth + 1) + ")"
    if r < 0.95:
        return "(" + gen_expr(rng, depth + 1) + ")[1:2, ::3]"
    return "(" * 20 + rng.choice(NAMES) + ")" * 20


def gen_statement(rng, indent):
    pad = indent
    r = rng.random()
    if r < 0.3:
        return pad + rng.choice(NAMES) + " = " + gen_expr(rng)
    if r < 0.4:
        return pad + rng.choice(NAMES) + " " + rng.choice(AUG) + " " + gen_expr(rng)
    if r < 0.5:
        return pad + gen_expr(rng) + "  # a comment (jax.devices('cpu'))"
    if r < 0.55:
        return pad + "x = 1 + \\\n" + pad + "    2"
    if r < 0.6:
        return pad + "a = 1; b = 2; c = a if b else " + gen_expr(rng)
    if r < 0.65:
        return pad + "import os.path as p, sys"
    if r < 0.7:
        return pad + "from ..pkg import (a as b,\n" + pad + "    c)"
    if r < 0.75:
        return pad + "assert " + gen_expr(rng) + ", " + gen_string(rng)
    if r < 0.8:
        return pad + "@decorator(" + gen_expr(rng) + ")\n" + pad + "def f(x: int = 1, /, *a, k, **kw) -> None:\n" + \
            pad + "    return " + gen_expr(rng)
    if r < 0.85:
        return pad + "if " + gen_expr(rng) + ":\n" + pad + "    pass\n" + pad + "else:\n" + pad + "\tpass" \
            if not pad else pad + "if x:\n" + pad + "    pass"
    if r < 0.9:
        return pad + '"""Docstring with jax.devices("cpu")\n' + pad + 'and more."""'
    if r < 0.95:
        return pad + "class C(Base, metaclass=M):\n" + pad + "    field: int = 3"
    return pad + "with open(p) as f, g() as (a, b):\n" + pad + "    yield from f"


def gen_file(rng):
    lines = [gen_statement(rng, "") for _ in range(rng.randint(1, 25))]
    if rng.random() < 0.2:
        lines.insert(rng.randint(0, len(lines)), "")
    text = "\n".join(lines)
    if rng.random() < 0.8:
        text += "\n"
    if rng.random() < 0.15:
        text = text.replace("\n", "\r\n")
    data = text.encode("utf-8")
    if rng.random() < 0.1:
        data = b"\xef\xbb\xbf" + data
    return data


def repository_files(source_dir):
    for root, dirs, files in os.walk(source_dir):
        dirs[:] = [d for d in dirs if not d.startswith((".", "build"))]
        for name in sorted(files):
            if name.endswith(".py"):
                yield os.path.join(root, name)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dump", required=True)
    parser.add_argument("--source-dir", required=True)
    parser.add_argument("--generated", type=int, default=400)
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--keep", help="write the generated corpus here instead of a temporary folder")
    args = parser.parse_args()

    repo = list(repository_files(args.source_dir))
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or tmp
        os.makedirs(folder, exist_ok=True)
        generated = []
        for i in range(args.generated):
            path = os.path.join(folder, f"generated-{i:04d}.py")
            with open(path, "wb") as f:
                f.write(gen_file(rng))
            generated.append(path)
        problems = []
        for path in generated:
            data = open(path, "rb").read()
            if python_tokens(data)[1] or not parses(data):
                problems.append(f"{path}: the generator wrote a file that is not valid Python")
        paths = repo + generated
        mine = {}
        for start in range(0, len(paths), 200):
            mine.update(lexer_tokens(args.dump, paths[start:start + 200]))
        compared, skipped = 0, []
        for path in paths:
            data = open(path, "rb").read()
            theirs = python_tokens(data)
            if not theirs[1] and not parses(data):
                skipped.append(os.path.relpath(path, args.source_dir))
                continue
            problems += compare(path, data, mine[path], theirs)
            compared += len(theirs[0])
        print(f"lexer_diff: {len(repo)} repository files and {len(generated)} generated ones, "
              f"{compared} tokens compared with python {sys.version.split()[0]}'s tokenize")
        if skipped:
            print(f"lexer_diff: not valid Python {sys.version_info[0]}.{sys.version_info[1]}, not compared: "
                  + ", ".join(skipped))
        for p in problems[:40]:
            print("MISMATCH " + p, file=sys.stderr)
        if problems:
            print(f"lexer_diff: {len(problems)} file(s) disagree", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
