"""`isinstance` and `type` on values the graph holds as stand-ins give eager's answer: a tree node
(its class is a column of the tree tables), a Python number fed as a tensor, a NumPy array, a
tree attribute.  Where the class itself is needed as a value (`type(node).__name__`), the
function runs in Python and says why."""
import numpy as np
import tensorflow as tf

import janus
from tests.harness import differential


class Node:
    def __init__(self, w, left=None, right=None):
        self.w, self.left, self.right = w, left, right


class Leaf(Node):
    pass


class Inner(Node):
    pass


class Special(Leaf):
    pass


def tree(d, k=1):
    if d == 0:
        return Special(float(k)) if k % 3 == 0 else Leaf(float(k))
    return Inner(0.5 * k, tree(d - 1, 2 * k), tree(d - 1, 2 * k + 1))


def by_subclass(n):
    if isinstance(n, Leaf):
        return tf.constant(2.0) * n.w if isinstance(n, Special) else tf.constant(1.0) * n.w
    return n.w + by_subclass(n.left) * by_subclass(n.right)


def by_exact_class(n):
    if n is None:
        return tf.constant(0.0)
    if type(n) is Special:
        return tf.constant(5.0)
    if n.__class__ == Leaf:
        return tf.constant(1.0) + n.w
    return by_exact_class(n.left) - by_exact_class(n.right) + n.w


def by_class_tuple(n):
    if isinstance(n, (Special, type(None))):
        return tf.constant(3.0)
    if isinstance(n, Leaf):
        return tf.constant(1.0)
    return by_class_tuple(n.left) + 2.0 * by_class_tuple(n.right)


def by_class_name(n):
    if isinstance(n, Inner):
        return by_class_name(n.left) + by_class_name(n.right)
    return tf.constant(len(type(n).__name__), tf.float32)


DEPTHS = [1, 2, 3, 2, 1, 3, 2, 4, 1, 2]


def test_isinstance_with_subclasses_in_one_tree():
    spec = differential(by_subclass, [(tree(d),) for d in DEPTHS])
    assert spec.stats()["graph_runs"] >= 6, spec.report()


def test_type_is_and_dunder_class_equal():
    spec = differential(by_exact_class, [(tree(d),) for d in DEPTHS])
    assert spec.stats()["graph_runs"] >= 6, spec.report()


def test_isinstance_with_a_tuple_holding_none_type():
    spec = differential(by_class_tuple, [(tree(d),) for d in DEPTHS])
    assert spec.stats()["graph_runs"] >= 6, spec.report()


def test_the_class_used_as_a_value_runs_in_python():
    spec = differential(by_class_name, [(tree(d),) for d in DEPTHS])
    assert "[node-class]" in spec.report(), spec.report()


def test_a_node_of_a_class_the_graph_has_not_seen_misses_the_cache():
    class Other(Leaf):
        pass

    def other_tree(d, k=1):
        return Other(float(k)) if d == 0 else Inner(1.0, other_tree(d - 1, 2 * k), other_tree(d - 1, 2 * k + 1))
    differential(by_subclass, [(tree(2),), (tree(3),), (tree(2),), (tree(1),), (other_tree(2),), (tree(2),)])


def test_isinstance_and_type_of_a_python_number_fed_as_a_tensor():
    def f(x, n):
        kind = 1.0 if isinstance(n, int) else 2.0
        same = type(n) is int
        return x * kind + n, same, isinstance(n, (float, bool))

    calls = [(tf.constant(1.0), n) for n in (1, 2, 3, 4, 5, 6, 7.5, 8.5, True, 9)]
    spec = differential(f, calls)
    assert spec.stats()["graph_runs"] >= 4, spec.report()


def test_isinstance_of_a_numpy_array_argument():
    def f(a):
        return isinstance(a, np.ndarray), type(a) is np.ndarray, tf.reduce_sum(a) * 2.0

    spec = differential(f, [(np.arange(float(k), dtype=np.float32),) for k in range(1, 8)])
    assert spec.stats()["graph_runs"] >= 3, spec.report()


def walk_weights(n):
    if n is None:
        return tf.constant(0.0)
    here = tf.constant(1.0) if isinstance(n.w, float) else tf.constant(2.0)
    return here + walk_weights(n.left) + walk_weights(n.right)


def test_isinstance_of_tree_attributes_of_one_python_type():
    spec = differential(walk_weights, [(tree(d),) for d in DEPTHS])
    assert spec.stats()["graph_runs"] >= 6, spec.report()


def test_isinstance_of_tree_attributes_whose_type_differs_between_nodes():
    """Ints on some nodes and floats on others make one float32 column: the graph cannot tell
    them apart, so the function runs in Python."""
    def mixed(d, k=1):
        return Leaf(k if k % 2 else float(k)) if d == 0 else Inner(0.5, mixed(d - 1, 2 * k), mixed(d - 1, 2 * k + 1))
    spec = differential(walk_weights, [(mixed(d),) for d in DEPTHS])
    assert "[node-class]" in spec.report(), spec.report()
