"""Figures for gradients through recursion.

    python -m benchmarks.gradient_figures [--runs 5] [--json out.json]

1. The x^n gradient-descent test of the seed work: 100 steps of
   `x -= lr * d/dx (x^n - 1/2)^2` with x^n defined recursively, n = 10, 100,
   1000, as eager, `tf.function` (n is a Python int, so tracing unrolls the
   recursion into n multiplications), janus (one Call/Return machine and its
   reverse loop) and a hand-written `tf.while_loop`.
2. TreeRNN sentiment training throughput (trees/s): the SST-style classifier
   of `benchmarks.treernn`, mini-batches of 25 trees never seen before, eager
   and janus (a batch joins one machine).

Each figure is the median of `--runs` timed runs after a warm-up run; all
ways start from the same x (or the same weights) and their results are
checked against eager's.
"""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import janus  # noqa: E402
from benchmarks import sst  # noqa: E402
from benchmarks.power_gd import gd_step, gd_step_symbolic  # noqa: E402
from benchmarks.treernn import TreeRNN, train_step  # noqa: E402


def median_run(fn, runs):
    fn()                                     # warm-up: profiling, building, tracing
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def power_gd(n, runs, steps=100):
    lr = 0.2 / n ** 2                        # a stable step for this depth
    ways = {"eager": gd_step, "tf.function": tf.function(gd_step, autograph=False), "janus": janus.speculate(gd_step),
            "symbolic": lambda x, n, lr: gd_step_symbolic(x, tf.constant(n), tf.constant(lr))}
    out, finals = {}, {}
    for name, step in ways.items():
        def descend():
            x = tf.constant(0.95)
            for _ in range(steps):
                x, _ = step(x, n, lr)
            finals[name] = float(x)
        out[name] = median_run(descend, runs)
    for name, x in finals.items():
        np.testing.assert_allclose(x, finals["eager"], rtol=1e-4, err_msg=name)
    return out


def tree_training(runs, batch=25, hidden=32, batches_per_run=2):
    vocab, batches = sst.tree_batches(False, (runs + 1) * batches_per_run * 2, batch)
    lr = tf.constant(0.05)
    out, losses = {}, {}
    for name, wrap in (("eager", lambda f: f), ("janus", janus.speculate)):
        model, step = TreeRNN(len(vocab), hidden), wrap(train_step)
        it = iter(batches)
        seen = []

        def train():
            for _ in range(batches_per_run):
                seen.append(float(step(model, next(it), lr)))
        out[name] = batch * batches_per_run / median_run(train, runs)
        losses[name] = seen
    np.testing.assert_allclose(losses["janus"], losses["eager"], rtol=1e-3)
    return out, step.report()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    sys.setrecursionlimit(10000)             # eager x^1000 and its tracing recurse 1000 deep
    result = {"runs": args.runs, "power_gd": {}, "tree_training": {}}
    print(f"x^n gradient descent, 100 steps: seconds, median of {args.runs} runs")
    print(f"{'n':>6} {'eager':>9} {'tf.function':>12} {'janus':>9} {'symbolic':>9}   janus/eager  janus/tf.function")
    for n in (10, 100, 1000):
        t = power_gd(n, args.runs)
        result["power_gd"][n] = t
        print(f"{n:>6} {t['eager']:9.3f} {t['tf.function']:12.3f} {t['janus']:9.3f} {t['symbolic']:9.3f}"
              f"   {t['eager'] / t['janus']:10.2f}x  {t['tf.function'] / t['janus']:10.2f}x", flush=True)
    rates, report = tree_training(args.runs)
    result["tree_training"] = rates
    print(f"TreeRNN training (hidden 32, batches of 25 fresh trees): eager {rates['eager']:.0f} trees/s, "
          f"janus {rates['janus']:.0f} trees/s, janus/eager {rates['janus'] / rates['eager']:.2f}x")
    print(report)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
