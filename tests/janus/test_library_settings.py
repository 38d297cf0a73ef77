"""Settings of library objects the graph calls into (a Keras layer's activation or rate, an
optimizer's clipvalue or momentum) changed between calls: every call uses the current ones, as
eagerly; unchanged, the graph is reused."""
import keras
import numpy as np
import pytest
import tensorflow as tf

import janus


class Parts:
    def __init__(self):
        keras.utils.set_random_seed(5)
        self.dense = keras.layers.Dense(3, kernel_initializer="ones", activation="linear")
        self.drop = keras.layers.Dropout(0.25, seed=3)
        self.out = keras.layers.Dense(1, kernel_initializer="ones")
        self.model = keras.Sequential([self.dense, self.drop, self.out])
        self.model.build((None, 2))
        self.opt = keras.optimizers.SGD(0.01, momentum=0.5)
        self.opt.build(self.model.trainable_variables)


def step(p, x):
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(p.model(x, training=True) ** 2)
    variables = p.model.trainable_variables
    p.opt.apply_gradients(zip(tape.gradient(loss, variables), variables))
    return loss


CHANGES = {
    "activation": lambda p: setattr(p.dense, "activation", keras.activations.relu),
    "dropout rate": lambda p: setattr(p.drop, "rate", 0.75),
    "clipvalue": lambda p: setattr(p.opt, "clipvalue", 0.001),
    "nothing": lambda p: None,
}


def _run(fn, change, calls=6):
    p = Parts()
    out = []
    for i in range(calls):
        if i == 3:
            change(p)
        loss = fn(p, tf.constant([[-1.0, -2.0], [0.5, 1.0]]))
        out.append((float(loss), [np.asarray(v).round(5).tolist() for v in p.model.trainable_variables]))
    return out


@pytest.mark.parametrize("name", sorted(CHANGES))
def test_a_setting_changed_between_calls_is_used_from_then_on(name):
    eager = _run(step, CHANGES[name])
    spec = janus.speculate(step, profile_runs=2)
    assert _run(spec, CHANGES[name]) == eager
    assert spec.stats()["graph_runs"] >= 3
    if name == "nothing":
        assert spec.stats()["graphs_built"] == 1


class Counted(keras.Model):
    def __init__(self):
        super().__init__()
        self.dense = keras.layers.Dense(1, kernel_initializer="ones")
        self.epoch = 0                        # the program's own, changed on every call

    def call(self, x):
        return self.dense(x)


def counted_step(model, x):
    return tf.reduce_sum(model(x))


def test_a_public_number_of_the_programs_own_that_keras_never_reads_does_not_rebuild():
    model = Counted()
    spec = janus.speculate(counted_step, profile_runs=2)
    for i in range(12):
        model.epoch = i
        assert float(spec(model, tf.constant([[1.0, 2.0]]))) == float(counted_step(model, tf.constant([[1.0, 2.0]])))
    assert spec.stats()["graphs_built"] <= 2, spec.report()
