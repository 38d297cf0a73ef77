"""Where no tape or accumulator is active, a graph's kernel is called directly, without
TensorFlow's concrete-function layers; everywhere else TensorFlow's own call runs.  Each test
compares with eager, and the first two check which path ran."""
import numpy as np
import pytest
import tensorflow as tf
from tensorflow.python.eager.polymorphic_function import concrete_function

import janus
from tests.harness import compare_call

_W = tf.Variable([[1.0, 2.0], [3.0, 4.0]])


def step(x):
    return tf.reduce_sum(tf.matmul(x, _W)) * 2.0


def _warm(fn, x):
    spec = janus.speculate(fn)
    for _ in range(5):
        spec(x)
    assert spec.stats()["graph_runs"] > 0, spec.report()
    return spec


@pytest.fixture
def layered_calls(monkeypatch):
    """Counts the calls that go through TensorFlow's concrete-function layers."""
    calls = []
    original = concrete_function.ConcreteFunction._call_flat

    def counted(self, *args, **kwargs):
        calls.append(self)
        return original(self, *args, **kwargs)
    monkeypatch.setattr(concrete_function.ConcreteFunction, "_call_flat", counted)
    return calls


def test_without_a_tape_the_kernel_is_called_directly(layered_calls):
    x = tf.constant([[1.0, 0.5]])
    spec = _warm(step, x)
    layered_calls.clear()
    runs = spec.stats()["graph_runs"]
    compare_call(step, spec, x)
    assert spec.stats()["graph_runs"] == runs + 1
    assert layered_calls == []


def test_under_a_tape_the_call_is_recorded_and_gradients_match_eager(layered_calls):
    x = tf.constant([[1.0, 0.5]])
    spec = _warm(step, x)
    layered_calls.clear()
    grads = []
    for fn in (step, spec):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = fn(x)
        grads.append(tape.gradient(y, [x, _W]))
    np.testing.assert_array_equal(grads[0][0].numpy(), grads[1][0].numpy())
    np.testing.assert_array_equal(grads[0][1].numpy(), grads[1][1].numpy())
    assert layered_calls, "a tape was active: TensorFlow's own call should have recorded the graph"


def test_a_tape_that_watches_nothing_the_graph_reads_still_gets_eagers_none():
    x = tf.constant([[1.0, 0.5]])
    spec = _warm(step, x)
    other = tf.constant(3.0)
    for fn in (step, spec):
        with tf.GradientTape() as tape:
            tape.watch(other)
            y = fn(x)
        assert tape.gradient(y, other) is None


def gather_at(x, i):
    return tf.gather(x, i) * 2.0


def test_an_op_failing_in_a_directly_called_graph_raises_as_eager():
    x = tf.constant([1.0, 2.0, 3.0])
    spec = janus.speculate(gather_at)
    for i in (0, 1, 2, 1, 0):
        compare_call(gather_at, spec, x, tf.constant(i))
    assert spec.stats()["graph_runs"] > 0, spec.report()
    with pytest.raises(tf.errors.InvalidArgumentError) as eager:
        gather_at(x, tf.constant(7))
    with pytest.raises(tf.errors.InvalidArgumentError) as graph:
        spec(x, tf.constant(7))
    assert "7" in str(graph.value) and "[0, 3)" in str(graph.value) and "[0, 3)" in str(eager.value)
    compare_call(gather_at, spec, x, tf.constant(2))         # and the next call is fine


class _Counter:
    def __init__(self):
        self.v = tf.Variable(0.0)
        self.n = 0


def count(c, x):
    c.v.assign_add(tf.reduce_sum(x))
    c.n += 1
    return c.v * 1.0


def test_variable_writes_and_python_state_of_a_directly_called_graph_match_eager():
    eager_c, spec_c = _Counter(), _Counter()
    spec = janus.speculate(count)
    for i in range(8):
        x = tf.constant([float(i), 1.0])
        want, got = count(eager_c, x), spec(spec_c, x)
        assert want.numpy() == got.numpy() and eager_c.n == spec_c.n
        assert eager_c.v.numpy() == spec_c.v.numpy()
    assert spec.stats()["graph_runs"] > 0, spec.report()
