"""A division by a constant in a janus graph rounds as eager's `RealDiv` does: TensorFlow's
constant folding would multiply by the reciprocal instead (`10.0 / 3.0` in float32, `9 / 7` of an
int tensor, one ulp off), so janus hands such a divisor to the op through a placeholder."""
import numpy as np
import tensorflow as tf

import janus

VALUES = np.arange(1, 200, dtype=np.float32) * np.float32(1.37)


def _same_bits(fn, calls, runs=2):
    spec = janus.speculate(fn)
    for args in calls:
        eager = fn(*args)
        got = spec(*args)
        np.testing.assert_array_equal(np.asarray(got), np.asarray(eager))
    assert spec.stats()["graph_runs"] >= runs, spec.report()
    return spec


def thirds(x):
    return x / 3.0 + tf.reduce_sum(x) / 7.0


def test_a_float_tensor_divided_by_a_constant_equals_eager_bit_for_bit():
    _same_bits(thirds, [(tf.constant(VALUES * k),) for k in range(1, 7)])


def int_sevenths(n):
    return n / 7


def test_an_int_tensor_divided_by_a_python_int_equals_eager():
    _same_bits(int_sevenths, [(tf.constant(np.arange(1, 100) * k),) for k in range(1, 7)])


def in_a_loop(x, n):
    for _ in tf.range(n):
        x = x / 3.0 + 1.0
    if tf.reduce_sum(x) > 1000.0:
        x = x / 5.0
    return x


def test_divisions_inside_a_tensor_loop_and_branch_equal_eager():
    _same_bits(in_a_loop, [(tf.constant(VALUES * k), tf.constant(k)) for k in (1, 2, 3, 4, 5, 1, 2)])


def gradient(x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(tf.sin(x / 3.0))
    return tape.gradient(y, x)


def test_the_gradient_through_a_division_by_a_constant_equals_eager():
    _same_bits(gradient, [(tf.constant(VALUES * k),) for k in range(1, 7)])


def split(n, x):
    if n <= 1:
        return x / 3.0
    return split(n - 1, x) + split(n - 2, x) / 7.0


def test_a_division_by_a_constant_in_a_recursion_machine_equals_eager():
    _same_bits(split, [(tf.constant(n), tf.constant(VALUES[:5] * n)) for n in (3, 4, 5, 6, 4, 3)])
