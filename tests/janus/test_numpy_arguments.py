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
    elif isinstance(e, tf.Tensor):
        assert e.dtype == j.dtype and np.array_equal(e.numpy(), j.numpy())
    else:
        assert e == j, (e, j)


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


def shape_reads(a):
    t = tf.constant(a) * 2
    return t, a.shape, a.shape == [2, 3], a.shape == (2, 3), str(a.shape), type(a.shape).__name__


def test_an_array_arguments_shape_is_numpys_tuple():
    """`a.shape` is a tuple of ints, as NumPy's (a `TensorShape` compares equal to a list)."""
    spec = janus.speculate(shape_reads)
    for i in range(6):
        a = np.full((2, 3), float(i), np.float32)
        _same(shape_reads(a), spec(a))
    assert spec.stats()["graph_runs"] >= 3, spec.report()


def first_item(a):
    return a[0] + 1


def joined_words(a):
    return a[0] + "!"


OBJECTS = np.array([1, 2.5], dtype=object)


def reads_object_array(x):
    return x * float(OBJECTS[1])


def test_arrays_no_tensor_holds_run_in_python():
    """Object and string arrays: an argument, or one read from outside and changed between
    calls, give eager's results (the call, or the statement, runs in Python)."""
    spec = janus.speculate(first_item)
    for i in range(6):
        a = np.array([i, 2.0], dtype=object)
        assert run_capturing(first_item, (a,)) == run_capturing(spec, (a,))
    joined = janus.speculate(joined_words)
    for i in range(6):
        a = np.array([f"w{i}", "x"])
        assert run_capturing(joined_words, (a,)) == run_capturing(joined, (a,))
    reads = janus.speculate(reads_object_array)
    try:
        for i in range(7):
            if i == 5:
                OBJECTS[1] = 4.0
            x = tf.constant([1.0, 2.0])
            np.testing.assert_array_equal(reads_object_array(x), reads(x))
    finally:
        OBJECTS[1] = 2.5
