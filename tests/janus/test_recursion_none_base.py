"""A recursion over trees written with `if node is None:` as its base case runs level by level:
a call on a None child reads one result row that the base case fills once.  Python float
attributes are held in float64, so sums of them equal eager's to the last bit, and arithmetic
between Python numbers read from nodes stays a Python number that yields to a tensor's dtype."""
import numpy as np
import tensorflow as tf

import janus
from tests.harness import differential


class N:
    def __init__(self, w, left=None, right=None, count=1):
        self.w, self.left, self.right, self.count = w, left, right, count


def tree(d, w, k=1):
    return None if d < 0 else N(w * k, tree(d - 1, w, 2 * k), tree(d - 1, w, 2 * k + 1), k)


def total(n):
    if n is None:
        return 0.0
    return n.w + total(n.left) + total(n.right)


def weighted(n):
    if n is None:
        return tf.zeros([2])
    return tf.constant([1.0, 2.0]) * (n.w + n.count * 0.5) + weighted(n.left) - weighted(n.right)


def mean_of(n):
    if n is None:
        return tf.constant(0.0)
    return n.w / n.count + mean_of(n.left)


DEPTHS = [1, 2, 3, 2, 1, 2, 3, 4]


def _levels(spec):
    assert spec.stats()["graph_runs"] >= 5 and not spec.stats()["imperative"], spec.report()
    assert "runs as levels" in spec.report(), spec.report()


def test_a_python_float_sum_equals_eager_bit_for_bit():
    spec = differential(total, [(tree(d, 0.1),) for d in DEPTHS])
    _levels(spec)
    assert total(tree(3, 0.1)) == spec(tree(3, 0.1))


def test_large_python_ints_summed_as_python_floats():
    differential(total, [(tree(d, 2 ** 40),) for d in DEPTHS])


def test_node_numbers_combine_as_python_numbers_before_a_tensor():
    _levels(differential(weighted, [(tree(d, 0.3),) for d in DEPTHS]))


def test_an_int_attribute_divides_a_float_one():
    _levels(differential(mean_of, [(tree(d, 0.7),) for d in DEPTHS]))


def test_a_batch_with_a_none_root():
    def each(trees):
        return [total(t) for t in trees]
    calls = [([tree(2, 0.5), tree(1, 0.25)],), ([tree(1, 0.5), None, tree(2, 1.5)],), ([tree(3, 0.5), tree(1, 0.1)],),
             ([None, tree(2, 0.5)],), ([tree(2, 0.5), tree(1, 0.25)],), ([tree(1, 0.5), None, tree(2, 1.5)],)]
    differential(each, calls)


def test_gradient_through_a_none_base_case_that_reads_a_variable():
    v = tf.Variable([0.5, -0.5])

    def encode(n):
        if n is None:
            return v * 1.0
        return tf.tanh(encode(n.left) + encode(n.right) + n.w)

    def step(t):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(encode(t) ** 2)
        return loss, tape.gradient(loss, v)

    spec = differential(step, [(tree(d, 0.2),) for d in DEPTHS])
    assert spec.stats()["graph_runs"] >= 5, spec.report()


def test_a_depth_d_tree_takes_d_plus_one_levels():
    """The nodes whose children are None are one level above those calls: d + 1 steps."""
    spec = janus.speculate(total)
    for _ in range(4):
        spec(tree(2, 1.0))
    for depth in (1, 3, 5):
        assert spec(tree(depth, 1.0)) == total(tree(depth, 1.0))
        (cycle,) = spec.graphs[0].recursion
        assert cycle.last_steps == depth + 1 and cycle.last_frames == 2 ** (depth + 1) - 1
