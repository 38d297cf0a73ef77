"""Derivatives the caller takes through a speculated call: eager's, also where TensorFlow's own
derivatives of a graph would differ.

TensorFlow differentiates a function call's gradient, and runs forward mode through it, with
functions of its own, and those give zeros where eager's tape finds no connection and gives
None (the second derivative of `3 * x`, the forward derivative of an output that does not read
the input).  A call that a forward accumulator, nested tapes or a persistent tape watches runs
in Python; one first-order tape keeps the graph."""
import numpy as np
import tensorflow as tf

import janus


def linear(x):
    return 3.0 * x


def cubic(x):
    return x * x * x


def branchy(x, z):
    if tf.reduce_sum(x) > 0:
        return tf.nn.relu(x) * 2.0, z * z
    return x, 3.0 * z + 0.0 * tf.stop_gradient(x)


def _values(v):
    if v is None:
        return None
    if isinstance(v, (list, tuple)):
        return [_values(t) for t in v]
    return np.asarray(v).tolist()


def nested(fn, x, *rest):
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = fn(x, *rest)
        d1 = inner.gradient(y, x)
    return _values(y), _values(d1), _values(outer.gradient(d1, x) if d1 is not None else None)


def persistent(fn, x, *rest):
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = fn(x, *rest)
        d1 = tape.gradient(y, x)
    return _values(y), _values(d1), _values(tape.gradient(d1, x) if d1 is not None else None)


def forward(fn, x, *rest):
    with tf.autodiff.ForwardAccumulator(x, tf.ones_like(x)) as acc:
        y = fn(x, *rest)
    return _values(y), [_values(acc.jvp(t)) for t in tf.nest.flatten(y)]


def first_order(fn, x, *rest):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = fn(x, *rest)
    return _values(y), _values(tape.gradient(y, x))


def _compare(fn, way, args_of, calls=6):
    spec = janus.speculate(fn, profile_runs=2)
    for i in range(calls):
        assert way(fn, *args_of(i)) == way(spec, *args_of(i)), f"call {i}"
    return spec


def _scalar(i):
    return (tf.constant([float(i) - 2.0, 1.5]),)


def _pair(i):
    return tf.constant([float(i) - 2.0, 1.5]), tf.constant([1.0, float(i)])


def test_second_derivative_of_a_linear_function_is_none_as_in_eager():
    spec = _compare(linear, nested, _scalar)
    assert nested(spec, *_scalar(0))[2] is None
    assert "outside-derivatives" in spec.report()


def test_second_derivative_through_nested_tapes_equals_eager():
    _compare(cubic, nested, _scalar)
    _compare(branchy, nested, _pair)


def test_persistent_tape_taking_both_derivatives_equals_eager():
    spec = _compare(linear, persistent, _scalar)
    assert persistent(spec, *_scalar(0))[2] is None
    _compare(branchy, persistent, _pair)


def test_forward_accumulator_gives_none_for_an_output_that_does_not_read_the_input():
    spec = _compare(branchy, forward, _pair)
    assert forward(spec, *_pair(0))[1][1] is None
    _compare(cubic, forward, _scalar)


def test_one_first_order_tape_keeps_the_graph():
    spec = _compare(branchy, first_order, _pair)
    assert spec.stats()["graph_runs"] >= 3
    assert "outside-derivatives" not in spec.report()


def test_derivatives_taken_inside_the_function_keep_the_graph():
    def second(x):
        with tf.GradientTape() as outer:
            outer.watch(x)
            with tf.GradientTape() as inner:
                inner.watch(x)
                y = 3.0 * x
            d1 = inner.gradient(y, x)
        return d1, outer.gradient(d1, x)

    spec = janus.speculate(second, profile_runs=2)
    for i in range(5):
        x = tf.constant([float(i), 2.0])
        assert _values(second(x)) == _values(spec(x))
    assert spec.stats()["graph_runs"] >= 2


V = tf.Variable([0.5, 1.5])


def reads_variable(x):
    return tf.tanh(x) * 3.0 + V * x


def test_second_derivative_by_a_variable_the_function_reads_is_none_as_in_eager():
    """The tape watches a trainable variable when it is read; TensorFlow's own call marks the
    graph's variables read before it asks the tapes, and so does janus's check."""
    def outer(fn, x):
        with tf.GradientTape() as t2:
            with tf.GradientTape() as t1:
                y = tf.reduce_sum(fn(x))
            d1 = t1.gradient(y, V)
        return _values(d1), _values(t2.gradient(d1, V))

    spec = janus.speculate(reads_variable, profile_runs=2)
    for i in range(6):
        x = tf.constant([float(i), 1.0])
        assert outer(spec, x) == outer(reads_variable, x)
