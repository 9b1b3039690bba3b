#!/usr/bin/env python3
"""Generates a synthetic JAX course for bench/check_bench.sh.

    make_synthetic_course.py OUT [--scripts N] [--seed S]

writes OUT/public/exercises/lesson-NNNNN.py (N files of realistic, valid Python/JAX course code,
~5.5 KB on average: >= 50 MB for 10,000) and OUT/execution-matrix.json. Deterministic: the same
seed gives byte-identical files, and each file depends only on (seed, its index), so the
1,000-script course is exactly the first 1,000 files of the 10,000-script one.

The lessons vary: imports with aliases (`import jax as jx`, `from jax import devices as
list_devices`), functions, classes, decorators, docstrings, comments, f-strings, and decoy text
the classifier must ignore (jax.devices("cpu"), JAX_PLATFORMS=cpu, jax.distributed.initialize()
inside strings, docstrings and comments). About 18% really select the CPU, about 25% are
multi-host lessons (initialize, process_index/process_count, psum/process_allgather, assert,
barrier), the rest are single-host lessons that assert the TPU backend.

The matrix reviews most scripts with their real sha256 and the class their code deserves, and
has realistic findings: ~1% stale digests, ~4% unreviewed scripts, ~0.4% contradictions (a
TPU-class review over a real CPU selection added later) and 3 entries whose file is missing.
"""
import argparse
import hashlib
import json
import os
import random

WORDS = ("loss grad params batch step mesh shard device chip host replica layer weight bias "
         "token vocab logits label image feature epoch schedule rate decay momentum state "
         "checkpoint metric accuracy sample seed key axis block head width depth").split()
TOPICS = ["data-parallel training of an MLP", "sharding a matrix multiply", "pmap and collectives",
          "the JAX PRNG", "jit compilation and tracing", "a tiny transformer block",
          "gradient accumulation", "checkpointing with orbax-style files", "mixed precision",
          "learning-rate schedules", "the device mesh", "pjit-style sharding annotations",
          "profiling a training step", "multi-host input pipelines", "all-reduce by hand"]


def ident(rng, n=2):
    return "_".join(rng.choice(WORDS) for _ in range(n))


def sentence(rng, n=None):
    n = n or rng.randint(8, 18)
    words = [rng.choice(WORDS) for _ in range(n)]
    return " ".join(words).capitalize() + "."


