"""NumPy scalar arguments (`step(x, np.float32(lr))`): a constant checked by value while it
repeats, fed as a tensor of its own dtype once it varies, computing as NumPy's scalar does in
either case.  They were checked by identity, so every call with a new scalar built a graph.
Each call is compared with eager to the bit (results, Python types, prints)."""
import math

import numpy as np
import tensorflow as tf
from tensorflow.python import pywrap_tfe

import janus
from tests.harness import assert_same_outcome, run_capturing
from tests.janus.test_recursion_numpy_attributes import _bits

X = tf.constant([1.0, 2.0])
X64 = tf.constant([1.0, 2.0], tf.float64)


def arithmetic(s):
    return X * s, s * X64, s * 2.5, s + np.float64(1), s // 2, s % 2, s ** 2, -s, abs(s)


def conversions(s):
    return int(s) if math.isfinite(s) else 0, float(s), bool(s), s.item(), s.astype(np.float64), type(s).__name__


def branches(s):
    if s > 0.5:
        return X * s
    return tf.maximum(X, s)


def passed_through(s):
    return s, [s], tf.cast(s, tf.float64), tf.constant(s)


def printed(s):
    print(s, s * 2, f"{s:.3f}")
    return X / s


def _same(fn, values):
    spec = janus.speculate(fn)
    for v in values:
        # Eager converts a float scalar through TensorFlow's cache, keyed by value: after any
        # `0.0` this process converted, `-0.0` comes back as `0.0` (README, differences).
        pywrap_tfe.TFE_ClearScalarCache()
        eager, ours = run_capturing(fn, (v,)), run_capturing(spec, (v,))
        if eager[0][0] != "return":
            assert_same_outcome(eager, ours)
        else:
            assert ours[0][0] == "return" and eager[1:] == ours[1:], (eager, ours)
            assert _bits(tuple(tf.nest.flatten(eager[0][1]))) == _bits(tuple(tf.nest.flatten(ours[0][1]))), \
                (eager, ours)
    return spec


FLOATS = (0.5, 1.25, 3.5, -0.0, 0.1, float("nan"), 2.0, 7.75)


def test_numpy_scalars_that_vary_compute_as_numpy_in_the_graph():
    for kind in (np.float32, np.float64, np.float16):
        for fn in (arithmetic, branches, passed_through):
            report = _same(fn, [kind(v) for v in FLOATS]).report()
            assert "IMPERATIVELY" not in report, report
            if not (kind is np.float16 and fn is arithmetic):      # (TensorFlow has no float16 `%`)
                assert "fed as" in report and "5 graph" in report, report
    for kind in (np.int32, np.int64):
        for fn in (arithmetic, branches, printed):
            _same(fn, [kind(v) for v in (3, 5, 1, -7, 2 ** 31 - 1, 9)])


def test_a_numpy_scalar_whose_value_python_needs_is_specialised_on_again():
    """`print(s)`, `int(s)`, `s.item()` need the value: the argument is a constant again, one graph
    per value, as a Python number is (it made the function run in Python)."""
    for kind in (np.float32, np.float16):
        for fn in (conversions, printed):
            report = _same(fn, [kind(v) for v in FLOATS]).report()
            assert "specialised again" in report or "4 graph" in report, report
            assert "IMPERATIVELY" not in report, report


def test_a_repeated_numpy_scalar_is_a_constant_and_a_new_value_relaxes_it():
    spec = _same(arithmetic, [np.float32(0.5)] * 5)
    assert "fed as" not in spec.report() and "1 graphs built" in spec.report(), spec.report()
    spec = _same(arithmetic, [np.float32(0.5)] * 4 + [np.float32(0.75), np.float32(1.5), np.float32(2.5)])
    report = spec.report()
    assert "CONSTANT args[0] == np.float32(0.5)" in report and "fed as float32 tensor" in report, report
    assert "2 graphs built" in report, report


def test_a_numpy_scalar_of_another_type_gets_its_own_graph():
    spec = _same(arithmetic, [np.float32(0.5), np.float32(1.5), np.float32(0.5), np.float32(2.5),
                              np.float64(0.5), np.float64(1.5), np.float64(2.5), np.int32(3)])
    assert "fed as float32 tensor" in spec.report() or "float64" in spec.report(), spec.report()


def test_numpy_bools_fed_as_tensors_branch_as_numpy_does():
    def pick(flag):
        return (X if flag else -X), flag & True, ~flag, int(flag) + 1

    _same(pick, [np.bool_(v) for v in (True, False, True, True, False, False, True)])


def as_tensors(a):
    return tf.cast(a, a.dtype), tf.identity(a), tf.convert_to_tensor(a), a


