"""Python floats inside a recursion stay Python's: a `scale` fed to the graph and passed down
(`embed(node.left, scale / 2.0)`) is held per frame in float64, and a tree node's float attribute
is read per frame; both are computed as Python computes them (`1.0 // 0.1` is 9.0), and where
Python raises - a zero divisor, a float power that would be complex or overflow - the call runs
in Python and raises as eager does.  A tensor's arithmetic with such a float is a tensor's, which
does not raise."""
import tensorflow as tf

from tests.harness import differential

V = tf.constant([1.0, 2.0])


class Node:
    def __init__(self, w, left=None, right=None):
        self.w, self.left, self.right = w, left, right


def tree(depth, w=1.0):
    if depth == 0:
        return Node(w)
    return Node(w, tree(depth - 1, w + 1.0), tree(depth - 1, w + 2.0))


def halving(node, scale):
    if node.left is None:
        return V * node.w * scale
    return tf.tanh(halving(node.left, scale) + halving(node.right, scale / 2.0))


def reciprocal(node, s):
    if node.left is None:
        return V * (1.0 / s)
    return reciprocal(node.left, s) + reciprocal(node.right, s - 1.0)


def floored(node, s):
    if node.left is None:
        return V * (7.0 // s) + 7.0 % s
    return floored(node.left, s) + floored(node.right, s - 0.5)


def rooted(node, s):
    if node.left is None:
        return V * s ** 0.5
    return rooted(node.left, s) + rooted(node.right, s - 2.0)


def powered(node, s):
    if node.left is None:
        return V * float(s ** 300 > 1.0)
    return powered(node.left, s * 10.0) + powered(node.right, s)


def summed(node, s):
    """Returns a Python float: 1e300 stays a double."""
    if node.left is None:
        return s * 2.0
    return summed(node.left, s) + summed(node.right, s / 3.0)


def tensor_divided(node, s):
    """`V / s` is a tensor's division: inf at s == 0.0, as in eager."""
    if node.left is None:
        return V / s
    return tensor_divided(node.left, s) + tensor_divided(node.right, s - 1.0)


def attribute_floored(node):
    if node.left is None:
        return tf.constant([1.0], tf.float64) * (node.w // 0.1) + node.w % 0.1
    return attribute_floored(node.left) + attribute_floored(node.right)


def attribute_reciprocal(node):
    if node.left is None:
        return tf.constant([1.0], tf.float64) * (1.0 / (node.w - 4.0))
    return attribute_reciprocal(node.left) + attribute_reciprocal(node.right)


FLOATS = [1.0, 2.0, 3.0, 0.5, 1.0, 2.0, 0.0, 1.5, -1.0, 4.0, 1e300, 3.0, 0.25]


def _calls(values, depth=2):
    t = tree(depth)
    return [(t, v) for v in values]


def _stats(spec):
    return spec.stats()


def test_a_fed_float_passed_down_runs_in_the_graph():
    spec = differential(halving, _calls([1.0, 2.0, 0.5, 3.0, 0.0, 1.5, 0.75]))
    stats = _stats(spec)
    assert stats["graph_runs"] >= 3 and stats["guard_failures"] == 0, spec.report()
    assert "IMPERATIVELY" not in spec.report(), spec.report()


def test_a_fed_float_divisor_reaching_zero_in_a_frame_raises_as_eager():
    spec = differential(reciprocal, _calls(FLOATS))
    assert _stats(spec)["graph_runs"] >= 3, spec.report()


def test_floor_division_and_modulo_by_a_fed_float_are_pythons():
    spec = differential(floored, _calls(FLOATS + [0.1, 0.3]))
    assert _stats(spec)["graph_runs"] >= 3, spec.report()


def test_a_fed_float_to_a_fractional_power_below_zero_raises_as_eager():
    differential(rooted, _calls(FLOATS))


def test_a_fed_float_power_that_overflows_raises_as_eager():
    differential(powered, _calls(FLOATS))


def test_a_fed_float_keeps_its_64_bits_in_the_frames():
    spec = differential(summed, _calls(FLOATS))
    assert _stats(spec)["graph_runs"] >= 3, spec.report()


def test_a_tensor_divided_by_a_fed_float_of_zero_gives_inf_in_the_graph():
    spec = differential(tensor_divided, _calls([3.0, 4.0, 5.0, 1.0, 2.0, 6.0]))
    stats = _stats(spec)
    assert stats["graph_runs"] >= 3 and stats["guard_failures"] == 0, spec.report()


def test_a_node_float_attribute_floor_divided_is_pythons():
    t = tree(2)
    t.left.left.w = t.right.right.w = 7.0
    spec = differential(attribute_floored, [(t,)] * 5)
    assert _stats(spec)["graph_runs"] >= 2, spec.report()


def test_a_node_float_attribute_divisor_of_zero_raises_as_eager():
    differential(attribute_reciprocal, [(tree(2),)] * 4)


def depth_and_sum(node):
    """`max` and `min` of the Python numbers the frames return and the nodes hold."""
    if node.left is None:
        return V * node.w, 0, min(node.w, 2.5)
    h1, d1, m1 = depth_and_sum(node.left)
    h2, d2, m2 = depth_and_sum(node.right)
    return h1 + h2, max(d1, d2, 0) + 1, max(m1, m2) + min(node.w, m1, 9.5)


def int_and_float(node):
    """`max(an int, a float)` is the int or the float by their values: that runs in Python."""
    if node.left is None:
        return V, 0
    h, d = int_and_float(node.left)
    return h * 2.0, max(d, node.w)


def test_max_and_min_of_the_frames_python_numbers_run_in_the_graph():
    spec = differential(depth_and_sum, [(tree(d, w),) for d, w in [(2, 1.0), (3, 0.5), (1, 4.0), (2, 3.0), (3, 1.0)]])
    assert _stats(spec)["graph_runs"] >= 2, spec.report()


def test_max_of_an_int_and_a_float_in_the_frames_says_why_it_runs_in_python():
    spec = differential(int_and_float, [(tree(d, w),) for d, w in [(2, 1.0), (3, 0.5), (1, 4.0), (2, 3.0)]])
    assert "the result's type depends on which one wins" in spec.report(), spec.report()


def rounded_up(node, s):
    if node.left is None:
        return V * round(s)
    return rounded_up(node.left, s) + rounded_up(node.right, s * 2.0)


def test_round_of_a_float_at_two_to_the_63_is_pythons_int():
    """float64(2**63 - 1) is 2**63: a range check against it would let 2.0**63 wrap in int64."""
    differential(rounded_up, _calls([1.5, 2.5, 3.5, 2.0 ** 62, 2.5, 2.0 ** 63, -2.0 ** 63, 0.5], depth=1))


def equal_to(node, k, s):
    if node.left is None:
        return V * float(k == s) + V * float(k < s)
    return equal_to(node.left, k + 1, s) + equal_to(node.right, k, s * 1.0)


def test_a_frame_int_and_float_compare_exactly_past_two_to_the_53():
    t = tree(1)
    big = 2 ** 53
    differential(equal_to, [(t, k, s) for k, s in [(1, 2.0), (3, 2.0), (5, 2.0), (big, float(big)),
                                                   (big + 1, float(big)), (7, 6.0)]])


def int_tensor_times(node, s):
    if node.left is None:
        return tf.constant([2]) * s
    return int_tensor_times(node.left, s) + int_tensor_times(node.right, s * 3.0)


def test_an_int_tensor_times_a_frame_float_raises_as_eager():
    spec = differential(int_tensor_times, _calls([7.7, 1.5, 2.0, 0.5], depth=1))
    assert "meets a tensor of int32, which eager refuses" in spec.report(), spec.report()