class Lesson:
    """One lesson file: builds source text from blocks, all names derived from `rng`."""

    def __init__(self, index, kind, rng):
        self.index, self.kind, self.rng = index, kind, rng
        self.j = rng.choice(["jax", "jax", "jax", "jx"])   # alias of the jax module
        self.mhu = rng.choice(["multihost_utils", "mhu"])
        self.parts = []
        self.n = 0

    def uid(self):
        self.n += 1
        return "{}{}".format(self.rng.choice(["", "_"]) if self.n % 5 == 0 else "", self.n)

    # --- fixed parts -------------------------------------------------------------------------
    def header(self):
        r, j = self.rng, self.j
        topic = r.choice(TOPICS)
        doc = ['"""Lesson {}: {}.'.format(self.index, topic), ""]
        for _ in range(r.randint(2, 5)):
            doc.append(sentence(r))
        decoy = r.random()
        if decoy < 0.35:
            doc.append('To try it on a laptop, call jax.devices("cpu") instead of jax.devices().')
        elif decoy < 0.55:
            doc.append("Run it as JAX_PLATFORMS=cpu python lesson.py to debug; on the TPU VM leave it unset.")
        elif decoy < 0.70:
            doc.append("On a pod slice every host calls jax.distributed.initialize() first.")
        doc.append('"""')
        lines = ["#!/usr/bin/env python3" if r.random() < 0.3 else "# -*- coding: utf-8 -*-"] + doc
        lines.append("from __future__ import annotations" if r.random() < 0.4 else "")
        lines.append("")
        std = ["import functools", "import json", "import math", "import os", "import time",
               "from dataclasses import dataclass, field", "from typing import Any, Callable, Iterator, NamedTuple"]
        std += r.sample(["import argparse", "import logging", "from pathlib import Path", "import sys"], r.randint(0, 3))
        lines += sorted(std)
        lines.append("")
        lines.append("import jax" if j == "jax" else "import jax as jx")
        lines.append("import jax.numpy as jnp")
        lines.append("import numpy as np")
        if r.random() < 0.6:
            lines.append("import optax")
        lines.append("from jax import lax")
        lines.append("from jax.experimental import {}".format(
            "multihost_utils" if self.mhu == "multihost_utils" else "multihost_utils as mhu"))
        lines.append("from jax.sharding import Mesh, NamedSharding, PartitionSpec as P")
        lines += ["", "", "SEED = {}".format(r.randint(0, 9999)),
                  "BATCH_SIZE = {}".format(r.choice([32, 64, 128, 256])),
                  "LEARNING_RATE = {}".format(r.choice(["1e-3", "3e-4", "0.01", "0.1"])), ""]
        self.parts.append("\n".join(lines) + "\n")

    def footer(self):
        self.parts.append('\n\nif __name__ == "__main__":\n    raise SystemExit(main())\n')

    # --- reusable blocks -----------------------------------------------------------------------
    def block_config(self):
        r, u = self.rng, self.uid()
        fields = "\n".join("    {}: {} = {}".format(ident(r), t, v) for t, v in
                           r.sample([("int", "128"), ("float", "0.1"), ("int", "4"), ("str", '"adam"'),
                                     ("bool", "True"), ("float", "1e-6"), ("int", "10_000")], r.randint(3, 6)))
        return ('\n@dataclass(frozen=True)\nclass Config{u}:\n    """{doc}"""\n\n{fields}\n'
                '    tags: tuple[str, ...] = field(default=("lesson", "tpu"))\n\n'
                '    def describe(self) -> str:\n'
                '        return ", ".join(f"{{k}}={{v!r}}" for k, v in vars(self).items())\n'
                ).format(u=u, doc=sentence(r), fields=fields)

    def block_init(self):
        r, u, j = self.rng, self.uid(), self.j
        return ('\n\ndef init_params{u}(key: {j}.Array, sizes: list[int]) -> list[tuple[{j}.Array, {j}.Array]]:\n'
                '    """Initialise the weights of a multi-layer perceptron.\n\n'
                '    Args:\n        key: a PRNG key from {j}.random.PRNGKey.\n'
                '        sizes: layer widths, e.g. [784, {w}, 10].\n    """\n'
                '    keys = {j}.random.split(key, len(sizes) - 1)\n'
                '    params = []\n'
                '    for k, (n_in, n_out) in zip(keys, zip(sizes[:-1], sizes[1:])):\n'
                '        w = {j}.random.normal(k, (n_in, n_out)) * jnp.sqrt({g} / n_in)  # {c}\n'
                '        b = jnp.zeros((n_out,), dtype=jnp.{dt})\n'
                '        params.append((w, b))\n'
                '    return params\n').format(u=u, j=j, w=r.choice([256, 512, 1024]), g=r.choice(["2.0", "1.0"]),
                                              c=r.choice(["He init", "LeCun init", "fan-in scaling"]),
                                              dt=r.choice(["float32", "bfloat16"]))

    def block_forward(self):
        r, u, j = self.rng, self.uid(), self.j
        act = r.choice(["relu", "gelu", "silu", "tanh"])
        return ('\n\ndef forward{u}(params, x):\n'
                '    # {act} hidden layers, linear output layer.\n'
                '    for w, b in params[:-1]:\n'
                '        x = {j}.nn.{act}(x @ w + b)\n'
                '    w, b = params[-1]\n'
                '    return x @ w + b\n\n\n'
                'def loss_fn{u}(params, batch):\n'
                '    logits = forward{u}(params, batch["{img}"])\n'
                "    labels = {j}.nn.one_hot(batch['label'], {k})\n"
                '    return -jnp.mean(jnp.sum(labels * {j}.nn.log_softmax(logits), axis=-1))\n'
                ).format(u=u, j=j, act=act, img=r.choice(["image", "x", "inputs"]), k=r.choice([10, 100, 1000]))

    def block_train_step(self):
        r, u, j = self.rng, self.uid(), self.j
        red = r.choice(["pmean", "pmean", "psum"])
        return ('\n\n@functools.partial({j}.pmap, axis_name="{ax}")\n'
                'def train_step{u}(params, opt_state, batch):\n'
                '    loss, grads = {j}.value_and_grad(lambda p: jnp.mean((forward_any(p, batch) - batch["y"]) ** 2))(params)\n'
                '    grads = lax.{red}(grads, axis_name="{ax}")  # average over the local chips\n'
                '    updates = {j}.tree_util.tree_map(lambda g: -LEARNING_RATE * g, grads)\n'
                '    params = {j}.tree_util.tree_map(lambda p, d: p + d, params, updates)\n'
                '    return params, opt_state, lax.pmean(loss, "{ax}")\n'
                ).format(u=u, j=j, ax=r.choice(["batch", "devices", "i"]), red=red)

    def block_data(self):
        r, u = self.rng, self.uid()
        return ('\n\ndef make_batches{u}(rng: np.random.Generator, n: int, batch_size: int = BATCH_SIZE) -> Iterator[dict]:\n'
                '    """Yields {s}"""\n'
                '    images = rng.standard_normal((n, {d}), dtype=np.float32)\n'
                '    labels = rng.integers(0, 10, size=(n,))\n'
                '    for i in range(0, n - batch_size + 1, batch_size):\n'
                '        yield {{"image": images[i:i + batch_size], "label": labels[i:i + batch_size]}}\n'
                ).format(u=u, s=sentence(r, 8), d=r.choice([784, 3072, 128]))

    def block_report(self):
        r, u, j = self.rng, self.uid(), self.j
        return ('\n\ndef report{u}(step: int, loss: float, elapsed: float) -> None:\n'
                '    msg = f"step {{step:5d}} | loss {{loss:.4f}} | {{elapsed * 1e3:.1f}} ms | device={{{j}.devices()[0].platform!r}}"\n'
                '    print(msg, flush=True)\n'
                '    if step % {k} == 0:\n'
                "        print('checkpoint at step %d, path=%s' % (step, os.path.join(\"/tmp\", f\"ckpt_{{step}}\")))\n"
                ).format(u=u, j=j, k=r.choice([10, 50, 100, 500]))

    def block_trainer(self):
        r, u, j = self.rng, self.uid(), self.j
        return ('\n\nclass Trainer{u}:\n'
                '    """{doc}\n\n    Keeps the parameters and the optimizer state between steps.\n    """\n\n'
                '    def __init__(self, params, learning_rate: float = LEARNING_RATE) -> None:\n'
                '        self.params = params\n'
                '        self.learning_rate = learning_rate\n'
                '        self.history: list[float] = []\n\n'
                '    def step(self, batch) -> float:\n'
                '        loss, grads = {j}.value_and_grad(self.loss)(self.params, batch)\n'
                '        self.params = {j}.tree_util.tree_map(lambda p, g: p - self.learning_rate * g, self.params, grads)\n'
                '        self.history.append(float(loss))\n'
                '        return float(loss)\n\n'
                '    @staticmethod\n'
                '    def loss(params, batch):\n'
                '        w, b = params\n'
                '        return jnp.mean((batch["x"] @ w + b - batch["y"]) ** 2)\n\n'
                '    def summary(self) -> str:\n'
                "        best = min(self.history) if self.history else math.nan\n"
                "        return f'{{len(self.history)}} steps, best loss {{best:.5f}}'\n"
                ).format(u=u, j=j, doc=sentence(r))

    def block_decoy_comment(self):
        r = self.rng
        options = [
            '# Tip: jax.devices("cpu") would give you CPU devices; do not do that on a TPU VM.\n',
            '# Older versions of this lesson set os.environ["JAX_PLATFORMS"] = "cpu" here. Removed.\n',
            '# On a pod, each host must call jax.distributed.initialize() before anything else.\n',
            '# XLA_FLAGS=--xla_force_host_platform_device_count=8 simulates 8 devices on a laptop.\n',
            "# jax.config.update('jax_platforms', 'cpu') is what the CPU exercises use instead.\n",
        ]
        return "\n\n" + "".join(r.sample(options, r.randint(1, 3))) + "# " + sentence(r) + "\n"

    def block_decoy_strings(self):
        r, u = self.rng, self.uid()
        return ('\n\nHELP{u} = """\nUsage: python lesson.py [--steps N]\n\n'
                'Debug on a laptop with:  JAX_PLATFORMS=cpu python lesson.py\n'
                'or inside Python:        jax.devices("cpu"), jax.config.update("jax_platforms", "cpu")\n'
                'Multi-host runs call jax.distributed.initialize() and jax.process_index().\n"""\n\n'
                'HINTS{u} = [\n'
                "    'jax.devices(\"cpu\") lists CPU devices only',\n"
                '    "set XLA_FLAGS=--xla_force_host_platform_device_count=4 for fake devices",\n'
                "    r'os.environ[\"JAX_PLATFORMS\"] = \"cpu\"  # not in this lesson',\n"
                '    f"{{BATCH_SIZE}} examples per step",\n'
                ']\n').format(u=u)

    def block_sharding(self):
        r, u, j = self.rng, self.uid(), self.j
        return ('\n\ndef shard_batch{u}(batch):\n'
                '    """Places a batch on a 1-D mesh over every local device."""\n'
                '    mesh = Mesh(np.array({j}.local_devices()).reshape(-1), ("data",))\n'
                '    sharding = NamedSharding(mesh, P("data"))\n'
                '    return {j}.tree_util.tree_map(lambda a: {j}.device_put(a, sharding), batch)\n'
                ).format(u=u, j=j)

    def block_checkpoint(self):
        r, u = self.rng, self.uid()
        return ('\n\ndef save_checkpoint{u}(path: str, params, step: int) -> None:\n'
                '    flat = [np.asarray(p).tolist() for p in params]\n'
                '    tmp = path + ".tmp"\n'
                '    with open(tmp, "w") as fh:\n'
                '        json.dump({{"step": step, "params": flat}}, fh)\n'
                '    os.replace(tmp, path)  # atomic on POSIX\n'
                '    try:\n'
                '        size = os.path.getsize(path)\n'
                '    except OSError as exc:\n'
                '        raise RuntimeError(f"checkpoint {{path}} vanished: {{exc}}") from exc\n'
                '    print(f"saved {{size}} bytes at step {{step}}")\n').format(u=u)

    def block_timing(self):
        r, u, j = self.rng, self.uid(), self.j
        n = r.choice([256, 512, 1024, 2048])
        return ('\n\ndef time_matmul{u}(n: int = {n}, repeats: int = {k}) -> float:\n'
                '    x = jnp.ones((n, n), dtype=jnp.bfloat16)\n'
                '    f = {j}.jit(lambda a: a @ a)\n'
                '    f(x).block_until_ready()  # compile outside the timed loop\n'
                '    start = time.perf_counter()\n'
                '    for _ in range(repeats):\n'
                '        f(x).block_until_ready()\n'
                '    elapsed = (time.perf_counter() - start) / repeats\n'
                '    flops = 2 * n ** 3 / elapsed\n'
                '    print(f"{{n}}x{{n}} matmul: {{elapsed * 1e3:.2f}} ms, {{flops / 1e12:.1f}} TFLOP/s")\n'
                '    return elapsed\n').format(u=u, j=j, n=n, k=r.choice([5, 10, 20]))

    def block_schedule(self):
        r, u = self.rng, self.uid()
        return ('\n\ndef cosine_schedule{u}(step: int, total: int, base: float = LEARNING_RATE, warmup: int = {w}) -> float:\n'
                '    if step < warmup:\n'
                '        return base * (step + 1) / warmup\n'
                '    progress = (step - warmup) / max(1, total - warmup)\n'
                '    return 0.5 * base * (1.0 + math.cos(math.pi * min(1.0, progress)))\n'
                ).format(u=u, w=r.choice([100, 500, 1000]))

    # --- kind-specific blocks --------------------------------------------------------------------
    def cpu_selection(self):
        """One real CPU selection, in one of the forms the classifier knows."""
        r, j = self.rng, self.j
        form = r.randrange(7)
        if form == 0:
            return '\n\ndevices = {j}.devices("cpu")\nprint(f"{{len(devices)}} CPU devices")\n'.format(j=j)
        if form == 1:
            return '\n\nos.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")\n'
        if form == 2:
            return '\n\nos.environ["JAX_PLATFORMS"] = "cpu"  # this exercise is meant for a laptop\n'
        if form == 3:
            return '\n\n{j}.config.update("jax_platforms", "cpu")\n'.format(j=j)
        if form == 4:
            return ('\n\ndef cpu_reference(x):\n    with {j}.default_device({j}.devices("cpu")[0]):\n'
                    '        return jnp.sum(x)\n').format(j=j)
        if form == 5:
            return ('\n\nfrom jax import devices as list_devices\n\n'
                    'cpu_devices = list_devices(backend="cpu")\n')
        return '\n\nslow_sum = {j}.jit(jnp.sum, backend="cpu")\n'.format(j=j)

    def main_single(self):
        r, u, j = self.rng, self.uid(), self.j
        return ('\n\ndef main(argv: list[str] | None = None) -> int:\n'
                '    backend = {j}.default_backend()\n'
                '    assert backend == "tpu", f"expected the tpu backend, got {{backend!r}}"\n'
                '    n = {j}.local_device_count()\n'
                '    print(f"backend={{backend}} local_device_count={{n}} device_count={{{j}.device_count()}}")\n'
                '    key = {j}.random.PRNGKey(SEED)\n'
                '    x = {j}.random.normal(key, (n, {m}, {m}))\n'
                '    y = {j}.pmap(lambda a: a @ a.T)(x)\n'
                '    print("per-chip trace:", [float(jnp.trace(v)) for v in y])\n'
                '    return 0\n').format(u=u, j=j, m=r.choice([128, 256, 512]))

    def main_cpu(self):
        r, j = self.rng, self.j
        return ('\n\ndef main(argv: list[str] | None = None) -> int:\n'
                '    mesh = Mesh(np.array({j}.devices()), axis_names=("data",))\n'
                '    x = jnp.arange({n}.0).reshape({k}, -1)\n'
                '    sharded = {j}.device_put(x, NamedSharding(mesh, P("data", None)))\n'
                '    total = jnp.sum(sharded)\n'
                '    print("global sum:", float(total))\n'
                '    if float(total) != float(jnp.sum(x)):\n'
                '        raise SystemExit("the sharded sum must equal the plain sum")\n'
                '    return 0\n').format(j=j, n=r.choice([32, 64, 128]), k=r.choice([8, 4]))

    def main_multi(self):
        r, j, m = self.rng, self.j, self.mhu
        return ('\n\ndef main(argv: list[str] | None = None) -> int:\n'
                '    {j}.distributed.initialize()\n'
                '    process = {j}.process_index()\n'
                '    processes = {j}.process_count()\n'
                '    local = {j}.local_device_count()\n'
                '    # Every process owns its own contiguous block of example ids.\n'
                '    per_device = {e}\n'
                '    first = process * local * per_device\n'
                '    owned = np.arange(first, first + local * per_device, dtype=np.float32)\n'
                '    x_local = owned.reshape(local, per_device)\n'
                '    summed = {j}.pmap(lambda v: lax.psum(jnp.sum(v), "i"), axis_name="i")(x_local)\n'
                '    n = {j}.device_count() * per_device\n'
                '    expected = n * (n - 1) / 2\n'
                '    assert abs(float(summed[0]) - expected) < 1e-3, (float(summed[0]), expected)\n'
                '    counts = {m}.process_allgather(np.array([len(owned)]))\n'
                '    if int(np.sum(counts)) != n:\n'
                '        raise RuntimeError(f"process {{process}}: {{int(np.sum(counts))}} examples, expected {{n}}")\n'
                '    {m}.sync_global_devices("lesson-done")\n'
                '    if process == 0:\n'
                '        print(f"{{processes}} processes agree: sum {{expected}}")\n'
                '    return 0\n').format(j=j, m=m, e=r.choice([2, 4, 8]))

    def build(self, target, contradiction):
        r = self.rng
        self.header()
        if self.kind == "cpu" and r.random() < 0.5:
            self.parts.append(self.cpu_selection())   # near the top, as CPU exercises do
            placed = True
        else:
            placed = False
        blocks = [self.block_config, self.block_init, self.block_forward, self.block_train_step,
                  self.block_data, self.block_report, self.block_trainer, self.block_decoy_comment,
                  self.block_decoy_strings, self.block_sharding, self.block_checkpoint, self.block_timing,
                  self.block_schedule]
        main = {"cpu": self.main_cpu, "single": self.main_single, "multi": self.main_multi}[self.kind]
        tail = main() + '\n\nif __name__ == "__main__":\n    raise SystemExit(main())\n'
        self.parts.append("\n\ndef forward_any(params, batch):\n    w, b = params\n    return batch[\"x\"] @ w + b\n")
        size = sum(len(p) for p in self.parts) + len(tail)
        while size < target:
            block = r.choice(blocks)()
            self.parts.append(block)
            size += len(block)
            if self.kind == "cpu" and not placed and r.random() < 0.2:
                self.parts.append(self.cpu_selection())
                placed = True
        if self.kind == "cpu" and not placed:
            self.parts.append(self.cpu_selection())
        if contradiction:
            self.parts.append("\n\n# Debug helper left in by mistake: the review did not see it.\n" +
                              self.cpu_selection())
        self.parts.append(tail)
        return "".join(self.parts)


