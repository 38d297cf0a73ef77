"""A stable program stops recompiling; gradients flow through and inside janus calls."""
import tensorflow as tf

import janus
from tests.harness import assert_same

W = tf.Variable([[0.5, -0.2], [0.1, 0.3]])


@janus.speculate(profile_runs=2)
def dense(x):
    h = tf.matmul(x, W)
    if tf.reduce_sum(h) > -1000.0:
        h = tf.tanh(h)
    return tf.reduce_sum(h * h)


def plain_dense(x):
    return dense.python_function(x)


def test_after_warmup_no_new_graphs_and_one_relaxed_graph_per_new_batch_size():
    x = tf.random.uniform((4, 2))
    for _ in range(3):
        dense(x)
    built = dense.stats()["graphs_built"]
    for _ in range(100):
        dense(tf.random.uniform((4, 2)))
    assert dense.stats()["graphs_built"] == built
    dense(tf.random.uniform((3, 2)))                 # new batch size: one relaxed graph
    for n in (5, 6, 7, 8, 3):
        dense(tf.random.uniform((n, 2)))
    assert dense.stats()["graphs_built"] == built + 1, dense.report()


def test_gradient_of_a_janus_call_under_an_outer_tape():
    x = tf.random.uniform((4, 2))
    for _ in range(3):
        dense(x)
    with tf.GradientTape() as tape:
        y = plain_dense(x)
    expected = tape.gradient(y, W)
    with tf.GradientTape() as tape:
        y2 = dense(x)
    got = tape.gradient(y2, W)
    assert dense.stats()["graph_runs"] > 0
    assert_same(y, y2)
    assert_same(expected, got)


def train_step(x, y, w, lr):
    with tf.GradientTape() as tape:
        pred = tf.matmul(x, w)
        loss = tf.reduce_mean((pred - y) ** 2)
    g = tape.gradient(loss, w)
    w.assign_sub(lr * g)
    return loss


def test_tape_and_variable_update_inside_the_function():
    x, y = tf.random.uniform((8, 2)), tf.random.uniform((8, 1))
    w_eager = tf.Variable(tf.ones((2, 1)))
    w_janus = tf.Variable(tf.ones((2, 1)))
    step = janus.speculate(train_step)
    for _ in range(10):
        le = train_step(x, y, w_eager, 0.1)
        lj = step(x, y, w_janus, 0.1)
        assert_same(le, lj)
    assert_same(w_eager.read_value(), w_janus.read_value())
    assert step.stats()["graph_runs"] >= 5, step.report()


def _keras_pair():
    import keras
    models = []
    for _ in range(2):
        keras.utils.set_random_seed(0)
        m = keras.Sequential([keras.layers.Dense(4, activation="relu"), keras.layers.Dense(1)])
        m(tf.ones((1, 3)))
        models.append((m, keras.optimizers.SGD(0.05)))
    return models


def keras_step(model, opt, x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((model(x) - y) ** 2)
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))
    return loss


def test_keras_model_and_optimizer_inside_the_function():
    (me, oe), (mj, oj) = _keras_pair()
    step = janus.speculate(keras_step)
    x, y = tf.random.uniform((8, 3), seed=1), tf.random.uniform((8, 1), seed=2)
    for _ in range(10):
        assert_same(keras_step(me, oe, x, y), step(mj, oj, x, y))
    for a, b in zip(me.trainable_variables, mj.trainable_variables):
        assert_same(a.value if hasattr(a, "value") else a, b.value if hasattr(b, "value") else b)
    assert step.stats()["graph_runs"] >= 5, step.report()
