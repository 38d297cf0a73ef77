"""Assumptions placed after a variable write: a tensor `if` whose one side raises, and a tensor
`if` the profile saw take one side, after an optimizer step or an `assign_add`.  The write
waits in the graph for a check that does not read it (a failed run has written nothing); a
check that reads the variable after the write puts it back when it fails.  Either way the
call then runs in Python and leaves what eager leaves.  Every call is compared with eager on
state of its own: result, exception, and every variable afterwards."""
import keras
import pytest
import tensorflow as tf

import janus


class State:
    def __init__(self):
        self.w = tf.Variable([[0.5], [0.2]])
        self.v = tf.Variable(0.0)
        self.opt = keras.optimizers.SGD(0.1)
        self.table = tf.lookup.experimental.MutableHashTable(tf.int64, tf.float32, default_value=0.0)
        self.calls = []


def step_that_may_diverge(s, x):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((x @ s.w - 1.0) ** 2)
    s.opt.apply_gradients(zip(tape.gradient(loss, [s.w]), [s.w]))
    if loss > 100.0:
        raise ValueError("diverged")
    return loss


def counts_then_raises(s, x):
    s.v.assign_add(1.0)
    if tf.reduce_sum(x) > 100.0:
        raise ValueError("big")
    return tf.reduce_sum(x) * 2.0


def raises_on_the_count(s, x):
    s.v.assign_add(1.0)
    if s.v > 4.0:
        raise ValueError("too many")
    return tf.reduce_sum(x) + s.v


def branches_on_the_count(s, x):
    s.v.assign_add(tf.reduce_sum(x))
    if s.v > 6.0:
        return s.v * 2.0
    return s.v - 1.0


def inserts_then_raises(s, x):
    # a table write cannot be put back: no check may follow it, and the `if` stays a tf.cond
    s.table.insert(tf.constant([1], tf.int64), s.table.lookup(tf.constant([1], tf.int64)) + 1.0)
    if tf.reduce_sum(x) > 100.0:
        raise ValueError("big")
    return tf.reduce_sum(x)


def calls_python_then_raises(s, x):
    # nor a tf.py_function, which a re-run would call twice
    tf.py_function(lambda: s.calls.append(1) or 0.0, [], tf.float32)
    if tf.reduce_sum(x) > 100.0:
        raise ValueError("big")
    return tf.reduce_sum(x)


def outcome(fn, s, x):
    try:
        result = ("value", fn(s, x).numpy().tobytes())
    except ValueError as error:
        result = ("raised", str(error))
    table = s.table.lookup(tf.constant([1], tf.int64)).numpy().tobytes()
    return result, s.w.numpy().tobytes(), s.v.numpy().tobytes(), int(s.opt.iterations.numpy()), table, len(s.calls)


SCALES = [1.0, 1.0, 1.0, 1.0, 1.0, 100.0, 1.0, 1.0, 100.0, 1.0]


@pytest.mark.parametrize("fn", [step_that_may_diverge, counts_then_raises, raises_on_the_count,
                                branches_on_the_count, inserts_then_raises, calls_python_then_raises])
def test_calls_match_eager_across_a_failed_assumption(fn):
    spec, eager_state, janus_state = janus.speculate(fn), State(), State()
    for scale in SCALES:
        x = tf.ones([4, 2]) * scale
        assert outcome(spec, janus_state, x) == outcome(fn, eager_state, x), spec.report()


@pytest.mark.parametrize("fn", [step_that_may_diverge, counts_then_raises])
def test_an_if_that_raises_after_a_write_is_a_graph(fn):
    spec, state = janus.speculate(fn), State()
    for scale in SCALES[:5]:
        spec(state, tf.ones([4, 2]) * scale)
    assert spec.stats()["graph_runs"] >= 1, spec.report()
    assert not any(g.restored_variables for g in spec.graphs), spec.report()