CLASS_OF = {"cpu": "cpu-only", "single": "single-host-compatible", "multi": "multi-host-qualified"}


def lesson(seed, index):
    rng = random.Random(seed * 1_000_003 + index)
    roll = rng.random()
    kind = "cpu" if roll < 0.18 else "multi" if roll < 0.43 else "single"
    # Sizes from 2 KB to ~16 KB, mean ~5.6 KB.
    target = int(min(16000, max(2000, rng.lognormvariate(8.50, 0.45))))
    fate = rng.random()
    state = ("unreviewed" if fate < 0.04 else "stale" if fate < 0.05 else
             "contradiction" if fate < 0.054 and kind != "cpu" else "reviewed")
    text = Lesson(index, kind, rng).build(target, contradiction=state == "contradiction")
    return kind, state, text


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--scripts", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    exercises = os.path.join(args.out, "public", "exercises")
    os.makedirs(exercises, exist_ok=True)
    scripts = {}
    total = 0
    counts = {}
    for i in range(args.scripts):
        sid = "lesson-{:05d}".format(i)
        kind, state, text = lesson(args.seed, i)
        data = text.encode("utf-8")
        total += len(data)
        with open(os.path.join(exercises, sid + ".py"), "wb") as fh:
            fh.write(data)
        counts[state] = counts.get(state, 0) + 1
        counts[kind] = counts.get(kind, 0) + 1
        if state == "unreviewed":
            continue
        digest = hashlib.sha256(data).hexdigest()
        if state == "stale":   # reviewed, then edited
            digest = hashlib.sha256(data[:-1] + b"  # reviewed version\n").hexdigest()
        cls = CLASS_OF[kind]
        scripts[sid] = {"class": cls, "sha256": digest, "reviewed_by": "course-staff",
                        "reviewed_at": "2026-11-{:02d}T10:00:00Z".format(1 + i % 28),
                        "reason": "synthetic review of a {} lesson".format(kind)}
    for k in range(3):   # reviewed once, file since removed
        scripts["removed-lesson-{}".format(k)] = {
            "class": "cpu-only", "sha256": hashlib.sha256(b"gone %d" % k).hexdigest(),
            "reviewed_by": "course-staff", "reviewed_at": "2026-10-01T10:00:00Z", "reason": "removed since"}
    matrix = {"version": 1, "exercises_dir": "public/exercises", "scripts": dict(sorted(scripts.items()))}
    with open(os.path.join(args.out, "execution-matrix.json"), "w", encoding="utf-8") as fh:
        json.dump(matrix, fh, indent=2)
        fh.write("\n")
    print("{}: {} scripts, {:.1f} MB ({:.0f} bytes on average); {}".format(
        args.out, args.scripts, total / 1e6, total / max(1, args.scripts),
        ", ".join("{} {}".format(v, k) for k, v in sorted(counts.items()))))


if __name__ == "__main__":
    main()
