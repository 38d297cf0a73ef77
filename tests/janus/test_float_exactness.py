"""janus's graphs compute eager's floats bit for bit where TensorFlow's graph passes would not:
constant folding turns `x / 7.0` into a multiplication by the reciprocal and `1.0 / x` into
`Reciprocal` (one ulp off eager), folds divisors built from constants, regroups `x * 0.1 * 0.3`
and drops `x + 0.0` (-0.0 for eager's 0.0); janus turns it off with the arithmetic optimizer."""
import numpy as np
import pytest
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


def reciprocal_of_tensor(x):
    return 1.0 / x


def realdiv_names(x):
    return tf.realdiv(x, 3.0) + tf.raw_ops.RealDiv(x=x, y=tf.constant(7.0)) + tf.math.xdivy(x, 3.0)


def folded_divisors(x):
    return x / tf.sqrt(tf.constant(3.0)) + x / (tf.constant(2.0) + 1.0) + x / tf.cast(tf.shape(x)[0], tf.float32)


def regrouped(x):
    return x * 0.1 * 0.3 + (x + 0.1 + 0.7) + (0.3 - (x + 0.1))


def signed_zeros(x):
    return x + 0.0, 0.0 - x, tf.zeros_like(x) + x / 7.0


@pytest.mark.parametrize("fn", [reciprocal_of_tensor, realdiv_names, folded_divisors, regrouped])
def test_constant_folding_does_not_change_float_results(fn):
    """Found by adversarial programs: besides dividing by a reciprocal, grappler's constant
    folding turns 1 / x into a Reciprocal, folds divisors built from constants, and regroups."""
    _same_bits(fn, [(tf.constant(VALUES * k),) for k in range(1, 7)])


def test_signed_zeros_stay_as_eager_makes_them():
    zeros = np.array([-0.0, 0.0, -0.0, 1.0] * 5, np.float32)
    spec = janus.speculate(signed_zeros)
    for k in range(6):
        x = tf.constant(zeros * k if k else zeros)
        for e, j in zip(signed_zeros(x), spec(x)):
            assert np.asarray(e).tobytes() == np.asarray(j).tobytes()
    assert spec.stats()["graph_runs"] >= 2, spec.report()


W = tf.constant(np.random.RandomState(0).randn(3, 4).astype(np.float32))
B = tf.constant(np.random.RandomState(1).randn(4).astype(np.float32))


def fused_tanh(x):
    return tf.tanh(tf.nn.bias_add(tf.matmul(x, W), B)), tf.sigmoid(tf.matmul(x, W) + B), tf.nn.elu(x @ W + B)


def test_matmul_bias_and_activation_are_not_fused():
    """Found by an adversarial Keras program: grappler's remapper fuses these into one kernel
    whose tanh, sigmoid and elu round differently from eager's separate ops."""
    rng = np.random.RandomState(2)
    spec = janus.speculate(fused_tanh)
    for _ in range(6):
        x = tf.constant(rng.randn(4, 3).astype(np.float32))
        for e, j in zip(fused_tanh(x), spec(x)):
            assert np.asarray(e).tobytes() == np.asarray(j).tobytes()
    assert spec.stats()["graph_runs"] >= 2, spec.report()
