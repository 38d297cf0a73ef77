"""NumPy numbers a recursion passes down, returns or computes by comparing keep NumPy's type and
value in every frame: an `np.int32` accumulator changed on the way down is each frame's own (the
root's value is not shared by all frames), an `np.float32` sum comes back as one, and a comparison
of NumPy numbers is an `np.bool_`.  A value that is a NumPy number of one type in some frames and
anything else in others runs in Python.  Each call is compared with eager to the bit, and the
graph must have run."""
import numpy as np
import tensorflow as tf

from tests.janus.test_recursion_numpy_attributes import differential, tree

ONE64 = tf.constant([1.0], tf.float64)


def product_down(node, acc):
    if node.left is None:
        return ONE64 * float(acc)
    return product_down(node.left, acc * node.w) + product_down(node.right, acc - node.w)


def sum_down(node, acc):
    if node.left is None:
        return acc
    return sum_down(node.left, acc + node.w) + sum_down(node.right, acc * node.w)


def all_below(node, s):
    if node.left is None:
        return node.w < s
    return all_below(node.left, s) & all_below(node.right, s)


def both_below(node, s):
    if node.left is None:
        return node.w < s, ONE64 * node.w
    a, x = both_below(node.left, s)
    b, y = both_below(node.right, s)
    return a and b, x + y


def bools_as_numbers(node, s):
    if node.left is None:
        small = node.w < s
        return ONE64 * float(small) + int(~small) + (small ^ True) * 10 + (small + 1) * 100
    return bools_as_numbers(node.left, s) + bools_as_numbers(node.right, s)


def below_or_python(node, acc):
    if node.left is None:
        return ONE64 * float(acc)
    return below_or_python(node.left, acc + 1) + below_or_python(node.right, 0)


def tagged(node, tag):
    if node.left is None:
        return ONE64 * float(tag)
    return tagged(node.left, tag) + tagged(node.right, 1)


class Model:
    def __init__(self, k):
        self.k = k


def swapped(node, model, other):
    if node.left is None:
        return ONE64 * model.k
    return swapped(node.left, other, model) + swapped(node.right, model, other)


def _ran_graph(spec, n):
    line = spec.report().splitlines()[1]
    assert f"{n} graph" in line, spec.report()


def _trees(kind, weights, *extra):
    return [(tree(2, w, kind), *extra) for w in weights]


def test_a_numpy_int_changed_on_the_way_down_is_each_frames_own():
    """Every frame used the root's `np.int32(7)`: its spec was an object all frames share, and the
    calls' `acc * node.w` did not replace it (a wrong result, with no guard failing)."""
    spec = differential(product_down, [(t, np.int32(7)) for t, in _trees(np.int32, [3, 5, 9, 11, 100, 2000, 3])])
    _ran_graph(spec, 4)
    spec = differential(product_down, [(t, np.int64(7)) for t, in _trees(np.int64, [3, 5, 9, 11, 100, 2000])])
    _ran_graph(spec, 3)


def test_a_numpy_float_sum_comes_back_as_numpy():
    spec = differential(sum_down, [(t, np.float32(0.25)) for t, in _trees(np.float32, [0.4, 0.5, 0.6, 0.7, 0.8, 0.9])])
    _ran_graph(spec, 3)


def test_a_numpy_comparison_returned_is_a_numpy_bool():
    for fn in (all_below, both_below):
        spec = differential(fn, [(t, np.float32(0.3)) for t, in _trees(np.float32, [0.1, 0.4, 0.2, 0.5, 0.25, 0.6])])
        _ran_graph(spec, 3)


def test_numpy_bools_in_arithmetic_and_conversions_are_numpys():
    spec = differential(bools_as_numbers,
                        [(t, np.float32(0.5)) for t, in _trees(np.float32, [0.1, 0.4, 0.9, 0.5, 0.3, 0.6])])
    _ran_graph(spec, 3)


def test_a_numpy_number_in_some_frames_and_a_python_int_in_others_runs_in_python():
    differential(below_or_python, [(t, np.int32(2)) for t, in _trees(np.int32, [3, 4, 5, 6, 7, 8])])


def test_an_object_the_root_gets_and_a_call_replaces_runs_in_python():
    """The root's object (a NumPy int of a type no table holds, a model) was taken as shared by
    every frame, and a call passing another value (an int, the other model) was not seen."""
    differential(tagged, [(t, np.int8(7)) for t, in _trees(float, [0.4, 1.4, 2.4, 3.4, 4.4, 5.4])])
    differential(tagged, [(t, np.uint8(9)) for t, in _trees(float, [0.4, 1.4, 2.4, 3.4, 4.4, 5.4])])
    differential(swapped, [(t, Model(1.0), Model(2.0)) for t, in _trees(float, [0.4, 1.4, 2.4, 3.4, 4.4, 5.4])])


def test_a_numpy_argument_that_varies_is_fed_and_each_frame_computes_with_it():
    """A NumPy scalar argument is a constant while it repeats and fed as a tensor once it varies
    (it was checked by identity, so every call built a graph)."""
    calls = [(t, np.float32(0.25 * k)) for k, (t,) in enumerate(_trees(np.float32, [0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]))]
    spec = differential(sum_down, calls)
    _ran_graph(spec, 4)
    assert "2 graphs built" in spec.report(), spec.report()
    calls = [(t, np.int32(k - 3)) for k, (t,) in enumerate(_trees(np.int32, [3, 5, 9, 11, 100, 2000, 7]))]
    spec = differential(product_down, calls)
    _ran_graph(spec, 4)
    spec = differential(all_below, [(t, np.float32(0.1 * k)) for k, (t,) in enumerate(
        _trees(np.float32, [0.1, 0.4, 0.2, 0.5, 0.25, 0.6, 0.3]))])
    _ran_graph(spec, 4)
