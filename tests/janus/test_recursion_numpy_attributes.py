"""NumPy scalar attributes of tree nodes inside a recursion compute as NumPy computes them: a
Python number meeting an `np.float32` is cast to float32 first (NEP 50), an `np.float16` stays
float16, and a tree whose values a table would round (an np.float64 in a float32 table) gets
tables of its own.  Where the nodes' NumPy types vary, arithmetic on them runs in Python: the
rounding would vary by node.  Each call is compared with eager: values to the bit, dtypes and
Python types."""
import numpy as np
import tensorflow as tf

import janus
from tests.harness import assert_same_outcome, run_capturing

ONE64 = tf.constant([1.0], tf.float64)


class Node:
    def __init__(self, w, left=None, right=None):
        self.w, self.left, self.right = w, left, right


def tree(depth, w, kind):
    if depth == 0:
        return Node(kind(w))
    return Node(kind(w), tree(depth - 1, w * 1.1, kind), tree(depth - 1, w * 0.7, kind))


def leaf_sum(node):
    if node.left is None:
        return ONE64 * node.w
    return leaf_sum(node.left) + leaf_sum(node.right)


def scaled(node, s):
    if node.left is None:
        return ONE64 * (node.w * s)
    return scaled(node.left, s) + scaled(node.right, s * 0.5)


def returned(node):
    """Returns the NumPy number the nodes' products make, and an int depth."""
    if node.left is None:
        return node.w * 0.1, 0
    x, k = returned(node.left)
    y, j = returned(node.right)
    return x + y + node.w, k + j + 1


def with_constant(node):
    if node.left is None:
        return ONE64 * (node.w * np.float32(0.1) + 1.0)
    return with_constant(node.left) + with_constant(node.right)


def _bits(value):
    """The value with every tensor and NumPy number as its type, dtype and bytes."""
    if isinstance(value, tuple):
        return tuple(map(_bits, value))
    if isinstance(value, (tf.Tensor, np.generic)):
        return type(value).__name__, np.asarray(value).dtype.name, np.asarray(value).tobytes()
    return type(value).__name__, repr(value)


def differential(fn, calls):
    """As the harness's, with tensors and NumPy numbers compared to the bit (its tolerance would
    hide a float64 rounded to float32)."""
    spec = janus.speculate(fn)
    for args in calls:
        eager, ours = run_capturing(fn, args), run_capturing(spec, args)
        assert_same_outcome(eager, ours)
        if eager[0][0] == "return":
            assert _bits(eager[0][1]) == _bits(ours[0][1]), (eager, ours)
    return spec


def _calls(kinds, *extra):
    return [(tree(2, 0.4, kind), *extra) for kind in kinds for _ in range(3)]


def test_a_float64_tree_after_float16_and_float32_trees_keeps_its_64_bits():
    """The float16 tree's table was float32 with no one NumPy type; a float64 tree fit it and was
    read back rounded to float32."""
    spec = differential(leaf_sum, _calls([np.float32, np.float16, np.float64]))
    assert spec.stats()["graph_runs"] >= 4, spec.report()


def test_a_float32_attribute_times_a_frame_float_is_float32():
    """(The float16 tree runs in Python: its frame float would be rounded to float16 twice.)"""
    spec = differential(scaled, _calls([np.float32, np.float64, np.float16], 0.3))
    assert spec.stats()["graph_runs"] >= 3, spec.report()


def test_numpy_numbers_returned_from_a_recursion_keep_their_type():
    differential(returned, _calls([np.float32, np.float16, np.float64, float]))


def test_a_numpy_constant_meeting_a_numpy_attribute_follows_numpy():
    differential(with_constant, _calls([np.float32, np.float64, float]))


def mixed(depth, w):
    node = tree(depth, w, np.float32)
    node.left.w, node.right.right.w = np.float64(w / 3), 2 ** 24 + 1
    return node


def test_nodes_of_several_numpy_types_run_in_python_where_their_numbers_meet():
    """np.float32 on some nodes, np.float64 and a Python int past 2**24 on others: each node's
    `w * s` rounds in its own type in eager."""
    spec = differential(scaled, [(mixed(2, w), 0.3) for w in (0.4, 0.5, 0.6, 0.7)])
    assert "type and rounding vary by node" in spec.report(), spec.report()


def test_nodes_of_several_numpy_types_meeting_only_tensors_run_in_the_graph():
    spec = differential(leaf_sum, [(mixed(2, w),) for w in (0.4, 0.5, 0.6, 0.7, 0.8)])
    assert spec.stats()["graph_runs"] >= 2, spec.report()


def left_constant(node):
    """A NumPy scalar on the left: NumPy's own operator would hand `__rmul__` a Python float."""
    if node.left is None:
        return ONE64 * (np.float32(0.1) * node.w) + ONE64 * (np.float64(2.0) - node.w)
    return left_constant(node.left) + left_constant(node.right)


def test_a_numpy_constant_on_the_left_keeps_its_type():
    spec = differential(left_constant, _calls([np.float16, float, int, np.float32]))
    assert spec.stats()["graph_runs"] >= 4, spec.report()


def half_scaled(node, s):
    if node.left is None:
        return ONE64 * (node.w * s) + ONE64 * (node.w * 1.0009765625000009)
    return half_scaled(node.left, s) + half_scaled(node.right, s)


def test_a_float16_attribute_times_a_float_is_rounded_once():
    """NumPy rounds a float64 straight to float16; TensorFlow's cast goes through float32.  A
    literal is rounded when the graph is built; a float held in the graph makes the call run in
    Python."""
    leaves = Node(np.float16(1.0), Node(np.float16(2.0)), Node(np.float16(4.5)))
    differential(half_scaled, [(leaves, s) for s in (1.5, 1 + 2 ** -11 + 2 ** -40, 2 + 2 ** -10 + 2 ** -39, 0.75)])


def big_literals(node):
    if node.left is None:
        if node.w >= 9007199254740993 or node.w == 16777216.5:
            return ONE64 * 2.0
        if node.w < 2 ** 40:
            return ONE64 * 3.0
        return ONE64 * 1.0
    return big_literals(node.left) + big_literals(node.right)


def test_a_numpy_int_compared_with_an_int_past_its_range_is_exact():
    spec = differential(big_literals, _calls([np.int32, np.int64, np.int32]))
    assert spec.stats()["graph_runs"] >= 4, spec.report()


def powered(node, e):
    if node.left is None:
        return ONE64 * node.w ** e
    return powered(node.left, e) + powered(node.right, e * 0.5)


def test_a_float_power_over_many_frames_is_pythons():
    """TensorFlow's Pow kernel over several elements is not libm's pow (a fifth of inputs differ in
    the last bit): the call runs in Python, with its reason."""
    spec = differential(powered, [(tree(3, w, kind), 0.731) for w in (0.3, 3.7, 11.1) for kind in (float, np.float32)])
    assert "vectorised pow" in spec.report(), spec.report()


def test_an_int_past_2_to_the_53_beside_floats_runs_that_call_in_python():
    """No one table holds both exactly; the trees after it run in the graph again."""
    def with_big(w):
        node = tree(2, w, float)
        node.left.left.w = 2 ** 53 + 1
        return node
    calls = [(tree(2, w, float),) for w in (0.4, 0.5, 0.6, 0.7)] + [(with_big(0.3),)] * 2 + \
        [(tree(2, w, float),) for w in (0.8, 0.9)]
    spec = differential(leaf_sum, calls)
    assert spec.stats()["graph_runs"] >= 3 and not spec.stats()["imperative"], spec.report()
    assert "no one table holds exactly" in spec.report(), spec.report()
