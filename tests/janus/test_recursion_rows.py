"""Blocks of a tree recursion run once on all their frames as rows when every op treats rows
independently, and through `tf.vectorized_map` otherwise; either way values and gradients equal
eager's.  Each model below differs from TreeRNN's cell in one op that does or does not keep the
frame axis apart."""
import numpy as np
import pytest
import tensorflow as tf

from tests.harness import differential


class Node:
    def __init__(self, left=None, right=None, word=0):
        self.left, self.right, self.word = left, right, word

    def is_leaf(self):
        return self.left is None


def tree(depth, start=0):
    if depth == 0:
        return Node(word=start % 5)
    return Node(tree(depth - 1, 2 * start), tree(depth - 1, 2 * start + 1))


RNG = np.random.default_rng(3)
E = tf.Variable(RNG.normal(0, 0.5, (5, 3)).astype(np.float32))
W = tf.Variable(RNG.normal(0, 0.5, (6, 3)).astype(np.float32))
B2 = tf.constant(RNG.normal(0, 0.5, (2, 3)).astype(np.float32))


def cell(kind, l, r):
    h = tf.tanh(tf.matmul(tf.concat([l, r], 1), W))
    if kind == "rows":
        return h * tf.reduce_sum(h, axis=1, keepdims=True) + tf.split(h, 3, axis=1)[0]
    if kind == "whole-sum":          # a sum over the frame axis too: not row by row
        return h + tf.reduce_sum(h)
    if kind == "transpose":
        return tf.transpose(tf.transpose(h))
    if kind == "first-row":          # a slice that picks the frame's first row
        return h[0:1, :] * 0.5
    raise AssertionError(kind)


def encoder(kind):
    def encode(node):
        if node.is_leaf():
            return tf.gather(E, [node.word]) + tf.cast(node.word, tf.float32) * 0.1
        return cell(kind, encode(node.left), encode(node.right))

    def step(trees):
        with tf.GradientTape() as tape:
            loss = 0.0
            for t in trees:
                loss += tf.reduce_sum(encode(t) ** 2)
        return loss, tape.gradient(loss, [E, W])
    return step


def leaf_scalar_index(node):
    """A gather at a scalar index: each frame's value is a `[3]` vector, not a row."""
    if node.is_leaf():
        return tf.gather(E, node.word)
    return tf.tanh(leaf_scalar_index(node.left) + leaf_scalar_index(node.right))


def broadcast_to_two_rows(node):
    """A frame-independent `[2, 3]` operand: each frame's value has two rows."""
    if node.is_leaf():
        return tf.gather(E, [node.word]) + B2
    return broadcast_to_two_rows(node.left) * broadcast_to_two_rows(node.right)


CALLS = [([tree(2), tree(3)],), ([tree(1), tree(2)],), ([tree(3), tree(1)],), ([tree(2), tree(2)],),
         ([tree(4)],)]


def _pfor_ops(spec):
    graph = spec.graphs[0].concrete.graph.as_graph_def()
    return sum("pfor" in n.name for f in graph.library.function for n in f.node_def)


@pytest.mark.parametrize("kind", ["rows", "whole-sum", "transpose", "first-row"])
def test_cells_with_and_without_a_frame_axis_equal_eager(kind):
    spec = differential(encoder(kind), CALLS)
    assert spec.stats()["graph_runs"] >= 2, spec.report()
    if kind == "rows":
        assert _pfor_ops(spec) == 0, "a row-wise cell should not need tf.vectorized_map"
    else:
        assert _pfor_ops(spec) > 0, f"{kind} must run through tf.vectorized_map"


@pytest.mark.parametrize("fn", [leaf_scalar_index, broadcast_to_two_rows])
def test_per_frame_values_that_are_not_rows_equal_eager(fn):
    spec = differential(lambda trees: [fn(t) for t in trees], CALLS)
    assert spec.stats()["graph_runs"] >= 2, spec.report()


def branchy(node):
    """A `tf.cond` on frame-independent values inside the cell: its branches are functions of the
    one-frame trace, so the block keeps `tf.vectorized_map`."""
    if node.is_leaf():
        return tf.gather(E, [node.word])
    scale = tf.cond(tf.reduce_sum(W) > 0.0, lambda: tf.constant(1.0), lambda: tf.constant(-1.0))
    return scale * tf.tanh(tf.matmul(tf.concat([branchy(node.left), branchy(node.right)], 1), W))


def test_a_function_inside_the_cell_keeps_vectorized_map():
    spec = differential(lambda trees: [branchy(t) for t in trees], CALLS)
    assert spec.stats()["graph_runs"] >= 2, spec.report()
