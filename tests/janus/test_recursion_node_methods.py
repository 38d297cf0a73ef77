"""Recursion through a method of the tree's nodes (`self.left.encode(m)`): one graph for every tree
shape, level by level, as for a function that recurses on `node.left`; a None receiver raises as
in eager, and a method that is another function on some node (an override, a reassigned class
attribute, a node's own attribute) is called as eager calls it."""
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


class Node:
    def __init__(self, left=None, right=None, word=0):
        self.left, self.right, self.word = left, right, word

    def encode(self, m):
        if self.left is None:
            return tf.tanh(tf.gather(m.E, self.word))
        left = self.left.encode(m)
        right = self.right.encode(m)
        return self.combine(m, left, right)

    def combine(self, m, left, right):
        return tf.tanh(tf.linalg.matvec(m.W, tf.concat([left, right], 0), transpose_a=True))


class Twice(Node):
    def encode(self, m):
        return 2.0 * Node.encode(self, m)


def run(m, tree):
    return tree.encode(m)


def run_forest(m, trees):
    return tf.add_n([t.encode(m) for t in trees])


def train(m, trees):
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(run_forest(m, trees))
    return loss, tape.gradient(loss, [m.E, m.W])


def balanced(depth, rng):
    if depth == 0:
        return Node(word=int(rng.integers(VOCAB)))
    return Node(balanced(depth - 1, rng), balanced(depth - 1, rng))


def random_tree(n, rng):
    if n == 1:
        return Node(word=int(rng.integers(VOCAB)))
    k = int(rng.integers(1, n))
    return Node(random_tree(k, rng), random_tree(n - k, rng))


def _strategy(spec):
    return spec.report(format="json")["recursion"][0]["strategy"]


def test_method_recursion_runs_one_graph_for_every_tree_shape():
    m, rng = Cells(), np.random.default_rng(1)
    spec = janus.speculate(run)
    for n in (1, 5, 12, 3, 19, 7, 2, 30, 11, 4):
        tree = random_tree(n, rng)
        np.testing.assert_array_equal(run(m, tree).numpy(), spec(m, tree).numpy())
    stats = spec.stats()
    assert stats["graphs_built"] == 1 and stats["graph_runs"] >= 7, spec.report()
    assert _strategy(spec).startswith("levels"), spec.report()


@pytest.mark.parametrize("depth", [1, 4])
def test_method_recursion_takes_one_step_per_level(depth):
    m, rng = Cells(), np.random.default_rng(2)
    spec = janus.speculate(run, profile_runs=1)
    for _ in range(2):
        tree = balanced(depth, rng)
        np.testing.assert_array_equal(run(m, tree).numpy(), spec(m, tree).numpy())
    cycle = spec.graphs[0].recursion[0]
    assert cycle.last_steps == depth and cycle.last_frames == 2 ** (depth + 1) - 1


def test_training_through_method_recursion_equals_eager():
    m, rng = Cells(), np.random.default_rng(3)
    spec = janus.speculate(train, profile_runs=1)
    for sizes in ((3, 5, 1), (8, 2, 6), (13, 4, 9)):
        trees = [random_tree(n, rng) for n in sizes]
        (le, ge), (lj, gj) = train(m, trees), spec(m, trees)
        np.testing.assert_allclose(le.numpy(), lj.numpy(), rtol=1e-6)
        for e, j in zip(ge, gj):
            np.testing.assert_allclose(tf.convert_to_tensor(e).numpy(), tf.convert_to_tensor(j).numpy(),
                                       rtol=1e-5, atol=1e-7)
    assert spec.stats()["graph_runs"] >= 2 and spec.stats()["graphs_built"] == 1, spec.report()


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


def test_a_none_receiver_raises_eagers_attribute_error_after_graphs_ran():
    m, rng = Cells(), np.random.default_rng(4)
    spec = janus.speculate(run)
    for i in range(8):
        tree = random_tree(6, rng)
        if i in (5, 7):
            tree.right.right = None if tree.right.left is not None else tree.right.right
            tree.left.right = None                # an inner node with a left child and no right one
            tree.left.left = tree.left.left or Node(word=1)
        _same(_outcome(run, m, tree), _outcome(spec, m, tree))
    assert spec.stats()["graph_runs"] >= 3, spec.report()


def test_a_method_reassigned_on_the_class_between_calls_is_called():
    m, rng = Cells(), np.random.default_rng(5)
    spec = janus.speculate(run)
    trees = [random_tree(7, rng) for _ in range(8)]
    original = Node.combine
    try:
        for i, tree in enumerate(trees):
            if i == 5:
                Node.combine = lambda self, m, left, right: left - right
            _same(_outcome(run, m, tree), _outcome(spec, m, tree))
    finally:
        Node.combine = original
    assert spec.stats()["graph_runs"] >= 3, spec.report()


def test_a_node_holding_the_method_name_of_its_own_is_called_as_eager():
    m, rng = Cells(), np.random.default_rng(6)
    spec = janus.speculate(run)
    for i in range(8):
        tree = random_tree(7, rng)
        if i >= 5:
            tree.right.encode = lambda m: tf.ones([H])
        _same(_outcome(run, m, tree), _outcome(spec, m, tree))


def test_an_override_on_some_nodes_gives_eagers_values():
    m, rng = Cells(), np.random.default_rng(7)
    spec = janus.speculate(run)
    for i in range(8):
        tree = random_tree(7, rng)
        if i % 2:
            tree.left = Twice(tree.left.left, tree.left.right, tree.left.word)
        _same(_outcome(run, m, tree), _outcome(spec, m, tree))


class Cell:
    def __init__(self):
        self.W = tf.Variable(np.full((2 * H, H), 0.1, np.float32))

    def encode(self, m, left, right):          # the model's method name, on another class
        return tf.tanh(tf.linalg.matvec(self.W, tf.concat([left, right], 0), transpose_a=True))


class Model:
    def __init__(self):
        self.cell, self.cells = Cell(), Cells()

    def encode(self, node):
        if node.left is None:
            return tf.gather(self.cells.E, node.word)
        left = self.encode(node.left)
        right = self.encode(node.right)
        return self.cell.encode(self.cells, left, right)


def test_a_method_of_the_same_name_on_a_held_object_leaves_the_recursion_through_self():
    """`self.cell.encode(...)` is not a call on a node: the recursion through `self.encode`
    still runs level by level, with one graph."""
    model, rng = Model(), np.random.default_rng(8)
    spec = janus.speculate(model.encode)
    for n in (3, 9, 1, 14, 6, 11, 2):
        tree = random_tree(n, rng)
        np.testing.assert_array_equal(model.encode(tree).numpy(), spec(tree).numpy())
    assert spec.stats()["graphs_built"] == 1 and _strategy(spec).startswith("levels"), spec.report()


def test_a_comprehension_of_method_calls_over_trees_runs_one_machine():
    """`[t.encode(m) for t in trees]` joins its calls into one machine, as `[encode(m, t) ...]` does
    (it ran one machine per tree, each tree's levels on its own)."""
    m, rng = Cells(), np.random.default_rng(9)
    spec = janus.speculate(run_forest)
    for sizes in ((3, 5, 1, 7), (8, 2, 6, 4), (13, 4, 9, 2), (1, 1, 2, 3)):
        trees = [random_tree(n, rng) for n in sizes]
        np.testing.assert_allclose(run_forest(m, trees).numpy(), spec(m, trees).numpy(), rtol=1e-6)
    assert spec.stats()["graph_runs"] >= 1 and len(spec.graphs[0].recursion) == 1, spec.report()
    assert "once for all calls" in _strategy(spec), spec.report()
