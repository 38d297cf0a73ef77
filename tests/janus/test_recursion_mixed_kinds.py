"""Recursions whose numbers are Python numbers in some frames and tensors in others.

`ack(m - 1, 1)` passes a Python int where the root passed a tensor, so in eager
the result is an int or a tensor by the path the calls take.  The machine keeps
a per-frame bit for each such value and checks the root's against the kind it
speculated (`RESULT_KIND`): where it holds the call runs in the graph, where it
breaks the call runs in Python; either way the call returns eager's value, of
eager's type.  Where the bits cannot follow eager, the recursion runs in Python
with the reason.
"""
import threading

import tensorflow as tf

import janus
from tests.harness import assert_same, differential, run_capturing
from tests.janus.test_recursion import ack


def ackish(m, j):
    if m == 0:
        return j + 1
    return ackish(m - 1, 1)


def pair(m, j):
    """A tuple result whose first leaf's kind follows the path and second is always a tensor."""
    if m == 0:
        return j * 2, m
    return pair(m - 1, 3)


def half(m, j):
    """`j / 2` is a Python float where `j` is a Python int, a float64 tensor where it is a tensor."""
    if m == 0:
        return j / 2
    return half(m - 1, 5)


def scaled(x, k):
    """A Python int where the root passed a float tensor: eager gives a float32 tensor (`x * 1.5`
    at the root) or a Python float; janus cannot hold both in one table and runs it in Python."""
    if k == 0:
        return x * 1.5
    return scaled(0, k - 1)


def branchy(m, j):
    """A tensor `if` inside the block a Python number passes through."""
    if m == 0:
        r = j
        if tf.reduce_sum(tf.ones([2])) > 1.0:
            r = r + 1
        return r
    return branchy(m - 1, 1)


def climbs(n, acc):
    """Two calls per frame (the wavefront): `acc` is a tensor down the first call's chain from the
    root and the Python int 0 below every second call; a tensor plus an int is a tensor."""
    if n <= 0:
        return acc
    return climbs(n - 1, acc + 1) + climbs(n - 2, 0)


def ints(*pairs):
    return [(tf.constant(a), tf.constant(b)) for a, b in pairs]


def _kinds_and_runs(fn, calls):
    spec = differential(fn, calls, profile_runs=1)
    return spec, spec.stats()


def test_ackermann_holds_its_speculated_python_int_in_the_graph():
    spec, stats = _kinds_and_runs(ack, ints((1, 2), (2, 1), (2, 3), (1, 0), (2, 2)))
    assert stats["graph_runs"] == 4 and stats["guard_failures"] == 0, spec.report()


def test_ackermann_whose_root_is_its_base_case_returns_eagers_tensor():
    spec, stats = _kinds_and_runs(ack, ints((1, 2), (0, 4), (2, 1), (0, 0), (1, 1)))
    assert stats["graph_runs"] == 2 and stats["guard_failures"] == 2, spec.report()
    assert "RESULT_KIND" in spec.report()


def test_a_literal_passed_where_the_root_passed_a_tensor_follows_the_path():
    spec, stats = _kinds_and_runs(ackish, ints((0, 2), (0, 1), (1, 2), (0, 0), (1, 0), (0, 2)))
    assert stats["graph_runs"] >= 3, spec.report()


def test_a_tuple_leaf_whose_kind_follows_the_path_and_a_tensor_leaf():
    # A tuple result is speculated tensors: (1, 4) and (3, 0), whose first leaf is an int, fail.
    spec, stats = _kinds_and_runs(pair, ints((2, 1), (1, 4), (0, 4), (3, 0), (0, 1)))
    assert stats["graph_runs"] == 2 and stats["guard_failures"] == 2, spec.report()


def test_true_division_of_a_python_int_is_a_python_float():
    spec, stats = _kinds_and_runs(half, ints((1, 3), (2, 3), (0, 3), (1, 0)))
    assert stats["graph_runs"] == 2, spec.report()


def test_a_python_int_where_the_root_passed_a_float_tensor_runs_in_python():
    spec = differential(scaled, [(tf.constant(2.0), tf.constant(k)) for k in (0, 2, 1, 0)], profile_runs=1)
    assert spec.stats()["graph_runs"] == 0
    assert "Python number in some" in spec.report() or "kind" in spec.report(), spec.report()


def test_a_tensor_if_a_python_number_goes_through_runs_in_python_with_the_reason():
    spec = differential(branchy, ints((1, 2), (0, 2), (2, 0)), profile_runs=1)
    assert spec.stats()["graph_runs"] == 0
    assert "tensor `if`" in spec.report(), spec.report()


def test_a_batch_of_calls_joined_in_one_machine_keeps_each_calls_kind():
    def many(ms):
        return [ack(m, tf.constant(1)) for m in ms]

    calls = [([tf.constant(1), tf.constant(2)],), ([tf.constant(2), tf.constant(1)],),
             ([tf.constant(0), tf.constant(2)],), ([tf.constant(1), tf.constant(1)],)]
    differential(many, calls, profile_runs=1)


