"""Python values a function computes from tensors stay in the graph with eager's exact values:
`float(t)` / `int(t)` / `bool(t)` of a scalar tensor, a conditional expression on a tensor whose
sides are Python numbers, and basic indexing of a NumPy array argument (a NumPy scalar, with
NumPy 2's promotion).  Every test compares janus with eager call by call, exactly (types,
dtypes, -0.0, NaN, exceptions, printed text), and checks that a graph ran where one should."""
import math

import numpy as np
import pytest
import tensorflow as tf

import janus
from tests.harness import run_capturing

W = tf.Variable([[0.5, -0.3], [0.2, 0.1]])


def _same(e, j, path="result"):
    assert type(e) is type(j), f"{path}: eager {type(e).__name__} {e!r}, janus {type(j).__name__} {j!r}"
    if isinstance(e, (tuple, list)):
        assert len(e) == len(j), path
        for k, (x, y) in enumerate(zip(e, j)):
            _same(x, y, f"{path}[{k}]")
    elif isinstance(e, tf.Tensor):
        assert e.dtype == j.dtype and e.shape == j.shape, (path, e, j)
        assert np.array_equal(e.numpy(), j.numpy(), equal_nan=e.dtype.is_floating), (path, e, j)
    elif isinstance(e, (np.ndarray, np.generic)):
        assert e.dtype == j.dtype and np.shape(e) == np.shape(j), (path, e, j)
        assert np.array_equal(e, j, equal_nan=e.dtype.kind == "f"), (path, e, j)
        if e.dtype.kind == "f":
            assert np.array_equal(np.signbit(e), np.signbit(j)), (path, e, j)
    else:
        assert repr(e) == repr(j), f"{path}: eager {e!r}, janus {j!r}"     # -0.0 and nan by their text


def _differential(fn, calls):
    spec = janus.speculate(fn)
    for args in calls:
        (ek, ev), eout = run_capturing(fn, args)
        (jk, jv), jout = run_capturing(spec, args)
        assert ek == jk, f"{args}: eager {ek}s {ev!r}, janus {jk}s {jv!r}"
        if ek == "raise":
            assert type(ev) is type(jv) and str(ev) == str(jv), (ev, jv)
        else:
            _same(ev, jv)
        assert eout == jout, (eout, jout)
    return spec


def _python_break(spec) -> str:
    """The kind of reason the function (or a statement of it) runs in Python for, or ""."""
    if spec.imperative is not None:
        return spec.imperative.kind
    return spec.segmented.breaks[0].kind if spec.segmented is not None and spec.segmented.breaks else ""


def _graph_runs(spec):
    stats = spec.stats()
    return stats["graph_runs"] + stats["segment_graph_runs"]


# -- float(), int(), bool() of a scalar tensor --------------------------------------------------
def converted(x):
    s = tf.reduce_sum(x)
    f, i, b = float(s), int(s), bool(s)
    return f, i, b, f * 3 + i, f / 7, -f, i // 2


def converted_dtypes(x32, x64, n):
    return float(x32[0]), float(x64[0]), float(n[0]), int(n[0]), bool(n[0]), int(x64[1] > 0), float(x64[1] > 0)


@pytest.mark.parametrize("values", [
    [0.1, 2.7, -2.7, -0.0, 0.5, -1e-3, 1.0 / 3.0, 123456.789, -0.9, 7.0],
], ids=["floats"])
def test_float_int_bool_of_a_scalar_tensor_equal_eager(values):
    spec = _differential(converted, [(tf.constant([v, 0.0], tf.float32),) for v in values])
    assert _graph_runs(spec) >= 6 and not spec.stats()["imperative"], spec.report()


def test_a_float32_value_is_widened_exactly_and_int_truncates_toward_zero():
    calls = [(tf.constant([v], tf.float32), tf.constant([v, -v], tf.float64), tf.constant([k - 3], tf.int32))
             for k, v in enumerate([0.1, -2.5, 2.9999, -0.0, 1e10, -7.75, 0.3, 3.0])]
    spec = _differential(converted_dtypes, calls)
    assert _graph_runs(spec) >= 4, spec.report()


