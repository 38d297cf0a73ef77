"""Programs written to break graph breaks: state handed between Python and segments, an op that
fails in a segment after Python wrote state, threads sharing a split function, recursion
through a break, and names that only some paths bind."""
from __future__ import annotations        # a test below annotates with names that do not exist

import threading

import numpy as np
import pytest
import tensorflow as tf

import janus
from codegen.syntax import split
from tests.harness import assert_same_outcome, differential, run_capturing


@pytest.fixture(autouse=True)
def small_segments(monkeypatch):
    """These programs are small: every run of statements becomes a segment, however short (by
    default a run needs enough work to pay for a graph call; see the last test of this module)."""
    monkeypatch.setattr(split, "MIN_WORK", 1)


def test_a_growing_list_read_by_the_segment_after_the_break():
    def make(items):
        def f(x):
            total = tf.reduce_sum(x)
            items.append(float(total))
            return x * len(items) + items[-1]
        return f
    le, ls = [], []
    eager, spec = make(le), janus.speculate(make(ls))
    for k in range(12):
        x = tf.constant([1.0, float(k)])
        assert_same_outcome(run_capturing(eager, (x,)), run_capturing(spec, (x,)))
    assert le == ls


def test_an_op_failing_in_a_segment_after_python_wrote_state():
    """Eager appends "start", prints, then the gather fails: the same happens under janus, once."""
    def make(log):
        def f(x):
            log.append("start")
            print("sum", float(tf.reduce_sum(x).numpy()))
            y = tf.gather(x, 3) * 2.0
            log.append("end")
            return y
        return f
    le, ls = [], []
    eager, spec = make(le), janus.speculate(make(ls))
    xs = [tf.constant([1.0, 2.0, 3.0, 4.0])] * 8 + [tf.constant([1.0, 2.0])] + [tf.constant([5.0, 6.0, 7.0, 8.0])]
    for x in xs:
        assert_same_outcome(run_capturing(eager, (x,)), run_capturing(spec, (x,)))
        assert le == ls
    assert spec.stats()["segment_graph_runs"] >= 2, spec.report()


def test_threads_share_a_split_function():
    def f(x, box):
        y = tf.tanh(x) * 2.0
        box.append(float(tf.reduce_sum(y)))
        return y + 1.0

    spec = janus.speculate(f)
    boxes = [[] for _ in range(4)]
    errors = []

    def work(i):
        try:
            for k in range(10):
                x = tf.constant([float(i), float(k)])
                got = spec(x, boxes[i])
                np.testing.assert_allclose(got.numpy(), (tf.tanh(x) * 2.0 + 1.0).numpy(), rtol=1e-6)
        except Exception as exc:        # noqa: BLE001 - reported below
            errors.append(exc)
    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for i, box in enumerate(boxes):
        want = [float(tf.reduce_sum(tf.tanh(tf.constant([float(i), float(k)])) * 2.0)) for k in range(10)]
        assert box == pytest.approx(want)


def test_recursion_through_a_break():
    def walk(x, n):
        if n == 0:
            return x
        print("depth", n, float(tf.reduce_sum(x)))
        return walk(x * 0.5, n - 1) + 1.0

    differential(walk, [(tf.constant([float(k), 1.0]), k % 4) for k in range(10)])


def test_a_break_inside_a_tensor_branch_and_a_name_bound_on_one_path():
    def f(x):
        if tf.reduce_sum(x) > 0:
            z = float(tf.reduce_max(x))
            w = x * z
        else:
            w = -x
        return w * 2.0

    differential(f, [(tf.constant([float(k) - 4.0, 1.0]),) for k in range(12)])


def test_keyword_defaults_and_varargs_reach_the_driver():
    def f(x, *rest, scale=2.0, **extra):
        y = x * scale
        note = float(tf.reduce_sum(y)) + len(rest) + len(extra)
        return y + note

    calls = [{"args": (tf.constant([1.0, float(k)]), 1, 2), "kwargs": {"scale": 3.0, "tag": k}} for k in range(6)]
    calls += [(tf.constant([2.0, 2.0]),)] * 4
    differential(f, calls)


