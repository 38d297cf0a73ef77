"""A tensor `if` or loop whose body prints, appends to an outside list or writes an outside dict
(Python state no graph output carries) runs in Python between graph segments: the work before
it is a graph, the test is made on that graph's eager results, and the body runs as eager runs
it.  Results, prints and state equal eager's on every call."""
import types

import numpy as np
import pytest
import tensorflow as tf

import janus
from codegen.syntax import split
from tests.harness import assert_same, compare_call


@pytest.fixture(autouse=True)
def small_segments(monkeypatch):
    monkeypatch.setattr(split, "MIN_WORK", 1)


def _xs(n=14):
    rng = np.random.default_rng(3)
    return [tf.constant(rng.normal(size=(4, 3)).astype(np.float32)) for _ in range(n)]


def _state():
    return types.SimpleNamespace(w=tf.Variable(np.full((3, 1), 0.5, np.float32)), history=[], stats={"good": 0})


def step(s, x):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.tanh(x @ s.w) ** 2)
    s.w.assign_sub(0.1 * tape.gradient(loss, s.w))
    if loss < 0.05:
        s.history.append(loss)
        s.stats["good"] += 1
        print("good step", loss)
    return loss


def _same_state(a, b, where):
    assert_same(a.w.numpy(), b.w.numpy(), where)
    assert_same(a.history, b.history, where)
    assert a.stats == b.stats, where


def test_a_print_append_and_dict_write_under_a_tensor_if_split_the_step():
    eager_s, spec_s = _state(), _state()
    spec = janus.speculate(step)
    xs = _xs()
    xs[1] = xs[1] * 0.01          # the profile sees both sides: the `if` is no assumption but a break
    for i, x in enumerate(xs):
        compare_call(lambda x: step(eager_s, x), lambda x: spec(spec_s, x), x)
        _same_state(eager_s, spec_s, f"call {i}")
    assert eager_s.history, "no call took the side: the test shows nothing"
    assert "RUNS AS GRAPH SEGMENTS" in spec.report(), spec.report()
    assert "segment" in spec.report() and spec.stats()["segment_graph_runs"] > 0, spec.report()


def countdown(x, log):
    y = tf.reduce_sum(tf.abs(x)) * 3.0
    while y > 1.0:
        print("y", y)
        log.append(float(y))
        y = y / 2.0
    return y


def test_a_print_inside_a_tensor_while_loop():
    log_e, log_j = [], []
    spec = janus.speculate(countdown)
    for i, x in enumerate(_xs(8)):
        compare_call(lambda x: countdown(x, log_e), lambda x: spec(x, log_j), x)
        assert log_e == log_j, f"call {i}"


def raising_side(s, x):
    loss = tf.reduce_sum(tf.tanh(x @ s.w))
    if loss > 0.0:
        s.history.append(loss)
        if len(s.history) > 3:
            raise RuntimeError(f"too many: {len(s.history)}")
    return loss * 2.0


def test_a_raise_inside_the_python_side_leaves_eagers_state():
    eager_s, spec_s = _state(), _state()
    spec = janus.speculate(raising_side)
    for i, x in enumerate(_xs()):
        compare_call(lambda x: raising_side(eager_s, x), lambda x: spec(spec_s, x), x)
        _same_state(eager_s, spec_s, f"call {i}")


def depth(t, log):
    if isinstance(t, tuple):
        return 1 + max(depth(t[0], log), depth(t[1], log))
    v = tf.reduce_sum(t)
    if v > 0:
        print("leaf", v)
        log.append(v)
    return 0


def test_a_print_under_a_tensor_if_in_a_recursion():
    log_e, log_j = [], []
    spec = janus.speculate(depth)
    for i, x in enumerate(_xs(8)):
        tree = ((x[0], x[1]), (x[2], (x[3], x[0] * -1.0)))
        compare_call(lambda t: depth(t, log_e), lambda t: spec(t, log_j), tree)
        assert_same(log_e, log_j, f"call {i}")


def nested_nonlocal(x):
    hits = 0

    def hit(v):
        nonlocal hits
        if tf.reduce_sum(v) > 0:
            hits += 1
    for row in tf.unstack(x):
        hit(row)
    return hits, x * 2.0


def test_a_nested_helpers_nonlocal_written_under_a_tensor_if():
    spec = janus.speculate(nested_nonlocal)
    for x in _xs(8):
        compare_call(nested_nonlocal, spec, x)
