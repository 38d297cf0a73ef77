"""`jit_compile=True` has tf.function's meaning: the graph is compiled with XLA, and when XLA cannot
compile it the error is raised as tf.function raises it, not hidden behind an eager re-run."""
import pytest
import tensorflow as tf

import janus


def dense_step(x):
    if tf.reduce_sum(x) > 0:
        return tf.nn.relu(x) * 2.0
    return x - 1.0


def as_text(x):
    return tf.reduce_sum(tf.strings.length(tf.strings.as_string(x)))


def affine(x, w):
    return tf.nn.relu(x @ w) * 2.0 + 1.0


def test_guarded_graph_under_xla_reads_its_guards_after_the_run():
    """XLA drops Assert ops: the guards' outcomes are outputs, so a flipped branch still fails the run."""
    spec = janus.speculate(dense_step, jit_compile=True, profile_runs=1)
    for v in ([1.0, -2.0], [3.0, 4.0], [-5.0, 1.0], [2.0, 2.0]):
        x = tf.constant(v)
        assert spec(x).numpy().tolist() == dense_step(x).numpy().tolist()
    assert spec.stats()["graph_runs"] >= 2, spec.report()
    assert spec.graphs[0].xla == "on" and "broke" in spec.report(), spec.report()


def test_graph_without_checks_runs_under_xla():
    spec = janus.speculate(affine, jit_compile=True, profile_runs=1)
    w = tf.constant([[1.0, -1.0], [0.5, 2.0]])
    for v in ([[1.0, 2.0]], [[-3.0, 1.0]], [[0.0, 4.0]]):
        x = tf.constant(v)
        assert spec(x, w).numpy().tolist() == affine(x, w).numpy().tolist()
    assert spec.graphs[0].xla == "on" and spec.stats()["graph_runs"] == 2, spec.report()


def test_xla_failure_raises_as_under_tf_function():
    x = tf.constant([1, 22, 333])
    with pytest.raises(tf.errors.InvalidArgumentError, match="AsString") as under_tf:
        tf.function(as_text, jit_compile=True)(x)
    spec = janus.speculate(as_text, jit_compile=True, profile_runs=1)
    assert spec(x).numpy() == 6                       # the profiled eager run
    for _ in range(2):
        with pytest.raises(type(under_tf.value), match="AsString"):
            spec(x)
    assert "[xla] XLA cannot compile the graph" in spec.report()
    assert spec.stats()["eager_runs"] == 1
