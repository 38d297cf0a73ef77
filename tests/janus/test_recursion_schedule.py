"""The level-by-level machine takes its schedule from the depths the tree walk gave, without a
loop, exactly where that schedule is the one eager's calls imply; elsewhere a spreading loop in
the graph computes it.  And a tree's table columns the graph does not read are not computed.

Every test compares janus with eager on the same trees, and names which schedule ran.  The
trees of the schedule tests hide a word the embedding does not have (100) where eager's calls
never go: running a node eager does not run would fail the graph there.
"""
import numpy as np
import pytest
import tensorflow as tf

import janus
from tests.harness import run_capturing
from tests.janus import test_recursion_levels as levels


class Node(levels.Node):
    def __init__(self, left=None, right=None, word=0, extra=None, stop=False, label=0):
        super().__init__(left, right, word, extra)
        self.stop, self.label = stop, label


def balanced(depth, start=0):
    if depth == 0:
        return Node(word=start % 7)
    return Node(balanced(depth - 1, 2 * start), balanced(depth - 1, 2 * start + 1))


def bad_subtree():
    return Node(Node(word=100), Node(word=1))


class Model(levels.Model):
    """`encode` (from the level tests) and two recursions of other shapes."""

    def encode_stopping(self, node):
        """Stops at a node marked `stop`, children or not."""
        if node.left is None:
            return tf.gather(self.E, [node.word])
        if node.stop:
            return tf.gather(self.E, [node.word]) * 2.0
        return tf.tanh(tf.matmul(tf.concat([self.encode_stopping(node.left),
                                            self.encode_stopping(node.right)], 1), self.W))

    def total(self, node):
        """`if node is None:` first: every node calls, also a leaf (on its two None children)."""
        if node is None:
            return tf.zeros([1, 4])
        return tf.gather(self.E, [node.word]) + self.total(node.left) + self.total(node.right)


def each(m, trees):
    return tf.concat([m.encode(t) for t in trees], 0)


def first_only(m, trees):
    return m.encode(trees[0]) + float(len(trees))


def step(m, trees):
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(each(m, trees) ** 2)
    return loss, tape.gradient(loss, [m.E, m.W])


def _close(a, b):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)


def _cycle(spec):
    return spec.report(format="json")["recursion"][0]


def _same_call(fn, spec, *args):
    (ke, ee), _ = run_capturing(fn, args)
    (kj, ej), _ = run_capturing(spec, args)
    assert ke == kj, (ee, ej)
    if ke == "raise":
        assert type(ee) is type(ej), (ee, ej)
    else:
        for a, b in zip(tf.nest.flatten(ee), tf.nest.flatten(ej)):
            assert (a is None) == (b is None), (ee, ej)
            if a is not None:
                _close(tf.convert_to_tensor(a), tf.convert_to_tensor(b))


@pytest.mark.parametrize("depth", [1, 4])
def test_a_balanced_tree_takes_its_levels_from_the_walk(depth):
    m = Model()
    spec = janus.speculate(m.encode, profile_runs=1)
    for _ in range(2):
        _close(m.encode(balanced(depth)), spec(balanced(depth)))
    cycle = _cycle(spec)
    assert cycle["last_schedule"] == "walked depths" and cycle["last_steps"] == depth, cycle
    assert "levels from the walked depths" in spec.report()


def test_a_child_column_the_calls_skip_holding_a_node_takes_the_loop():
    m = Model()
    spec = janus.speculate(m.encode, profile_runs=1)
    spec(balanced(2))
    tree = Node(balanced(1), Node(word=2), extra=bad_subtree())
    _same_call(m.encode, spec, tree)
    _same_call(m.encode, spec, Node(balanced(2), balanced(1), extra=Node(word=100)))
    assert spec.stats()["graph_runs"] >= 2 and _cycle(spec)["last_schedule"] == "spreading loop", spec.report()


def test_a_node_with_children_that_does_not_call_takes_the_loop():
    m = Model()
    spec = janus.speculate(m.encode_stopping, profile_runs=1)
    spec(balanced(2))
    _same_call(m.encode_stopping, spec, balanced(3))
    assert _cycle(spec)["last_schedule"] == "walked depths"
    stopped = bad_subtree()
    stopped.stop, stopped.word = True, 3
    _same_call(m.encode_stopping, spec, Node(stopped, balanced(2)))
    assert spec.stats()["graph_runs"] >= 2 and _cycle(spec)["last_schedule"] == "spreading loop", spec.report()


def test_a_node_shared_between_trees_below_its_first_depth_takes_the_loop():
    """The walk numbers the first tree's root at depth 0, and meets it again two levels down the
    second tree: children before parents no longer follows from the depths."""
    m = Model()
    spec = janus.speculate(step, profile_runs=1)
    step(m, [balanced(1), balanced(2)])
    spec(m, [balanced(1), balanced(2)])
    shared = balanced(1, 2)
    _same_call(step, spec, m, [shared, Node(Node(shared, Node(word=4)), balanced(1))])
    assert _cycle(spec)["last_schedule"] == "spreading loop", spec.report()
    _same_call(step, spec, m, [balanced(2), balanced(1, 3)])
    assert _cycle(spec)["last_schedule"] == "walked depths", spec.report()


def test_trees_the_calls_do_not_start_from_take_the_loop():
    m = Model()
    spec = janus.speculate(first_only, profile_runs=1)
    for trees in ([balanced(2), balanced(1)], [balanced(1), bad_subtree()], [balanced(3), Node(word=100)]):
        _same_call(first_only, spec, m, trees)
    assert spec.stats()["graph_runs"] == 2 and spec.stats()["fallbacks"] == 0, spec.report()
    assert _cycle(spec)["last_schedule"] == "spreading loop", spec.report()


def test_none_children_of_every_leaf_take_the_walk():
    m = Model()
    spec = janus.speculate(m.total, profile_runs=1)
    for depth in (2, 3, 0, 4):
        _same_call(m.total, spec, balanced(depth))
    assert spec.stats()["graph_runs"] >= 3 and _cycle(spec)["last_schedule"] == "walked depths", spec.report()


def test_an_attribute_the_graph_never_reads_may_change_type():
    """`label` is a column of the tables but no op reads it: a string there later is not a reason
    to leave the graph, while a float `word` (read) still is."""
    m = Model()
    spec = janus.speculate(m.encode, profile_runs=1)
    spec(balanced(2))
    spec(balanced(2))
    built = spec.stats()["graphs_built"]
    tree = balanced(3)
    for node in (tree, tree.left, tree.right.right):
        node.label = "positive"
    _same_call(m.encode, spec, tree)
    assert spec.stats()["graphs_built"] == built and spec.stats()["eager_runs"] == 1, spec.stats()
    runs = spec.stats()["graph_runs"]
    odd = balanced(2)
    odd.left.left.word = 2.5
    _same_call(m.encode, spec, odd)             # eager raises: a float index
    assert spec.stats()["graph_runs"] == runs, spec.stats()
