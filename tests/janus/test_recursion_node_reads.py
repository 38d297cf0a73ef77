"""Reads of tree-node attributes inside a recursion that runs as a graph: a read through a `None`
child, or of an attribute the node's class does not have, raises AttributeError in eager; the
graph must not read some other node's value instead.  The graph run fails at that read and the
call runs in Python, which raises as eager does."""
import tensorflow as tf

from tests.harness import differential


class N:
    def __init__(self, v, left=None, right=None):
        self.v, self.left, self.right = v, left, right


def full(d, v=1):
    return N(v) if d == 0 else N(v, full(d - 1, v + 1), full(d - 1, v + 2))


def through_right(node):
    if node.left is None:
        return tf.constant([1.0]) * node.v
    return through_right(node.left) + node.right.v       # a None right child raises in eager


def each(fn):
    def batch(trees):
        return [fn(t) for t in trees]
    return batch


def _strategy(spec):
    return [line.strip() for line in spec.report().splitlines() if "runs as" in line]


def test_a_read_through_a_none_child_raises_as_in_eager():
    calls = [([full(2), full(3)],), ([full(3), full(1)],), ([full(2), full(2)],),
             ([full(2), N(5, N(6), None)],), ([N(7, full(2), None)],), ([full(3), full(2)],),
             ([full(1), full(2)],)]
    spec = differential(each(through_right), calls)
    assert any("levels" in line for line in _strategy(spec)), spec.report()
    assert spec.stats()["graph_runs"] >= 2


class Leaf:
    def __init__(self, v):
        self.v = v

    def is_leaf(self):
        return True


class Inner:
    def __init__(self, left, right):
        self.left, self.right = left, right

    def is_leaf(self):
        return False


def mixed_tree(d, k=1):
    return Leaf(k) if d == 0 else Inner(mixed_tree(d - 1, k), mixed_tree(d - 1, k + 1))


W = tf.Variable([[0.5], [0.25]])


def encode(node):
    if node.is_leaf():
        return tf.constant([[1.0]]) * node.v
    return tf.tanh(tf.matmul(tf.concat([encode(node.left), encode(node.right)], 1), W))


def reads_left_of_a_leaf(node):
    if node.is_leaf():
        return tf.constant([[1.0]]) * node.v + node.left.v     # a Leaf has no `left`
    return reads_left_of_a_leaf(node.left) + reads_left_of_a_leaf(node.right)


def trained(fn):
    def step(trees):
        with tf.GradientTape() as tape:
            out = tf.add_n([fn(t) for t in trees])
        return out, tape.gradient(out, W)
    return step


MIXED_CALLS = [([mixed_tree(2), mixed_tree(3)],), ([mixed_tree(1), mixed_tree(2)],), ([mixed_tree(3), mixed_tree(3)],),
               ([mixed_tree(2), mixed_tree(1), mixed_tree(4)],), ([mixed_tree(3), mixed_tree(1)],),
               ([mixed_tree(2), mixed_tree(2)],)]


def test_nodes_of_two_classes_run_level_by_level_with_gradients():
    spec = differential(trained(encode), MIXED_CALLS)
    assert any("levels" in line for line in _strategy(spec)), spec.report()
    assert spec.stats()["graph_runs"] >= 2


def test_an_attribute_the_nodes_class_lacks_raises_as_in_eager():
    differential(trained(reads_left_of_a_leaf), MIXED_CALLS)


def total(node):
    if isinstance(node, Leaf):
        return tf.constant(0.0) + node.v
    return total(node.left) + total(node.right)


def reads_left_everywhere(node):
    if node.left is None:           # a Leaf has no `left`: eager raises AttributeError here
        return tf.constant(1.0)
    return reads_left_everywhere(node.left) + reads_left_everywhere(node.right)


