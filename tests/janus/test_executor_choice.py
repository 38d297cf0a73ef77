"""A graph's first direct runs try TensorFlow's default executor and the single-threaded one in
turn, and keep the faster.  Every call, during the trials and after, equals eager; the tests
that must see the single-threaded executor at work make it win (`MARGIN`)."""
import threading

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.python.eager import context

import janus
from codegen.graph import executors
from tests.harness import compare_call

_W = tf.Variable(tf.reshape(tf.range(9, dtype=tf.float32) / 10.0, [3, 3]))


def loop_then_branch(x, n):
    """A loop over a tensor bound, then a tensor `if`: neither runs inside the other."""
    total = tf.zeros([3])
    i = tf.constant(0)
    while i < n:
        total = total + x * 1.3 - tf.cast(i, tf.float32)
        i += 1
    if tf.reduce_max(total) > 5.0:
        total = total / 2.0
    else:
        total = total - x
    return total


def nested_control_flow(x, n):
    """A tensor `if` inside a loop over a tensor bound."""
    total = tf.zeros([3])
    i = tf.constant(0)
    while i < n:
        if tf.reduce_sum(x) > tf.cast(i, tf.float32):
            total = total + tf.linalg.matvec(_W, x)
        else:
            total = total - x
        i += 1
    return total


def broken_python_loop(x):
    """Python's loop with a tensor `break`: each later step runs inside the `if` of the one before."""
    for _ in range(3):
        if tf.reduce_sum(x) > 5.0:
            break
        x = x * 2.0
    else:
        x = x - 100.0
    return x


def _calls(k):
    return [(tf.constant([0.5 * (j % 5), 1.0, -0.25 * j]), tf.constant(j % 4)) for j in range(k)]


@pytest.fixture
def single_wins(monkeypatch):
    monkeypatch.setattr(executors, "MARGIN", 1e9)


@pytest.fixture
def default_wins(monkeypatch):
    monkeypatch.setattr(executors, "MARGIN", 0.0)


def _graph(spec):
    assert spec.graphs, spec.report()
    return spec.graphs[0]


def test_every_call_equals_eager_while_both_executors_are_tried_and_after(single_wins):
    spec = janus.speculate(loop_then_branch)
    for x, n in _calls(40):
        compare_call(loop_then_branch, spec, x, n)
    assert spec.stats()["graph_runs"] >= 30, spec.report()
    assert _graph(spec).executor.startswith("single-threaded executor"), _graph(spec).executor
    assert "runs on the single-threaded executor" in spec.report()


def test_the_default_executor_is_kept_where_it_is_not_slower(default_wins):
    spec = janus.speculate(loop_then_branch)
    for x, n in _calls(30):
        compare_call(loop_then_branch, spec, x, n)
    assert _graph(spec).executor.startswith("default executor (median run"), _graph(spec).executor


@pytest.mark.parametrize("fn", [nested_control_flow, broken_python_loop])
def test_control_flow_inside_control_flow_keeps_the_default_executor(single_wins, fn):
    """The single-threaded executor would run the inner `if` on a pool thread that waits for
    another: with more levels than pool threads, the run never ends."""
    calls = _calls(25) if fn is nested_control_flow else [(tf.constant([0.3 * k]),) for k in range(25)]
    spec = janus.speculate(fn)
    for call in calls:
        compare_call(fn, spec, *call)
    assert spec.stats()["graph_runs"] >= 15, spec.report()
    assert "may wait for TensorFlow's thread pool" in _graph(spec).executor, _graph(spec).executor


def gather_in_a_loop(v, x, i):
    v.assign_add(1.0)
    j = tf.constant(0)
    out = tf.zeros([])
    while j < 2:
        out = out + tf.gather(x, i + j)
        j += 1
    return out * v


