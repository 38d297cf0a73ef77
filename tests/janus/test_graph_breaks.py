"""Graph breaks: a statement only Python can run (a tensor's value in Python, a per-call value,
a library call) no longer makes the whole function run in Python.  It runs in Python between
graph segments, each speculated, guarded and committed on its own, in program order; results,
printed text and state equal eager's on every call, also when a later segment's guard fails."""
import random

import numpy as np
import pytest
import tensorflow as tf

import janus
from codegen.syntax import split
from tests.harness import differential


@pytest.fixture(autouse=True)
def small_segments(monkeypatch):
    """These programs are small: every run of statements becomes a segment, however short (by
    default a run needs enough work to pay for a graph call; see the last test of this module)."""
    monkeypatch.setattr(split, "MIN_WORK", 1)


def x_of(k, n=3):
    return tf.constant(np.linspace(-1.0, 1.0, n, dtype=np.float32) * (k % 4 - 1.5))


def test_a_training_step_that_logs_its_loss_with_numpy():
    w_eager, w_spec = tf.Variable(tf.ones([3, 2])), tf.Variable(tf.ones([3, 2]))

    def make(w):
        def step(x):
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum(tf.tanh(x[None, :] @ w) ** 2)
            grad = tape.gradient(loss, w)
            w.assign_sub(0.1 * grad)
            print("loss", loss.numpy())
            return loss
        return step
    eager, spec = make(w_eager), janus.speculate(make(w_spec))
    from tests.harness import assert_same_outcome, run_capturing
    for k in range(14):
        assert_same_outcome(run_capturing(eager, (x_of(k),)), run_capturing(spec, (x_of(k),)))
    np.testing.assert_allclose(w_eager.numpy(), w_spec.numpy(), rtol=1e-6)
    stats = spec.stats()
    assert not stats["imperative"] and stats["segment_graph_runs"] >= 4, spec.report()
    assert "RUNS AS GRAPH SEGMENTS" in spec.report()


def test_a_python_decision_on_float_of_a_tensor_midway():
    """`float()` of a scalar tensor is a Python float the graph computes: no break."""
    def f(x):
        y = tf.tanh(x) * 3.0
        if float(tf.reduce_sum(y)) > 0:
            y = y + 1.0
        else:
            y = y * -2.0
        return tf.reduce_sum(y * y)

    spec = differential(f, [(x_of(k),) for k in range(12)])
    stats = spec.stats()
    assert stats["graph_runs"] >= 6 and stats["segment_graph_runs"] == 0, spec.report()


def test_a_python_decision_on_a_tensors_numpy_value_midway():
    def f(x):
        y = tf.tanh(x) * 3.0
        if float(tf.reduce_sum(y).numpy()) > 0:
            y = y + 1.0
        else:
            y = y * -2.0
        return tf.reduce_sum(y * y)

    spec = differential(f, [(x_of(k),) for k in range(12)])
    assert spec.stats()["segment_graph_runs"] >= 6, spec.report()


def test_random_random_midway_draws_fresh_each_call():
    def f(x):
        y = tf.reduce_sum(x * 2.0)
        r = random.random()
        return y + r, r

    spec = janus.speculate(f)
    for k in range(12):
        random.seed(k)
        want = f(x_of(k))
        random.seed(k)
        got = spec(x_of(k))
        assert got[1] == want[1] and float(got[0]) == pytest.approx(float(want[0]))
    assert spec.stats()["graph_runs"] >= 4, spec.report()          # the draw runs inside the graph
    assert len({spec(x_of(1))[1] for _ in range(3)}) == 3          # a new draw on every call


def test_break_inside_a_python_loop_with_state_around_it():
    class Tracker:
        def __init__(self):
            self.history = []
            self.total = 0.0

    def make(t):
        def f(x):
            for i in range(3):
                x = tf.tanh(x) + 0.5
                t.history.append(float(tf.reduce_mean(x).numpy()))       # needs the value in Python
                x = x * 1.5
                t.total = t.total + 1.0
            return x
        return f
    te, ts = Tracker(), Tracker()
    eager, spec = make(te), janus.speculate(make(ts))
    for k in range(8):
        np.testing.assert_allclose(eager(x_of(k)).numpy(), spec(x_of(k)).numpy(), rtol=1e-6)
    assert te.history == pytest.approx(ts.history) and te.total == ts.total
    assert spec.stats()["segment_graph_runs"] >= 6, spec.report()


def test_break_inside_a_called_helper_splits_at_the_call():
    w = tf.Variable([[1.0], [2.0]])

    def log_value(t):
        print("value", float(tf.reduce_sum(t).numpy()))

    def step(x):
        h = x @ w
        log_value(h)
        return tf.reduce_sum(h * 2.0)

    spec = differential(step, [(tf.constant([[1.0, float(k)]]),) for k in range(12)])
    assert spec.stats()["segment_graph_runs"] >= 4, spec.report()


