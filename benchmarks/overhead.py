"""Per-call overhead of janus against eager and tf.function: `python -m benchmarks.overhead [CALLS]`.

Two functions, each called the same way three ways after a warm-up: a trivial one (`x + 1` on a
scalar) and a small MLP training step (2 dense layers of 64 on a batch of 32, SGD).  Prints the
median time per call in microseconds over 7 rounds of CALLS calls (500 by default), ways
interleaved round by round.
"""
import os
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402

import janus  # noqa: E402

ROUNDS = 7


def trivial(x):
    return x + 1.0


class MLP:
    def __init__(self):
        init = tf.random.stateless_normal
        self.w1 = tf.Variable(init([16, 64], seed=[1, 2]) * 0.1)
        self.w2 = tf.Variable(init([64, 1], seed=[3, 4]) * 0.1)

    def step(self, x, y):
        with tf.GradientTape() as tape:
            h = tf.nn.relu(x @ self.w1)
            loss = tf.reduce_mean((h @ self.w2 - y) ** 2)
        g1, g2 = tape.gradient(loss, [self.w1, self.w2])
        self.w1.assign_sub(0.01 * g1)
        self.w2.assign_sub(0.01 * g2)
        return loss


def _per_call_us(fn, args, calls):
    start = time.perf_counter()
    for _ in range(calls):
        fn(*args)
    return (time.perf_counter() - start) / calls * 1e6


def measure(calls: int) -> dict:
    x = tf.constant(1.0)
    xb, yb = tf.random.stateless_normal([32, 16], seed=[5, 6]), tf.random.stateless_normal([32, 1], seed=[7, 8])
    cases = {"trivial": (trivial, (x,)), "mlp-step": (MLP().step, (xb, yb))}
    out = {}
    for name, (fn, args) in cases.items():
        ways = {"eager": fn, "tf.function": tf.function(fn), "janus": janus.speculate(fn)}
        for f in ways.values():
            for _ in range(10):
                f(*args)
        times = {w: [] for w in ways}
        for _ in range(ROUNDS):
            for w, f in ways.items():
                times[w].append(_per_call_us(f, args, calls))
        out[name] = {w: statistics.median(t) for w, t in times.items()}
        out[name]["janus graph runs"] = ways["janus"].stats()["graph_runs"]
    return out


def main(argv):
    calls = int(argv[0]) if argv else 500
    for name, row in measure(calls).items():
        print(f"{name:10s} eager {row['eager']:8.1f} us  tf.function {row['tf.function']:8.1f} us  "
              f"janus {row['janus']:8.1f} us  (janus graph runs {row['janus graph runs']})")


if __name__ == "__main__":
    main(sys.argv[1:])