def test_int_of_nan_infinity_or_a_float_past_int64_falls_back_to_eager():
    values = [1.5, -2.5, 3.5, float("nan"), 4.5, float("inf"), -float("inf"), 1e30, -1e19, 2.0, 9.25]
    spec = _differential(lambda x: int(x[0]) + 1, [(tf.constant([v]),) for v in values])
    assert _graph_runs(spec) >= 3 and not spec.stats()["imperative"], spec.report()


def test_bool_of_nan_and_negative_zero():
    calls = [(tf.constant([v]),) for v in [1.0, 0.0, -0.0, float("nan"), 2.0, -0.0, float("nan"), 0.0]]
    spec = _differential(lambda x: (bool(x[0]), bool(x[0] * 2.0), not bool(x[0])), calls)
    assert _graph_runs(spec) >= 4, spec.report()


def python_value_needed(x):
    n = int(tf.reduce_sum(x))
    y = x * 2.0
    names = ["zero", "one", "two", "three"]
    return names[n % 4], y


def test_a_computed_number_python_needs_the_value_of_runs_in_python():
    calls = [(tf.constant([float(k), 1.0]),) for k in range(8)]
    spec = _differential(python_value_needed, calls)
    assert _python_break(spec) == "python-value-of-tensor", spec.report()


def printed_and_ranged(x):
    n = int(tf.reduce_sum(x))
    f = float(x[0])
    total = 0
    for i in range(n):
        total += i
    print("n", n, "f", f)
    return total, f


def test_a_computed_number_prints_and_bounds_a_range_as_eager():
    # The loop's Python int sum cannot be guarded to stay inside int64 in a tf.while_loop: that
    # statement runs in Python, the rest as graph segments.
    spec = _differential(printed_and_ranged, [(tf.constant([0.5 * k, 1.0]),) for k in range(10)])
    assert _python_break(spec) == "python-value-of-tensor" and _graph_runs(spec) >= 2, spec.report()


@pytest.mark.parametrize("make", [
    lambda k: tf.constant([1.0, float(k)]),                 # not a scalar: eager raises TypeError
    lambda k: tf.constant(complex(k, 1.0)),                 # complex: eager drops the imaginary part
    lambda k: tf.constant(str(k)),                          # a string: eager parses it
], ids=["vector", "complex", "string"])
def test_float_of_what_janus_does_not_convert_equals_eager(make):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _differential(lambda t: float(t), [(make(k),) for k in range(6)])


# -- a conditional expression on a tensor --------------------------------------------------------
def chosen(x, u):
    p = float(tf.sigmoid(tf.reduce_sum(x)))
    action = 1 if u < p else 0
    scale = 0.5 if u < p else -0.0
    flag = True if u < p else False
    return action, action * 3, scale, flag, x[action]


def test_a_conditional_expression_of_python_numbers_is_a_python_number_of_that_type():
    rng = np.random.default_rng(1)
    calls = [(tf.constant(rng.normal(size=2).astype(np.float32)), float(rng.uniform())) for _ in range(12)]
    spec = _differential(chosen, calls)
    assert _graph_runs(spec) >= 8 and not spec.stats()["imperative"], spec.report()


def mixed_types(x):
    return 1 if tf.reduce_sum(x) > 0 else 0.5


def test_a_conditional_expression_whose_type_depends_on_the_tensor_runs_in_python():
    spec = _differential(mixed_types, [(tf.constant([(-1.0) ** k]),) for k in range(8)])
    assert _python_break(spec) == "python-value-of-tensor", spec.report()


def none_or_tensor(x):
    y = None if tf.reduce_sum(x) > 0 else x
    pair = (x, x) if tf.reduce_sum(x) > 1 else (x,)
    return (x if y is None else y * 2.0), len(pair)


