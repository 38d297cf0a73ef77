"""Chain recursion (every call waits for its one callee) runs depth-first under XLA.

Each test compares janus with eager on the same calls and checks which
strategy ran: a chain of integer frames runs as the chain machine; a chain
that XLA cannot run as eager does (floats, a float read from outside, an
unchecked integer division) runs as the two loops of a linear recursion, a
recursion with independent calls as the wavefront machine, and the report
says why.
"""
import sys
import threading

import pytest
import tensorflow as tf

import janus
from tests.harness import run_capturing
from tests.janus.test_recursion import ack, count, is_even


def down(n):
    if n == 0:
        return 0
    return 1 + down(n - 1)


def mod_sum(n, d):
    if n == 0:
        return 0
    return n % d + mod_sum(n - 1, d)


def nested_mod(n, d):
    if n == 0:
        return 0
    r = n
    if n > 3:
        r = n % d
    return r + nested_mod(n - 1, d)


def halve_sum(x, n):
    if n == 0:
        return x
    return halve_sum(x / 2.0, n - 1) + x


THRESHOLD = tf.Variable(1.5)


def count_above(n):
    if n == 0:
        return 0
    return count_above(n - 1) + tf.cast(tf.cast(n, tf.float32) > THRESHOLD, tf.int32)


def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)


def _value(x):
    return x.numpy().tolist() if hasattr(x, "numpy") else x


def _same(fn, spec, *args):
    expected, got = fn(*args), spec(*args)
    assert type(expected) is type(got) and _value(expected) == _value(got), (expected, got)


def _strategy(spec):
    return spec.report(format="json")["recursion"][0]["strategy"]


@pytest.mark.parametrize("fn,calls", [
    (ack, [(2, 3), (1, 4), (2, 9), (1, 0), (3, 3)]),      # m > 0: eager returns a Python int
    (down, [(5,), (0,), (40,), (7,)]),
    (is_even, [(4,), (7,), (0,), (31,)]),
    (mod_sum, [(10, 3), (6, 4), (30, 7)]),
    (count, [(10,), (2,), (30,), (97,), (5,)]),
], ids=["ack", "down", "is_even", "mod_sum", "count"])
def test_integer_chains_run_depth_first_under_xla_and_equal_eager(fn, calls):
    spec = janus.speculate(fn, profile_runs=1)
    for args in calls:
        _same(fn, spec, *(tf.constant(a) for a in args))
    stats = spec.stats()
    assert stats["graph_runs"] == len(calls) - 1 and not stats["imperative"], spec.report()
    assert _strategy(spec).startswith("chain"), spec.report()
    cycle = spec.graphs[0].recursion[0]
    assert cycle.last_frames > 0 and cycle.last_steps <= 3 * cycle.last_frames


def test_a_chain_deeper_than_its_first_stack_grows_and_equals_eager():
    spec = janus.speculate(down, profile_runs=1)
    spec(tf.constant(3))
    for n in (100, 700, 65, 63, 2):           # past the 64 rows of the first stack, and back
        _same(down, spec, tf.constant(n))
    assert spec.graphs[0].recursion[0].last_frames == 3
    assert spec.stats()["graphs_built"] == 1 and _strategy(spec).startswith("chain"), spec.report()


def test_a_chain_past_the_recursion_limit_raises_as_eager():
    spec = janus.speculate(down, profile_runs=1)
    spec(tf.constant(3))
    depth = sys.getrecursionlimit() + 200
    with pytest.raises(RecursionError):
        down(tf.constant(depth))
    with pytest.raises(RecursionError):
        spec(tf.constant(depth))
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(depth + 1000)        # the graph follows the limit of the call
    try:
        assert int(spec(tf.constant(depth))) == depth
    finally:
        sys.setrecursionlimit(limit)


