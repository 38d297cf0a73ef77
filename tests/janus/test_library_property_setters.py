"""A property of TensorFlow's or Keras's class set inside the function (`opt.learning_rate = lr`):
the library's setter runs while the graph is built when it only adds ops, and each call leaves
the optimizer, the weights and the result eager leaves."""
import numpy as np
import pytest
import tensorflow as tf

import janus


class _Trainer:
    def __init__(self):
        self.w = tf.Variable([1.0, 2.0])
        self.opt = tf.keras.optimizers.SGD(0.1)

    def step(self, x, lr):
        self.opt.learning_rate = lr
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(self.w * x) ** 2
        grads = tape.gradient(loss, [self.w])
        self.opt.apply_gradients(zip(grads, [self.w]))
        return loss


def _same_trainers(a, b, where):
    np.testing.assert_allclose(a.w.numpy(), b.w.numpy(), rtol=1e-6, err_msg=where)
    assert float(a.opt.learning_rate) == float(b.opt.learning_rate), where
    assert int(a.opt.iterations) == int(b.opt.iterations), where


@pytest.mark.parametrize("as_tensor", [False, True])
def test_a_learning_rate_set_on_every_call_runs_in_the_graph(as_tensor):
    """The rate falls with the step (a Python float, or a scalar tensor); eager's weights, rate
    and iteration count after every call."""
    eager, spec_t = _Trainer(), _Trainer()
    spec = janus.speculate(spec_t.step)
    for i in range(8):
        x = tf.constant([1.0, float(i) * 0.1])
        lr = 0.1 / (i + 1)
        lr = tf.constant(lr) if as_tensor else lr
        want, got = eager.step(x, lr), spec(x, lr)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
        _same_trainers(eager, spec_t, f"call {i}")
    assert spec.stats()["graph_runs"] > 0


class _Scheduled(_Trainer):
    def step(self, x, lr):
        if lr is None:
            self.opt.learning_rate = tf.keras.optimizers.schedules.ExponentialDecay(0.1, 10, 0.5)
        else:
            self.opt.learning_rate = lr
        return tf.reduce_sum(x)


def test_a_setter_that_replaces_an_attribute_runs_in_python():
    """Setting a schedule replaces the optimizer's rate variable: the call runs in Python and
    leaves the schedule on the optimizer, as eager; a later float raises eager's TypeError."""
    eager, spec_t = _Scheduled(), _Scheduled()
    spec = janus.speculate(spec_t.step)
    for i, lr in enumerate([0.1, 0.05, 0.02, 0.01, 0.03, None, 0.2]):
        x = tf.constant([1.0, float(i)])
        try:
            want = ("return", eager.step(x, lr))
        except TypeError as exc:
            want = ("raise", str(exc))
        try:
            got = ("return", spec(x, lr))
        except TypeError as exc:
            got = ("raise", str(exc))
        assert want[0] == got[0], f"call {i}"
        if want[0] == "return":
            np.testing.assert_allclose(got[1].numpy(), want[1].numpy())
        else:
            assert want[1] == got[1]
        assert type(eager.opt._learning_rate) is type(spec_t.opt._learning_rate), f"call {i}"
        if lr is not None and want[0] == "return":
            assert float(eager.opt.learning_rate) == float(spec_t.opt.learning_rate), f"call {i}"
    assert spec.stats()["graph_runs"] > 0


def test_a_rate_variable_the_caller_replaces_between_calls_is_the_one_assigned():
    """Between calls the caller gives the optimizer a new rate variable (a schedule, then a
    float): the graph that assigned the old variable does not run on the new one."""
    eager, spec_t = _Trainer(), _Trainer()
    spec = janus.speculate(spec_t.step)
    for i in range(9):
        if i == 5:
            for t in (eager, spec_t):
                t.opt.learning_rate = tf.keras.optimizers.schedules.ExponentialDecay(0.1, 10, 0.5)
        x = tf.constant([1.0, float(i) * 0.1])
        try:
            want = ("return", eager.step(x, 0.01 * (i + 1)).numpy())
        except TypeError as exc:
            want = ("raise", str(exc))
        try:
            got = ("return", spec(x, 0.01 * (i + 1)).numpy())
        except TypeError as exc:
            got = ("raise", str(exc))
        assert want[0] == got[0], f"call {i}: eager {want}, janus {got}"
        np.testing.assert_allclose(eager.w.numpy(), spec_t.w.numpy(), rtol=1e-6, err_msg=f"call {i}")
    assert spec.stats()["graph_runs"] > 0
