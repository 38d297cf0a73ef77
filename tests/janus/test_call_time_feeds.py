"""Values a graph reads at each call (outside tensors, relaxed Python numbers, the recursion
limit) are made by janus's own feeds, not TensorFlow's deferred-capture cast: each value must be
the one eager reads on that call, whatever the program puts there between calls."""
import numpy as np
import tensorflow as tf

import janus
from tests.harness import assert_same_outcome, run_capturing

X = tf.constant([1.0, 2.0])


class Model:
    def __init__(self):
        self.w = tf.constant([3.0, 4.0])
        self.scale = 1.5

    def apply(self, x):
        return x * self.w + self.scale


def power(x, n):
    if n == 0:
        return tf.ones_like(x)
    return x * power(x, n - 1)


def _same_on_every_call(fn, spec, calls):
    for i, (mutate, args) in enumerate(calls):
        mutate()
        assert_same_outcome(run_capturing(fn, args), run_capturing(spec, args))


def _fed_graphs(spec):
    return [g for g in spec.graphs if g.feeds is not None]


def test_outside_tensors_and_numbers_read_on_each_call_through_janus_feeds():
    m = Model()
    spec = janus.speculate(m.apply)
    calls = [(lambda: None, (X,))] * 3
    calls += [(lambda k=k: setattr(m, "scale", 2.0 + k), (X,)) for k in range(4)]      # relaxed to a feed
    calls += [(lambda k=k: setattr(m, "w", tf.constant([5.0 + k, -1.0])), (X,)) for k in range(3)]
    _same_on_every_call(m.apply, spec, calls)
    assert spec.counters["graph_runs"] >= 5
    assert _fed_graphs(spec), "the graph's call-time values should come from janus's feeds"


def test_a_variable_put_where_a_fed_tensor_was_is_read_at_the_call():
    m = Model()
    spec = janus.speculate(m.apply)
    v = tf.Variable([7.0, 8.0])
    calls = [(lambda: None, (X,))] * 3
    calls += [(lambda: setattr(m, "w", v), (X,)), (lambda: v.assign([9.0, -2.0]), (X,)), (lambda: None, (X,))]
    _same_on_every_call(m.apply, spec, calls)


def test_a_fed_tensor_whose_shape_was_relaxed_is_fed_at_any_length():
    m = Model()
    spec = janus.speculate(m.apply)
    calls = [(lambda k=k: setattr(m, "w", tf.range(float(k % 3 + 1))), (tf.constant(2.0),)) for k in range(9)]
    _same_on_every_call(m.apply, spec, calls)
    assert spec.counters["graph_runs"] >= 3


def test_a_numpy_array_read_outside_is_fed_with_its_values_on_each_call():
    arr = np.array([1.0, 2.0], np.float32)

    def f(x):
        return x + arr

    spec = janus.speculate(f)
    calls = [(lambda k=k: arr.__setitem__(0, float(k)), (X,)) for k in range(6)]
    _same_on_every_call(f, spec, calls)
    assert spec.counters["graph_runs"] >= 2


def test_a_recursion_reads_the_recursion_limit_through_a_janus_feed():
    spec = janus.speculate(power)
    calls = [(lambda: None, (tf.constant(1.5), tf.constant(n))) for n in (3, 5, 0, 7, 4)]
    _same_on_every_call(power, spec, calls)
    assert spec.counters["graph_runs"] >= 2 and _fed_graphs(spec)


def test_a_graph_with_feeds_called_inside_an_outer_tf_function_reads_them_there():
    m = Model()
    spec = janus.speculate(m.apply)
    for k in range(5):
        m.scale = 1.0 + k
        spec(X)
    outer = tf.function(lambda x: spec(x) * 2.0)
    m.scale = 10.0
    assert outer(X).numpy().tolist() == (m.apply(X) * 2.0).numpy().tolist()