def test_a_later_segments_guard_fails_and_the_earlier_segment_stays_committed():
    """Segment 1 writes a variable and a list; segment 2 speculates on a branch that flips.  On
    the flip only segment 2 re-runs in Python: the write of segment 1 happened once, as in eager."""
    def make(v, log):
        def f(x):
            v.assign_add(tf.reduce_sum(x))
            log.append("first")
            print("mid", float(v.read_value().numpy()))
            if tf.reduce_sum(x) > 0:
                out = x * 2.0
            else:
                out = x - 1.0
            log.append("second")
            return out
        return f
    ve, vs, le, ls = tf.Variable(0.0), tf.Variable(0.0), [], []
    eager, spec = make(ve, le), janus.speculate(make(vs, ls))
    xs = [tf.constant([1.0, 2.0])] * 10 + [tf.constant([-3.0, 1.0]), tf.constant([2.0, 2.0])]
    from tests.harness import assert_same_outcome, run_capturing
    for x in xs:
        assert_same_outcome(run_capturing(eager, (x,)), run_capturing(spec, (x,)))
        assert float(ve.numpy()) == float(vs.numpy()) and le == ls
    parts = spec.report(format="json")["segments"]["parts"]
    assert sum(p["counters"]["guard_failures"] for p in parts) >= 1, spec.report()


def test_two_breaks_a_segment_meets_the_second_and_the_function_is_split_again():
    """The segment after the first break meets the second: the function is split again at both
    lines, three segments, Python twice between.  (Segment names are unique per process: a clash
    between a segment split in turn and its own segments once ran the wrong code.)"""
    seen = []

    def f(x):
        a = tf.tanh(x) * 2.0
        seen.append(a.numpy().sum())
        b = a + 1.0
        seen.append(float(tf.reduce_sum(b).numpy()))
        return b * 3.0

    spec = differential(f, [(x_of(k),) for k in range(14)])
    assert len(seen) == 2 * 2 * 14
    segments = spec.report(format="json")["segments"]
    assert len(segments["breaks"]) == 2 and len(segments["parts"]) == 3, spec.report()
    assert spec.stats()["segment_graph_runs"] >= 4, spec.report()


def test_a_variable_only_some_paths_bind_keeps_that_part_in_python():
    """A name the Python part binds on one path only cannot be handed to a segment: the part that
    reads it stays Python, and eager's UnboundLocalError is raised where eager raises it."""
    def f(x):
        if float(tf.reduce_sum(x)) > 0:
            y = x * 2.0
        return tf.reduce_sum(y)

    differential(f, [(tf.constant([1.0]),), (tf.constant([2.0]),), (tf.constant([3.0]),),
                     (tf.constant([1.0]),), (tf.constant([-1.0]),), (tf.constant([4.0]),)])


def test_strict_still_raises_instead_of_splitting():
    def f(x):
        return float(tf.reduce_sum(x).numpy()) + 1.0

    spec = janus.speculate(f, strict=True, profile_runs=1)
    spec(tf.constant([1.0]))
    with pytest.raises(janus.ConversionError, match="python-value-of-tensor"):
        spec(tf.constant([1.0]))


def test_a_call_into_a_python_library_runs_on_every_call():
    """A graph built around `queue.Queue.put` put once, at build time, and never again; the call
    now runs once per call as in eager, inside the graph, with the Python float eager puts."""
    import queue
    q_eager, q_spec = queue.Queue(), queue.Queue()

    def make(q):
        def f(x):
            y = tf.tanh(x) * 2.0
            q.put(float(k_of(y)))
            return y + 1.0
        return f

    def k_of(y):
        return tf.reduce_sum(y)
    eager, spec = make(q_eager), janus.speculate(make(q_spec))
    for k in range(10):
        np.testing.assert_allclose(eager(x_of(k)).numpy(), spec(x_of(k)).numpy(), rtol=1e-6)
    assert list(q_eager.queue) == pytest.approx(list(q_spec.queue)) and q_spec.qsize() == 10
    assert {type(v) for v in q_spec.queue} == {float}
    assert spec.stats()["graph_runs"] >= 4 and not spec.fallbacks, spec.report()


def test_a_library_call_runs_inside_the_graph_on_every_call():
    import queue
    q_eager, q_spec = queue.Queue(), queue.Queue()

    def make(q):
        def f(x):
            y = tf.tanh(x) * 2.0
            q.put(1)
            return y + 1.0
        return f
    eager, spec = make(q_eager), janus.speculate(make(q_spec))
    for k in range(10):
        np.testing.assert_allclose(eager(x_of(k)).numpy(), spec(x_of(k)).numpy(), rtol=1e-6)
    assert q_spec.qsize() == q_eager.qsize() == 10
    assert not spec.fallbacks and spec.stats()["graph_runs"] >= 4, spec.report()


def test_a_short_run_between_breaks_stays_python(monkeypatch):
    """By default a run of a few eager ops stays in Python (a graph call would cost more than it
    saves); a run with enough work is a segment."""
    monkeypatch.setattr(split, "MIN_WORK", 6)

    def f(x, log):
        y = x + 1.0
        log.append(float(tf.reduce_sum(y).numpy()))
        h = tf.tanh(tf.matmul(x[None, :], tf.ones([3, 3]))) * 2.0 + tf.reduce_mean(x) - tf.reduce_max(x)
        return h

    log_e, log_s = [], []
    spec = janus.speculate(f)
    for k in range(10):
        np.testing.assert_allclose(f(x_of(k), log_e).numpy(), spec(x_of(k), log_s).numpy(), rtol=1e-6)
    assert log_e == pytest.approx(log_s)
    parts = spec.report(format="json")["segments"]["parts"]
    assert len(parts) == 1 and parts[0]["counters"]["graph_runs"] >= 2, spec.report()   # `y = x + 1.0` stays Python
