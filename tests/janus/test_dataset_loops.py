"""A `for` over a tf.data.Dataset inside a speculated function becomes a dataset loop in the graph
(as AutoGraph makes it): the elements are produced by the graph, tensors carried through, and the
result equals eager's; what such a loop cannot carry runs in Python and says why."""
import tensorflow as tf

import janus
from tests.harness import differential

DS = tf.data.Dataset.range(6).map(lambda i: tf.cast(i, tf.float32))
PAIRS = tf.data.Dataset.from_tensor_slices((tf.constant([1.0, 2.0, 3.0]), tf.constant([4, 5, 6])))


def total(ds, scale):
    acc = tf.constant(0.0)
    for x in ds:
        acc += x * scale
    return acc


def weighted(ds, bias, start=None):
    s = tf.constant(0.0) if start is None else start
    count = tf.constant(0)
    for x, k in ds:
        if x > 1.5:
            s = s + x * tf.cast(k, tf.float32) + bias
        count += k
    return s, count


def stops_early(ds):
    acc = tf.constant(0.0)
    for x in ds:
        if x > 2.0:
            break
        acc += x
    return acc


LOG = []


def logs(ds):
    acc = tf.constant(0.0)
    for x in ds:
        LOG.append(1)
        acc += x
    return acc


def test_dataset_loop_runs_in_the_graph():
    spec = differential(total, [(DS, tf.constant(s)) for s in (1.0, 2.0, -1.0, 0.5)], profile_runs=2)
    assert spec.stats()["graph_runs"] == 2 and not spec.stats()["imperative"], spec.report()


def test_tuple_elements_and_a_tensor_if():
    spec = differential(weighted, [(PAIRS, tf.constant(b)) for b in (0.0, 1.0, 2.0, -3.0)], profile_runs=2)
    assert spec.stats()["graph_runs"] == 2, spec.report()


def test_python_float_that_becomes_a_tensor_on_one_side_runs_in_python():
    spec = differential(weighted, [(PAIRS, tf.constant(b), 0.0) for b in (0.0, 1.0, 2.0, -3.0)], profile_runs=2)
    assert "cond-python-number" in spec.report()


def test_a_different_dataset_each_call():
    calls = [(tf.data.Dataset.range(n).map(lambda i: tf.cast(i, tf.float32)), tf.constant(1.0)) for n in (3, 4, 5, 6)]
    differential(total, calls, profile_runs=1)


def test_break_runs_in_python_and_says_why():
    spec = differential(stops_early, [(DS,)] * 4, profile_runs=1)
    assert "dataset-loop" in spec.report() and spec.stats()["graph_runs"] == 0


def test_python_state_written_in_the_loop_runs_in_python():
    LOG.clear()
    differential(logs, [(DS,)] * 4, profile_runs=1)
    assert len(LOG) == 2 * 4 * 6                 # eager's six appends per call, for both runs
