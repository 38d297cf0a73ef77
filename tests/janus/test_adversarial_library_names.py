"""Settings of Keras objects changed by the caller between calls of a speculated function, where the
setting is not a public attribute holding a Python number, string, None or function: a tuple or
dict of settings (a pooling layer's `pool_size`, a Lambda layer's `arguments`), an attribute of
the program's own RNN cell read inside Keras's recurrent loop, a Keras variable's
`overwrite_with_gradient`, a loss's keyword dict.  Eager uses the changed setting from the call
after the change on; every call of the speculated function must do the same."""
import keras
import numpy as np
import pytest
import tensorflow as tf

import janus


def _compare(make, step, change, x, calls=7, at=4):
    """Runs `step` plain and speculated on fresh objects from `make`, changing a setting before
    call `at`; returns (eager results, janus results, janus's graph runs)."""
    def run(fn):
        obj = make()
        out = []
        for i in range(calls):
            if i == at:
                change(obj)
            r = fn(obj, x)
            out.append((tuple(r.shape), np.asarray(r).round(4).tolist()))
        return out

    eager = run(step)
    spec = janus.speculate(step)
    return eager, run(spec), spec.stats()["graph_runs"]


def call_layer(layer, x):
    return layer(x)


def _pool():
    return keras.layers.MaxPooling1D(pool_size=2)


def test_a_pooling_layers_pool_size_changed_between_calls_is_used():
    """MaxPooling1D(pool_size=2) over 12 steps gives 6 steps; the caller then sets
    `pool.pool_size = (3,)` (strides stay 2): eager gives 5 steps from then on."""
    x = tf.reshape(tf.range(12.0), (1, 12, 1))
    eager, spec, runs = _compare(_pool, call_layer, lambda p: setattr(p, "pool_size", (3,)), x)
    assert eager[-1][0] == (1, 5, 1)
    assert spec == eager
    assert runs > 0


def _conv():
    keras.utils.set_random_seed(1)
    conv = keras.layers.Conv1D(1, 2, kernel_initializer="ones")
    conv.build((1, 8, 1))
    return conv


def test_a_convolutions_strides_changed_between_calls_are_used():
    """Conv1D(1, 2) with stride 1 over 8 steps gives 7; the caller then sets `conv.strides = (2,)`:
    eager gives 4 steps, [1, 5, 9, 13]."""
    x = tf.reshape(tf.range(8.0), (1, 8, 1))
    eager, spec, runs = _compare(_conv, call_layer, lambda c: setattr(c, "strides", (2,)), x)
    assert eager[-1] == ((1, 4, 1), [[[1.0], [5.0], [9.0], [13.0]]])
    assert spec == eager
    assert runs > 0


def test_a_reshape_layers_target_shape_changed_between_calls_is_used():
    """Reshape((2, 3)) of 6 values; the caller then sets `reshape.target_shape = (3, 2)`: eager
    returns shape (1, 3, 2) from then on."""
    x = tf.reshape(tf.range(6.0), (1, 6))
    eager, spec, runs = _compare(lambda: keras.layers.Reshape((2, 3)), call_layer,
                                 lambda r: setattr(r, "target_shape", (3, 2)), x)
    assert eager[-1][0] == (1, 3, 2)
    assert spec == eager
    assert runs > 0


@pytest.mark.xfail(strict=True, reason="a Keras Lambda's `arguments` dict, read where janus runs the Lambda's function as converted code, is not checked at entry (docs/decisions.md)")
def test_a_lambda_layers_arguments_changed_between_calls_are_used():
    """Lambda(lambda x, k: x * k, arguments={"k": 2.0}) of ones; the caller then sets
    `lam.arguments["k"] = 5.0`: eager returns fives from then on."""
    x = tf.ones((1, 3))
    eager, spec, runs = _compare(lambda: keras.layers.Lambda(lambda v, k: v * k, arguments={"k": 2.0}), call_layer,
                                 lambda lam: lam.arguments.__setitem__("k", 5.0), x)
    assert eager[-1][1] == [[5.0, 5.0, 5.0]]
    assert spec == eager
    assert runs > 0


class ScaledCell(keras.layers.Layer):
    def __init__(self):
        super().__init__()
        self.state_size = 2
        self.scale = 1.0

    def call(self, x, states):
        h = states[0] * self.scale + x
        return h, [h]