def test_a_test_on_an_attribute_some_nodes_lack_raises_as_in_eager():
    shared = mixed_tree(2)
    calls = [([mixed_tree(2), mixed_tree(3)],), ([mixed_tree(1), mixed_tree(2)],), ([shared, shared],),
             ([Inner(shared, shared), shared],), ([mixed_tree(3), mixed_tree(1)],), ([mixed_tree(2), None],)]
    differential(each(total), calls)
    differential(each(reads_left_everywhere), calls)


def test_a_tree_whose_nodes_gain_an_attribute_later_is_flattened_again():
    first = [([mixed_tree(2), mixed_tree(2)],)] * 4
    late = mixed_tree(2)
    late.left.left = Leaf(9)          # a Leaf that now has `left`: the read succeeds in eager too
    spec = differential(trained(reads_left_of_a_leaf), first + [([late, mixed_tree(1)],)])
    assert spec is not None


E2 = tf.Variable(tf.fill([5, 3], 0.1))
W2 = tf.Variable(tf.fill([6, 3], 0.2))


def levels_cell(node):
    if node.left is None:
        return tf.gather(E2, [node.v])
    return tf.tanh(tf.matmul(tf.concat([levels_cell(node.left), levels_cell(node.right)], 1), W2))


def wavefront_cell(node):
    h = tf.gather(E2, [node.v])
    if node.left is None or tf.reduce_sum(h) > 100.0:      # a computed test: not level by level
        return h
    return tf.tanh(tf.matmul(tf.concat([wavefront_cell(node.left), wavefront_cell(node.right)], 1), W2))


def gradients_of(fn):
    def step(trees):
        with tf.GradientTape() as tape:
            loss = tf.add_n([tf.reduce_sum(fn(t)) for t in trees])
        grads = tape.gradient(loss, [E2, W2])
        return loss, [None if g is None else tf.convert_to_tensor(g) for g in grads]
    return step


def test_a_variable_no_call_reads_gets_a_none_gradient_as_in_eager():
    """A batch of single-leaf trees never runs the inner nodes' cell: eager never reads W2, so its
    gradient is None; the graph must not hand back zeros."""
    def small():
        return N(1, N(2, N(1), N(3)), N(4))
    calls = [([small(), small()],), ([small()],), ([small(), small()],), ([N(1), N(2)],), ([small()],),
             ([N(4)],), ([small(), N(3)],)]
    for fn, strategy in ((levels_cell, "levels"), (wavefront_cell, "wavefront")):
        spec = differential(gradients_of(fn), calls)
        assert any(strategy in line for line in _strategy(spec)), spec.report()
        assert spec.stats()["graph_runs"] >= 2, spec.report()


def leaf_values(node):
    if node.left is None:
        return tf.constant(1.0) * node.v
    return leaf_values(node.left) + leaf_values(node.right)


def test_a_number_attribute_that_is_none_raises_where_it_is_used():
    """Inner nodes hold `v = None` and are never read: fine.  A leaf holding None is read: eager
    raises there, and so does janus (the read fails the run; the call runs in Python)."""
    calls = [(N(None, N(1), N(2)),), (N(None, N(3), N(None, N(1), N(2))),), (N(None, N(1), N(2)),),
             (N(None, N(1), N(2)),), (N(None, N(1), N(None)),), (N(None, N(4), N(5)),), (N(None, N(1), N(2)),)]
    spec = differential(leaf_values, calls)
    assert spec.stats()["graph_runs"] >= 2, spec.report()


def array_leaves(node):
    if node.left is None:
        return tf.reduce_sum(node.v)
    return array_leaves(node.left) * array_leaves(node.right)


def test_array_attributes_with_none_on_inner_nodes():
    import numpy as np
    leaf = lambda k: N(np.full([2], float(k), np.float32))     # noqa: E731
    calls = [(N(None, leaf(1), leaf(2)),), (N(None, leaf(3), N(None, leaf(1), leaf(2))),), (N(None, leaf(1), leaf(2)),),
             (N(None, leaf(1), leaf(2)),), (N(None, leaf(2), leaf(2)),)]
    differential(array_leaves, calls)
