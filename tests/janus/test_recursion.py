"""Recursion on tensors runs as one static Call/Return machine: results equal eager's,
the body appears once whatever the depth, and independent calls advance together."""
import pytest
import tensorflow as tf

import janus
from tests.harness import assert_same


def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)


def fact(n):
    if n <= 1.0:
        return 1.0
    return n * fact(n - 1.0)


def ack(m, n):
    if m == 0:
        return n + 1
    elif n == 0:
        return ack(m - 1, 1)
    else:
        return ack(m - 1, ack(m, n - 1))


def tak(x, y, z):
    if y < x:
        return tak(tak(x - 1, y, z), tak(y - 1, z, x), tak(z - 1, x, y))
    return z


def is_even(n):
    if n == 0:
        return True
    return is_odd(n - 1)


def is_odd(n):
    if n == 0:
        return False
    return is_even(n - 1)


def is_prime_from(n, d):
    if d * d > n:
        return True
    if n % d == 0:
        return False
    return is_prime_from(n, d + 1)


def count_primes(n):
    if n < 2:
        return 0
    rest = count_primes(n - 1)
    if is_prime_from(n, 2):
        return rest + 1
    return rest


def count(n):
    """Primes in [2, n] by mutual recursion with `trial` (the static-recursion work's program)."""
    if n < 2:
        return 0
    return trial(n, 2)


def trial(n, d):
    if d * d > n:
        return 1 + count(n - 1)
    if n % d == 0:
        return count(n - 1)
    return trial(n, d + 1)


def power(x, n):
    if n == 0:
        return tf.ones_like(x)
    return x * power(x, n - 1)


def tree_sum(lo, hi):
    """A complete binary recursion over [lo, hi): 2^k leaves, depth k."""
    if hi - lo == 1:
        return tf.cast(lo, tf.float32) * 0.5
    mid = (lo + hi) // 2
    left = tree_sum(lo, mid)
    right = tree_sum(mid, hi)
    return left + right


def _same_value(expected, got):
    """Values equal eager's (integers exactly, floats rtol 1e-5), of eager's kind: a Python number
    where eager returns one, else a tensor."""
    assert isinstance(got, tf.Tensor) == isinstance(expected, tf.Tensor), (expected, got)
    if not isinstance(expected, tf.Tensor):
        assert type(got) is type(expected), (expected, got)
    if isinstance(expected, (bool, int)) or getattr(expected, "dtype", tf.float32).is_integer \
            or getattr(expected, "dtype", None) == tf.bool:
        assert (tf.convert_to_tensor(expected).numpy() == tf.convert_to_tensor(got).numpy()).all()
    else:
        assert_same(tf.convert_to_tensor(expected, tf.float32), tf.cast(tf.convert_to_tensor(got), tf.float32))


def _spec(fn, *warm):
    spec = janus.speculate(fn, profile_runs=1)
    spec(*warm)
    return spec


CASES = [
    (fib, [(tf.constant(k),) for k in (6, 1, 10, 15)]),
    (fact, [(tf.constant(k),) for k in (4.0, 2.0, 7.0, 10.0)]),
    (ack, [(tf.constant(m), tf.constant(n)) for m, n in ((2, 3), (1, 2), (2, 2), (1, 0))]),
    (tak, [(tf.constant(x), tf.constant(y), tf.constant(z)) for x, y, z in ((6, 3, 1), (8, 4, 2), (1, 2, 3))]),
    (is_even, [(tf.constant(k),) for k in (4, 7, 0, 31)]),
    (count_primes, [(tf.constant(k),) for k in (10, 2, 30)]),
    (count, [(tf.constant(k),) for k in (10, 2, 30, 97)]),
    (power, [(tf.constant([1.5, -0.5]), tf.constant(k)) for k in (3, 0, 10)]),
]


@pytest.mark.parametrize("fn,calls", CASES, ids=[c[0].__name__ for c in CASES])
def test_recursive_results_equal_eager(fn, calls):
    spec = _spec(fn, *calls[0])
    for args in calls:
        _same_value(fn(*args), spec(*args))
    stats = spec.stats()
    assert stats["graph_runs"] == len(calls) and not stats["imperative"], spec.report()
    assert spec.graphs[0].recursion, "the call did not run as a Call/Return machine"


