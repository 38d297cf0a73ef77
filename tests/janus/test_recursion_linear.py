"""Linear recursion (one call site, nothing called after it) as a descending and an ascending loop.

A chain whose frames XLA must not compile (floats, a gradient, stateful ops)
runs as two loops: down the calls, then up the returns.  Each test compares
with eager on the same calls -- values, gradients, printed text, exceptions
and the state left behind -- and checks the strategy that ran.
"""
import sys
import threading

import numpy as np
import pytest
import tensorflow as tf

import janus
from tests.harness import assert_same_outcome, run_capturing


def power(x, n):
    if n == 0:
        return tf.ones_like(x)
    return x * power(x, n - 1)


def halve_sum(x, n):
    if n == 0:
        return x
    return halve_sum(x / 2.0, n - 1) + x


def kept_local(x, n):
    """`y` is computed before the call and read after it: each frame keeps its own."""
    if n == 0:
        return x
    y = x * 2.0
    r = kept_local(x + 1.0, n - 1)
    return r + y


def branch_after(x, n):
    if n <= 0:
        return tf.zeros_like(x)
    r = branch_after(x * 0.5, n - 1)
    if tf.reduce_sum(r) > 1.0:
        return r - x
    return r + x


def two_values(x, n):
    if n == 0:
        return x, tf.zeros_like(x)
    a, b = two_values(x * 0.9, n - 1)
    return a + x, b + 1.0


def tail(x, n):
    if n == 0:
        return x
    return tail(x * 1.5, n - 1)


W = tf.Variable(2.0)


def w_power(x, n):
    if n == 0:
        return x
    return W * w_power(x, n - 1)


def checked(x, n):
    if n == 0:
        return x
    r = checked(x - 1.0, n - 1)
    tf.debugging.assert_positive(r, message="went negative")
    return r + 1.0


def _strategy(spec):
    return spec.report(format="json")["recursion"][0]["strategy"]


def _same_calls(fn, calls, graph_runs=None):
    spec = janus.speculate(fn, profile_runs=1)
    for args in calls:
        assert_same_outcome(run_capturing(fn, args), run_capturing(spec, args))
    assert spec.stats()["graph_runs"] >= (len(calls) - 1 if graph_runs is None else graph_runs), spec.report()
    assert _strategy(spec).startswith("linear"), spec.report()
    return spec


def _vec(*v):
    return tf.constant(v, tf.float32)


@pytest.mark.parametrize("fn", [power, halve_sum, kept_local, branch_after, two_values, tail],
                         ids=["power", "halve_sum", "kept_local", "branch_after", "two_values", "tail"])
def test_float_chains_equal_eager(fn):
    _same_calls(fn, [(_vec(1.0, 2.0), tf.constant(3)), (_vec(0.5, -1.0), tf.constant(0)),
                     (_vec(3.0, 0.25), tf.constant(12)), (_vec(1.0, 1.0), tf.constant(1))])


def test_the_steps_are_one_per_frame_and_direction():
    spec = _same_calls(kept_local, [(_vec(1.0), tf.constant(2)), (_vec(1.0), tf.constant(9))])
    cycle = spec.graphs[0].recursion[0]
    assert cycle.last_frames == 10 and cycle.last_steps == 19, (cycle.last_frames, cycle.last_steps)


@pytest.mark.parametrize("fn", [power, kept_local, two_values], ids=["power", "kept_local", "two_values"])
def test_gradients_through_both_loops_equal_eager(fn):
    def step(x, n):
        with tf.GradientTape() as tape:
            tape.watch(x)
            out = fn(x, n)
            loss = tf.add_n([tf.reduce_sum(o * o) for o in tf.nest.flatten(out)])
        return loss, tape.gradient(loss, x)
    _same_calls(step, [(_vec(0.9, 1.1), tf.constant(4)), (_vec(0.5, 2.0), tf.constant(1)),
                       (_vec(1.01, 0.99), tf.constant(30))])


def test_a_gradient_unconnected_on_this_calls_path_is_none_as_in_eager():
    def step(x, n):
        with tf.GradientTape() as tape:
            tape.watch(x)
            out = power(x, n)
        return tape.gradient(out, x)
    _same_calls(step, [(_vec(0.9, 1.1), tf.constant(4)), (_vec(0.5, 2.0), tf.constant(2)),
                       (_vec(1.01, 0.99), tf.constant(0))], graph_runs=1)


