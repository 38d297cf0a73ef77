"""Random ops: eager's numbers, call after call.  Seeded stateful ops (an op seed, or any after
`tf.random.set_seed`) continue eager's per-seed sequence, which a graph's kernel cannot: such a
function runs in Python and says so.  `tf.random.Generator` and the stateless ops keep the graph."""
import pytest
import tensorflow as tf

import janus


def op_seed(x):
    return x + tf.random.uniform([2], seed=5)


def global_seed_only(x):
    return x * tf.random.normal([2])


def dropout(x):
    return tf.nn.dropout(x, rate=0.5, seed=1)


def generator(g, x):
    return x + g.uniform([2])


def stateless(x, i):
    return x + tf.random.stateless_uniform([2], seed=tf.stack([i, 7]))


def _values(fn, calls=6):
    tf.random.set_seed(1234)
    return [fn(tf.constant([1.0, 2.0])).numpy().tolist() for _ in range(calls)]


@pytest.mark.parametrize("fn", [op_seed, global_seed_only, dropout])
def test_a_seeded_stateful_op_gives_eagers_sequence(fn):
    eager = _values(fn)
    spec = janus.speculate(fn, profile_runs=2)
    assert _values(spec) == eager
    assert "seeded-random" in spec.report()


def test_a_generator_keeps_the_graph_and_eagers_numbers():
    def run(fn):
        g = tf.random.Generator.from_seed(3)
        return [fn(g, tf.constant([1.0, 2.0])).numpy().tolist() for _ in range(6)]

    spec = janus.speculate(generator, profile_runs=2)
    assert run(spec) == run(generator)
    assert spec.stats()["graph_runs"] >= 3


def test_stateless_ops_keep_the_graph_and_eagers_numbers():
    spec = janus.speculate(stateless, profile_runs=2)
    for i in range(6):
        x, n = tf.constant([1.0, 2.0]), tf.constant(i)
        assert spec(x, n).numpy().tolist() == stateless(x, n).numpy().tolist()
    assert spec.stats()["graph_runs"] >= 3


def test_unseeded_ops_stay_in_the_graph():
    tf.random.set_seed(None)
    try:
        spec = janus.speculate(lambda x: x + tf.random.uniform([2]), profile_runs=2)
        draws = [spec(tf.constant([1.0, 2.0])).numpy().tolist() for _ in range(5)]
    finally:
        tf.random.set_seed(None)
    assert spec.stats()["graph_runs"] >= 2
    assert len({tuple(d) for d in draws}) == len(draws)          # fresh numbers on every call
