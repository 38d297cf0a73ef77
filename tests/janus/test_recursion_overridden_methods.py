"""Recursion through a method each node class defines its own way (`Leaf.encode`, `Inner.encode`
calling `self.left.encode(m)`): one graph for every tree shape, run level by level, with eager's
values and gradients; a class's method replaced, a class the graph was not built for, a node's
own attribute of the name and a None child give what eager gives."""
import numpy as np
import pytest
import tensorflow as tf

import janus

H, VOCAB = 4, 9


class Cells:
    def __init__(self, seed=0):
        rng = np.random.default_rng(seed)
        self.E = tf.Variable(rng.normal(0, 0.4, (VOCAB, H)).astype(np.float32))
        self.W = tf.Variable(rng.normal(0, 0.4, (2 * H, H)).astype(np.float32))


class Leaf:
    def __init__(self, word):
        self.word = word

    def encode(self, m):
        return tf.tanh(tf.gather(m.E, self.word))


class Inner:
    def __init__(self, left, right):
        self.left, self.right = left, right

    def encode(self, m):
        left = self.left.encode(m)
        right = self.right.encode(m)
        return tf.tanh(tf.linalg.matvec(m.W, tf.concat([left, right], 0), transpose_a=True))


class Unary:
    def __init__(self, child):
        self.left = child

    def encode(self, m):
        return 0.5 * self.left.encode(m)


class Other:
    """Parameters named differently from the other classes' `encode`."""

    def __init__(self, word):
        self.word = word

    def encode(self, model):
        return tf.ones([H]) * float(self.word)


def run(m, tree):
    return tree.encode(m)


def run_forest(m, trees):
    return tf.add_n([t.encode(m) for t in trees])


def train(m, trees):
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(run_forest(m, trees))
    return loss, tape.gradient(loss, [m.E, m.W])


def random_tree(n, rng, leaf=Leaf):
    if n == 1:
        return leaf(int(rng.integers(VOCAB)))
    k = int(rng.integers(1, n))
    return Inner(random_tree(k, rng, leaf), random_tree(n - k, rng, leaf))


def balanced(depth, rng):
    if depth == 0:
        return Leaf(int(rng.integers(VOCAB)))
    return Inner(balanced(depth - 1, rng), balanced(depth - 1, rng))


def _strategy(spec):
    return spec.report(format="json")["recursion"][0]["strategy"]


def _outcome(fn, *args):
    try:
        return ("value", fn(*args).numpy())
    except Exception as exc:  # noqa: BLE001 - the outcome compared is the exception's type and text
        return ("raised", type(exc), str(exc))


def _same(a, b):
    assert a[0] == b[0], (a, b)
    if a[0] == "value":
        np.testing.assert_array_equal(a[1], b[1])
    else:
        assert a[1:] == b[1:]


def test_one_graph_for_every_tree_shape_level_by_level():
    m, rng = Cells(), np.random.default_rng(1)
    spec = janus.speculate(run)
    for n in (2, 5, 12, 3, 19, 7, 2, 30, 11, 4):
        tree = random_tree(n, rng)
        np.testing.assert_array_equal(run(m, tree).numpy(), spec(m, tree).numpy())
    stats = spec.stats()
    assert stats["graphs_built"] == 1 and stats["graph_runs"] >= 7, spec.report()
    assert _strategy(spec).startswith("levels"), spec.report()


@pytest.mark.parametrize("depth", [1, 4])
def test_one_step_per_level(depth):
    m, rng = Cells(), np.random.default_rng(2)
    spec = janus.speculate(run, profile_runs=1)
    for _ in range(2):
        tree = balanced(depth, rng)
        np.testing.assert_array_equal(run(m, tree).numpy(), spec(m, tree).numpy())
    cycle = spec.graphs[0].recursion[0]
    assert cycle.last_steps == depth and cycle.last_frames == 2 ** (depth + 1) - 1


def test_forests_join_into_one_machine_and_train_as_eager():
    m, rng = Cells(), np.random.default_rng(3)
    spec = janus.speculate(train, profile_runs=1)
    for sizes in ((3, 5, 2), (8, 2, 6), (13, 4, 9)):
        trees = [random_tree(n, rng) for n in sizes]
        (le, ge), (lj, gj) = train(m, trees), spec(m, trees)
        np.testing.assert_allclose(le.numpy(), lj.numpy(), rtol=1e-6)
        for e, j in zip(ge, gj):
            np.testing.assert_allclose(tf.convert_to_tensor(e).numpy(), tf.convert_to_tensor(j).numpy(),
                                       rtol=1e-5, atol=1e-7)
    assert spec.stats()["graph_runs"] >= 2 and spec.stats()["graphs_built"] == 1, spec.report()


def test_a_classs_method_replaced_between_calls_is_called():
    m, rng = Cells(), np.random.default_rng(4)
    spec = janus.speculate(run)
    original = Leaf.encode
    try:
        for i in range(9):
            if i == 5:
                Leaf.encode = lambda self, m: tf.ones([H]) * float(self.word)
            tree = random_tree(6, rng)
            _same(_outcome(run, m, tree), _outcome(spec, m, tree))
    finally:
        Leaf.encode = original
    assert spec.stats()["graph_runs"] >= 3, spec.report()


