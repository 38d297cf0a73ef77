"""A result is a Python number where eager's is one on this call, a tensor where eager's is a
tensor: what the profiled calls returned does not decide it.  A function profiled with Python
ints and later called with a scalar tensor returns the tensor eager returns (it returned the
Python int the profile had seen)."""
import tensorflow as tf

import janus
from tests.harness import differential


def doubled(x, k):
    return k * 2


def three(x, k):
    return x + tf.cast(k, tf.float32), isinstance(k, int), k + 1, k / 2


def gated(x, k):
    if x > 0:
        return k * 2
    return k


def halved(s):
    return s * 2.0, s is not None and s > 2


def chain(n, k):
    if n == 0:
        return k
    return chain(n - 1, k * 2 + 1)


def base_scaled(n, k):
    if n == 0:
        return k * 2
    return base_scaled(n - 1, k) + 1


def _graph_ran(spec):
    assert spec.stats()["graph_runs"] >= 1, spec.report()


PY_THEN_TENSOR = [1, 2, 3, tf.constant(4), tf.constant(5), 6, tf.constant(7, tf.int64)]


def test_a_tensor_argument_after_python_ints_returns_a_tensor():
    for fn in (doubled, three, gated):
        _graph_ran(differential(fn, [(tf.constant(1.5), k) for k in PY_THEN_TENSOR]))


def test_a_float64_tensor_after_python_floats_returns_a_tensor():
    _graph_ran(differential(halved, [(s,) for s in (1.5, 2.5, 3.5, tf.constant(4.5, tf.float64), 0.5,
                                                    tf.constant(5.5, tf.float64))]))


def test_a_recursion_given_a_tensor_after_python_ints_returns_a_tensor():
    for fn in (chain, base_scaled):
        _graph_ran(differential(fn, [(tf.constant(n), k) for n, k in
                                     zip((3, 4, 2, 5, 3, 4), (1, 2, 3, tf.constant(4), 5, tf.constant(6)))]))


def bumped(v, x):
    v.assign_add(x)
    return v, [v], x * 2


def test_a_variable_in_the_result_is_the_variable_itself():
    """A `tf.Variable` returned (alone or in a list) comes back as the very variable, holding
    the value the call's writes left, and the function keeps its graph."""
    v_eager, v_janus = tf.Variable([1.0, 2.0]), tf.Variable([1.0, 2.0])
    spec = janus.speculate(bumped)
    for i in range(6):
        x = tf.constant([1.0, float(i)])
        a, b = bumped(v_eager, x), spec(v_janus, x)
        assert b[0] is v_janus and b[1][0] is v_janus
        assert a[0].numpy().tolist() == b[0].numpy().tolist() and a[2].numpy().tolist() == b[2].numpy().tolist()
    assert spec.stats()["graph_runs"] >= 3, spec.report()
