"""Each assumption kind: once where it holds (the graph runs), once where it breaks
(the call still returns eager's answer, and later calls run a relaxed graph)."""
import tensorflow as tf

import janus
from tests.harness import assert_same, differential

OFFSET = tf.constant(1.0)
FACTOR = 2


ACTIVATION = tf.tanh


def activated(x):
    return ACTIVATION(x) * 2.0


def scaled(x):
    return tf.reduce_sum(x, axis=0) * FACTOR + OFFSET


def branchy(x):
    if tf.reduce_sum(x) > 0.0:
        y = x * 2.0
    else:
        y = x - 1.0
    return y


def counted(x, n):
    for _ in range(n):
        x = x * 2.0
    return x


def doubling(x):
    while tf.reduce_max(x) < 50.0:
        x = x * 2.0
    return x


def with_scalar(x, k):
    return x * k


def with_object(x, cfg):
    return x * cfg.scale


class Cfg:
    def __init__(self, scale):
        self.scale = scale


def _warm(fn, *args, runs=3):
    spec = janus.speculate(fn, profile_runs=runs)
    for _ in range(runs):
        spec(*args)
    return spec


def _graph_ran(spec, call):
    before = spec.stats()
    out = call()
    after = spec.stats()
    assert after["graph_runs"] == before["graph_runs"] + 1, spec.report()
    assert after["eager_runs"] == before["eager_runs"], spec.report()
    return out


def test_tensor_match_holds_and_relaxes_shape():
    x4, x3 = tf.ones((4, 8)), tf.ones((3, 8))
    spec = _warm(scaled, x4)
    _graph_ran(spec, lambda: spec(x4))
    assert_same(scaled(x3), spec(x3))                 # miss: one relaxed graph
    assert spec.relaxations.dims["args[0]"] == {0}
    for n in (5, 6, 7):
        assert_same(scaled(tf.ones((n, 8))), _graph_ran(spec, lambda: spec(tf.ones((n, 8)))))
    assert spec.stats()["graphs_built"] == 2


def test_tensor_match_breaks_on_dtype():
    # eager raises (float64 + float32 OFFSET); janus must raise the same, not a TF dump of its own
    differential(scaled, [(tf.ones((2, 2)),)] * 4 + [(tf.ones((2, 2), tf.float64),)])


def test_constant_holds_then_becomes_tensor_input():
    spec = _warm(with_scalar, tf.ones(3), 2)
    _graph_ran(spec, lambda: spec(tf.ones(3), 2))
    assert_same(with_scalar(tf.ones(3), 5), spec(tf.ones(3), 5))
    assert "args[1]" in spec.relaxations.scalars
    built = spec.stats()["graphs_built"]
    for k in range(6, 20):
        assert_same(with_scalar(tf.ones(3), k), _graph_ran(spec, lambda: spec(tf.ones(3), k)))
    assert spec.stats()["graphs_built"] == built       # no recompile per value


def test_type_match_breaks_on_argument_type():
    spec = _warm(with_scalar, tf.ones(3), 2)
    assert_same(with_scalar(tf.ones(3), 2.5), spec(tf.ones(3), 2.5))      # int -> float: a miss
    assert_same(with_scalar(tf.ones(3), tf.constant(2.0)), spec(tf.ones(3), tf.constant(2.0)))
    assert spec.stats()["cache_misses"] >= 2


def test_global_tensor_is_fed_fresh_not_frozen():
    global OFFSET
    x = tf.ones((2, 2))
    spec = _warm(scaled, x)
    _graph_ran(spec, lambda: spec(x))
    old = OFFSET
    try:
        OFFSET = tf.constant(10.0)
        assert_same(scaled(x), _graph_ran(spec, lambda: spec(x)))     # same graph, new value
        assert spec.stats()["graphs_built"] == 1
    finally:
        OFFSET = old


def test_id_match_global_function_rebinding_is_a_miss_not_a_wrong_answer():
    global ACTIVATION
    x = tf.constant([-1.0, 2.0])
    spec = _warm(activated, x)
    _graph_ran(spec, lambda: spec(x))
    try:
        ACTIVATION = tf.nn.relu
        assert_same(activated(x), spec(x))
        assert spec.stats()["cache_misses"] >= 2
        assert_same(activated(x), _graph_ran(spec, lambda: spec(x)))
    finally:
        ACTIVATION = tf.tanh


def test_constant_global_scalar_rebinding():
    global FACTOR
    x = tf.ones((2, 2))
    spec = _warm(scaled, x)
    try:
        FACTOR = 3
        assert_same(scaled(x), spec(x))
    finally:
        FACTOR = 2
    assert_same(scaled(x), spec(x))


def test_id_match_attribute_of_argument_object():
    cfg = Cfg(2.0)
    spec = _warm(with_object, tf.ones(2), cfg)
    _graph_ran(spec, lambda: spec(tf.ones(2), cfg))
    cfg.scale = 4.0
    assert_same(with_object(tf.ones(2), cfg), spec(tf.ones(2), cfg))


def test_branch_holds_then_breaks_and_becomes_cond():
    pos, neg = tf.constant([1.0, 2.0]), tf.constant([-5.0, 1.0])
    spec = _warm(branchy, pos)
    _graph_ran(spec, lambda: spec(pos))
    assert_same(branchy(neg), spec(neg))               # in-graph guard fails: eager answer
    s = spec.stats()
    assert s["guard_failures"] == 1
    assert list(spec.assumption_failures.values()) == [1]
    assert "test_assumptions.py:24" in spec.report()
    assert_same(branchy(neg), _graph_ran(spec, lambda: spec(neg)))   # relaxed graph: tf.cond
    assert_same(branchy(pos), _graph_ran(spec, lambda: spec(pos)))
    assert spec.stats()["guard_failures"] == 1


def test_trip_count_holds_then_breaks_and_becomes_while_loop():
    small, big = tf.constant([30.0]), tf.constant([1.0])
    spec = _warm(doubling, small)
    _graph_ran(spec, lambda: spec(small))
    assert_same(doubling(big), spec(big))
    assert spec.stats()["guard_failures"] == 1
    assert_same(doubling(big), _graph_ran(spec, lambda: spec(big)))
    assert_same(doubling(tf.constant([0.01])), _graph_ran(spec, lambda: spec(tf.constant([0.01]))))


def test_trip_count_on_tensor_bound():
    x = tf.constant([1.0])
    spec = _warm(counted, x, tf.constant(3))
    _graph_ran(spec, lambda: spec(x, tf.constant(3)))
    assert_same(counted(x, tf.constant(5)), spec(x, tf.constant(5)))
    assert spec.stats()["guard_failures"] == 1
    assert_same(counted(x, tf.constant(6)), _graph_ran(spec, lambda: spec(x, tf.constant(6))))