def test_none_or_another_structure_on_one_side_runs_that_expression_in_python():
    """`tf.cond` cannot give None on one side only, or tuples of two lengths: the statement runs
    in Python, with the reason, and the rest of the function stays in the graph."""
    spec = _differential(none_or_tensor, [(tf.constant([(-1.5) ** k]),) for k in range(8)])
    assert _python_break(spec) == "python-value-of-tensor", spec.report()
    assert "gives None on one side and a tensor on the other" in spec.report(), spec.report()
    assert not spec.stats()["imperative"], spec.report()


def one_side_first(x):
    a = 2 if tf.reduce_sum(x) > 0 else 7
    return a + 1, a / 2


def test_a_speculated_side_that_breaks_relaxes_to_a_python_number():
    calls = [(tf.constant([1.0 + k]),) for k in range(5)] + [(tf.constant([-1.0 - k]),) for k in range(5)]
    spec = _differential(one_side_first, calls + calls[:3])
    stats = spec.stats()
    assert stats["guard_failures"] >= 1 and stats["graph_runs"] >= 6 and not stats["imperative"], spec.report()


def tensor_or_number(x):
    y = x * 2.0 if tf.reduce_sum(x) > 0 else 0.0
    return y


def test_a_tensor_on_one_side_and_a_number_on_the_other_equals_eager():
    _differential(tensor_or_number, [(tf.constant([(-1.0) ** k]),) for k in range(8)])


def fed_number_test(n, x):
    return (3 if n > 2 else 4) + 1, x


def test_a_conditional_on_a_fed_number_stays_a_python_number():
    spec = _differential(fed_number_test, [(k, tf.constant(1.0)) for k in [1, 5, 2, 3, 0, 9, 2, 4]])
    assert _graph_runs(spec) >= 4, spec.report()


# -- indexing a NumPy array ---------------------------------------------------------------------
def episode(obs, uniforms):
    log_probs, actions = [], []
    for t in range(len(uniforms)):
        logp = tf.nn.log_softmax(tf.matmul(tf.constant(obs[None, :]), W))
        action = 1 if uniforms[t] < float(tf.exp(logp[0, 1])) else 0
        log_probs.append(logp[0, action])
        actions.append(action)
        if tf.reduce_sum(logp) < -100.0:
            break
    return tf.stack(log_probs), actions


def test_the_actor_critic_action_choice_runs_as_one_graph():
    rng = np.random.default_rng(0)
    calls = [(rng.normal(size=2).astype(np.float32), rng.uniform(size=6).astype(np.float32)) for _ in range(10)]
    spec = _differential(episode, calls)
    stats = spec.stats()
    assert stats["graph_runs"] >= 6 and not stats["imperative"], spec.report()


def indexed(a, i, t):
    return a[i], a[-1], a[None, :], a[1:3], a[::-1], a[-10:2], a[t], tf.constant(a), tf.constant(a[None, :]), len(a)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.uint8, np.bool_])
def test_basic_indexing_gives_numpy_values_and_scalars(dtype):
    calls = [(np.arange(4 + k % 2).astype(dtype), [0, 1, -2, 3, -4, 2, 1, 0][k], tf.constant(k % 3))
             for k in range(8)]
    spec = _differential(indexed, calls)
    assert _graph_runs(spec) >= 4, spec.report()


def matrix_indexed(m, i):
    return m[i, 1], m[i], m[:, i], m[1, None, :], m[i, :2] * 2, type(m[0, 0]).__name__


def test_indexing_a_matrix_by_a_varying_python_int():
    calls = [(np.arange(12, dtype=np.float32).reshape(3, 4) * k, k % 3 - 1) for k in range(8)]
    spec = _differential(matrix_indexed, calls)
    assert _graph_runs(spec) >= 4, spec.report()


