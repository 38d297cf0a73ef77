"""A loop over `enumerate(trees)` or `zip(trees, labels)` joins its recursive calls into one
machine run, as a loop over `trees` does: the pairs are listed before the loop where the
iterables are lists or tuples of trees or tensors.  Where they are not (Python numbers, read as
the loop reads them; a generator, whose code must run between the loop's steps), where `zip(..., strict=True)` would raise after some steps, where the
body changes the list, or where `enumerate` is not the builtin, the loop runs its calls one by one;
results equal eager's every time."""
import numpy as np
import tensorflow as tf

import janus
from tests.harness import differential
from tests.janus.test_recursion_trees import Cells, random_tree, tree_rnn

M = Cells()


def weighted(trees):
    total = 0.0
    for i, t in enumerate(trees):
        total += tf.reduce_sum(tree_rnn(M, t)) * (i + 1)
    return total


def from_one(trees):
    out = []
    for i, t in enumerate(trees, 1):
        out.append(tree_rnn(M, t) * i)
    return tf.stack(out)


def labelled(trees, labels):
    total = 0.0
    for t, y in zip(trees, labels):
        total += tf.reduce_sum(tree_rnn(M, t)) * y
    return total


def strict(trees, labels):
    out = []
    for t, y in zip(trees, labels, strict=True):
        out.append(tf.reduce_sum(tree_rnn(M, t)) * y)
    return out


def from_generator(trees):
    seen = []

    def each():
        for t in trees:
            seen.append(len(seen))
            yield t
    total, items = 0.0, each()
    for i, t in enumerate(items):
        total += tf.reduce_sum(tree_rnn(M, t)) * (len(seen) + i)
    return total


def growing(trees):
    """The body lengthens the list it enumerates (up to 4 items): the loop sees the new items."""
    out = []
    for i, t in enumerate(trees):
        out.append(tf.reduce_sum(tree_rnn(M, t)))
        if len(trees) < 4:
            trees.append(t)
    return out


def _forests(seed, sizes):
    rng = np.random.default_rng(seed)
    return [[random_tree(int(rng.integers(1, 9)), rng) for _ in range(k)] for k in sizes]


def nodes(t):
    return 1 if t.left is None else 1 + nodes(t.left) + nodes(t.right)


def _one_machine(spec, last):
    """The last call ran every tree of its forest in one machine run."""
    assert spec.stats()["graph_runs"] >= 3, spec.report()
    (cycle,) = spec.graphs[0].recursion
    assert cycle.last_frames == sum(nodes(t) for t in last), spec.report()


def test_enumerate_joins_the_calls():
    forests = _forests(1, [3, 4, 2, 5, 3, 3])
    _one_machine(differential(weighted, [(f,) for f in forests]), forests[-1])


def test_enumerate_with_a_start_joins_the_calls():
    forests = _forests(2, [3, 4, 2, 5, 3, 3])
    _one_machine(differential(from_one, [(f,) for f in forests]), forests[-1])


def test_zip_with_labels_joins_the_calls():
    """Tensor labels are inputs of the graph: the pairs are listed and the calls joined."""
    forests = _forests(3, [3, 4, 2, 5, 3, 3])
    calls = [(f, [tf.constant(0.5 * k) for k in range(len(f))]) for f in forests]
    _one_machine(differential(labelled, calls), forests[-1])


def test_zip_with_python_numbers_that_change_between_calls_equals_eager():
    """Python numbers are read as the loop reads them, so a list changed between calls is seen:
    listing the pairs directly lost the reads the graph's entry checks (the weight changed at the
    last calls was the graph's constant)."""
    rng = np.random.default_rng(3)
    trees, weights = _forests(7, [3])[0], [0.5, 2.0, -1.0]
    spec = janus.speculate(labelled)
    for k in range(9):
        if k == 4:
            weights.append(3.0)              # zip stops at the shorter list
        if k == 5:
            trees.append(random_tree(4, rng))
        if k == 7:
            weights[0] = 1.5
        args = (list(trees), weights) if k % 2 else (tuple(trees), tuple(weights))
        np.testing.assert_allclose(labelled(*args).numpy(), spec(*args).numpy(), rtol=1e-5)
    assert spec.stats()["graph_runs"] >= 3, spec.report()


def test_zip_strict_over_lists_of_different_lengths_raises_where_eager_does():
    forests = _forests(4, [3, 3, 3, 4, 3, 3])
    calls = [(f, [1.0] * (len(f) if k != 4 else len(f) - 1)) for k, f in enumerate(forests)]
    differential(strict, calls)


def test_enumerate_over_a_generator_runs_it_between_the_steps():
    differential(from_generator, [(f,) for f in _forests(5, [3, 4, 2, 5, 3, 3])])


def test_a_body_that_grows_the_list_sees_the_new_items():
    forests = _forests(6, [2, 3, 2, 4, 2, 3, 2])
    want = [growing(list(f)) for f in forests]
    spec = janus.speculate(growing)
    got = [spec(list(f)) for f in forests]
    for w, g in zip(want, got):
        assert len(w) == len(g)
        np.testing.assert_allclose(np.asarray(w), np.asarray(g), rtol=1e-5)