def _rnn():
    rnn = keras.layers.RNN(ScaledCell())
    rnn(tf.ones((1, 3, 2)))
    return rnn


def test_an_rnn_cells_own_setting_changed_between_calls_is_used():
    """keras.layers.RNN over a program's cell computing h = h * scale + x, three steps of ones:
    scale 1.0 gives 3 per unit (sum 6); the caller then sets `rnn.cell.scale = 2.0`: eager gives
    1, 3, 7 (sum 14)."""
    def step(rnn, x):
        return tf.reduce_sum(rnn(x))

    eager, spec, runs = _compare(_rnn, step, lambda r: setattr(r.cell, "scale", 2.0), tf.ones((1, 3, 2)))
    assert [v for _, v in eager] == [6.0] * 4 + [14.0] * 3
    assert spec == eager
    assert runs > 0


class Training:
    def __init__(self):
        keras.utils.set_random_seed(1)
        self.model = keras.Sequential([keras.layers.Dense(2, kernel_initializer="ones")])
        self.model.build((None, 2))
        self.opt = keras.optimizers.SGD(0.1)
        self.opt.build(self.model.trainable_variables)
        self.loss = keras.losses.CategoricalCrossentropy(from_logits=True)


X = tf.constant([[1.0, -2.0], [0.5, 3.0], [2.0, 1.0]])
Y = tf.constant([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])


def train_step(t, x):
    with tf.GradientTape() as tape:
        loss = t.loss(Y, t.model(x, training=True))
    variables = t.model.trainable_variables
    t.opt.apply_gradients(zip(tape.gradient(loss, variables), variables))
    return tf.concat([[loss], tf.reshape(t.model.layers[0].bias, [-1])], 0)


@pytest.mark.xfail(strict=True, reason="a Keras Variable's `overwrite_with_gradient` lives in a private attribute, which the settings check does not read (docs/decisions.md)")
def test_a_variables_overwrite_with_gradient_set_between_calls_is_used():
    """A Dense layer trained with SGD; the caller then sets `bias.overwrite_with_gradient = True`
    on the layer's bias: eager's optimizer from then on assigns the bias its gradient instead of
    taking a step."""
    change = lambda t: setattr(t.model.layers[0].bias, "overwrite_with_gradient", True)
    eager, spec, runs = _compare(Training, train_step, change, X)
    assert eager[5][1][1:] != eager[3][1][1:]
    assert spec == eager
    assert runs > 0


@pytest.mark.xfail(strict=True, reason="a loss's private `_fn_kwargs` dict is not checked at entry (docs/decisions.md)")
def test_a_losses_keyword_settings_changed_between_calls_are_used():
    """CategoricalCrossentropy(from_logits=True) keeps its keywords in a dict its call passes on;
    the caller then sets `loss._fn_kwargs["label_smoothing"] = 0.5`: eager's loss and updates use
    the smoothed labels from then on."""
    change = lambda t: t.loss._fn_kwargs.__setitem__("label_smoothing", 0.5)
    eager, spec, runs = _compare(Training, train_step, change, X)
    assert spec == eager
    assert runs > 0


def set_the_cells_scale_then_run(rnn, x, scale):
    rnn.cell.scale = scale
    return tf.reduce_sum(rnn(x))


def test_an_rnn_cells_own_setting_written_by_the_call_is_used_by_that_call():
    """The function sets `rnn.cell.scale` (the program's cell, h = h * scale + x) and then runs the
    keras.layers.RNN over three steps of ones: eager gives 6.0 for scale 1.0 and 14.0 for scale
    2.0, in the same call that writes it."""
    scales = [1.0, 1.0, 1.0, 1.0, 2.0, 2.0, 1.0]
    x = tf.ones((1, 3, 2))
    rnn = _rnn()
    eager = [float(set_the_cells_scale_then_run(rnn, x, s)) for s in scales]
    assert eager == [6.0] * 4 + [14.0] * 2 + [6.0]
    spec = janus.speculate(set_the_cells_scale_then_run)
    rnn = _rnn()
    assert [float(spec(rnn, x, s)) for s in scales] == eager
    assert rnn.cell.scale == 1.0
