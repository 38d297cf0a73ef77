"""The chain workloads beside their hand-written explicit-stack loop, without and with XLA.

    python -m benchmarks.chain_xla [--runs N] [--json PATH]

janus runs Ackermann and prime counting as its depth-first chain machine, compiled with XLA.
The suite's table compares it with the hand-written loop as written (no XLA); this adds the
same loop with `jit_compile=True`.  Each run times 7 calls of each way, interleaved, after 3
warm-up calls; the figure is the median over the runs of each run's median.
"""
import argparse
import json
import os
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402

import janus  # noqa: E402
from benchmarks import ackermann, primes  # noqa: E402


def _ways(name):
    """(call count, {way: a function of no arguments}) for one workload."""
    if name == "ackermann":
        m, n = 2, 20
        args = (tf.constant(m), tf.constant(n))
        return ackermann.calls(m, n), {
            "janus": lambda f=janus.speculate(ackermann.ackermann): f(*args),
            "hand-written": lambda f=ackermann.ackermann_symbolic(2 * n + 8): f(*args),
            "hand-written + XLA": lambda f=ackermann.ackermann_symbolic(2 * n + 8, jit_compile=True): f(*args)}
    arg = tf.constant(100)
    xla = tf.function(primes.count_symbolic.python_function, autograph=False, jit_compile=True,
                      input_signature=[tf.TensorSpec([], tf.int32)])
    return primes.calls(100), {"janus": lambda f=janus.speculate(primes.count): f(arg),
                               "hand-written": lambda: primes.count_symbolic(arg),
                               "hand-written + XLA": lambda: xla(arg)}


def _one_run(ways):
    for fn in ways.values():
        for _ in range(3):
            fn()
    times = {w: [] for w in ways}
    for _ in range(7):
        for w, fn in ways.items():
            start = time.perf_counter()
            fn()
            times[w].append(time.perf_counter() - start)
    return {w: statistics.median(t) for w, t in times.items()}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json")
    opts = parser.parse_args(argv)
    sys.setrecursionlimit(4000)
    out = {}
    for name in ("ackermann", "primes"):
        calls, ways = _ways(name)
        runs = [_one_run(ways) for _ in range(opts.runs)]
        seconds = {w: statistics.median(r[w] for r in runs) for w in ways}
        out[name] = {"calls": calls, "seconds": seconds, "runs": runs}
        j = seconds["janus"]
        print(f"{name:10s} calls/s: " + ", ".join(f"{w} {calls / s:,.0f}" for w, s in seconds.items())
              + f"; janus/hand-written {seconds['hand-written'] / j:.2f}x,"
              f" janus/hand-written+XLA {seconds['hand-written + XLA'] / j:.2f}x", flush=True)
    if opts.json:
        with open(opts.json, "w") as fh:
            json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
