"""Deferred state: writes reach the real objects only after the graph succeeded, exactly as eager."""
import copy
import os
import sys

import numpy as np
import pytest
import tensorflow as tf

import janus
from tests.harness import assert_same, assert_same_outcome, run_capturing

CALLS = 0
HISTORY = []


class Cell:
    def __init__(self, units=4, seed=0):
        rng = np.random.default_rng(seed)
        self.wx = tf.Variable(rng.normal(0, 0.5, (3, units)).astype(np.float32))
        self.wh = tf.Variable(rng.normal(0, 0.5, (units, units)).astype(np.float32))
        self.state = tf.zeros((1, units))
        self.steps = 0
        self.outputs = []

    def run(self, xs):
        h = self.state
        for t in range(xs.shape[0]):
            h = tf.tanh(tf.matmul(xs[t:t + 1], self.wx) + tf.matmul(h, self.wh))
            self.steps += 1
        self.state = h
        self.outputs.append(h)
        return tf.reduce_sum(h)


def rnn_call(cell, xs):
    return cell.run(xs)


def test_rnn_hidden_state_carried_in_self_state_over_20_calls():
    eager_cell, janus_cell = Cell(), Cell()
    spec = janus.speculate(rnn_call)
    lengths = [3, 3, 3, 3, 3, 4, 4, 2, 5, 3] * 2
    for i, n in enumerate(lengths):
        xs = tf.random.stateless_normal((n, 3), seed=(i, 0))
        assert_same(rnn_call(eager_cell, xs), spec(janus_cell, xs))
        assert_same(eager_cell.state, janus_cell.state)
        assert type(janus_cell.steps) is int and janus_cell.steps == eager_cell.steps
        assert len(janus_cell.outputs) == len(eager_cell.outputs)
    outputs_id = id(janus_cell.outputs)
    spec(janus_cell, tf.ones((3, 3)))
    assert id(janus_cell.outputs) == outputs_id            # appended in place: same list object
    s = spec.stats()
    assert s["graph_runs"] >= 12, spec.report()
    assert s["graphs_built"] <= 6, spec.report()           # one per sequence length, not per call


def count_and_log(x):
    global CALLS
    CALLS += 1
    HISTORY.append(tf.reduce_sum(x))
    return x * CALLS


def test_global_counter_and_list_accumulation():
    global CALLS
    spec = janus.speculate(count_and_log)
    results = []
    for i in range(10):
        results.append(spec(tf.constant([1.0, float(i)])))
    assert CALLS == 10 and type(CALLS) is int
    assert len(HISTORY) == 10
    expected = [tf.constant([1.0, float(i)]) * (i + 1) for i in range(10)]
    for r, e in zip(results, expected):
        assert_same(e, r)
    assert [float(h) for h in HISTORY] == [1.0 + i for i in range(10)]
    assert spec.stats()["graph_runs"] >= 6
    assert spec.stats()["graphs_built"] <= 2, spec.report()    # CALLS becomes a tensor input


class Scaler:
    def __init__(self):
        self.scale = 1.0
        self.calls = 0


def scaled_step(s, x):
    s.calls += 1
    s.scale = s.scale * 1.5
    return x * s.scale


def test_scalar_attribute_changing_every_call_does_not_recompile_per_call():
    se, sj = Scaler(), Scaler()
    spec = janus.speculate(scaled_step)
    for i in range(15):
        x = tf.constant([1.0, 2.0])
        assert_same(scaled_step(se, x), spec(sj, x))
        assert (type(sj.calls), type(sj.scale)) == (int, float)
        assert (sj.calls, sj.scale) == (se.calls, pytest.approx(se.scale, rel=1e-6))
    assert spec.stats()["graphs_built"] <= 2, spec.report()
    assert spec.stats()["graph_runs"] >= 10


class Pair:
    def __init__(self):
        self.inner = Scaler()


def aliasing(p, x):
    a = p.inner
    a.scale = 3.0
    y = x * p.inner.scale               # reads the write made through the alias
    p.inner.calls += 1
    return y, a.calls


def test_aliases_see_each_others_writes_and_commit_once():
    pe, pj = Pair(), Pair()
    spec = janus.speculate(aliasing)
    for _ in range(6):
        x = tf.constant([1.0])
        assert_same(aliasing(pe, x), spec(pj, x))
        assert (pj.inner.calls, pj.inner.scale) == (pe.inner.calls, pe.inner.scale)
    assert spec.stats()["graph_runs"] >= 3


def dict_and_items(cache, xs, x):
    cache["last"] = x
    cache["n"] = cache.get("n", 0) + 1
    xs[0] = x * 2.0
    del cache["tmp"]
    return x


