"""List arguments: a list that grows between calls (a log the step appends to) is fed by
identity once its length varied, so one graph serves every call; a graph that reads such a list
goes back to feeding it item by item; the same list passed twice is one list, as in eager."""
import numpy as np
import tensorflow as tf

from tests.harness import assert_same

import janus


def _twin_runs(fn, make_args, calls=10):
    """Call `fn` eagerly and speculated with separate but equal arguments; compare results and
    the lists after every call.  Returns the speculated function."""
    spec = janus.speculate(fn)
    eager_log, janus_log = [], []
    for i in range(calls):
        expected = fn(*make_args(i), eager_log)
        got = spec(*make_args(i), janus_log)
        assert_same(expected, got)
        assert len(eager_log) == len(janus_log)
        for e, j in zip(eager_log, janus_log):
            assert_same(e, j)
    return spec


def test_a_log_list_that_grows_every_call_keeps_one_graph():
    def step(x, log):
        y = tf.reduce_sum(x * 2.0) + 1.0
        y = y * y - tf.reduce_mean(x)
        log.append(y)
        log.append(float(len(x.shape)))      # a Python number, written back as one
        return y

    spec = _twin_runs(step, lambda i: (tf.constant([1.0, float(i)]),), calls=12)
    st = spec.stats()
    assert st["graph_runs"] >= 8 and st["graphs_built"] <= 2, spec.report()
    assert not st["imperative"], spec.report()


def test_a_growing_list_the_graph_reads_is_fed_item_by_item_again():
    def step(x, log):
        log.append(tf.reduce_sum(x))
        return tf.add_n(log) * float(len(log))

    spec = _twin_runs(step, lambda i: (tf.constant([1.0, float(i)]),), calls=8)
    st = spec.stats()
    assert st["graph_runs"] == 5 and st["build_failures"] == 0, spec.report()   # one graph per length


def test_a_growing_list_extended_and_returned():
    def step(x, log):
        log.extend([x * 2.0, x + 1.0])
        return log

    spec = janus.speculate(step)
    eager_log, janus_log = [], []
    for i in range(8):
        x = tf.constant(float(i))
        assert step(x, eager_log) is eager_log
        assert spec(x, janus_log) is janus_log
        assert_same(eager_log, janus_log)
    assert spec.stats()["graph_runs"] >= 3, spec.report()


def test_an_op_failing_after_the_append_leaves_the_list_as_eager_does():
    def step(x, log):
        log.append(x + 1.0)
        return tf.debugging.assert_positive(x, message="x must be positive") or x * 2.0

    spec = janus.speculate(step)
    eager_log, janus_log = [], []
    for v in [1.0, 2.0, 3.0, 4.0, 5.0, -1.0, 6.0]:
        x = tf.constant(v)
        outcomes = []
        for fn, log in ((step, eager_log), (spec, janus_log)):
            try:
                outcomes.append(("ok", fn(x, log)))
            except tf.errors.InvalidArgumentError as exc:
                outcomes.append(("raised", type(exc)))
        assert outcomes[0][0] == outcomes[1][0]
        assert_same(eager_log, janus_log)


def test_the_same_list_passed_twice_is_one_list():
    def f(x, a, b):
        a.append(x * 2.0)
        return tf.add_n([x, x]) * float(len(b))

    spec = janus.speculate(f)
    for _ in range(6):
        e, j = [1], [1]
        expected = f(tf.constant(1.0), e, e)
        got = spec(tf.constant(1.0), j, j)
        assert_same(expected, got)
        assert len(e) == len(j) == 2


def test_a_list_inside_another_argument_and_passed_itself():
    def f(x, nested, flat):
        flat.append(x)
        return x * float(len(nested[0]))

    spec = janus.speculate(f)
    for _ in range(6):
        e, j = [0.0], [0.0]
        expected = f(tf.constant(2.0), [e], e)
        got = spec(tf.constant(2.0), [j], j)
        assert_same(expected, got)
        assert len(e) == len(j)


def test_different_lists_of_varying_length_each_call():
    def f(x, log):
        log.append(x * 3.0)
        return tf.reduce_sum(x) + 1.0

    spec = janus.speculate(f)
    for i in range(10):
        e, j = list(range(i % 4)), list(range(i % 4))
        assert_same(f(tf.constant([1.0, 2.0]), e), spec(tf.constant([1.0, 2.0]), j))
        assert len(e) == len(j)
        assert np.array_equal(e[-1].numpy(), j[-1].numpy())
