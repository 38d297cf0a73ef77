"""A tensor `if` whose side ends in `raise` (input validation) builds only the other side and
checks in the graph that no call takes the raising one: such a call runs in Python and raises as
eager, with whatever the side printed or changed before its `raise`, and the graph stays."""
import sys

import tensorflow as tf

import janus
from tests.harness import assert_same_outcome, run_capturing

LOG = []


def scaled(x, n):
    if n < 0:
        raise ValueError(f"negative count {int(n)}")
    return x * tf.cast(n, tf.float32)


def scaled_else_raises(x, n):
    if n >= 0:
        y = x * tf.cast(n, tf.float32)
    else:
        print("rejected", int(n))
        LOG.append(int(n))
        raise ValueError("negative")
    return y + 1.0


def power(x, n):
    if n < 0:
        raise ValueError("negative power")
    if n == 0:
        return tf.ones_like(x)
    return x * power(x, n - 1)


def power_step(x, n):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = power(x, n)
    return {"y": y, "dy": tape.gradient(y, x)}


def in_a_loop(x, n):
    total = x
    for i in tf.range(n):
        if i > 5:
            raise ValueError("too many")
        total = total * 2.0
    return total


def _compare(fn, args_list, **options):
    spec = janus.speculate(fn, **options)
    for args in args_list:
        LOG.clear()
        eager = run_capturing(fn, args)
        eager_log = list(LOG)
        LOG.clear()
        assert_same_outcome(eager, run_capturing(spec, args))
        assert LOG == eager_log, (LOG, eager_log)
    return spec


def _calls(ns):
    return [(tf.constant(1.5), tf.constant(n)) for n in ns]


def test_a_call_that_takes_the_raising_side_raises_as_eager_and_the_graph_stays():
    spec = _compare(scaled, _calls([3, 4, 5, 2, -1, 6, -7, 0, 8]))
    assert spec.stats()["graphs_built"] == 1 and spec.stats()["graph_runs"] == 4, spec.report()
    assert "no call takes the side of a tensor `if` that raises" in spec.report()


def test_an_else_side_that_prints_and_appends_before_it_raises_does_so_once():
    spec = _compare(scaled_else_raises, _calls([3, 4, 5, -2, 6, 7, -3, 1]))
    assert spec.stats()["graphs_built"] == 1 and spec.stats()["graph_runs"] >= 3, spec.report()


def test_a_recursion_that_validates_its_argument_runs_as_a_graph():
    spec = _compare(power_step, _calls([3, 4, 5, 2, 6, -1, 0, 7, -4, 3]))
    assert spec.stats()["graph_runs"] >= 3 and spec.stats()["graphs_built"] == 1, spec.report()


def test_a_recursion_with_python_int_arguments_raises_as_eager_on_a_negative_one():
    spec = _compare(power_step, [(tf.constant(1.5), n) for n in (3, 4, 5, -1, 2, 6, -2, 3)])
    assert spec.stats()["graph_runs"] >= 1, spec.report()


def test_a_raising_side_inside_a_tensor_loop_is_built_as_before():
    _compare(in_a_loop, _calls([3, 4, 2, 9, 1, 5, 3]))


def test_the_recursion_limit_still_raises_as_eager_with_a_raising_check():
    limit = sys.getrecursionlimit()
    try:
        sys.setrecursionlimit(400)
        _compare(power_step, _calls([3, 4, 5, 2, 2000, 6]))
    finally:
        sys.setrecursionlimit(limit)


def halving(x, n):
    if n <= 0:
        return x
    if tf.reduce_sum(x) > 3.0:             # a raising side inside a tensor `if`, inside the recursion
        if n > 50:
            raise ValueError("too deep")
        x = x * 0.5
    return halving(x * 1.5, n - 1)


def test_a_raising_side_inside_a_tensor_if_of_a_recursion_matches_eager():
    _compare(halving, _calls([3, 4, 60, 2, 5, 7]))


class Stop(BaseException):
    """A program's own BaseException (not an Exception)."""


class Halting:
    def __init__(self):
        self.n = 0

    def step(self, x):
        self.n += 1
        if self.n == 6:
            raise Stop("halt")
        return x * 2.0


def test_a_base_exception_on_a_side_no_call_took_is_raised_only_where_eager_raises():
    """Tracing both sides of an `if` on a number that varies runs a `raise` of a BaseException
    that no call took: the build fails and the call runs in Python, as for an Exception."""
    eager, fast = Halting(), Halting()
    spec = janus.speculate(Halting.step)
    for _ in range(8):
        outcomes = []
        for obj, fn in ((eager, Halting.step), (fast, spec)):
            try:
                outcomes.append(float(fn(obj, tf.constant(1.0))))
            except Stop as exc:
                outcomes.append(f"Stop({exc})")
        assert outcomes[0] == outcomes[1] and eager.n == fast.n, (outcomes, eager.n, fast.n)
