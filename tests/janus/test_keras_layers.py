"""A user's Keras layer called from a speculated function: Keras's own `__call__` (build,
autocast, the training flag) runs as it is, and the user's `call` behind it is converted like
any user function, so a tensor `if` in it no longer makes the whole step run eagerly."""
import tensorflow as tf

import janus
from tests.harness import assert_same


class Gate(tf.keras.layers.Layer):
    def __init__(self):
        super().__init__()
        self.dense = tf.keras.layers.Dense(2)

    def call(self, x, training=False):
        h = self.dense(x)
        if training:
            h = h * 0.5
        if tf.reduce_sum(h) > 0:
            return tf.nn.relu(h)
        return -h


class Net(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.gate = Gate()
        self.out = tf.keras.layers.Dense(1)

    def call(self, x, training=False):
        return self.out(self.gate(x, training=training))


INPUTS = [[[1.0, 2.0]], [[-1.0, -2.0]], [[1.0, 2.0]], [[3.0, 1.0]], [[-3.0, 1.0]], [[1.0, 1.0]], [[-2.0, -2.0]]]


def test_tensor_if_in_a_layer_call_runs_as_a_graph():
    tf.keras.utils.set_random_seed(1)
    layer = Gate()

    def forward(x, training):
        return tf.reduce_sum(layer(x, training=training))
    spec = janus.speculate(forward, profile_runs=2)
    for i, v in enumerate(INPUTS):
        x = tf.constant(v)
        assert_same(forward(x, i % 2 == 0), spec(x, i % 2 == 0))
    assert spec.stats()["graph_runs"] >= 3 and not spec.stats()["imperative"], spec.report()
    assert "call" not in vars(layer)                 # the stand-in is gone after the build


def test_training_step_through_a_model_matches_eager():
    def make():
        tf.keras.utils.set_random_seed(2)
        net = Net()
        net(tf.zeros([1, 2]))
        return net, tf.keras.optimizers.SGD(0.05)

    def train_step(net, opt, x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((net(x, training=True) - y) ** 2)
        grads = tape.gradient(loss, net.trainable_variables)
        opt.apply_gradients(zip(grads, net.trainable_variables))
        return loss

    eager_net, eager_opt = make()
    janus_net, janus_opt = make()
    spec = janus.speculate(train_step, profile_runs=2)
    for v in INPUTS * 2:
        x, y = tf.constant(v), tf.constant([[1.0]])
        assert_same(train_step(eager_net, eager_opt, x, y), spec(janus_net, janus_opt, x, y))
    for a, b in zip(eager_net.trainable_variables, janus_net.trainable_variables):
        assert_same(tf.convert_to_tensor(a), tf.convert_to_tensor(b))
    assert spec.stats()["graph_runs"] >= 6, spec.report()


def test_speculating_a_layer_and_a_model_object():
    """`janus.speculate(layer)` as `tf.function(layer)`: Keras's `__call__` runs as it is, the user's
    `call` behind it is converted and speculated; a branch flip falls back with eager's value."""
    tf.keras.utils.set_random_seed(3)
    for obj in (Gate(), Net()):
        spec = janus.speculate(obj)
        for v in ([[1.0, 2.0]], [[1.0, 3.0]], [[2.0, 2.0]], [[1.0, 1.0]], [[-1.0, -2.0]], [[4.0, 1.0]],
                  [[-3.0, 0.5]]):
            x = tf.constant(v)
            assert_same(obj(x), spec(x))
        stats = spec.stats()
        assert stats["graph_runs"] >= 2 and not stats["imperative"], spec.report()
        assert type(obj).__name__ in spec.report()