def test_subscript_writes_and_deletes_on_argument_containers():
    spec = janus.speculate(dict_and_items)
    for i in range(6):
        ce, cj = {"tmp": 1, "n": i}, {"tmp": 1, "n": i}
        le, lj = [0.0, 1.0], [0.0, 1.0]
        x = tf.constant([float(i)])
        assert_same(dict_and_items(ce, le, x), spec(cj, lj, x))
        assert cj.keys() == ce.keys() and cj["n"] == ce["n"] and type(cj["n"]) is int
        assert_same(ce["last"], cj["last"])
        assert_same(le[0], lj[0]) and lj[1] == 1.0


def test_report_lists_state_reads_and_writes():
    cell = Cell()
    spec = janus.speculate(rnn_call)
    for _ in range(5):
        spec(cell, tf.ones((3, 3)))
    graph = spec.graphs[0]
    assert "args[0].state" in graph.state_reads and "args[0].state" in graph.state_writes
    assert "args[0].steps" in graph.state_writes and "args[0].outputs" in graph.state_writes


# -- fault injection: a guard fails mid-graph; nothing may change ------------------------------
COUNTER = 0
LOG = []


class Box:
    def __init__(self):
        self.h = tf.zeros(2)
        self.n = 0
        self.items = [1, 2]
        self.v = tf.Variable(tf.zeros(2))


def writes_around_guards(box, x, n):
    global COUNTER
    box.h = box.h + x                        # attribute write before the guards
    box.items[0] = box.items[0] + 1          # list item write
    COUNTER += 1                             # global write
    LOG.append(x)
    if tf.reduce_sum(x) > 0.0:               # BRANCH guard
        y = x * 2.0
    else:
        y = x - 1.0
    for _ in range(n):                       # TRIP_COUNT guard on a tensor bound
        y = y + 1.0
    box.n += 1                               # writes after the guards
    box.v.assign_add(y)                      # a variable write (after every guard)
    return y


def _snapshot(box):
    return (box.h.numpy().copy(), box.n, list(box.items), box.v.numpy().copy(), COUNTER, len(LOG))


@pytest.mark.parametrize("kind", ["BRANCH", "TRIP_COUNT", "TENSOR_MATCH", "CONSTANT", "ID_MATCH"])
def test_forced_failure_leaves_state_exactly_as_eager(kind):
    global COUNTER
    be, bj = Box(), Box()
    spec = janus.speculate(writes_around_guards)
    x, n = tf.constant([1.0, 2.0]), tf.constant(2)
    for _ in range(4):                       # warm up: profile and build
        writes_around_guards(be, x, n)
        spec(bj, x, n)
    COUNTER = 0
    assert spec.stats()["graph_runs"] >= 1, spec.report()
    assert any(a.kind.name == kind for g in spec.graphs for a in g.assumptions) or kind not in (
        "BRANCH", "TRIP_COUNT"), spec.report()
    before = spec.stats()
    with janus.testing.force_failure(kind=kind):
        expected = writes_around_guards(be, x, n)
        got = spec(bj, x, n)
    assert_same(expected, got)
    se, sj = _snapshot(be), _snapshot(bj)
    np.testing.assert_array_equal(se[0], sj[0])
    assert se[1:3] == sj[1:3]
    np.testing.assert_array_equal(se[3], sj[3])
    if kind in ("BRANCH", "TRIP_COUNT"):
        assert spec.stats()["guard_failures"] == before["guard_failures"] + 1, spec.report()


def variable_first(box, x):
    box.v.assign_add(x)                      # a variable write before the data-dependent branch:
    if tf.reduce_sum(x) > 0.0:               # its guard does not read the variable, so the write
        y = x * 2.0                          # waits for it
    else:
        y = x - 1.0
    box.h = box.h + y
    return y


def test_a_guard_after_a_variable_write_and_forced_failures_change_nothing():
    be, bj = Box(), Box()
    spec = janus.speculate(variable_first)
    x = tf.constant([1.0, 2.0])
    for _ in range(4):
        assert_same(variable_first(be, x), spec(bj, x))
    assert any(a.kind.name == "BRANCH" and a.kind.in_graph for g in spec.graphs for a in g.assumptions), spec.report()
    with janus.testing.force_failure(kind="BRANCH"):
        assert_same(variable_first(be, -x), spec(bj, -x))
    np.testing.assert_array_equal(be.v.numpy(), bj.v.numpy())
    np.testing.assert_array_equal(be.h.numpy(), bj.h.numpy())
    for k in (x, -x, x):                     # and the guard failing on its own
        assert_same(variable_first(be, k), spec(bj, k))
        np.testing.assert_array_equal(be.v.numpy(), bj.v.numpy())
        np.testing.assert_array_equal(be.h.numpy(), bj.h.numpy())


def test_type_match_forced_miss_keeps_state_exact():
    be, bj = Box(), Box()
    spec = janus.speculate(writes_around_guards)
    x, n = tf.constant([1.0, 2.0]), tf.constant(2)
    for _ in range(4):
        writes_around_guards(be, x, n)
        spec(bj, x, n)
    with janus.testing.force_failure(kind="TYPE_MATCH"):
        assert_same(writes_around_guards(be, x, n), spec(bj, x, n))
    np.testing.assert_array_equal(be.v.numpy(), bj.v.numpy())
    assert (be.n, be.items) == (bj.n, bj.items)


