"""A build that stops inside a traced `tf.map_fn` or `tf.scan` (its body does what no graph can)
leaves TensorFlow's own state as eager has it: those set the variable scope's caching device
while they trace, and eager's `tf.recompute_grad` would then raise.  The call runs in Python
and equals eager."""
import numpy as np
import pytest
import tensorflow as tf

import janus

X = tf.constant([[1.0, 2.0], [3.0, 4.0]])


def maps_with_a_numpy_scalar(x):
    return tf.map_fn(lambda v: v * np.float32(v[0]), x)


def scans_with_a_numpy_scalar(x):
    return tf.scan(lambda acc, v: acc + v * np.float32(v[0]), x)


def maps_in_graph(x):
    return tf.map_fn(lambda v: v * 2.0, x)


def recomputed_gradient(x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(tf.recompute_grad(lambda v: tf.sin(v) * 2.0)(x))
    return y, tape.gradient(y, x)


@pytest.mark.parametrize("fn", [maps_with_a_numpy_scalar, scans_with_a_numpy_scalar, maps_in_graph])
def test_eager_recompute_grad_still_works_after_the_build(fn):
    spec = janus.speculate(fn)
    for _ in range(5):
        assert spec(X).numpy().tobytes() == fn(X).numpy().tobytes()
    assert tf.compat.v1.get_variable_scope().caching_device is None
    value, gradient = recomputed_gradient(tf.constant([0.5, 1.0]))
    assert np.allclose(gradient.numpy(), 2.0 * np.cos([0.5, 1.0]))