def test_gradient_through_segments_recorded_by_a_tape_held_in_python():
    """The `with tf.GradientTape()` holding a break runs in Python; the segments inside it are graph
    calls the tape records, and `tape.gradient` (handed the tape) runs in Python: eager's gradient."""
    w_e, w_s = tf.Variable([[1.0, -1.0], [0.5, 2.0]]), tf.Variable([[1.0, -1.0], [0.5, 2.0]])

    def make(w):
        def step(x):
            with tf.GradientTape() as tape:
                y = tf.tanh(x @ w)
                print("y", float(tf.reduce_sum(y).numpy()))
                loss = tf.reduce_sum(y * y)
            g = tape.gradient(loss, w)
            w.assign_sub(0.1 * g)
            return loss, g
        return step
    eager, spec = make(w_e), janus.speculate(make(w_s))
    for k in range(10):
        x = tf.constant([[1.0, float(k) / 3.0]])
        assert_same_outcome(run_capturing(eager, (x,)), run_capturing(spec, (x,)))
    np.testing.assert_allclose(w_e.numpy(), w_s.numpy(), rtol=1e-6)
    assert spec.stats()["segment_graph_runs"] >= 4, spec.report()


def test_a_nonlocal_counter_written_in_a_segment():
    def outer():
        count = 0

        def f(x):
            nonlocal count
            count += 1
            y = tf.tanh(tf.matmul(x[None, :], tf.ones([2, 2]))) * 2.0 + tf.reduce_mean(x)
            print("y", float(tf.reduce_sum(y).numpy()), count)
            return tf.reduce_sum(y * y) + tf.reduce_max(y) * count, count
        return f
    eager, plain = outer(), outer()
    spec = janus.speculate(plain)
    for k in range(10):
        x = tf.constant([1.0, float(k)])
        assert_same_outcome(run_capturing(eager, (x,)), run_capturing(spec, (x,)))
    assert plain.__closure__[0].cell_contents == 10
    assert spec.stats()["segment_graph_runs"] >= 2, spec.report()


def test_python_raises_between_segments():
    """A Python decision raises after the first segment ran: the later segment never runs, the
    state the earlier parts wrote stays, as in eager."""
    def make(log):
        def f(x):
            log.append(1)
            y = tf.tanh(tf.matmul(x[None, :], tf.ones([2, 2]))) * 2.0 + tf.reduce_mean(x)
            if float(tf.reduce_sum(y)) > 3.0:
                raise ValueError("big")
            log.append(2)
            return tf.reduce_sum(y * y) + tf.reduce_max(y) + tf.reduce_min(y)
        return f
    le, ls = [], []
    eager, spec = make(le), janus.speculate(make(ls))
    for k in range(12):
        x = tf.constant([1.0, float(k % 3) - 1.0])
        assert_same_outcome(run_capturing(eager, (x,)), run_capturing(spec, (x,)))
        assert le == ls


def test_annotations_naming_nothing_do_not_break_the_split():
    """Under postponed annotations a function may be annotated with names that do not exist; the
    driver is made without evaluating them."""
    def f(x: NotDefinedAnywhere, k: int = 2) -> AlsoMissing:  # noqa: F821
        y = tf.tanh(tf.matmul(x[None, :], tf.ones([2, 2]))) * k + tf.reduce_mean(x)
        print("v", float(tf.reduce_sum(y).numpy()))
        return tf.reduce_sum(y * y) + tf.reduce_max(y) + tf.reduce_min(y)

    spec = differential(f, [(tf.constant([1.0, float(k)]),) for k in range(10)])
    assert spec.stats()["segment_graph_runs"] >= 2, spec.report()
