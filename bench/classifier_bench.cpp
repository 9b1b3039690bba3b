// Micro-benchmark: classifier and SHA-256 throughput over ~20 MB of generated, JAX-course-like
// Python. Prints the best of five runs in MB/s (1 MB = 10^6 bytes). Usage: classifier_bench [MB]
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "tpulaunch/classify/classifier.hpp"
#include "tpulaunch/classify/python_lexer.hpp"
#include "support/token_batches.hpp"
#include "tpulaunch/util/sha256.hpp"

namespace {

// Fragments of a typical course script; `@` is replaced by a counter so names vary.
constexpr std::string_view k_header = R"PY(#!/usr/bin/env python3
"""Lesson @: data-parallel training of a small MLP with JAX.

This module shows how to use jax.devices(), pmap and shard_map. Run it on a
TPU VM; it will fall back to jax.devices("cpu") only in the docstring.
"""
from __future__ import annotations

import functools
import os
import time
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax import lax
from jax.experimental import multihost_utils as mhu
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

)PY";

constexpr std::string_view k_body = R"PY(
class TrainState@(NamedTuple):
    params: Any
    opt_state: Any
    step: int = 0


def init_mlp@(key: jax.Array, sizes: list[int]) -> list[tuple[jax.Array, jax.Array]]:
    """Initialise the weights of a multi-layer perceptron.

    Args:
        key: a PRNG key.
        sizes: layer widths, e.g. [784, 512, 10].
    """
    keys = jax.random.split(key, len(sizes) - 1)
    params = []
    for k, (n_in, n_out) in zip(keys, zip(sizes[:-1], sizes[1:])):
        w = jax.random.normal(k, (n_in, n_out)) * jnp.sqrt(2.0 / n_in)  # He init
        b = jnp.zeros((n_out,), dtype=jnp.float32)
        params.append((w, b))
    return params


def forward@(params, x):
    # ReLU hidden layers, linear output layer.
    for w, b in params[:-1]:
        x = jax.nn.relu(x @ w + b)
    w, b = params[-1]
    return x @ w + b


def loss_fn@(params, batch):
    logits = forward@(params, batch["image"])
    labels = jax.nn.one_hot(batch['label'], 10)
    return -jnp.mean(jnp.sum(labels * jax.nn.log_softmax(logits), axis=-1))


@functools.partial(jax.pmap, axis_name="batch")
def train_step@(state, batch):
    loss, grads = jax.value_and_grad(loss_fn@)(state.params, batch)
    grads = lax.pmean(grads, axis_name="batch")
    updates, opt_state = optimizer.update(grads, state.opt_state, state.params)
    params = optax.apply_updates(state.params, updates)
    return TrainState@(params, opt_state, state.step + 1), loss


def report@(step: int, loss: float, elapsed: float) -> None:
    msg = f"step {step:5d} | loss {loss:.4f} | {elapsed * 1e3:.1f} ms | device={jax.devices()[0].platform!r}"
    print(msg, flush=True)
    if step % 100 == 0:
        print('checkpoint at step %d, path=%s' % (step, os.path.join("/tmp", f"ckpt_{step}")))


def make_batches@(rng: np.random.Generator, n: int, batch_size: int = 128):
    images = rng.standard_normal((n, 784), dtype=np.float32)
    labels = rng.integers(0, 10, size=(n,))
    for i in range(0, n - batch_size + 1, batch_size):
        yield {"image": images[i:i + batch_size], "label": labels[i:i + batch_size]}


def main@(argv: list[str] | None = None) -> int:
    key = jax.random.PRNGKey(@)
    params = init_mlp@(key, [784, 512, 512, 10])
    print(f"devices: {jax.device_count()} local: {jax.local_device_count()}")
    mesh = Mesh(np.array(jax.devices()).reshape(-1), ("data",))
    sharding = NamedSharding(mesh, P("data"))
    total = 0.0
    start = time.perf_counter()
    for step, batch in enumerate(make_batches@(np.random.default_rng(0), 4096)):
        batch = jax.device_put(batch, sharding)
        total += float(loss_fn@(params, batch))
        if step and step % 10 == 0:
            report@(step, total / step, time.perf_counter() - start)
    assert total > 0, "loss must be positive"
    return 0

)PY";

// Rare matches, as in a real corpus: a few CPU selections and multi-host markers.
constexpr std::string_view k_matches = R"PY(
def cpu_reference@(x):
    with jax.default_device(jax.devices("cpu")[0]):
        return jnp.sum(x)


if jax.process_index() == 0:
    print("leader", jax.process_count())
)PY";

std::string make_corpus(std::size_t target_bytes) {
  std::string out;
  out.reserve(target_bytes + 8192);
  std::size_t file = 0;
  const auto append = [&out](std::string_view fragment, std::size_t n) {
    const std::string id = std::to_string(n);
    for (char c : fragment) {
      if (c == '@') {
        out += id;
      } else {
        out += c;
      }
    }
  };
  while (out.size() < target_bytes) {
    append(k_header, file);
    for (std::size_t i = 0; i < 6; ++i) {
      append(k_body, file * 10 + i);
    }
    if (file % 4 == 0) {
      append(k_matches, file);
    }
    ++file;
  }
  return out;
}

template <typename F> double best_seconds(F&& f) {
  double best = 1e30;
  for (int run = 0; run < 5; ++run) {
    const auto start = std::chrono::steady_clock::now();
    f();
    const auto stop = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double>(stop - start).count());
  }
  return best;
}

} // namespace

int main(int argc, char** argv) {
  const double megabytes = argc > 1 ? std::atof(argv[1]) : 20.0;
  const std::string corpus = make_corpus(static_cast<std::size_t>(megabytes * 1e6));
  const double mb = static_cast<double>(corpus.size()) / 1e6;

  std::size_t tokens = 0;
  const double lex_s = best_seconds([&] {
    tpulaunch::PythonLexer lexer(corpus);
    std::array<tpulaunch::Token, 256> batch;
    std::size_t count = 0;
    for (;;) {
      const std::size_t got = tpulaunch::testing::next_batch(lexer, batch);
      count += got;
      if (got == 0 || batch[got - 1].kind == tpulaunch::TokenKind::end) {
        break;
      }
    }
    tokens = count;
  });

  std::size_t evidence = 0;
  const double classify_s = best_seconds([&] { evidence = tpulaunch::classify_source(corpus).evidence.size(); });

  std::string digest;
  const double sha_s = best_seconds([&] { digest = tpulaunch::sha256_hex(corpus); });

  std::printf("corpus: %.1f MB, %zu tokens, %zu evidence rows\n", mb, tokens, evidence);
  std::printf("lexer: %.1f MB/s\n", mb / lex_s);
  std::printf("classifier: %.1f MB/s\n", mb / classify_s);
  std::printf("sha256: %.1f MB/s (libcrypto; bench/sha256_bench compares its interfaces)\n", mb / sha_s);
  return 0;
}
