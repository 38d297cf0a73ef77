"""Recursion over Python trees: trees are fed as tables, so one graph serves every tree shape."""
import numpy as np
import pytest
import tensorflow as tf

import janus

H, VOCAB = 6, 12


class Node:
    def __init__(self, left=None, right=None, word=0):
        self.left, self.right, self.word = left, right, word


class Cells:
    def __init__(self, seed=0):
        rng = np.random.default_rng(seed)
        init = lambda *s: tf.Variable(rng.normal(0, 0.4, s).astype(np.float32))  # noqa: E731
        self.E = init(VOCAB, H)
        self.W = init(2 * H, H)
        self.U = init(2 * H, 5 * H)
        self.b = init(5 * H)


def tree_rnn(m, node):
    if node.left is None:
        return tf.tanh(tf.gather(m.E, node.word))
    left = tree_rnn(m, node.left)
    right = tree_rnn(m, node.right)
    return tf.tanh(tf.linalg.matvec(m.W, tf.concat([left, right], 0), transpose_a=True))


def tree_lstm(m, node):
    """Returns [h; c] of a binary TreeLSTM node."""
    if node.left is None:
        x = tf.gather(m.E, node.word)
        return tf.concat([tf.tanh(x), x], 0)
    left = tree_lstm(m, node.left)
    right = tree_lstm(m, node.right)
    hl, cl, hr, cr = left[:H], left[H:], right[:H], right[H:]
    z = tf.linalg.matvec(m.U, tf.concat([hl, hr], 0), transpose_a=True) + m.b
    i, fl, fr, o, u = tf.split(z, 5)
    c = tf.sigmoid(i) * tf.tanh(u) + tf.sigmoid(fl) * cl + tf.sigmoid(fr) * cr
    return tf.concat([tf.sigmoid(o) * tf.tanh(c), c], 0)


def balanced(depth, rng):
    if depth == 0:
        return Node(word=int(rng.integers(VOCAB)))
    return Node(balanced(depth - 1, rng), balanced(depth - 1, rng))


def random_tree(n, rng):
    if n == 1:
        return Node(word=int(rng.integers(VOCAB)))
    k = int(rng.integers(1, n))
    return Node(random_tree(k, rng), random_tree(n - k, rng))


def chain(n, rng):
    node = Node(word=int(rng.integers(VOCAB)))
    for _ in range(n - 1):
        node = Node(node, Node(word=int(rng.integers(VOCAB))))
    return node


def _trees(rng):
    return ([balanced(d, rng) for d in (0, 1, 3, 5)] + [random_tree(n, rng) for n in (2, 7, 19, 40)]
            + [chain(n, rng) for n in (3, 30)])


@pytest.mark.parametrize("fn", [tree_rnn, tree_lstm])
def test_tree_models_equal_eager_over_many_shapes_with_one_graph(fn):
    m = Cells()
    spec = janus.speculate(fn)
    rng = np.random.default_rng(3)
    for tree in _trees(rng):
        np.testing.assert_allclose(fn(m, tree).numpy(), spec(m, tree).numpy(), rtol=1e-5, atol=1e-6)
    s = spec.stats()
    assert s["graphs_built"] == 1 and s["graph_runs"] == len(_trees(rng)) - 3, spec.report()
    assert spec.graphs[0].recursion, spec.report()


def test_new_weights_object_is_a_miss_not_a_stale_graph():
    m = Cells()
    spec = janus.speculate(tree_rnn)
    rng = np.random.default_rng(4)
    t = random_tree(6, rng)
    for _ in range(4):
        spec(m, t)
    m.W = tf.Variable(m.W * 2.0)
    np.testing.assert_allclose(tree_rnn(m, t).numpy(), spec(m, t).numpy(), rtol=1e-5, atol=1e-6)
