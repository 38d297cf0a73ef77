"""Blocks of a tree recursion run once on all their frames as rows when every op treats rows
independently, and through `tf.vectorized_map` otherwise; either way values and gradients equal
eager's.  Each model below differs from TreeRNN's cell in one op that does or does not keep the
frame axis apart."""
import numpy as np
import pytest
import tensorflow as tf

import janus
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


# -- a variable the cell only gathers from is read by its rows --------------------------------------------
def _consumers_of(spec, variable) -> set:
    graph = spec.graphs[0].concrete.graph
    handle = next(inner for outer, inner in graph.captures if outer is variable.handle)
    return {c.type for c in handle.consumers()}


class Model:
    def __init__(self):
        rng = np.random.default_rng(5)
        self.E = tf.Variable(rng.normal(0, 0.5, (5, 3)).astype(np.float32))
        self.W = tf.Variable(rng.normal(0, 0.5, (6, 3)).astype(np.float32))

    def encode(self, node):
        if node.is_leaf():
            return tf.gather(self.E, [node.word])
        return tf.tanh(tf.matmul(tf.concat([self.encode(node.left), self.encode(node.right)], 1), self.W))

    def mixed(self, node):
        """The leaf gathers rows of E and also reads all of E (its mean): E is read whole."""
        if node.is_leaf():
            return tf.gather(self.E, [node.word]) + tf.reduce_mean(self.E)
        return tf.tanh(tf.matmul(tf.concat([self.mixed(node.left), self.mixed(node.right)], 1), self.W))


@pytest.mark.parametrize("where", ["global", "attribute"])
def test_an_embedding_the_cells_only_gather_from_is_read_row_by_row(where):
    """As eager's `tf.gather` on a variable, the graph gathers E's rows (`ResourceGather`) and
    never copies all of E; values and gradients (IndexedSlices included) equal eager's."""
    model = Model()
    fn, variable = (encoder("rows"), E) if where == "global" else (lambda trees: _step(model, trees), model.E)
    spec = differential(fn, CALLS)
    assert spec.stats()["graph_runs"] >= 2, spec.report()
    assert _consumers_of(spec, variable) == {"ResourceGather"}, _consumers_of(spec, variable)


def test_an_embedding_also_read_whole_is_read_whole():
    model = Model()

    def step(trees):
        with tf.GradientTape() as tape:
            loss = tf.add_n([tf.reduce_sum(model.mixed(t)) for t in trees])
        return loss, tape.gradient(loss, [model.E, model.W])
    spec = differential(step, CALLS)
    assert spec.stats()["graph_runs"] >= 2, spec.report()
    assert "ReadVariableOp" in _consumers_of(spec, model.E)


def _step(model, trees):
    with tf.GradientTape() as tape:
        loss = tf.add_n([tf.reduce_sum(model.encode(t) ** 2) for t in trees])
    return loss, tape.gradient(loss, [model.E, model.W])


def train(model, trees):
    """A training step that gathers E's rows in the recursion and then updates E in place."""
    loss, grads = _step(model, trees)
    for w, g in zip([model.E, model.W], grads):
        w.assign_sub(0.1 * tf.convert_to_tensor(g))
    return loss


def test_training_that_updates_a_gathered_embedding_equals_eager():
    """Each step reads the rows E holds before its own update, as eager's step does."""
    eager, sped = Model(), Model()
    spec = janus.speculate(train)
    for (trees,) in CALLS * 2:
        np.testing.assert_allclose(train(eager, trees).numpy(), spec(sped, trees).numpy(), rtol=1e-5)
        for a, b in ((eager.E, sped.E), (eager.W, sped.W)):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)
    assert spec.stats()["graph_runs"] >= 5, spec.report()
    assert _consumers_of(spec, sped.E) <= {"ResourceGather", "AssignSubVariableOp"}, _consumers_of(spec, sped.E)
