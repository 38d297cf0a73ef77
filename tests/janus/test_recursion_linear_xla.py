"""A linear recursion under `jit_compile=True`: its two loops run inside XLA, and its gradient is a
second XLA function that runs them again and differentiates them there.

XLA may round floats otherwise than TensorFlow's kernels (a user of `jit_compile=True` accepts
that, as with `tf.function`), so values and gradients are compared with eager's to a relative
1e-6; everything else (which calls run in Python, what is raised, which gradients are None) as
eager's exactly."""
import sys

import numpy as np
import pytest
import tensorflow as tf

import janus
from tests.harness import run_capturing
from tests.janus.test_recursion_linear import W, branch_after, halve_sum, kept_local, power, tail, two_values, w_power

OUTER = tf.constant([0.5, -0.25])


def outer_power(x, n):
    """Reads a tensor from outside the recursion and a variable, besides its arguments."""
    if n == 0:
        return x * OUTER
    return tf.tanh(outer_power(x, n - 1) * W + OUTER)


def int_halving(x, n, k):
    if n == 0:
        return x
    return int_halving(x, n - 1, k) * tf.cast(n // k, tf.float32)


def _strategy(spec):
    return spec.report(format="json")["recursion"][0]["strategy"]


def _close(eager, janus_, rtol=1e-6):
    (ek, ev), eprint = eager
    (jk, jv), jprint = janus_
    assert ek == jk and eprint == jprint, (eager, janus_)
    if ek == "raise":
        assert type(ev) is type(jv), (ev, jv)
        return
    for a, b in zip(tf.nest.flatten(ev), tf.nest.flatten(jv)):
        assert (a is None) == (b is None), (a, b)
        if a is not None:
            assert a.dtype == b.dtype and a.shape == b.shape, (a, b)
            np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=rtol, atol=rtol / 10)


def _compiled_calls(fn, calls, strategy="linear-xla", graph_runs=None, rtol=1e-6):
    spec = janus.speculate(fn, profile_runs=1, jit_compile=True)
    for args in calls:
        _close(run_capturing(fn, args), run_capturing(spec, args), rtol)
    assert spec.stats()["graph_runs"] >= (len(calls) - 1 if graph_runs is None else graph_runs), spec.report()
    assert _strategy(spec).startswith(strategy), spec.report()
    return spec


def _vec(*v):
    return tf.constant(v, tf.float32)


def _step(fn, *wrt):
    def step(x, n):
        with tf.GradientTape() as tape:
            tape.watch(x)
            out = fn(x, n)
            loss = tf.add_n([tf.reduce_sum(o * o) for o in tf.nest.flatten(out)])
        return loss, tape.gradient(loss, [x, *wrt])
    return step


_CALLS = [(_vec(1.0, 2.0), tf.constant(3)), (_vec(0.5, -1.0), tf.constant(0)),
          (_vec(3.0, 0.25), tf.constant(12)), (_vec(1.0, 1.0), tf.constant(1))]


@pytest.mark.parametrize("fn", [power, halve_sum, kept_local, branch_after, two_values, tail],
                         ids=["power", "halve_sum", "kept_local", "branch_after", "two_values", "tail"])
def test_values_and_gradients_under_xla_equal_eager(fn):
    _compiled_calls(fn, _CALLS)
    _compiled_calls(_step(fn), [(_vec(0.9, 1.1), tf.constant(4)), (_vec(0.5, 2.0), tf.constant(1)),
                                (_vec(1.01, 0.99), tf.constant(30))])


def test_gradients_reach_outside_tensors_and_variables():
    """(XLA's tanh is its own approximation: 20 levels of it differ from eager's by about 1e-5.)"""
    def step(x, n):
        with tf.GradientTape() as tape:
            tape.watch([x, OUTER])
            loss = tf.reduce_sum(outer_power(x, n) ** 2)
        return loss, tape.gradient(loss, [x, OUTER, W])
    _compiled_calls(step, [(_vec(0.9, 1.1), tf.constant(4)), (_vec(0.5, 2.0), tf.constant(2)),
                           (_vec(1.01, 0.99), tf.constant(20))], rtol=1e-4)


def test_a_variable_no_frame_reads_has_no_gradient_as_in_eager():
    def step(x, n):
        with tf.GradientTape() as tape:
            out = w_power(x, n)
        return tape.gradient(out, W)
    _compiled_calls(step, [(tf.constant(1.5), tf.constant(3)), (tf.constant(1.5), tf.constant(2)),
                           (tf.constant(1.5), tf.constant(0)), (tf.constant(0.5), tf.constant(5))], graph_runs=2)


def test_deeper_than_the_frames_xla_holds_runs_in_python():
    """The stacks hold as many frames as the recursion limit when the graph was built."""
    spec = janus.speculate(halve_sum, profile_runs=1, jit_compile=True)
    spec(tf.constant(1.0), tf.constant(3))
    old = sys.getrecursionlimit()
    try:
        sys.setrecursionlimit(old + 3000)
        for n in (old + 500, 5):
            np.testing.assert_allclose(spec(tf.constant(1.0), tf.constant(n)).numpy(),
                                       halve_sum(tf.constant(1.0), tf.constant(n)).numpy(), rtol=1e-6)
    finally:
        sys.setrecursionlimit(old)
    assert _strategy(spec).startswith("linear-xla"), spec.report()