def test_a_class_the_graph_was_not_built_for():
    m, rng = Cells(), np.random.default_rng(5)
    spec = janus.speculate(run)
    for i in range(9):
        tree = random_tree(6, rng)
        if i >= 5:
            tree = Inner(Unary(tree), random_tree(3, rng))
        _same(_outcome(run, m, tree), _outcome(spec, m, tree))
    assert spec.stats()["graph_runs"] >= 3, spec.report()


def test_a_node_holding_the_method_name_of_its_own():
    m, rng = Cells(), np.random.default_rng(6)
    spec = janus.speculate(run)
    for i in range(9):
        tree = random_tree(7, rng)
        if i >= 5:
            tree.right.encode = lambda m: tf.ones([H])
        _same(_outcome(run, m, tree), _outcome(spec, m, tree))


def test_a_none_child_raises_eagers_attribute_error():
    m, rng = Cells(), np.random.default_rng(7)
    spec = janus.speculate(run)
    for i in range(9):
        tree = random_tree(6, rng)
        if i in (5, 7):
            tree.right = None
        _same(_outcome(run, m, tree), _outcome(spec, m, tree))
    assert spec.stats()["graph_runs"] >= 3, spec.report()


def test_overrides_that_do_not_merge_give_eagers_values():
    m, rng = Cells(), np.random.default_rng(8)
    spec = janus.speculate(run)
    for _ in range(8):
        tree = random_tree(5, rng, leaf=Other)
        _same(_outcome(run, m, tree), _outcome(spec, m, tree))


class Loud(Leaf):
    def encode(self, m):
        print("leaf", self.word)
        return Leaf.encode(self, m)


def test_an_override_that_prints_prints_as_eager(capsys):
    m, rng = Cells(), np.random.default_rng(9)
    spec = janus.speculate(run)
    for _ in range(8):
        tree = random_tree(5, rng, leaf=Loud)
        e = _outcome(run, m, tree)
        eager_out = capsys.readouterr().out
        j = _outcome(spec, m, tree)
        assert capsys.readouterr().out == eager_out
        _same(e, j)


class Combining(Inner):
    def encode(self, m):
        return self.combine(m, self.left.encode(m), self.right.encode(m))

    def combine(self, m, left, right):
        return tf.tanh(tf.linalg.matvec(m.W, tf.concat([left, right], 0), transpose_a=True) + 0.5)


def combining_tree(n, rng):
    if n == 1:
        return Leaf(int(rng.integers(VOCAB)))
    k = int(rng.integers(1, n))
    return Combining(combining_tree(k, rng), combining_tree(n - k, rng))


def test_a_method_only_the_inner_class_defines():
    m, rng = Cells(), np.random.default_rng(10)
    spec = janus.speculate(run)
    for n in (3, 6, 9, 4, 12, 7, 5):
        tree = combining_tree(n, rng)
        np.testing.assert_array_equal(run(m, tree).numpy(), spec(m, tree).numpy())
    assert spec.stats()["graphs_built"] == 1 and _strategy(spec).startswith("levels"), spec.report()


class Odd(Leaf):
    def encode(self, m):
        return self.combine(m, tf.gather(m.E, self.word), tf.gather(m.E, self.word))


def test_a_class_without_the_method_raises_eagers_attribute_error():
    m, rng = Cells(), np.random.default_rng(11)
    spec = janus.speculate(run)
    for i in range(9):
        tree = combining_tree(6, rng)
        if i in (5, 7):
            tree.left = Odd(2)
        _same(_outcome(run, m, tree), _outcome(spec, m, tree))
    assert spec.stats()["graph_runs"] >= 3, spec.report()


def test_a_loop_over_trees_runs_one_machine_for_all():
    m, rng = Cells(), np.random.default_rng(12)
    spec = janus.speculate(run_forest, profile_runs=1)
    for sizes in ((3, 5, 2, 7), (8, 2, 6, 3)):
        trees = [random_tree(n, rng) for n in sizes]
        np.testing.assert_array_equal(run_forest(m, trees).numpy(), spec(m, trees).numpy())
    cycles = spec.graphs[0].recursion
    assert len(cycles) == 1 and cycles[0].last_frames == sum(2 * n - 1 for n in sizes), spec.report()


class SameInner(Inner):
    """Takes `encode` from `Inner`: one side of the merged function tests both classes."""


def mixed_tree(n, rng, inner2):
    if n == 1:
        return Leaf(int(rng.integers(VOCAB)))
    k = int(rng.integers(1, n))
    cls = inner2 if rng.random() < 0.5 else Inner
    return cls(mixed_tree(k, rng, inner2), mixed_tree(n - k, rng, inner2))


def test_two_classes_sharing_one_method():
    m, rng = Cells(), np.random.default_rng(13)
    spec = janus.speculate(run)
    for n in (3, 6, 9, 4, 12, 7, 5, 8):
        tree = mixed_tree(n, rng, SameInner)
        np.testing.assert_array_equal(run(m, tree).numpy(), spec(m, tree).numpy())
    assert spec.stats()["graphs_built"] <= 2 and _strategy(spec).startswith("levels"), spec.report()


def test_a_class_that_is_no_global_keeps_a_graph_per_tree():
    class Local(Inner):
        pass

    m, rng = Cells(), np.random.default_rng(14)
    spec = janus.speculate(run)
    for n in (3, 6, 9, 4, 12, 7, 5, 8):
        tree = mixed_tree(n, rng, Local)
        np.testing.assert_array_equal(run(m, tree).numpy(), spec(m, tree).numpy())
    assert spec.stats()["graph_runs"] >= 3 and not spec.stats()["imperative"], spec.report()
