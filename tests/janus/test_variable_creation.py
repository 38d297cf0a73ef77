"""A `tf.Variable` the call creates is a new object on every call that reaches the creation, with
its initial value, as eagerly; a graph would hand out the one its build made, with the value it
had reached.  Such a call runs in Python; calls that find the variable made run as graphs."""
import tensorflow as tf

import janus


class Holder:
    v = None


def lazy(m, x):
    if m.v is None:
        m.v = tf.Variable(tf.zeros([2]))
    m.v.assign_add(x)
    return m.v.read_value()


def fresh_each_call(x):
    v = tf.Variable(tf.ones([2]))
    v.assign_add(x)
    return v.read_value() * 2.0


class Trainer:
    def __init__(self):
        self.w = tf.Variable([1.0, 2.0])
        self.opt = None

    def step(self, x):
        if self.opt is None:
            self.opt = tf.keras.optimizers.SGD(0.01, momentum=0.9)
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(self.w * x)
        self.opt.apply_gradients([(tape.gradient(loss, self.w), self.w)])
        return int(self.opt.iterations), self.w.numpy().tolist()


def _lazy_run(fn, resets=(4, 6, 8)):
    m, out, made = Holder(), [], []
    for i in range(1, 9):
        if i in resets:
            m.v = None
        out.append(fn(m, tf.constant([1.0, 2.0]) * i).numpy().tolist())
        made.append(m.v)
    return out, len({id(v) for v in made})


def test_a_variable_made_again_after_a_reset_starts_from_its_initial_value():
    eager = _lazy_run(lazy)
    spec = janus.speculate(lazy, profile_runs=2)
    assert _lazy_run(spec) == eager
    assert spec.stats()["graph_runs"] >= 3
    assert "variable-creation" in spec.report()


def test_a_variable_made_on_every_call():
    spec = janus.speculate(fresh_each_call, profile_runs=2)
    for i in range(5):
        x = tf.constant([float(i), 1.0])
        assert spec(x).numpy().tolist() == fresh_each_call(x).numpy().tolist()


def test_an_optimizer_made_again_after_a_reset():
    def run(step_of):
        t, out = Trainer(), []
        for i in range(10):
            if i in (4, 6, 8):
                t.opt = None
            out.append(step_of(t)(tf.constant([1.0, 0.5])))
        return out

    spec = janus.speculate(Trainer.step, profile_runs=2)
    assert run(lambda t: (lambda x: spec(t, x))) == run(lambda t: t.step)
