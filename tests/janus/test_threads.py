"""Threads sharing a speculated function: a graph that writes Python state reads it at entry
and writes it back after the run, so such calls run one at a time and no update is lost;
graphs without Python writes run concurrently; guard failures and builds are serialised."""
import threading

import numpy as np

import tensorflow as tf

import janus

X = tf.constant([1.0, 2.0])
COUNTER = 0
LOG = []


def count_calls(x):
    global COUNTER
    COUNTER += 1
    LOG.append(COUNTER)
    return x * 2.0


def branchy(x):
    if tf.reduce_sum(x) > 0:
        return x * 2.0
    return x - 1.0


def run_threads(target, n_threads=4):
    errors = []

    def wrapped():
        try:
            target()
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
    threads = [threading.Thread(target=wrapped) for _ in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_concurrent_calls_lose_no_python_state_update():
    global COUNTER
    f = janus.speculate(count_calls)
    for _ in range(5):
        f(X)
    COUNTER = 0
    LOG.clear()
    run_threads(lambda: [f(X) for _ in range(200)])
    assert COUNTER == 800
    assert sorted(LOG) == list(range(1, 801))
    assert f.stats()["graph_runs"] >= 700, f.report()


def test_concurrent_calls_with_guard_failures_give_eager_results():
    f = janus.speculate(branchy)
    results = {}

    def work(k):
        out = []
        for i in range(60):
            s = 1.0 if (i + k) % 7 else -1.0
            out.append((s, f(X * s).numpy().tolist()))
        results[k] = out

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for out in results.values():
        for s, got in out:
            assert got == branchy(X * s).numpy().tolist()
    assert sum(len(v) for v in results.values()) == 240


V = tf.Variable(0.0)


def bump_then_check(x):
    V.assign_add(1.0)
    tf.debugging.assert_positive(x)
    return x * 2.0


def test_a_failed_run_does_not_undo_the_variable_writes_of_a_run_beside_it():
    """A graph that restores the variables it wrote when an op fails runs one call at a time: a
    failing call on one thread restored a snapshot taken before another thread's writes."""
    spec = janus.speculate(bump_then_check)
    V.assign(0.0)

    def calls(value):
        def run():
            for _ in range(120):
                try:
                    spec(tf.constant(value))
                except tf.errors.InvalidArgumentError:
                    pass
        return run
    threads = [threading.Thread(target=calls(v)) for v in (1.0, -1.0)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert float(V.numpy()) == 240.0


class Counted:
    count = 0

    @janus.speculate
    def step(self, x):
        Counted.count += 1
        return x * 2.0


def test_two_instances_on_two_threads_lose_no_update_of_their_class():
    Counted.count = 0
    objects = [Counted(), Counted()]

    def run(obj):
        return lambda: [obj.step(X) for _ in range(150)]
    threads = [threading.Thread(target=run(o)) for o in objects]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert Counted.count == 300


SPLIT = {"n": 0}


def split_counter(x):
    SPLIT["n"] += 1
    print(float(tf.reduce_sum(x).numpy()) > 100.0)
    SPLIT["n"] += 1
    return x * 2.0


def test_a_function_split_at_a_break_loses_no_update_on_threads(capsys):  # noqa: ARG001 - quiet prints
    spec = janus.speculate(split_counter)
    SPLIT["n"] = 0
    run_threads(lambda: [spec(X) for _ in range(60)], n_threads=2)
    assert SPLIT["n"] == 240, (SPLIT, spec.report())


REENTERED = tf.Variable(0.0)


def calls_itself_back(x, depth):
    REENTERED.assign_add(1.0)
    if depth > 0:
        return tf.numpy_function(lambda a: np.float32(calls_itself_back_fast(tf.constant(a), 0).numpy()), [x],
                                 tf.float32) + x
    return x * 2.0


calls_itself_back_fast = janus.speculate(calls_itself_back)


def test_python_a_graph_calls_may_call_the_function_again():
    """The Python a graph calls runs on a thread of TensorFlow's while the caller waits for it:
    calling the speculated function from there goes ahead, as eager's call does (it hung)."""
    REENTERED.assign(0.0)
    done = []
    thread = threading.Thread(target=lambda: done.append([float(calls_itself_back_fast(tf.constant(float(i)), 1))
                                                          for i in range(6)]), daemon=True)
    thread.start()
    thread.join(120)
    assert done and done[0] == [3.0 * i for i in range(6)] and float(REENTERED.numpy()) == 12.0