def test_an_integer_division_xla_would_not_check_keeps_the_plain_loops():
    """XLA does not raise on an integer division by zero, where eager raises."""
    spec = _compiled_calls(int_halving, [(_vec(1.0), tf.constant(n), tf.constant(k)) for n, k in
                                         ((3, 1), (4, 2), (2, 3), (5, 1), (2, 0))], strategy="linear ", graph_runs=3)
    assert "XLA cannot run the loops: it uses FloorDiv" in _strategy(spec), spec.report()


def test_without_jit_compile_the_loops_run_without_xla():
    spec = janus.speculate(power, profile_runs=1)
    for args in _CALLS:
        spec(*args)
    assert _strategy(spec).startswith("linear ("), spec.report()


def unused_and_stopped(x, y, n):
    """`x` passed down and never used; W and OUTER only under stop_gradient."""
    if n == 0:
        return y
    return unused_and_stopped(x, y * 2.0, n - 1) * tf.stop_gradient(W) + tf.stop_gradient(OUTER)


def test_gradients_eager_gives_as_none_are_none():
    """TensorFlow's loop gradients give zeros for a source the loops carry but never use; eager's
    tape gives None, and so does janus now (the forward pass reports, per source and result, whether
    this call connects them)."""
    def step(x, y, n):
        with tf.GradientTape() as tape:
            tape.watch([x, y, OUTER])
            out = unused_and_stopped(x, y, n)
        return tape.gradient(out, [x, y, W, OUTER])

    def second_only(x, n):
        with tf.GradientTape() as tape:
            tape.watch(x)
            _, b = two_values(x, n)
            loss = tf.reduce_sum(b * b)
        return tape.gradient(loss, x)
    _compiled_calls(step, [(_vec(1.0, 1.0), _vec(2.0, 2.0), tf.constant(k)) for k in (3, 1, 4, 2)])
    _compiled_calls(second_only, [(_vec(1.5, 2.0), tf.constant(k)) for k in (3, 1, 4)])


def assigned_before_gradient(x, n):
    with tf.GradientTape() as tape:
        tape.watch(x)
        out = tf.reduce_sum(w_power(x, n))
    W.assign_add(1.0)
    return out, tape.gradient(out, [x, W])


def test_a_variable_assigned_between_the_recursion_and_its_gradient_runs_in_python():
    """The gradient runs the loops again: it read the new value (dx 81 for eager's 16)."""
    spec = janus.speculate(assigned_before_gradient, profile_runs=1, jit_compile=True)
    for k in (3, 1, 4, 2):
        W.assign(2.0)
        eager = run_capturing(assigned_before_gradient, (_vec(1.0, 2.0), tf.constant(k)))
        W.assign(2.0)
        _close(eager, run_capturing(spec, (_vec(1.0, 2.0), tf.constant(k))))
    W.assign(2.0)


NOT_TRAINED = tf.Variable(1.5, trainable=False)


def not_trained(x, n):
    if n == 0:
        return x
    return not_trained(x, n - 1) * NOT_TRAINED


def scattered(x, n):
    if n == 0:
        return x
    return tf.tensor_scatter_nd_sub(scattered(x, n - 1), [[n]], [1.0])


def int_power(x, n):
    if n == 0:
        return x
    return int_power(x, n - 1) * tf.cast(tf.pow(n, -1), tf.float32)


def first_item(x, n):
    if n == 0:
        return x
    return first_item(x, n - 1) + tf.gather(x, 2)


def large_frames(x, n):
    if n == 0:
        return x
    y = x * 2.0
    return large_frames(x + 1.0, n - 1) + y


@pytest.mark.parametrize("fn, calls, graph_runs", [
    (not_trained, [(_vec(1.0, 2.0), tf.constant(k)) for k in (3, 1, 4)], 1),
    (scattered, [(_vec(1.0, 2.0, 3.0, 4.0, 5.0), tf.constant(k)) for k in (2, 1, 3, 9)], 1),
    (int_power, [(_vec(1.0, 2.0), tf.constant(k)) for k in (2, 1, 3)], 0),      # (eager raises every time)
    (first_item, [(tf.ones([3]), tf.constant(3)), (tf.ones([3]), tf.constant(1)), (tf.ones([1]), tf.constant(2))], 1),
    (large_frames, [(tf.ones([256, 256]), tf.constant(k)) for k in (2, 1, 3)], 1),
], ids=["not_trainable", "scatter", "int_pow", "constant_index", "large_frames"])
def test_what_xla_would_change_keeps_the_plain_loops(fn, calls, graph_runs):
    """A non-trainable variable (its watched gradient was lost), ops XLA computes or raises
    otherwise (an out-of-range scatter, an int power, a constant index past the end, which XLA
    clamps), frames too large for XLA's fixed stacks: the plain loops run them, as eager."""
    def step(x, n):
        with tf.GradientTape() as tape:
            tape.watch([x, NOT_TRAINED])
            out = tf.reduce_sum(fn(x, n))
        return out, tape.gradient(out, [x, NOT_TRAINED])
    _compiled_calls(step, calls, strategy="linear (", graph_runs=graph_runs)
