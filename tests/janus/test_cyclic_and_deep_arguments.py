"""Arguments that hold themselves (a list appended to itself, a dict holding itself) or nest
lists deeper than a graph's inputs go: the call with one runs in Python, with eager's result,
exception and state; other calls still run graphs."""
import tensorflow as tf

import janus
from tests.harness import assert_same_outcome, differential, run_capturing


def scaled_length(items, x):
    return x * len(items)


def depth(t):
    if not isinstance(t, list):
        return 0
    return 1 + max(depth(c) for c in t)


def logged_depth(t, log):
    log.append("start")
    return depth(t)


def test_a_list_that_contains_itself_is_an_argument_like_any_other():
    """`items` holds itself (`items.append(items)`); the function only takes its length, so eager
    returns `x * 3` on every call. Graphs run from the fourth call (plain lists before)."""
    looped = [1, 2]
    looped.append(looped)
    x = tf.constant(2.0)
    spec = differential(scaled_length, [([1, 2, 3], x), ([1, 2, 4], x), ([3, 4, 5], x), ([1, 2, 3], x),
                                        (looped, x), ([1, 2, 3], x), (looped, x)])
    assert spec.stats()["graph_runs"] > 0, spec.report()


def test_a_dict_that_contains_itself_is_an_argument_like_any_other():
    """`d["self"] is d`; the function reads `d["a"]`: eager returns `2.0 * x`."""
    looped = {"a": 1}
    looped["self"] = looped

    def read_a(d, x):
        return x * d["a"]

    x = tf.constant(2.0)
    differential(read_a, [({"a": 1, "self": {}}, x), ({"a": 2, "self": {}}, x), ({"a": 3, "self": {}}, x),
                          ({"a": 4, "self": {}}, x), (looped, x), ({"a": 3, "self": {}}, x), (looped, x)])


def test_a_recursion_into_a_list_that_contains_itself_runs_the_function_before_it_raises():
    """`logged_depth` appends "start" to `log`, then recurses into a nested list; on a list that
    contains itself eager appends "start" and then raises `RecursionError` ('maximum recursion
    depth exceeded') from the recursion."""
    looped = [1, [2]]
    looped[1].append(looped)
    spec = janus.speculate(logged_depth)
    for t in ([1, [2]], [1], [[1]], [1, [2]], [2, [3]]):
        eager_log, spec_log = [], []
        assert_same_outcome(run_capturing(logged_depth, (t, eager_log)), run_capturing(spec, (t, spec_log)))
    eager_log, spec_log = [], []
    eager = run_capturing(logged_depth, (looped, eager_log))
    janus_ = run_capturing(spec, (looped, spec_log))
    assert spec_log == eager_log == ["start"]
    assert_same_outcome(eager, janus_)


def lsum(t):
    if not isinstance(t, list):
        return t
    return sum(lsum(c) for c in t)


def test_a_list_nested_deeper_than_a_graph_input_runs_in_python():
    """A list nested 1500 deep (eager recurses through it within TensorFlow's recursion limit):
    the call with it runs in Python and returns eager's value; shallow lists still run graphs."""
    deep = 1.0
    for _ in range(1500):
        deep = [deep]
    x = tf.constant(2.0)

    def scaled(t, x):
        return x * lsum(t)

    spec = differential(scaled, [([1.0, [2.0]], x), ([1.0, [3.0]], x), ([2.0, [3.0]], x), ([1.0, [2.0]], x),
                                 ([deep], x), ([1.0, [4.0]], x)])
    assert spec.stats()["graph_runs"] > 0, spec.report()
