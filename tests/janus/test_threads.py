"""Threads sharing a speculated function: a graph that writes Python state reads it at entry
and writes it back after the run, so such calls run one at a time and no update is lost;
graphs without Python writes run concurrently; guard failures and builds are serialised."""
import threading

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