def test_a_base_case_passing_the_source_on_keeps_its_gradient():
    """The root's base case returns x itself: eager's gradient is ones, and no call multiplied."""
    def ident(x, n):
        if n == 0:
            return x
        return x * ident(x, n - 1)

    def step(x, n):
        with tf.GradientTape() as tape:
            tape.watch(x)
            out = ident(x, n)
        return tape.gradient(out, x)
    _same_calls(step, [(_vec(0.9, 1.1), tf.constant(3)), (_vec(0.5, 2.0), tf.constant(2)),
                       (_vec(1.01, 0.99), tf.constant(0)), (_vec(0.7, 0.2), tf.constant(1))], graph_runs=2)


def test_a_variable_no_frame_reads_has_no_gradient_as_in_eager():
    """With n == 0 no call multiplies by W: eager's gradient for W is None, not zero, so that run
    fails its check and the call runs in Python."""
    def step(x, n):
        with tf.GradientTape() as tape:
            out = w_power(x, n)
        return tape.gradient(out, W)
    _same_calls(step, [(tf.constant(1.5), tf.constant(3)), (tf.constant(1.5), tf.constant(2)),
                       (tf.constant(1.5), tf.constant(0)), (tf.constant(0.5), tf.constant(5))], graph_runs=2)


def test_an_op_failing_on_the_way_up_raises_as_eager():
    spec = janus.speculate(checked, profile_runs=1)
    for x, n in ((5.0, 3), (9.0, 4), (2.0, 6), (8.0, 2)):
        eager = run_capturing(checked, (tf.constant(x), tf.constant(n)))
        got = run_capturing(spec, (tf.constant(x), tf.constant(n)))
        (ek, ev), _ = eager
        (jk, jv), _ = got
        assert ek == jk and type(ev) is type(jv), (ev, jv)
    assert spec.stats()["graph_runs"] >= 2 and _strategy(spec).startswith("linear"), spec.report()


def test_printing_frames_run_in_python_and_print_as_eager():
    """A tf.print in a frame could print before an op of a later frame fails, and the re-run in
    Python would print it again: the function runs in Python and says why."""
    def noisy(x, n):
        tf.print("down", n, output_stream=sys.stdout)
        if n == 0:
            return x
        r = noisy(x * 2.0, n - 1)
        tf.print("up", n, output_stream=sys.stdout)
        return r + 1.0
    spec = janus.speculate(noisy, profile_runs=1)
    for n in (2, 3, 0, 4):
        eager = run_capturing(noisy, (tf.constant(1.0), tf.constant(n)))
        got = run_capturing(spec, (tf.constant(1.0), tf.constant(n)))
        assert_same_outcome(eager, got)
    assert spec.stats()["imperative"] and "print-before-failure" in spec.report(), spec.report()


def test_past_the_recursion_limit_raises_as_eager():
    spec = janus.speculate(halve_sum, profile_runs=1)
    spec(tf.constant(1.0), tf.constant(3))
    depth = sys.getrecursionlimit() + 100
    with pytest.raises(RecursionError):
        halve_sum(tf.constant(1.0), tf.constant(depth))
    with pytest.raises(RecursionError):
        spec(tf.constant(1.0), tf.constant(depth))
    assert float(spec(tf.constant(1.0), tf.constant(5))) == pytest.approx(float(halve_sum(1.0, 5)))