def test_a_tensor_made_of_a_numpy_argument_is_a_tensor():
    """`tf.cast(a, a.dtype)` and `tf.convert_to_tensor(a)` give the fed tensor itself, which was
    taken for the argument passed through and handed back as the caller's array."""
    spec = janus.speculate(as_tensors)
    for i in range(5):
        for a in (np.arange(3, dtype=np.float32) + i, np.float32(i + 0.5)):
            eager, ours = as_tensors(a), spec(a)
            assert [type(r) for r in eager] == [type(r) for r in ours], (eager, ours)
            assert ours[3] is a


class Schedule:
    def __init__(self):
        self.lr = np.float32(0.5)


SCHEDULE = Schedule()


def step(x):
    return x - SCHEDULE.lr * x, SCHEDULE.lr * 2.5


def test_a_numpy_scalar_attribute_that_varies_is_fed_as_a_tensor():
    """`self.lr = np.float32(...)` set between calls: a constant checked by value, then fed (it was
    checked by identity, so each new scalar built a graph)."""
    spec = janus.speculate(step)
    for lr in (0.5, 0.5, 0.5, 0.5, 0.25, 0.125, 0.0625, -0.0, 0.5, 3.0):
        SCHEDULE.lr = np.float32(lr)
        eager, ours = step(X), spec(X)
        assert _bits(eager) == _bits(ours), (lr, eager, ours)
    report = spec.report()
    assert "SCHEDULE.lr fed as float32 tensor" in report and "2 graphs built" in report, report


def scaled(s):
    return s * 2, s + np.float32(0), X * 0.0 + float(s > 0)


def test_a_subnormal_number_is_never_fed():
    """TensorFlow's CPU kernels flush subnormals to zero; fed, `s * 2` of `np.float32(1e-45)` was
    0.0 where NumPy gives 3e-45 (a Python float the same): such a value stays a constant."""
    for kind in (np.float32, np.float64, float):
        tiny = float(np.finfo(np.float32 if kind is np.float32 else np.float64).tiny)
        _same(scaled, [kind(v) for v in (0.5, 1.5, 2.5, tiny / 8, 3.5, -tiny / 1024, 0.25, tiny / 8)])


def with_numpy_constants(s):
    return s + np.float32(0.1), np.float32(2) * s, s < np.float32(1.5), s * np.float64(3), s - np.int64(1)


def with_a_float16(s):
    return s - np.float16(1)        # (a float64 rounded to float16: the graph would round twice)


def test_a_fed_python_number_meeting_a_numpy_constant_follows_numpy():
    """`s + np.float32(0.1)` of a Python float fed as a tensor is an np.float32 (NEP 50), as in
    eager; it came back as a Python float."""
    report = _same(with_numpy_constants, [float(v) for v in (0.5, 1.25, 3.5, -0.0, 0.1, 2.0, 7.75)]).report()
    assert "fed as float64" in report and "IMPERATIVELY" not in report, report
    _same(with_numpy_constants, [v for v in (1, 2, 3, 4, 5, 6)])
    _same(with_a_float16, [float(v) for v in (0.5, 1.25, 3.5, -0.0, 0.1, 2.0, 7.75)])


class Holder:
    lr = np.float32(0.1)


HOLDER = Holder()


def doubled_rate(x):
    return HOLDER.lr * 2, x


def test_a_fed_numpy_attribute_of_another_type_or_subnormal_is_not_fed():
    """After `lr` was fed as float32, an np.float64, np.float16, float or np.int32 value ran the
    float32 graph (np.float32(0.6) for np.float64(0.3)); a subnormal one was fed and flushed."""
    spec = janus.speculate(doubled_rate)
    values = [np.float32(0.1)] * 3 + [np.float32(0.2), np.float32(0.3), np.float32(0.3), np.float64(0.3),
                                      np.float16(0.3), 0.3, np.int32(3), np.float32(1e-40), 5e-324, np.float32(0.7)]
    for lr in values:
        HOLDER.lr = lr
        eager, ours = doubled_rate(X), spec(X)
        assert _bits(eager) == _bits(ours), (lr, eager, ours)


def walk_with(node, k):
    if node.left is None:
        return k
    return walk_with(node.left, k) + walk_with(node.right, k) * 3


class Two:
    def __init__(self, left=None, right=None):
        self.left, self.right = left, right


def test_a_subnormal_a_recursion_holds_runs_that_call_in_python():
    tree = Two(Two(Two(), Two()), Two())
    for k in (np.float32(2.5), np.float32(3.5), np.float32(1e-40), 1e-310, np.float32(4.5), 2.5, 3.5, 1e-310):
        assert _bits(walk_with(tree, k)) == _bits(janus_walk(tree, k)), k


janus_walk = janus.speculate(walk_with)
