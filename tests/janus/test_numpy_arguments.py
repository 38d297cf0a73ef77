"""NumPy array arguments are graph inputs that stay NumPy's where Python sees them: printed
and returned as arrays, NumPy's result dtypes in arithmetic, the same object when returned
as it came in; NumPy's own code on them (methods, indexing) runs in Python."""
import numpy as np
import pytest
import tensorflow as tf

from tests.harness import run_capturing

import janus

W = tf.constant([[1.0], [2.0]], tf.float64)


def model_and_numpy(a):
    print("batch", a)
    return tf.matmul(a, W), a * 2, a / 3, a + tf.constant(1.0, tf.float64), a, -a, a >= 1.0


def float32_batch(a, scale):
    return tf.reduce_sum(a * scale), a * 0.5


def numpy_method(a):
    return a.sum() + tf.reduce_sum(a)


def _same(e, j):
    if isinstance(e, tuple):
        assert len(e) == len(j)
        for x, y in zip(e, j):
            _same(x, y)
        return
    assert type(e) is type(j), (e, j)
    if isinstance(e, np.ndarray):
        assert e.dtype == j.dtype and np.array_equal(e, j)
    else:
        assert e.dtype == j.dtype and np.array_equal(e.numpy(), j.numpy())


@pytest.mark.parametrize("fn,make", [
    (model_and_numpy, lambda k: (np.array([[1.0, float(k)]]),)),
    (float32_batch, lambda k: (np.ones([2 + k % 2, 3], np.float32) * k, 2)),
    (numpy_method, lambda k: (np.array([1.0, float(k)]),)),
], ids=["model_and_numpy", "float32_batch", "numpy_method"])
def test_numpy_arguments_stay_numpy(fn, make):
    spec = janus.speculate(fn)
    for k in range(7):
        args = make(k)
        (ek, ev), eout = run_capturing(fn, args)
        (jk, jv), jout = run_capturing(spec, args)
        assert ek == jk == "return" and eout == jout, (ev, jv, eout, jout)
        _same(ev, jv)
    if fn is numpy_method:
        assert spec.imperative is not None and spec.imperative.kind == "numpy-array"
    else:
        assert spec.stats()["graph_runs"] >= 3, spec.report()


def test_a_returned_argument_array_is_the_same_object():
    spec = janus.speculate(model_and_numpy)
    for k in range(5):
        a = np.array([[1.0, float(k)]])
        assert spec(a)[4] is a
