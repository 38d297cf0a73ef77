"""Python arithmetic on numbers computed from tensors (`float(t)`, `int(t)`) and on NumPy values
follows Python and NumPy to the bit: floor division and remainder from `fmod`, exact int/float
comparisons, Python's errors for float powers, int64's edge, `max`/`min` with a NaN, attribute
tests, and no gradient through `float(t)`.  Each test compares janus with eager on every call,
by `repr` and type (so -0.0, NaN and the result's Python type count)."""
import numpy as np
import pytest
import tensorflow as tf

import janus
from tests.harness import differential


def _plain(v):
    if isinstance(v, (tf.Tensor, tf.Variable)):
        return ("tensor", v.dtype.name, repr(v.numpy().tolist()))
    if isinstance(v, (list, tuple)):
        return type(v).__name__, [_plain(x) for x in v]
    return type(v).__name__, repr(v)


def _outcome(fn, arg):
    try:
        return "return", _plain(fn(arg))
    except Exception as exc:  # noqa: BLE001 - compared
        return "raise", type(exc).__name__, str(exc)


def same_as_eager(fn, inputs):
    spec = janus.speculate(fn)
    for x in inputs:
        assert _outcome(spec, x) == _outcome(fn, x), x
    assert spec.stats()["graph_runs"] >= 1, spec.report()
    return spec


def _f64(*rows):
    return [tf.constant(r, tf.float64) for r in rows]


def floor_divide(x):
    return float(x[0]) // float(x[1]), float(x[0]) % float(x[1])


def test_float_floor_division_and_remainder_are_pythons():
    same_as_eager(floor_divide, _f64([7.0, 2.0], [5.0, 3.0], [9.0, 4.0], [1.0, 0.1], [-1.0, float("inf")],
                                     [0.7, 0.1], [-3.0, 3.0], [-0.0, 3.0], [3.0, -2.0], [-7.5, 2.0]))


def power(x):
    return float(x[0]) ** float(x[1])


def test_a_float_power_gives_pythons_complex_number_and_errors():
    same_as_eager(power, _f64([2.0, 2.0], [3.0, 0.5], [4.0, 1.5], [-8.0, 1 / 3], [0.0, -1.0], [10.0, 400.0],
                              [-2.0, 3.0], [2.0, 0.5]))


def int_divide(x):
    return int(x[0]) / int(x[1])


def test_int_true_division_rounds_once():
    same_as_eager(int_divide, [tf.constant(v, tf.int64) for v in ([7, 2], [5, 3], [9, 4], [2 ** 53 + 1, 3], [1, 3])])


def int_float_compare(x):
    i, f = int(x[0]), float(x[1])
    return i == f, i < f, i <= f, i > f, i >= f, i != f, f < i


def test_an_int_and_a_float_compare_exactly():
    inputs = [tf.constant(v, tf.int64) for v in ([7, 2], [5, 3], [9, 4], [2 ** 53 + 1, 2 ** 53], [3, 3], [-4, -3])]
    same_as_eager(int_float_compare, inputs)


def int64_edge(x):
    n = int(x)
    return -n, abs(n), n // -1


def test_negating_int64s_minimum_is_pythons_big_int():
    same_as_eager(int64_edge, [tf.constant(v, tf.int64) for v in (7, -5, 9, -2 ** 63, 3)])


def max_min(x):
    return max(float(x[0]), float(x[1])), min(float(x[0]), float(x[1]))


def test_max_and_min_keep_the_first_against_a_nan():
    same_as_eager(max_min, [tf.constant(v) for v in ([7.0, 2.0], [5.0, 3.0], [1.0, 4.0], [1.0, float("nan")],
                                                     [0.0, -0.0], [-0.0, 0.0])])


def attributes(x):
    a = float(x)
    return hasattr(a, "is_integer"), hasattr(a, "nope"), getattr(a, "nope", None)


def test_attribute_tests_on_a_computed_number_answer_for_its_python_type():
    same_as_eager(attributes, [tf.constant(v) for v in (1.0, 2.0, 3.0, 4.0, 5.0)])


def gradient(x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = float(x) * x
    return tape.gradient(y, x)


def test_float_of_a_tensor_is_a_constant_for_gradients():
    same_as_eager(gradient, [tf.constant(v) for v in (1.0, 2.0, 3.0, 0.5, -2.0)])


def numpy_floor_divide(u):
    return u[0] // 0.1, u[1] % 3.0, u[0] // u[1]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_numpy_float_floor_division_and_remainder_are_numpys(dtype):
    same_as_eager(numpy_floor_divide, [np.array(v, dtype) for v in ([7.0, 2.0], [5.0, 3.0], [9.0, 4.0], [1.0, -0.0],
                                                                    [-3.0, 3.0], [1.0, 0.0])])


def bitwise(x, k):
    n = int(tf.reduce_sum(x))
    return (x * 2.0, n << 2, n >> 1, n & 6, n | 9, n ^ 5, ~n, 5 & n, 3 << k, n >> k,
            (n > 2) & (n > 4), True ^ (n > 3))


def test_bitwise_operators_of_an_int_from_a_tensor_keep_the_graph_and_pythons_results():
    calls = [(tf.constant([1.0, float(j)]), j % 4) for j in range(8)]
    calls += [(tf.constant([-7.0, 2.0]), 70),      # `3 << 70` leaves int64: the call runs in Python
              (tf.constant([1.0, 2.0]), 62),
              (tf.constant([3.0, 2.0]), -1)]       # a negative shift count raises ValueError
    spec = differential(bitwise, calls)
    assert spec.stats()["graph_runs"] >= 4, spec.report()
