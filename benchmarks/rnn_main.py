"""The main job: an RNN classifier written the eager way, trained eagerly and under janus.

The sequence loop is a Python `for`, the cell is a Python method, and a
data-dependent branch rescales the hidden state when it grows too large
(a tensor predicate: janus speculates on the side it saw and guards it).
Data is generated: sequences of 8-dimensional vectors, labelled by whether
their running sum ends above zero.  Prints eager, janus and tf.function
times per training step (median of several timed rounds), the ratios, and
janus's report.

    python -m benchmarks.rnn_main [--steps N] [--rounds R] [--seq-len T]
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import janus  # noqa: E402

HIDDEN, FEATURES = 32, 8


class RNN:
    def __init__(self, seed=0):
        rng = np.random.default_rng(seed)
        init = lambda *shape: tf.Variable(rng.normal(0, 0.3, shape).astype(np.float32))  # noqa: E731
        self.wx, self.wh, self.b = init(FEATURES, HIDDEN), init(HIDDEN, HIDDEN), init(HIDDEN)
        self.wo, self.bo = init(HIDDEN, 1), init(1)
        self.max_norm = 10.0

    @property
    def weights(self):
        return [self.wx, self.wh, self.b, self.wo, self.bo]

    def cell(self, x, h):
        h = tf.tanh(tf.matmul(x, self.wx) + tf.matmul(h, self.wh) + self.b)
        if tf.reduce_max(tf.abs(h)) > self.max_norm:     # data-dependent branch, never taken here
            h = h / tf.reduce_max(tf.abs(h))
        return h

    def loss(self, xs, y):
        h = tf.zeros((xs.shape[0], HIDDEN))
        for t in range(xs.shape[1]):                       # Python loop over the sequence
            h = self.cell(xs[:, t, :], h)
        logits = tf.matmul(h, self.wo) + self.bo
        return tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=y, logits=logits))


def train_step(model, xs, y, lr):
    with tf.GradientTape() as tape:
        loss = model.loss(xs, y)
    grads = tape.gradient(loss, model.weights)
    for w, g in zip(model.weights, grads):
        w.assign_sub(lr * g)
    return loss


def make_data(n_batches, batch, seq_len, seed=1):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n_batches):
        xs = rng.normal(0, 1, (batch, seq_len, FEATURES)).astype(np.float32)
        y = (xs.sum(axis=(1, 2)) > 0).astype(np.float32)[:, None]
        out.append((tf.constant(xs), tf.constant(y)))
    return out


def time_steps(step, model, data, lr):
    start = time.perf_counter()
    losses = [float(step(model, xs, y, lr)) for xs, y in data]
    return (time.perf_counter() - start) / len(data), losses


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20, help="training steps per timed round")
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds (median reported)")
    parser.add_argument("--seq-len", type=int, default=20)
    parser.add_argument("--batch", type=int, default=32)
    args = parser.parse_args(argv)
    data = make_data(args.steps, args.batch, args.seq_len)
    lr = 0.02

    ways = {
        "eager": train_step,
        "janus": janus.speculate(train_step),
        "tf.function": tf.function(train_step),
    }
    models = {name: RNN() for name in ways}
    for name, step in ways.items():                         # warm-up: profiling / tracing
        for xs, y in data[:4]:
            step(models[name], xs, y, lr)
    times = {name: [] for name in ways}
    losses = {}
    for _ in range(args.rounds):
        for name, step in ways.items():
            t, losses[name] = time_steps(step, models[name], data, lr)
            times[name].append(t)
    med = {name: statistics.median(ts) for name, ts in times.items()}
    print(f"RNN classifier, hidden {HIDDEN}, sequence {args.seq_len}, batch {args.batch}: "
          f"median of {args.rounds} rounds x {args.steps} training steps")
    for name in ways:
        print(f"  {name:<12} {med[name] * 1e3:8.2f} ms/step   speed-up over eager {med['eager'] / med[name]:6.2f}x")
    for name in ("janus", "tf.function"):
        diff = max(abs(a - b) / max(abs(a), 1e-6) for a, b in zip(losses["eager"], losses[name]))
        print(f"  {name} vs eager after {4 + args.rounds * args.steps} steps: max relative loss difference "
              f"{diff:.1e} (float32 rounding of a different op order)")
    print()
    print(ways["janus"].report())
    return med


if __name__ == "__main__":
    main()
