"""Recursion figures: fib(20) and TreeRNN inference over 100 trees, eager vs janus.

    python -m benchmarks.recursion_figures

Median of 5 timed calls after 5 warm-up calls; reuses the functions of the recursion tests.
"""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import janus  # noqa: E402
from tests.janus.test_recursion import fib  # noqa: E402
from tests.janus.test_recursion_trees import Cells, random_tree, tree_rnn  # noqa: E402


def median_seconds(fn, reps=5):
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def infer(model, trees):
    return tf.stack([tree_rnn(model, t) for t in trees])


def main():
    spec = janus.speculate(fib)
    n = tf.constant(20)
    for _ in range(5):
        spec(n)
    assert int(spec(n)) == int(fib(n)) == 6765
    e, j = median_seconds(lambda: fib(n)), median_seconds(lambda: spec(n))
    cycle = spec.graphs[0].recursion[0]
    print(f"fib(20): eager {e * 1e3:.0f} ms, janus {j * 1e3:.1f} ms, ratio {e / j:.1f}x; "
          f"machine {cycle.last_steps} steps, {cycle.last_frames} frames")

    model, rng = Cells(), np.random.default_rng(0)
    trees = [random_tree(20, rng) for _ in range(100)]
    spec = janus.speculate(infer)
    for _ in range(4):
        spec(model, trees)
    np.testing.assert_allclose(infer(model, trees).numpy(), spec(model, trees).numpy(), rtol=1e-5, atol=1e-6)
    e, j = median_seconds(lambda: infer(model, trees)), median_seconds(lambda: spec(model, trees))
    print(f"TreeRNN inference, 100 random trees of 20 leaves (hidden 6): eager {e * 1e3:.0f} ms, "
          f"janus {j * 1e3:.0f} ms, ratio {e / j:.2f}x; graphs built {spec.stats()['graphs_built']}")
    new = [random_tree(20, rng) for _ in range(100)]
    j2 = median_seconds(lambda: spec(model, new), 3)
    print(f"  100 new trees: janus {j2 * 1e3:.0f} ms, graphs built {spec.stats()['graphs_built']}")


if __name__ == "__main__":
    main()
