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


class Tree:
    def __init__(self, label, word=None, left=None, right=None):
        self.label, self.word, self.left, self.right = label, word, left, right
        self.word_id = 0 if word is None else hash(word) % VOCAB

    def is_leaf(self):
        return self.left is None


class Model:
    def __init__(self, seed=0):
        rng = np.random.default_rng(seed)
        self.E = tf.Variable(rng.normal(0, 0.4, (VOCAB, H)).astype(np.float32))
        self.W = tf.Variable(rng.normal(0, 0.4, (2 * H, H)).astype(np.float32))
        self.out = tf.Variable(rng.normal(0, 0.4, (H, 3)).astype(np.float32))

    @property
    def weights(self):
        return [self.E, self.W, self.out]

    def combine(self, a, b):
        return tf.tanh(tf.matmul(tf.concat([a, b], 1), self.W))

    def node_losses(self, node):
        """(state, summed loss of the subtree): a recursive method returning a tuple."""
        if node.is_leaf():
            h, below = tf.gather(self.E, [node.word_id]), 0.0
        else:
            hl, ll = self.node_losses(node.left)
            hr, lr = self.node_losses(node.right)
            h, below = self.combine(hl, hr), ll + lr
        loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[node.label], logits=tf.matmul(h, self.out))
        return h, below + loss[0]


def train_step(model, trees, lr):
    with tf.GradientTape() as tape:
        total = 0.0
        for t in trees:
            _, loss = model.node_losses(t)
            total += loss
        total = total / len(trees)
    grads = tape.gradient(total, model.weights)
    for w, g in zip(model.weights, grads):
        w.assign_sub(lr * tf.convert_to_tensor(g))
    return total


def labelled(n, rng):
    if n == 1:
        return Tree(int(rng.integers(3)), word=f"w{int(rng.integers(50))}")
    k = int(rng.integers(1, n))
    return Tree(int(rng.integers(3)), left=labelled(k, rng), right=labelled(n - k, rng))


def test_training_through_a_recursive_method_with_tuple_results_matches_eager():
    me, mj = Model(), Model()
    spec = janus.speculate(train_step)
    rng = np.random.default_rng(5)
    for step in range(8):
        trees = [labelled(int(rng.integers(1, 9)), rng) for _ in range(2)]
        np.testing.assert_allclose(train_step(me, trees, 0.1).numpy(), spec(mj, trees, 0.1).numpy(), rtol=1e-4)
    for a, b in zip(me.weights, mj.weights):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-6)
    s = spec.stats()
    assert s["graph_runs"] >= 4 and s["graphs_built"] <= 2, spec.report()
    assert spec.graphs[0].recursion and "node_losses" in spec.report()


def nested_sum(x):
    """Recursion on a Python structure: unrolled at build time, no machine needed."""
    if isinstance(x, list):
        total = 0.0
        for item in x:
            total = total + nested_sum(item)
        return total
    return x * 2.0


def test_recursive_sum_over_a_nested_python_list_of_tensors():
    spec = janus.speculate(nested_sum)
    data = [tf.constant(1.0), [tf.constant(2.0), [tf.constant(3.0)]], tf.constant(4.0)]
    for _ in range(5):
        np.testing.assert_allclose(nested_sum(data).numpy(), spec(data).numpy())
    assert spec.stats()["graph_runs"] == 2 and not spec.graphs[0].recursion


def test_complete_binary_trees_take_steps_linear_in_depth():
    m = Cells()
    spec = janus.speculate(tree_rnn)
    rng = np.random.default_rng(9)
    steps = {}
    for k in (4, 8, 10):
        tree = balanced(k, rng)
        for _ in range(4 if k == 4 else 1):
            out = spec(m, tree)
        np.testing.assert_allclose(tree_rnn(m, tree).numpy(), out.numpy(), rtol=1e-5, atol=1e-6)
        cycle = spec.graphs[0].recursion[0]
        assert cycle.last_frames == 2 ** (k + 1) - 1
        steps[k] = cycle.last_steps
    assert steps[8] - steps[4] == 2 * (steps[10] - steps[8]) > 0, steps
    assert steps[10] <= 4 * 10, steps


class Holder:
    def __init__(self, tree):
        self.tree = tree


def leaf_sum_of_held(x, holder):
    return x + _leaf_sum(holder.tree)


def _leaf_sum(node):
    if node.left is None:
        return node.v
    return _leaf_sum(node.left) + _leaf_sum(node.right)


class VNode:
    def __init__(self, v=0.0, left=None, right=None):
        self.v, self.left, self.right = v, left, right


def test_a_tree_held_in_an_attribute_of_an_argument_runs_in_python_and_says_why():
    spec = janus.speculate(leaf_sum_of_held, profile_runs=1)
    for t in (VNode(0.0, VNode(1.5), VNode(2.0)), VNode(0.0, VNode(0.5), VNode(0.0, VNode(1.0), VNode(2.0)))):
        x = tf.constant(1.0)
        np.testing.assert_allclose(leaf_sum_of_held(x, Holder(t)).numpy(), spec(x, Holder(t)).numpy())
    report = spec.report()
    assert "is an attribute of an argument (args[1].tree)" in report and "pass the tree itself" in report, report


def rnn_if_positive(m, x, node):
    if tf.reduce_sum(x) > 0:
        y = tree_rnn(m, node)
    else:
        y = tf.zeros([H])
    return y


def test_a_recursion_inside_a_tensor_if_runs_in_the_graph():
    """The machine's step counts for the report cannot leave the branch; the run goes on without
    them (they were made graph outputs, and the build failed)."""
    from tests.harness import differential
    m, rng = Cells(), np.random.default_rng(31)
    calls = [(m, tf.constant([s]), random_tree(int(rng.integers(1, 9)), rng)) for s in (1.0, 1.0, -1.0, 1.0, -1.0, 1.0)]
    spec = differential(rnn_if_positive, calls)
    assert spec.stats()["graph_runs"] >= 3, spec.report()
