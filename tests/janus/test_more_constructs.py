"""Methods, keyword and variadic calls, general loops with branches and exits."""
import pytest
import tensorflow as tf

import janus
from tests.harness import MODES, assert_same, differential


class Model:
    def __init__(self):
        self.w = tf.Variable([[1.0, 0.5], [-0.5, 1.0]])
        self.scale = 2.0

    def layer(self, x, *, bias=0.0):
        return tf.tanh(tf.matmul(x, self.w) * self.scale + bias)

    @janus.speculate(profile_runs=2)
    def forward(self, x, depth):
        for _ in range(depth):
            x = self.layer(x, bias=0.1)
        return x


def variadic(x, *xs, scale=1.0, **extra):
    total = x
    for v in xs:
        total = total + v
    return total * scale + extra.get("shift", 0.0)


def loop_with_tensor_exit(x, n):
    i = 0
    while i < n:
        x = x * 1.5
        if tf.reduce_sum(x) > 50.0:
            break
        i += 1
    return x, i


def nested_general(x):
    total = tf.constant(0.0)
    while tf.reduce_sum(x) < 20.0:
        if tf.reduce_max(x) > 3.0:
            total = total + 1.0
        else:
            total = total - 1.0
        x = x + 1.0
    return x, total


def over_tensor_rows(x):
    acc = tf.zeros(x.shape[1:])
    for row in x:
        if tf.reduce_sum(row) > 0.0:
            acc = acc + row
    return acc


def test_method_decorator_matches_eager():
    m1, m2 = Model(), Model()
    x = tf.constant([[1.0, 2.0]])
    for depth in (2, 2, 2, 2, 3, 2):
        expected = Model.forward.python_function(m1, x, depth)
        assert_same(expected, m2.forward(x, depth))
    assert Model.forward.stats()["graph_runs"] >= 2, Model.forward.report()


@pytest.mark.parametrize("mode", MODES)
def test_variadic_and_keyword_calls(mode):
    v = tf.constant([1.0, 2.0])
    differential(variadic, [{"args": (v, v, v), "kwargs": {"scale": 2.0}}] * 4
                 + [{"args": (v, v), "kwargs": {"shift": 1.0}}, {"args": (v,), "kwargs": {}}], mode=mode)


@pytest.mark.parametrize("mode", MODES)
def test_while_with_tensor_break(mode):
    v = tf.constant([1.0, 2.0])
    differential(loop_with_tensor_exit, [(v, 3)] * 4 + [(v * 10, 3), (v, 6), (v * 3, 6), (v, 3)], mode=mode)


@pytest.mark.parametrize("mode", MODES)
def test_branch_inside_general_while(mode):
    differential(nested_general, [(tf.constant([1.0, 2.0]),)] * 4
                 + [(tf.constant([5.0, 2.0]),), (tf.constant([-3.0, 0.0]),)], mode=mode)


@pytest.mark.parametrize("mode", MODES)
def test_loop_over_tensor_rows_with_varying_length(mode):
    calls = [(tf.constant([[1.0, 2.0], [-3.0, 1.0]]),)] * 4
    calls += [(tf.constant([[1.0, 2.0], [3.0, 1.0], [-1.0, -1.0]]),), (tf.ones((5, 2)),), (tf.ones((7, 2)),)]
    differential(over_tensor_rows, calls, mode=mode)


def test_input_signature_and_jit_compile_are_accepted():
    spec = janus.speculate(variadic, input_signature=[tf.TensorSpec([None], tf.float32)], jit_compile=False,
                           profile_runs=1)
    for n in (2, 3, 4):
        assert_same(variadic(tf.ones(n)), spec(tf.ones(n)))
    assert spec.stats()["graphs_built"] == 1
