"""A library property that computes a list of tensors on every read (a Keras model's `losses`:
its regularizers applied to the current weights) is computed by the graph on every run, as eager
computes it on every read.  The regularizers' settings, changed between calls, are used; the list
returned or kept is a list of eager tensors, as eager's."""
import keras
import numpy as np
import tensorflow as tf

import janus
from tests.harness import assert_same, run_capturing


class Steps:
    def __init__(self):
        keras.utils.set_random_seed(2)
        self.model = keras.Sequential([
            keras.layers.Dense(4, activation="relu", kernel_regularizer=keras.regularizers.L2(0.01)),
            keras.layers.Dense(1, bias_regularizer=keras.regularizers.L1(0.02))])
        self.model.build((None, 3))
        self.opt = keras.optimizers.SGD(0.05)
        self.opt.build(self.model.trainable_variables)
        self.kept = None


def step(s, x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((s.model(x, training=True) - y) ** 2) + tf.add_n(s.model.losses)
    variables = s.model.trainable_variables
    s.opt.apply_gradients(zip(tape.gradient(loss, variables), variables))
    return loss


def _data(n=12):
    rng = np.random.default_rng(0)
    return [(tf.constant(rng.normal(size=(8, 3)).astype(np.float32)),
             tf.constant(rng.normal(size=(8, 1)).astype(np.float32))) for _ in range(n)]


def _compare(fn, between=None, graph_runs=True, n=12):
    eager_s, spec_s = Steps(), Steps()
    spec = janus.speculate(fn)
    for i, (x, y) in enumerate(_data(n)):
        if between is not None:
            between(eager_s, i)
            between(spec_s, i)
        e, j = run_capturing(fn, (eager_s, x, y))[0], run_capturing(spec, (spec_s, x, y))[0]
        assert e[0] == j[0] == "return", (e, j)
        assert_same(e[1], j[1], f"call {i}")
        for a, b in zip(eager_s.model.weights, spec_s.model.weights):
            assert_same(a.numpy(), b.numpy(), f"weights after call {i}")
        assert_same(eager_s.kept, spec_s.kept, f"kept after call {i}")
    if graph_runs:
        assert spec.stats()["graph_runs"] > 0, spec.report()
    return spec, spec_s


def test_regularization_losses_read_in_a_training_step_run_in_the_graph():
    _compare(step)


def test_a_regularizer_replaced_between_calls_is_used():
    def change(s, i):
        if i == 6:
            s.model.layers[0].kernel_regularizer = keras.regularizers.L2(0.5)
    _compare(step, change)


def test_a_regularizers_factor_changed_in_place_between_calls_is_used():
    def change(s, i):
        if i == 6:
            s.model.layers[0].kernel_regularizer.l2 = 0.5
    _compare(step, change)


def test_a_regularizer_removed_between_calls_is_used():
    def change(s, i):
        if i == 6:
            s.model.layers[1].bias_regularizer = None
    _compare(step, change)


def keep_losses(s, x, y):
    losses = s.model.losses
    s.kept = losses
    return tf.add_n(losses) + tf.reduce_sum(x) * 0.0, losses


def test_the_losses_kept_on_an_object_and_returned_are_eager_tensors():
    _, state = _compare(keep_losses)
    assert state.kept and all(not tf.is_symbolic_tensor(t) for t in state.kept)


class WithActivityLoss(keras.layers.Layer):
    def call(self, x):
        self.add_loss(tf.reduce_sum(tf.abs(x)) * 0.01)
        return x * 2.0


def activity(s, x, y):
    out = s.layer(x)
    return tf.reduce_sum(out) + tf.add_n(s.layer.losses)


def test_a_layers_activity_loss_added_in_its_call():
    def make(s, i):
        if i == 0:
            s.layer = WithActivityLoss()
    _compare(activity, make, graph_runs=False)


class Scheduled:
    def __init__(self):
        self.w = tf.Variable(np.ones((3, 1), np.float32))
        self.schedule = keras.optimizers.schedules.ExponentialDecay(0.1, decay_steps=2, decay_rate=0.5)
        self.opt = keras.optimizers.SGD(self.schedule)
        self.opt.build([self.w])


def scheduled_step(s, x):
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(x @ s.w)
    s.opt.apply_gradients([(tape.gradient(loss, s.w), s.w)])
    return loss, s.opt.learning_rate


def _compare_scheduled(between):
    eager_s, spec_s = Scheduled(), Scheduled()
    spec = janus.speculate(scheduled_step)
    for i in range(12):
        x = tf.constant([[1.0, 2.0, float(i)]])
        between(eager_s, i)
        between(spec_s, i)
        assert_same(scheduled_step(eager_s, x), spec(spec_s, x), f"call {i}")
        assert_same(eager_s.w.numpy(), spec_s.w.numpy(), f"weights after call {i}")
    assert spec.stats()["graph_runs"] > 0, spec.report()


def test_a_scheduled_learning_rate_read_in_the_step_runs_in_the_graph():
    _compare_scheduled(lambda s, i: None)


def test_a_schedules_setting_changed_between_calls_is_used():
    def change(s, i):
        if i == 6:
            s.schedule.initial_learning_rate = 0.5
    _compare_scheduled(change)


def step_only(s, x):
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(x @ s.w)
    s.opt.apply_gradients([(tape.gradient(loss, s.w), s.w)])
    return loss


def test_a_schedules_setting_changed_between_calls_is_used_by_apply_gradients():
    """The optimizer holds its schedule under a private name its code reads (`_learning_rate`):
    a setting of the schedule changed between calls is checked at entry like the optimizer's own."""
    eager_s, spec_s = Scheduled(), Scheduled()
    spec = janus.speculate(step_only)
    for i in range(12):
        if i == 6:
            eager_s.schedule.initial_learning_rate = spec_s.schedule.initial_learning_rate = 0.5
        x = tf.constant([[1.0, 2.0, float(i)]])
        assert_same(step_only(eager_s, x), spec(spec_s, x), f"call {i}")
        assert_same(eager_s.w.numpy(), spec_s.w.numpy(), f"weights after call {i}")
    assert spec.stats()["graph_runs"] > 0, spec.report()
