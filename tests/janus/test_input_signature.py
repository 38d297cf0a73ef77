"""`input_signature` binds arguments as tf.function binds them: Python values are converted to the
spec's dtype, a mismatched dtype, shape or structure, or an argument too many, is a TypeError at
the call, on every path (profiling, graph, eager)."""
import numpy as np
import pytest
import tensorflow as tf

import janus

SIG = [tf.TensorSpec([None, 3], tf.float32)]


def row_sums(x):
    return tf.reduce_sum(x, axis=1)


def both(pair, scale):
    a, b = pair
    return (a + b) * scale


def _outcome(fn, *args):
    try:
        return "return", fn(*args)
    except TypeError as exc:
        return "raise", exc


CALLS = [[[1.0, 2.0, 3.0]], tf.constant([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]), [[1, 2, 3]],
         np.ones((2, 3), np.float32), tf.constant([1.0, 2.0, 3.0]), tf.constant([[1, 2, 3]]),
         tf.constant([[1.0, 2.0]]), [["a", "b", "c"]], tf.constant([[7.0, 8.0, 9.0]])]


def test_every_call_is_bound_as_tf_function_binds_it():
    ref = tf.function(row_sums, input_signature=SIG)
    spec = janus.speculate(row_sums, input_signature=SIG, profile_runs=1)
    for arg in CALLS * 2:
        (ek, ev), (jk, jv) = _outcome(ref, arg), _outcome(spec, arg)
        assert ek == jk, (arg, ev, jv)
        if ek == "return":
            assert jv.dtype == ev.dtype and np.array_equal(jv.numpy(), ev.numpy())
        else:
            assert "row_sums()" in str(jv) and "test_input_signature.py" in str(jv), str(jv)
    assert spec.stats()["graph_runs"] >= 6, spec.report()
    assert spec.input_signature == tuple(SIG)


def test_an_argument_too_many_is_refused():
    spec = janus.speculate(row_sums, input_signature=SIG)
    with pytest.raises(TypeError, match="2 positional arguments, but its input_signature covers 1"):
        spec([[1.0, 2.0, 3.0]], 2)


def test_nested_specs_and_keyword_arguments():
    sig = [(tf.TensorSpec([2], tf.float32), tf.TensorSpec([2], tf.float32)), tf.TensorSpec([], tf.float32)]
    spec = janus.speculate(both, input_signature=sig, profile_runs=1)
    for _ in range(3):
        got = spec(([1.0, 2.0], [3.0, 4.0]), scale=2)
        assert got.dtype == tf.float32 and got.numpy().tolist() == [8.0, 12.0]
    with pytest.raises(TypeError, match="expects a sequence of 2"):
        spec([1.0, 2.0, 3.0], 2.0)
    with pytest.raises(TypeError, match=r"argument `pair\[1\]` is a int32 tensor"):
        spec((tf.constant([1.0, 2.0]), tf.constant([3, 4])), 2.0)


class Model:
    def __init__(self):
        self.w = tf.Variable(2.0)

    @janus.speculate(input_signature=SIG, profile_runs=1)
    def step(self, x):
        return tf.reduce_sum(x) * self.w


def test_method_in_its_class_leaves_out_self():
    m = Model()
    for _ in range(3):
        assert m.step([[1.0, 2.0, 3.0]]).numpy() == 12.0
    with pytest.raises(TypeError, match="argument `x`"):
        m.step(tf.constant([1.0, 2.0, 3.0]))
    bound = janus.speculate(Model().step.__func__.python_function.__get__(m), input_signature=SIG)
    assert bound([[1.0, 1.0, 1.0]]).numpy() == 6.0