def test_threads_share_a_linear_recursion():
    spec = janus.speculate(kept_local, profile_runs=1)
    spec(tf.constant(1.0), tf.constant(2))
    errors, results = [], {}

    def worker(k):
        try:
            for n in range(k, k + 4):
                results[(k, n)] = float(spec(tf.constant(1.0), tf.constant(n)))
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
    threads = [threading.Thread(target=worker, args=(k,)) for k in (1, 3, 5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for (k, n), v in results.items():
        np.testing.assert_allclose(v, float(kept_local(tf.constant(1.0), tf.constant(n))), rtol=1e-6)


def test_explain_names_the_strategy():
    text = str(janus.explain(power, tf.constant(1.5), tf.constant(3)))
    assert "recursion power: runs as linear (down the calls, then up the returns)" in text, text


def power_up(x, n):
    if n > 0:
        return x * power_up(x, n - 1)
    return tf.ones_like(x)


def is_base(n):
    return n == 0


def called_test(x, n):
    if is_base(n):
        return x
    return called_test(x * 0.5, n - 1) + 1.0


def stated_test(x, n):
    m = n - 1
    if m < 0:
        return x
    return stated_test(x * 0.5, m) + 1.0


@pytest.mark.parametrize("fn", [power_up, called_test, stated_test],
                         ids=["call-on-the-true-side", "test-calls-a-function", "statements-before-the-test"])
def test_an_entry_test_the_loop_tests_or_the_body_branches_on_equals_eager(fn):
    spec = _same_calls(fn, [(_vec(1.0, 2.0), tf.constant(3)), (_vec(0.5, -1.0), tf.constant(0)),
                            (_vec(3.0, 0.25), tf.constant(12)), (_vec(1.0, 1.0), tf.constant(1))])
    cycle = spec.graphs[0].recursion[0]
    assert cycle.last_frames == 2, spec.report()          # one calling frame, then the base case



def count_down(x, n):
    if n == 0:
        return x
    return count_down(x, n - 1) + 1.0


def int_chain(acc, m):
    if m == 0:
        return acc
    return int_chain(acc, m - 1) + 1


def _nested(depth, fn, *args):
    return fn(*args) if depth == 0 else _nested(depth - 1, fn, *args)


@pytest.mark.parametrize("fn, arg", [(count_down, lambda: tf.constant(1.0)), (int_chain, lambda: tf.constant(0))],
                         ids=["linear", "chain"])
def test_the_recursion_limit_counts_the_callers_frames(fn, arg):
    """Eager raises RecursionError when the caller's frames and the recursion's together pass the
    limit; the graph's depth check counts the caller's frames too (and leaves the last frames
    before the limit to Python, which knows exactly where eager stops)."""
    spec = janus.speculate(fn)
    for n in (3, 4, 5, 6):
        spec(arg(), tf.constant(n))
    limit = sys.getrecursionlimit()
    for depth, n in ((1000, limit - 1000 - 5), (1000, limit - 1000 - 300), (0, limit - 5), (0, 50)):
        eager = run_capturing(_nested, (depth, fn, arg(), tf.constant(n)), {})
        assert_same_outcome(eager, run_capturing(_nested, (depth, spec, arg(), tf.constant(n)), {}))
    assert spec.stats()["graph_runs"] >= 1, spec.report()


# Frames whose values change dtype or kind along the recursion: the tables held one dtype, and the
# root's value (or a base case's Python float) was converted into it.
def float_base(x, n):
    if n <= 0:
        return 1.5
    return x * float_base(x, n - 1)


def halved(x, n):
    if n == 0:
        return x
    return halved(x / 2, n - 1) + 1


def halved_plus(x, n):
    if n == 0:
        return x
    return halved_plus(x / 2, n - 1) + x


def narrowed(x, n):
    if n == 0:
        return tf.cast(x, tf.float64)
    return narrowed(tf.cast(x, tf.float32), n - 1) + tf.cast(x, tf.float64)


def wrapped(x, n):
    if n == 0:
        return tf.cast(x, tf.int64)
    return wrapped(tf.cast(x % 1000, tf.int32), n - 1) + tf.cast(x, tf.int64)


DTYPE_CALLS = {
    float_base: [(tf.constant(2.0), tf.constant(n)) for n in (2, 3, 4)] + [(tf.constant(3), tf.constant(2))]
                + [(tf.constant(3), tf.constant(n)) for n in (0, -1, 0)],
    halved: [(tf.constant(8), tf.constant(n)) for n in (2, 3, 4, 0, 1)],
    halved_plus: [(tf.constant(8.0, tf.float64), tf.constant(n)) for n in (2, 3, 4)]
                 + [(tf.constant(8), tf.constant(n)) for n in (1, 5)],
    narrowed: [(tf.constant(1.0 + 1e-12, tf.float64), tf.constant(n)) for n in (2, 3, 4, 1, 0, 3)],
    wrapped: [(tf.constant(2 ** 40 + 5, tf.int64), tf.constant(n)) for n in (2, 3, 4, 1, 0, 6)],
}


@pytest.mark.parametrize("fn", list(DTYPE_CALLS), ids=lambda f: f.__name__)
def test_a_frame_value_of_another_dtype_is_not_converted(fn):
    """An int tensor times a base case's 1.5 raises in eager (and the base case alone returns
    1.5); a root of int32, float64 or int64 whose deeper frames hold float64, float32 or int32
    keeps its dtype and value.  Those builds fail, and the calls run in Python."""
    spec = janus.speculate(fn)
    for args in DTYPE_CALLS[fn]:
        eager, mine = run_capturing(fn, args), run_capturing(spec, args)
        assert_same_outcome(eager, mine)
        if eager[0][0] == "return":             # to the bit: float32 on the way changes only the last ones
            assert np.asarray(eager[0][1]).tolist() == np.asarray(mine[0][1]).tolist()
