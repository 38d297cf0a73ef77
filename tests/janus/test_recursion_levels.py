"""A recursion over trees whose control depends only on the trees runs level by level.

Each test compares janus with eager on the same trees: values, gradients and
errors; and checks the strategy the report names and the steps it took.
"""
import numpy as np
import pytest
import tensorflow as tf

import janus
from tests.harness import run_capturing


class Node:
    def __init__(self, left=None, right=None, word=0, extra=None):
        self.left, self.right, self.word, self.extra = left, right, word, extra

    def is_leaf(self):
        return self.left is None


def balanced(depth, start=0):
    if depth == 0:
        return Node(word=start % 7)
    return Node(balanced(depth - 1, 2 * start), balanced(depth - 1, 2 * start + 1))


class Model:
    def __init__(self):
        rng = np.random.default_rng(5)
        self.E = tf.Variable(rng.normal(0, 0.5, (7, 4)).astype(np.float32))
        self.W = tf.Variable(rng.normal(0, 0.5, (8, 4)).astype(np.float32))

    def encode(self, node):
        if node.is_leaf():
            return tf.tanh(tf.gather(self.E, [node.word]))
        return tf.tanh(tf.matmul(tf.concat([self.encode(node.left), self.encode(node.right)], 1), self.W))

    def encode_with_counts(self, node):
        """(state, nodes below): a tuple result, unpacked between the two calls."""
        if node.left is None:
            return tf.gather(self.E, [node.word]), 1
        hl, nl = self.encode_with_counts(node.left)
        hr, nr = self.encode_with_counts(node.right)
        return tf.tanh(tf.matmul(tf.concat([hl, hr], 1), self.W)), nl + nr + 1

    def gated(self, node):
        """A branch on a computed value: not structural."""
        h = tf.gather(self.E, [node.word])
        if node.left is None or tf.reduce_sum(h) > 100.0:
            return h
        return self.gated(node.left) + self.gated(node.right)


def step(m, trees):
    with tf.GradientTape() as tape:
        loss = 0.0
        for t in trees:
            loss += tf.reduce_sum(m.encode(t) ** 2)
    return loss, tape.gradient(loss, [m.E, m.W])


def _close(a, b):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)


def _strategy(spec):
    return spec.report(format="json")["recursion"][0]["strategy"]


@pytest.mark.parametrize("depth", [1, 3, 6])
def test_a_balanced_tree_takes_one_step_per_level(depth):
    m = Model()
    spec = janus.speculate(m.encode, profile_runs=1)
    tree = balanced(depth)
    _close(m.encode(tree), spec(tree))
    _close(m.encode(tree), spec(balanced(depth)))
    assert spec.stats()["graph_runs"] >= 1 and _strategy(spec).startswith("levels"), spec.report()
    cycle = spec.graphs[0].recursion[0]
    assert cycle.last_steps == depth and cycle.last_frames == 2 ** (depth + 1) - 1


def test_training_over_a_batch_of_uneven_trees_equals_eager():
    m = Model()
    spec = janus.speculate(step, profile_runs=1)
    rng = np.random.default_rng(2)

    def random_tree(n):
        if n == 1:
            return Node(word=int(rng.integers(7)))
        k = int(rng.integers(1, n))
        return Node(random_tree(k), random_tree(n - k))
    for sizes in ((3, 5, 1), (8, 2, 6), (1, 2, 1), (13, 4, 9)):
        trees = [random_tree(n) for n in sizes]
        (le, ge), (lj, gj) = step(m, trees), spec(m, trees)
        _close(le, lj)
        for e, j in zip(ge, gj):
            _close(tf.convert_to_tensor(e), tf.convert_to_tensor(j))
    assert spec.stats()["graph_runs"] >= 3 and _strategy(spec).startswith("levels"), spec.report()
    # Every node with children calls, and the unwalked `extra` holds no node: the walk's depths
    # give the schedule (tests/janus/test_recursion_schedule.py has the cases where they do not).
    assert spec.report(format="json")["recursion"][0]["last_schedule"] == "walked depths", spec.report()


def test_tuple_results_unpacked_between_the_calls_run_level_by_level():
    m = Model()
    spec = janus.speculate(m.encode_with_counts, profile_runs=1)
    for depth in (2, 4, 0, 3):
        (he, ne), (hj, nj) = m.encode_with_counts(balanced(depth)), spec(balanced(depth))
        _close(he, hj)
        assert int(ne) == int(nj) == 2 ** (depth + 1) - 1
    assert _strategy(spec).startswith("levels"), spec.report()


def test_a_shared_subtree_and_an_unwalked_attribute_equal_eager():
    """A node reached twice gives the same value twice; a subtree the recursion never walks
    (hung on `extra`) does not run."""
    m = Model()
    spec = janus.speculate(m.encode, profile_runs=1)
    spec(balanced(2))
    shared = balanced(2, 3)
    odd = Node(Node(shared, Node(word=3)), shared, extra=Node(Node(), None))
    _close(m.encode(odd), spec(odd))


def test_a_none_child_of_an_inner_node_raises_as_eager():
    m = Model()
    spec = janus.speculate(m.encode, profile_runs=1)
    spec(balanced(2))
    spec(balanced(3))
    broken_tree = Node(Node(word=4), Node(Node(word=5), None))      # an inner node without a right child
    (ke, ee), _ = run_capturing(m.encode, (broken_tree,))
    (kj, ej), _ = run_capturing(spec, (broken_tree,))
    assert ke == kj == "raise" and type(ee) is type(ej), (ee, ej)


def test_a_branch_on_a_computed_value_keeps_the_wavefront():
    m = Model()
    spec = janus.speculate(m.gated, profile_runs=1)
    for depth in (2, 3, 1):
        _close(m.gated(balanced(depth)), spec(balanced(depth)))
    assert _strategy(spec).startswith("wavefront") and "not level by level" in _strategy(spec), spec.report()


def test_explain_names_the_level_strategy():
    m = Model()
    text = str(janus.explain(m.encode, balanced(2)))
    assert "runs as levels (one step per tree level)" in text, text
