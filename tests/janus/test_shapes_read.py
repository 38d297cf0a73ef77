"""A shape Python reads is eager's shape, also after the batch size varied: reading a
relaxed dimension keeps it specialised; reading only known ones keeps the graph relaxed."""
import tensorflow as tf

import janus
from tests.harness import differential

BATCHES = (2, 2, 2, 3, 4, 5, 6, 6, 3)


def batch_size(x):
    return x.shape[0], x * 2.0


def printed_shape(x):
    print(x.shape, x.get_shape())
    return x + 1.0


def listed(x):
    return x.shape.as_list(), list(x.shape), x.shape == (x.shape[0], 3), len(x.shape)


def known_dim_only(x):
    return tf.reduce_sum(x) * x.shape[-1], x.shape[1:].as_list()


def test_a_relaxed_dimension_read_by_python_is_eagers_number():
    for fn in (batch_size, printed_shape, listed):
        spec = differential(fn, [(tf.ones([b, 3]),) for b in BATCHES])
        assert spec.imperative is None and spec.stats()["graph_runs"] >= 4, spec.report()


def test_reading_only_known_dimensions_keeps_one_relaxed_graph():
    spec = differential(known_dim_only, [(tf.ones([b, 3]),) for b in BATCHES])
    assert spec.stats()["graphs_built"] <= 2 and spec.relaxations.dims["args[0]"] == {0}, spec.report()


def test_a_shape_read_elsewhere_keeps_tensorflows_meaning():
    spec = janus.speculate(lambda_free_reshape)
    for b in BATCHES:
        x = tf.ones([b, 3])
        assert lambda_free_reshape(x).shape == spec(x).shape


def lambda_free_reshape(x):
    return tf.reshape(x, [-1]) * tf.cast(tf.shape(x)[0], tf.float32)