def test_body_appears_once_whatever_the_depth():
    spec = _spec(power, tf.constant([1.0]), tf.constant(3))
    assert_same(power(tf.constant([1.0]), tf.constant(3)), spec(tf.constant([1.0]), tf.constant(3)))
    ops = spec.graphs[0].op_count
    x = tf.constant([1.001])
    assert_same(power(x, tf.constant(300)), spec(x, tf.constant(300)))     # 300 deep, same graph
    assert spec.stats()["graphs_built"] == 1 and spec.graphs[0].op_count == ops


def test_depth_beyond_pythons_recursion_limit_raises_as_eager():
    import sys
    spec = _spec(power, tf.constant([1.0]), tf.constant(2))
    depth = sys.getrecursionlimit() + 500
    with pytest.raises(RecursionError):
        power(tf.constant([1.0]), tf.constant(depth))
    with pytest.raises(RecursionError):
        spec(tf.constant([1.0]), tf.constant(depth))
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(depth + 1000)      # the graph follows the limit of the call
    try:
        out = spec(tf.constant([1.0]), tf.constant(depth))
    finally:
        sys.setrecursionlimit(limit)
    assert float(out[0]) == 1.0
    assert spec.graphs[0].recursion[0].last_frames == depth + 1
    assert spec.stats()["graphs_built"] == 1, spec.report()


def runaway(n, stop):
    if n > stop:
        return n
    return runaway(n + 1, stop) + runaway(n + 1, stop)


def test_a_wide_recursion_that_never_ends_raises_as_eager_without_filling_memory():
    """Eager goes depth-first and raises RecursionError after a thousand calls; the wavefront
    doubles its frames every step and would fill the machine's memory long before its depth
    passed the limit.  The machine stops at a bounded number of frames and the call runs in
    Python, which raises."""
    spec = janus.speculate(runaway, profile_runs=1)
    for stop in (3, 5):
        assert int(spec(tf.constant(0), tf.constant(stop))) == int(runaway(tf.constant(0), tf.constant(stop)))
    with pytest.raises(RecursionError):
        runaway(tf.constant(0), tf.constant(10 ** 6))
    with pytest.raises(RecursionError):
        spec(tf.constant(0), tf.constant(10 ** 6))
    assert "more calls than the machine holds" in spec.report(), spec.report()


def test_independent_calls_run_together_steps_grow_with_depth_not_size():
    spec = _spec(tree_sum, tf.constant(0), tf.constant(4))
    steps = {}
    for k in (4, 8, 10):
        n = 2 ** k
        assert_same(tree_sum(tf.constant(0), tf.constant(n)), spec(tf.constant(0), tf.constant(n)))
        cycle = spec.graphs[0].recursion[0]
        steps[k] = cycle.last_steps
        assert cycle.last_frames == 2 * n - 1
    # linear in k (the same number of steps per level: 2 here), not in 2^k
    assert steps[8] - steps[4] == 2 * (steps[10] - steps[8]) > 0
    assert steps[10] <= 3 * 10


def test_report_shows_the_machine():
    spec = _spec(fib, tf.constant(5))
    spec(tf.constant(8))
    text = spec.report()
    assert "recursion fib: Call/Return machine with" in text and "call sites" in text, text
    data = spec.report(format="json")
    assert data["recursion"][0]["call_sites"] == 2 and data["recursion"][0]["last_frames"] == 67


def doubled(a):
    return a * 2


def chain_sum(x, n):
    """The base case calls into NumPy, which pfor cannot vectorise: its segment is empty on most steps."""
    if n == 0:
        return tf.ensure_shape(tf.numpy_function(doubled, [x], tf.float32), x.shape)
    return x + chain_sum(x, n - 1)


def test_a_segment_pfor_cannot_vectorise_runs_only_when_frames_wait_at_it():
    spec = janus.speculate(chain_sum)
    for n in (3, 5, 2, 4, 6, 1):
        x = tf.constant([1.0, 2.0])
        assert_same(chain_sum(x, tf.constant(n)), spec(x, tf.constant(n)))
    s = spec.stats()
    assert s["graph_runs"] >= 3 and not s["imperative"] and "graph-error" not in spec.report(), spec.report()