def test_threads_sharing_ackermann_each_get_eagers_kind():
    spec = janus.speculate(ack, profile_runs=1)
    calls = ints((1, 2), (0, 3), (2, 1), (0, 0), (1, 0), (2, 2)) * 3
    expected = [run_capturing(ack, c) for c in calls]
    got = [None] * len(calls)

    def work(k):        # not `run_capturing`: redirecting stdout is not thread-safe
        for i in range(k, len(calls), 3):
            try:
                got[i] = ("return", spec(*calls[i])), ""
            except Exception as exc:  # noqa: BLE001 - compared below
                got[i] = ("raise", exc), ""

    threads = [threading.Thread(target=work, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for (ek, ev), (gk, gv) in zip([e[0] for e in expected], [g[0] for g in got]):
        assert ek == gk == "return"
        assert_same(ev, gv)


def test_a_wavefront_recursion_whose_sum_meets_both_kinds():
    # Each of the two calls hands its own argument's kind on (one tensor, one int): every call
    # returns a tensor, as the profiled one did.
    spec, stats = _kinds_and_runs(climbs, ints((3, 1), (4, 0), (0, 5), (1, 1), (5, 2)))
    assert stats["guard_failures"] == 0 and stats["graph_runs"] == 4, spec.report()
    assert "wavefront" in spec.report(), spec.report()


def returns_ack(m, n):
    return ack(m, n)


def adds_to_ack(m, n):
    return ack(m, n) + 1


ALTERNATING = ints(*[(k % 3, 2) for k in range(1, 31)])


def test_after_the_kind_check_failed_too_often_the_run_tells_the_kind():
    # Every third call's root is Ackermann's base case (a tensor), the others return an int: the
    # check fails until RESULT_KIND is relaxed, then the graph hands back each call's own kind.
    spec = differential(returns_ack, ALTERNATING, profile_runs=1)
    stats = spec.stats()
    assert stats["guard_failures"] == 8 and stats["graph_runs"] == 21 and not stats["imperative"], spec.report()


def test_a_result_whose_kind_the_run_tells_used_in_the_function_runs_in_python():
    spec = differential(adds_to_ack, ALTERNATING, profile_runs=1)
    line = adds_to_ack.__code__.co_firstlineno + 1
    assert f"test_recursion_mixed_kinds.py:{line}: a recursion's result" in spec.report(), spec.report()


# -- found by adversarial programs --------------------------------------------------------------
def compares(m, j):
    if m == 0:
        return j > 2
    return compares(m - 1, 5)


def compared_kind(m, j):
    r = compares(m, j)
    return r, type(r).__name__


def defaulted(m, j=1):
    if m == 0:
        return j + 1
    return defaulted(m - 1)


def tenth_below(m, x):
    if m == 0:
        return x + 1
    return tenth_below(m - 1, 0.1)


def ack_text(m, n):
    r = ack(m, n)
    print(f"{r}")
    return str(r)


def ack_into(m, n, out):
    out.append(ack(m, n))
    return len(out)


def test_a_comparison_of_a_python_int_is_a_python_bool():
    spec = differential(compares, ints((1, 0), (0, 5), (0, 1), (1, 1), (2, 2), (1, 3)), profile_runs=1)
    assert spec.stats()["graph_runs"] >= 3, spec.report()
    differential(compared_kind, ints((0, 0), (1, 1), (0, 3)), profile_runs=1)


def test_a_recursive_call_that_leaves_out_a_default_takes_it_in_the_machine():
    spec = differential(defaulted, ints((1, 5), (0, 5), (2, 3), (1, 0)), profile_runs=1)
    assert spec.stats()["graph_runs"] >= 1, spec.report()


def test_a_python_float_literal_reaches_a_float64_frame_unrounded():
    spec = differential(tenth_below, [(tf.constant(1), tf.constant(3.25, tf.float64))] * 3, profile_runs=1)
    assert spec.stats()["graph_runs"] == 2, spec.report()


def test_the_text_of_a_python_int_result_is_eagers():
    differential(ack_text, ints((1, 2), (2, 1), (1, 1)), profile_runs=1)


def test_a_python_int_result_appended_to_a_list_argument_stays_an_int():
    spec = janus.speculate(ack_into, profile_runs=1)
    for m, n in ((1, 2), (2, 1), (1, 1)):
        eager_out, janus_out = [], []
        assert ack_into(tf.constant(m), tf.constant(n), eager_out) == spec(tf.constant(m), tf.constant(n), janus_out)
        assert [type(v) for v in janus_out] == [type(v) for v in eager_out] == [int], (eager_out, janus_out)
        assert janus_out == eager_out
    assert spec.stats()["graph_runs"] == 2, spec.report()


def powered(m, j):
    if m == 0:
        return abs(j) ** 2
    return powered(m - 1, -3)


def test_abs_and_power_of_a_number_that_is_python_in_some_frames():
    spec = differential(powered, ints((1, 0), (0, -4), (2, 5), (1, 1), (0, 2)), profile_runs=1)
    assert spec.stats()["graph_runs"] >= 2, spec.report()
