"""A lambda is converted like a def: found in its file, wherever it sits in an expression."""
import numpy as np
import pytest
import tensorflow as tf

import janus
from tests.harness import differential

SCALE = 3.0


def test_lambda_runs_as_a_graph():
    fn = lambda x: tf.reduce_sum(x * SCALE) + 1.0  # noqa: E731 - the construct under test
    spec = differential(fn, [(tf.constant([1.0, 2.0]),), (tf.constant([3.0, -1.0]),)] * 3, profile_runs=1)
    assert spec.stats()["graph_runs"] >= 4 and not spec.stats()["imperative"], spec.report()


def test_lambda_with_a_tensor_condition_and_a_python_number():
    spec = differential(lambda x, n: x * n if tf.reduce_sum(x) > 0 else -x,
                        [(tf.constant([1.0, 2.0]), 2), (tf.constant([-1.0, -2.0]), 3), (tf.constant([5.0]), 4)] * 2,
                        profile_runs=2)
    assert spec.stats()["graph_runs"] >= 2, spec.report()


def test_two_lambdas_on_one_line_are_told_apart():
    pair = (lambda x: x + 1.0, lambda y: y * 10.0)
    for fn, want in zip(pair, (3.0, 20.0)):
        spec = janus.speculate(fn, profile_runs=1)
        for _ in range(3):
            assert spec(tf.constant(2.0)).numpy() == want
        assert spec.stats()["graph_runs"] == 2, spec.report()


def test_lambdas_alike_on_one_line_are_told_apart_by_position():
    first, second = [lambda x: x + 1.0, lambda x: x * 10.0]
    for fn, want in ((first, 3.0), (second, 20.0)):
        spec = janus.speculate(fn, profile_runs=1)
        for _ in range(3):
            assert spec(tf.constant(2.0)).numpy() == want
        assert spec.stats()["graph_runs"] == 2, spec.report()


def test_lambda_closing_over_a_local():
    k = tf.constant(4.0)
    spec = differential(lambda x: x * k, [(tf.constant(1.0),), (tf.constant(2.0),)] * 2, profile_runs=1)
    assert spec.stats()["graph_runs"] >= 2, spec.report()


def test_lambda_without_source_runs_in_python_and_says_why():
    namespace = {"tf": tf}
    exec("fn = lambda x: x + 1.0", namespace)
    spec = janus.speculate(namespace["fn"], profile_runs=1)
    for _ in range(3):
        assert spec(tf.constant(1.0)).numpy() == 2.0
    assert "no-source" in spec.report()


@pytest.mark.parametrize("arg", [1, 2])
def test_lambda_default_arguments(arg):
    spec = differential(lambda x, k=2.0: x * k, [(tf.constant(float(arg)),)] * 3, profile_runs=1)
    assert spec.stats()["graph_runs"] >= 1, spec.report()


def lambda_over_a_module(x):
    act = lambda v: tf.tanh(v * 2.0)        # noqa: E731 - names the module `tf`, a global
    return act(x) + 1.0


def nested_def_over_a_module(x):
    def act(v):
        return tf.nn.relu(v) * np.float32(2.0)
    return act(x) - 1.0


def test_a_lambda_or_nested_def_naming_a_global_keeps_the_graph():
    for fn in (lambda_over_a_module, nested_def_over_a_module):
        spec = differential(fn, [(tf.constant([1.0, -float(k)]),) for k in range(6)])
        assert spec.stats()["graph_runs"] >= 3, spec.report()
