"""`assert` on a tensor is the `if` it means: the graph checks it, and a call where it fails runs
in Python and raises eager's `AssertionError`, message and all.  (PYTEST_DONT_REWRITE: pytest's
assertion rewriting would change the eager program's messages, not janus's reading of it.)"""
import tensorflow as tf

import janus
from tests.harness import differential

MESSAGES = []


def message(y):
    MESSAGES.append(1)                  # built only when the assert fails, as eager builds it
    return f"sum must be positive, got {y.numpy()}"


def checked(x):
    y = x * 2.0
    assert tf.reduce_sum(y) > 0, message(y)
    assert tf.reduce_max(y) < 100.0
    return y + 1.0


def calls(values):
    return [(tf.constant([v, 1.0]),) for v in values]


def test_an_assert_that_holds_is_checked_in_the_graph():
    spec = differential(checked, calls([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]))
    stats = spec.stats()
    assert stats["graph_runs"] >= 3 and not stats["imperative"], spec.report()
    assert "raises" in spec.report()


def test_an_assert_that_fails_raises_eagers_error_with_its_message():
    MESSAGES.clear()
    spec = differential(checked, calls([1.0, 2.0, 3.0, 4.0, -9.0, 5.0, 60.0, 6.0, -3.0, 7.0]))
    assert len(MESSAGES) == 4, MESSAGES      # two failing calls, eager's and janus's: built once each
    assert spec.stats()["graph_runs"] >= 4, spec.report()


def on_python_values(x, n):
    assert n >= 0, "n must not be negative"
    assert isinstance(n, int)
    return x * n


def test_an_assert_on_python_values():
    spec = differential(on_python_values, [(tf.constant(2.0), n) for n in (1, 2, 3, 4, -1, 5, 2)])
    assert spec.stats()["graph_runs"] >= 2, spec.report()


def in_a_loop(x, steps):
    total = tf.constant(0.0)
    for i in tf.range(steps):
        total += x * tf.cast(i, tf.float32)
        assert total < 50.0, "diverged"
    return total


def test_an_assert_in_a_tensor_loop():
    spec = differential(in_a_loop, [(tf.constant(v), tf.constant(n)) for v, n in
                                    [(1.0, 3), (1.0, 4), (2.0, 3), (1.0, 5), (9.0, 5), (1.0, 2), (3.0, 6)]])
    assert spec.stats()["graph_runs"] >= 2, spec.report()


def under_a_try(x):
    try:
        assert tf.reduce_min(x) > 0.0, "non-positive"
        y = tf.math.log(x)
    except AssertionError as e:
        y = tf.zeros_like(x) - float(len(str(e)))
    return y


def test_an_assert_caught_by_the_function():
    differential(under_a_try, [(tf.constant([v, 2.0]),) for v in (1.0, 2.0, 3.0, -1.0, 4.0, 0.0, 5.0)])


def in_a_branch(x):
    if tf.reduce_sum(x) > 0:
        y = x * 2.0
        if tf.reduce_max(y) > 50.0:
            raise ValueError("too big")
    else:
        y = -x
    return y


def test_a_raising_side_inside_a_tf_cond():
    spec = differential(in_a_branch, [(tf.constant([v, 1.0]),) for v in
                                      (1.0, -5.0, 2.0, -3.0, 3.0, 40.0, -1.0, 4.0, 30.0, 5.0)])
    assert spec.stats()["graph_runs"] >= 4, spec.report()


V = tf.Variable(0.0)


def writes_in_the_loop(x, steps):
    for i in tf.range(steps):
        V.assign_add(x)
        assert V < 20.0, "too much"
    return V.read_value()


def test_a_failed_assert_in_a_loop_leaves_eagers_variable():
    values = [(1.0, 2), (1.0, 3), (2.0, 2), (1.0, 4), (9.0, 3), (0.5, 2), (1.0, 1)]
    V.assign(0.0)
    eager = []
    for v, n in values:
        try:
            eager.append(("ok", float(writes_in_the_loop(tf.constant(v), tf.constant(n))), float(V.numpy())))
        except AssertionError as e:
            eager.append(("raise", str(e), float(V.numpy())))
        V.assign(min(float(V.numpy()), 5.0))
    V.assign(0.0)
    spec = janus.speculate(writes_in_the_loop)
    for k, (v, n) in enumerate(values):
        try:
            got = ("ok", float(spec(tf.constant(v), tf.constant(n))), float(V.numpy()))
        except AssertionError as e:
            got = ("raise", str(e), float(V.numpy()))
        assert got == eager[k], (k, got, eager[k], spec.report())
        V.assign(min(float(V.numpy()), 5.0))
    assert spec.stats()["graph_runs"] >= 3, spec.report()