def test_an_op_failing_under_the_single_threaded_executor_raises_and_leaves_state_as_eager(single_wins):
    x = tf.constant([1.0, 2.0, 3.0])
    ve, vj = tf.Variable(0.0), tf.Variable(0.0)
    spec = janus.speculate(gather_in_a_loop)
    for k in [0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 5, 0, 1, 2, 0]:
        want = got = None
        try:
            want = gather_in_a_loop(ve, x, tf.constant(k))
        except tf.errors.InvalidArgumentError as exc:
            want = type(exc)
        try:
            got = spec(vj, x, tf.constant(k))
        except tf.errors.InvalidArgumentError as exc:
            got = type(exc)
        if isinstance(want, type):
            assert got is want
        else:
            np.testing.assert_array_equal(want.numpy(), got.numpy())
        assert ve.numpy() == vj.numpy()
    assert _graph(spec).executor.startswith("single-threaded executor"), spec.report()


def calls_python(x):
    y = tf.py_function(lambda t: t * 2.0, [x], tf.float32)
    return y + 1.0


def test_a_graph_that_calls_python_runs_on_the_default_executor(single_wins):
    spec = janus.speculate(calls_python)
    for k in range(25):
        compare_call(calls_python, spec, tf.constant(float(k)))
    assert _graph(spec).executor.startswith("default executor"), _graph(spec).executor


def test_a_function_holding_a_python_op_has_no_single_threaded_variant():
    fn = tf.function(calls_python, autograph=False).get_concrete_function(tf.TensorSpec([], tf.float32))
    name = fn._inference_function.name
    found = executors.variant(context.context(), name.decode() if isinstance(name, bytes) else name)
    assert found.startswith("no:") and "PyFunc" in found


def test_an_executor_the_program_chose_stands(single_wins):
    spec = janus.speculate(loop_then_branch)
    with tf.experimental.function_executor_type("DEFAULT"):
        for x, n in _calls(25):
            compare_call(loop_then_branch, spec, x, n)
    assert _graph(spec).executor in ("default executor", "default executor (no run yet)") or \
        "trying" in _graph(spec).executor, _graph(spec).executor


def test_threads_sharing_a_function_during_the_trials_get_eagers_values(single_wins):
    spec = janus.speculate(loop_then_branch)
    for x, n in _calls(4):
        compare_call(loop_then_branch, spec, x, n)

    def worker(offset):
        for x, n in _calls(30)[offset:]:
            np.testing.assert_array_equal(loop_then_branch(x, n).numpy(), spec(x, n).numpy())
    _in_threads(worker, 3)
    assert spec.stats()["graph_runs"] >= 60, spec.report()


def _in_threads(work, n):
    """Run `work(k)` in `n` threads; fails if one raises or never finishes (a deadlock)."""
    errors = []

    def guarded(k):
        try:
            work(k)
        except Exception as exc:         # noqa: BLE001 - reported below
            errors.append(exc)
    threads = [threading.Thread(target=guarded, args=(k,), daemon=True) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a run never finished"
    assert not errors, errors


def test_a_graph_whose_first_runs_are_long_keeps_the_default_executor_untried(monkeypatch):
    monkeypatch.setattr(executors, "LONG", 0.0)
    spec = janus.speculate(loop_then_branch)
    for x, n in _calls(12):
        compare_call(loop_then_branch, spec, x, n)
    assert "a run takes" in _graph(spec).executor, _graph(spec).executor


def branchy(x):
    if tf.reduce_sum(x) > 0:
        return x * 2.0
    return x - 1.0


def test_threads_running_a_graph_with_a_tensor_if_on_the_single_threaded_executor_all_finish(single_wins):
    """Each such run holds a pool thread while its branch runs on another: two at once could
    hold the whole pool.  The runs finish, with eager's values."""
    x = tf.constant([1.0, 2.0, 3.0])
    spec = janus.speculate(branchy)
    for s in (1.0, -1.0, 1.0, -1.0, 1.0):
        compare_call(branchy, spec, x * s)
    results = {}

    def work(k):
        results[k] = [(s, spec(x * s).numpy().tolist()) for s in (1.0 if (i + k) % 3 else -1.0 for i in range(60))]
    _in_threads(work, 4)
    for out in results.values():
        for s, got in out:
            assert got == branchy(x * s).numpy().tolist()
    assert _graph(spec).executor.startswith("single-threaded executor"), _graph(spec).executor