def keras_pair():
    import keras
    models = []
    for _ in range(2):
        keras.utils.set_random_seed(0)
        m = keras.Sequential([keras.layers.Dense(8, activation="tanh"), keras.layers.Dense(1)])
        m(tf.ones((1, 4)))
        models.append((m, keras.optimizers.Adam(0.01)))
    return models


def keras_train_step(model, opt, x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((model(x) - y) ** 2)
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))
    return loss


def test_keras_model_and_optimizer_50_steps_equal_eager():
    (me, oe), (mj, oj) = keras_pair()
    step = janus.speculate(keras_train_step)
    for i in range(50):
        x = tf.random.stateless_uniform((16, 4), seed=(i, 1))
        y = tf.random.stateless_uniform((16, 1), seed=(i, 2))
        le, lj = keras_train_step(me, oe, x, y), step(mj, oj, x, y)
        np.testing.assert_allclose(le.numpy(), lj.numpy(), rtol=1e-5)
    for a, b in zip(me.trainable_variables, mj.trainable_variables):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-7)
    assert step.stats()["graph_runs"] >= 45, step.report()


class Queue:
    def __init__(self):
        self.items = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0]
        self.seen = {}


def consume(q, x):
    first = q.items.pop(0)
    q.items.extend([first * 10.0])
    q.seen.update({len(q.seen): first})
    return x * first


def test_pop_extend_update_on_outside_containers():
    qe, qj = Queue(), Queue()
    items_id, seen_id = id(qj.items), id(qj.seen)
    spec = janus.speculate(consume)
    for _ in range(8):
        x = tf.constant([1.0])
        assert_same(consume(qe, x), spec(qj, x))
        assert qe.items == qj.items and qe.seen == qj.seen
    assert (id(qj.items), id(qj.seen)) == (items_id, seen_id)


def test_text_and_json_reports_list_state_by_source_path():
    cell = Cell()
    spec = janus.speculate(rnn_call)
    for _ in range(5):
        spec(cell, tf.ones((3, 3)))
    data = spec.report(format="json")
    assert "args[0].state" in data["state"]["reads"] and "args[0].steps" in data["state"]["writes"]
    text = spec.report()
    assert "state written: " in text and "args[0].state" in text


def guarded_variable_update(v, w):
    if v > 0.5:                      # True while profiling, False later: the guard fails
        v.assign_sub(0.2)
    w.assign_add(1.0)
    return v + 0.0, w + 0.0


def test_failed_guard_never_leaves_a_variable_write_applied():
    ve, we, vj, wj = tf.Variable(1.0), tf.Variable(0.0), tf.Variable(1.0), tf.Variable(0.0)
    spec = janus.speculate(guarded_variable_update)
    for _ in range(6):
        assert_same(guarded_variable_update(ve, we), spec(vj, wj))
        assert (float(ve), float(we)) == (float(vj), float(wj))
    assert spec.stats()["guard_failures"] == 1


class LSTMish:
    def __init__(self):
        self.state = (tf.zeros((2, 3)), tf.ones((2, 3)))
        self.w = tf.Variable(tf.fill((3, 3), 0.1))


def lstm_step(m, x):
    h, c = m.state
    c = c * 0.9 + tf.matmul(x, m.w)
    h = tf.tanh(c) + h * 0.1
    m.state = (h, c)
    return tf.reduce_sum(h)


def test_tuple_state_is_fed_fresh_and_never_recompiles():
    me, mj = LSTMish(), LSTMish()
    spec = janus.speculate(lstm_step)
    for i in range(12):
        x = tf.random.stateless_normal((2, 3), seed=(i, 3))
        assert_same(lstm_step(me, x), spec(mj, x))
        assert_same(me.state[0], mj.state[0]) and assert_same(me.state[1], mj.state[1]) is None
    assert spec.stats()["graphs_built"] == 1 and spec.stats()["graph_runs"] == 9, spec.report()


def environment_and_arguments(x):
    return x * float(os.environ.get("JANUS_TEST_MODE", "1")), x * float(len(sys.argv)), sys.argv[-1]


def test_library_state_read_through_a_mapping_or_a_list_is_read_at_each_call():
    """`os.environ.get` (a generic Mapping method reading the process's environment) and
    `sys.argv` (a library module's list) were read once, when the graph was built."""
    spec = janus.speculate(environment_and_arguments)
    saved = list(sys.argv)
    try:
        for i in range(7):
            os.environ["JANUS_TEST_MODE"] = str(i % 3)
            sys.argv.append(str(i))
            assert_same_outcome(run_capturing(environment_and_arguments, (tf.constant(2.0),)),
                                run_capturing(spec, (tf.constant(2.0),)))
    finally:
        sys.argv[:] = saved
        os.environ.pop("JANUS_TEST_MODE", None)