@pytest.mark.parametrize("fn,in_graph", [
    (lambda a, i: a[i], True),
    (lambda a, i: a[5], True),
    (lambda a, i: a[-5], True),
    (lambda a, i: a[i, None], True),
    (lambda a, i: a[0, 0], False),
], ids=["fed-index", "constant-past-end", "constant-before-start", "fed-with-newaxis", "too-many-indices"])
def test_an_index_out_of_range_raises_eagers_index_error(fn, in_graph):
    calls = [(np.arange(4 + (k > 5), dtype=np.float32) + k, [0, 3, 1, 2, 4, -5, -1, 6, 2, -4][k]) for k in range(10)]
    spec = _differential(fn, calls)
    assert (spec.imperative is None) == in_graph, spec.report()


def weak_comparison(u, p, x):
    a = u[0] < p                     # NumPy 2: the Python float is weak, compared in float32
    b = u[1] <= 0.1
    c = u[0] == float(x[0])
    return a, b, c, u[0] + p, u[0] * 2, -u[1], 1 if u[0] < p else 0


def test_a_numpy_scalar_meets_python_floats_as_numpy_2():
    f32 = np.float32
    calls = [(np.array([0.1, 0.1], f32), 0.1, tf.constant([0.1])),
             (np.array([0.3, 0.2], f32), 0.30000001192092896, tf.constant([0.3], tf.float64)),
             (np.array([-0.0, 0.1], f32), 0.0, tf.constant([-0.0])),
             (np.array([np.nan, 1.0], f32), 0.5, tf.constant([np.nan])),
             (np.array([0.1, 0.1], f32), 0.1000000001, tf.constant([0.1])),
             (np.array([1e30, 0.0], f32), 1e300, tf.constant([1.0])),
             (np.array([0.5, 0.05], f32), 0.25, tf.constant([0.5])),
             (np.array([0.1, 0.2], f32), 0.1, tf.constant([0.1], tf.float64))]
    with np.errstate(over="ignore"):
        spec = _differential(weak_comparison, calls)
    assert _graph_runs(spec) >= 2, spec.report()


def numpy_scalar_test(u, x):
    total = 0.0
    for t in range(len(u)):
        if u[t] < 0.5:
            total = total + float(x[t])
    return total, type(u[0] < 0.5).__name__


def test_an_if_on_a_numpy_scalar_comparison():
    rng = np.random.default_rng(5)
    calls = [(rng.uniform(size=4).astype(np.float32), tf.constant(rng.normal(size=4).astype(np.float32)))
             for _ in range(10)]
    spec = _differential(numpy_scalar_test, calls)
    assert _graph_runs(spec) >= 5 and not spec.stats()["imperative"], spec.report()


def fancy(a, i):
    return a[[0, i]], a[a > 1]


def test_fancy_indexing_stays_numpys():
    spec = _differential(fancy, [(np.arange(4, dtype=np.float32) * k, k % 4) for k in range(6)])
    assert _python_break(spec) == "numpy-array", spec.report()


def test_numpy_scalars_convert_like_eager():
    assert math.isclose(float(np.float32(0.1)), 0.10000000149011612)        # the value tests above rely on


def int_comparisons(a, n):
    return a[0] < n, a < n, a[1] == n, a[0] > 3


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
def test_an_integer_array_compared_with_a_python_int_outside_its_dtype(dtype):
    """NumPy 2 compares with a Python int exactly; the graph once cast 200 to int8 (-56)."""
    calls = [(np.array([5, 100], dtype), n) for n in [1, 2, 3, 200, -200, 100, 5, 7, 1000, 300]]
    spec = _differential(int_comparisons, calls)
    assert _graph_runs(spec) >= 4, spec.report()


def int_arithmetic(a, n):
    return a + n, a[0] * n


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32])
def test_integer_array_arithmetic_with_a_python_int_outside_its_dtype(dtype):
    """NumPy 2 raises OverflowError for a Python int outside a narrow dtype; never a wrapped value."""
    calls = [(np.array([5, 100], dtype), n) for n in [1, 2, 3, 200, -200, 100, 5, 7, 1000, 300]]
    _differential(int_arithmetic, calls)
