"""Independent recursive calls a Python loop makes (one per tree of a batch, or per tensor) join one machine run:
results and gradients equal eager's, and a loop whose body writes what later calls read is not
joined."""
import numpy as np
import tensorflow as tf

import janus
from tests.janus.test_recursion import fib, power
from tests.janus.test_recursion_trees import Cells, balanced, chain, random_tree, tree_rnn


def nodes(t):
    return 1 if t.left is None else 1 + nodes(t.left) + nodes(t.right)


def batch_infer(m, trees):
    out = []
    for t in trees:
        out.append(tree_rnn(m, t))
    return tf.stack(out)


def batch_train(m, trees):
    with tf.GradientTape() as tape:
        total = 0.0
        for t in trees:
            h = tree_rnn(m, t)
            total += tf.reduce_sum(h * h)
    grads = tape.gradient(total, [m.E, m.W])
    for w, g in zip([m.E, m.W], grads):
        w.assign_sub(0.05 * tf.convert_to_tensor(g))
    return total


def _batches(rng, sizes):
    return [[random_tree(int(rng.integers(1, 15)), rng) for _ in range(k)] for k in sizes]


def test_a_batch_of_trees_runs_as_one_machine_with_eager_results():
    m = Cells()
    spec = janus.speculate(batch_infer)
    rng = np.random.default_rng(21)
    for trees in _batches(rng, [5] * 6) + [[balanced(3, rng), chain(9, rng), random_tree(1, rng), balanced(0, rng),
                                            random_tree(30, rng)]]:
        np.testing.assert_allclose(batch_infer(m, trees).numpy(), spec(m, trees).numpy(), rtol=1e-5, atol=1e-6)
    (cycle,) = spec.graphs[0].recursion
    assert cycle.last_frames == sum(nodes(t) for t in trees), spec.report()     # every tree, one run
    assert spec.stats()["graphs_built"] == 1 and spec.stats()["graph_runs"] >= 4, spec.report()


def test_training_over_a_joined_batch_equals_eager():
    me, mj = Cells(), Cells()
    spec = janus.speculate(batch_train)
    rng = np.random.default_rng(22)
    for trees in _batches(rng, [4] * 8):
        np.testing.assert_allclose(batch_train(me, trees).numpy(), spec(mj, trees).numpy(), rtol=1e-5)
        if spec.graphs:
            assert spec.graphs[0].recursion[0].last_frames == sum(nodes(t) for t in trees)
    for a, b in zip([me.E, me.W], [mj.E, mj.W]):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)
    assert spec.stats()["graph_runs"] >= 4 and len(spec.graphs[0].recursion) == 1, spec.report()


def per_tree_sgd(m, trees):
    """Each tree's step changes the weights the next tree's call reads: not independent."""
    out = []
    for t in trees:
        h = tree_rnn(m, t)
        m.W.assign_sub(0.1 * tf.reduce_mean(h) * tf.ones_like(m.W))
        out.append(h)
    return tf.stack(out)


def test_a_loop_that_writes_what_the_calls_read_is_not_joined():
    me, mj = Cells(), Cells()
    spec = janus.speculate(per_tree_sgd)
    rng = np.random.default_rng(23)
    for trees in _batches(rng, [3] * 6):
        np.testing.assert_allclose(per_tree_sgd(me, trees).numpy(), spec(mj, trees).numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(me.W.numpy(), mj.W.numpy(), rtol=1e-5, atol=1e-6)
    (graph,) = spec.graphs
    assert spec.stats()["graph_runs"] >= 2 and len(graph.recursion) == 1, spec.report()
    assert graph.recursion[0].last_frames == nodes(trees[-1]), spec.report()    # one machine per tree


def comprehension_infer(m, trees):
    return tf.stack([tf.reduce_sum(tree_rnn(m, t)) for t in trees])


def test_a_comprehension_over_a_batch_joins_one_machine():
    m = Cells()
    spec = janus.speculate(comprehension_infer)
    rng = np.random.default_rng(24)
    for trees in _batches(rng, [6] * 6):
        np.testing.assert_allclose(comprehension_infer(m, trees).numpy(), spec(m, trees).numpy(), rtol=1e-5, atol=1e-6)
        if spec.graphs:
            assert spec.graphs[0].recursion[0].last_frames == sum(nodes(t) for t in trees), spec.report()
    assert spec.stats()["graph_runs"] >= 2 and spec.stats()["graphs_built"] == 1, spec.report()


def many_powers(xs, n):
    total = 0.0
    for x in xs:
        total += power(x, n)
    return total


def many_fibs(ns):
    return [fib(n) for n in ns]


def test_calls_over_a_list_of_tensors_join_too():
    powers, fibs = janus.speculate(many_powers), janus.speculate(many_fibs)
    for k in range(5):
        xs = [tf.constant(1.0 + 0.1 * i + 0.01 * k) for i in range(3)]
        np.testing.assert_allclose(many_powers(xs, tf.constant(4 + k)).numpy(),
                                   powers(xs, tf.constant(4 + k)).numpy(), rtol=1e-6)
        ns = [tf.constant(i + k) for i in range(4)]
        assert [int(v) for v in many_fibs(ns)] == [int(v) for v in fibs(ns)]
    assert powers.graphs[0].recursion[0].last_frames == 3 * (4 + 4 + 1), powers.report()   # n = 8: 9 calls each
    assert fibs.graphs[0].recursion[0].last_frames == 90, fibs.report()         # fib 4, 5, 6, 7
