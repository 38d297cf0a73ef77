"""Early `return` inside an `if` on a tensor that is not speculated (the branch went both
ways): the result is carried through the `tf.cond` with a placeholder on the side that has
not returned, and the graph guards that some `return` ran.  A call that reaches no `return`
runs in Python and gives None, as eager."""
import tensorflow as tf

import janus
from tests.harness import differential

X = tf.constant([1.0, 2.0])
FLIPS = [1, 1, 1, 1, -1, -1, -1, 1, -1, 1, -1, 1]


def returns_in_one_branch(x):
    if tf.reduce_sum(x) > 0:
        return x * 2.0
    y = x - 1.0
    return y


def returns_python_numbers(x):
    if tf.reduce_sum(x) > 0:
        return 1
    return 0


def returns_structures(x, n):
    if tf.reduce_sum(x) > 0:
        return [x, n]
    elif n > 3:
        return [x * 3.0, 1]
    y = x + 1.0
    return [y, 0]


def may_fall_off_the_end(x):
    if tf.reduce_sum(x) > 0:
        return x * 2.0


def helper(x):
    if tf.reduce_sum(x) > 0:
        return tf.tanh(x)
    return -x


def calls_a_helper_with_early_return(x):
    return helper(x) + helper(x * 2.0)


def test_a_return_in_one_branch_of_a_general_cond_runs_as_a_graph():
    for fn in (returns_in_one_branch, returns_python_numbers, calls_a_helper_with_early_return):
        spec = differential(fn, [(X * s,) for s in FLIPS])
        assert spec.imperative is None, spec.report()
        assert spec.stats()["graph_runs"] >= 6, spec.report()


def test_structured_results_and_python_branches():
    calls = [(X * s, n) for s, n in [(1, 2)] * 4 + [(-1, 2)] * 3 + [(1, 5), (-1, 5), (-1, 1), (1, 7), (-1, 0)]]
    spec = differential(returns_structures, calls)
    assert spec.stats()["graph_runs"] >= 4, spec.report()


def test_a_call_that_reaches_no_return_gives_none_as_eager():
    spec = differential(may_fall_off_the_end, [(X * s,) for s in FLIPS])
    assert spec.stats()["graph_runs"] >= 2, spec.report()
    data = spec.report(format="json")
    assert any(f["kind"] == "no-return" for f in data["fallbacks"]), spec.report()


COUNTER = tf.Variable(0.0)


def writes_a_variable_then_returns_early(x):
    COUNTER.assign_add(1.0)
    if tf.reduce_sum(x) > 0:
        return x * 2.0


def test_no_guard_after_a_variable_write_keeps_eager_state():
    COUNTER.assign(0.0)
    spec = janus.speculate(writes_a_variable_then_returns_early)
    eager_count = 0.0
    for s in FLIPS:
        want = writes_a_variable_then_returns_early(X * s)
        eager_count += 1.0
        got = spec(X * s)
        eager_count += 1.0
        assert (want is None) == (got is None)
        if want is not None:
            assert want.numpy().tolist() == got.numpy().tolist()
        assert COUNTER.numpy() == eager_count