def test_an_integer_division_by_zero_in_a_chain_raises_as_eager():
    """XLA does not raise on a zero divisor: the chain checks each one and the call runs in Python."""
    spec = janus.speculate(mod_sum, profile_runs=1)
    _same(mod_sum, spec, tf.constant(5), tf.constant(3))
    _same(mod_sum, spec, tf.constant(8), tf.constant(3))
    (kind_e, exc_e), _ = run_capturing(mod_sum, (tf.constant(4), tf.constant(0)))
    (kind_j, exc_j), _ = run_capturing(spec, (tf.constant(4), tf.constant(0)))
    assert kind_e == kind_j == "raise" and type(exc_e) is type(exc_j), (exc_e, exc_j)
    _same(mod_sum, spec, tf.constant(9), tf.constant(2))      # and the graph still runs afterwards
    assert spec.stats()["graph_runs"] >= 2 and _strategy(spec).startswith("chain"), spec.report()


def test_a_division_xla_cannot_check_runs_as_linear_and_raises_as_eager():
    spec = janus.speculate(nested_mod, profile_runs=1)
    for n, d in ((6, 4), (9, 2), (2, 5)):
        _same(nested_mod, spec, tf.constant(n), tf.constant(d))
    (kind_e, exc_e), _ = run_capturing(nested_mod, (tf.constant(7), tf.constant(0)))
    (kind_j, exc_j), _ = run_capturing(spec, (tf.constant(7), tf.constant(0)))
    assert kind_e == kind_j == "raise" and type(exc_e) is type(exc_j), (exc_e, exc_j)
    assert _strategy(spec).startswith("linear") and "zero divisor" in _strategy(spec), spec.report()


def test_a_float_chain_runs_as_linear_and_says_why():
    spec = janus.speculate(halve_sum, profile_runs=1)
    for n in (3, 10, 0, 25):
        x = tf.constant([1.0, 3.0])
        tf.debugging.assert_near(halve_sum(x, tf.constant(n)), spec(x, tf.constant(n)))
    text = spec.report()
    assert "linear" in text and "float32" in text, text


def test_a_chain_reading_a_float_variable_runs_as_linear():
    """A float read from outside may carry a gradient, and XLA may round it differently."""
    spec = janus.speculate(count_above, profile_runs=1)
    for n in (3, 6, 1, 9):
        _same(count_above, spec, tf.constant(n))
    THRESHOLD.assign(4.5)                        # read at run time, as eager reads it
    _same(count_above, spec, tf.constant(9))
    THRESHOLD.assign(1.5)
    assert _strategy(spec).startswith("linear") and "from outside" in _strategy(spec), spec.report()


def test_independent_calls_keep_the_wavefront():
    spec = janus.speculate(fib, profile_runs=1)
    for n in (5, 8, 1):
        _same(fib, spec, tf.constant(n))
    assert _strategy(spec).startswith("wavefront") and "independent calls" in _strategy(spec)


def test_explain_names_the_strategy():
    text = str(janus.explain(ack, tf.constant(2), tf.constant(2)))
    assert "recursion ack: runs as chain (depth-first, compiled with XLA)" in text, text


def test_threads_share_a_chain():
    spec = janus.speculate(ack, profile_runs=1)
    spec(tf.constant(1), tf.constant(1))
    errors, results = [], {}

    def worker(k):
        try:
            for n in range(k, k + 4):
                results[(k, n)] = int(spec(tf.constant(2), tf.constant(n)))
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
    threads = [threading.Thread(target=worker, args=(k,)) for k in (1, 3, 5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert all(v == 2 * n + 3 for (k, n), v in results.items()) and len(results) == 12


def countdown(n):
    if n == 0:
        return 0
    return countdown(n - 1)


@pytest.mark.parametrize("fn", [countdown, is_even], ids=["self", "mutual"])
def test_tail_calls_share_a_row_but_count_toward_the_recursion_limit(fn):
    """`return f(...)` replaces the caller's frame in its row; the depth Python would reach still
    decides RecursionError."""
    spec = janus.speculate(fn, profile_runs=1)
    spec(tf.constant(3))
    for n in (50, 300, 0, 1):
        _same(fn, spec, tf.constant(n))
    assert spec.graphs[0].recursion[0].last_steps <= 3        # one step per call, none for returns
    depth = sys.getrecursionlimit() + 200
    with pytest.raises(RecursionError):
        fn(tf.constant(depth))
    with pytest.raises(RecursionError):
        spec(tf.constant(depth))
    assert _strategy(spec).startswith("chain"), spec.report()
