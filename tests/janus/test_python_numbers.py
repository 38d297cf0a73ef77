"""Python numbers that vary between calls keep Python's meaning in the graph: int stays int
(no int32 wrap-around, no float32), float is 64-bit, a zero divisor raises ZeroDivisionError,
and results, writes and prints come back as Python numbers.  Each is compared with eager."""
import math
import types

import pytest
import tensorflow as tf

import janus
from tests.harness import assert_same, differential


def mixed(x, n):
    return x + n, n * n + 1


def wide(n):
    return n * 100000, n * n


def divided(n):
    return 10 / (n - 8), 10 // (n - 8), 10 % (n - 8)


def scaled(lr):
    return lr * 3


def stepped(x, step):
    print("step", step, "of", step * 2)
    return x * 2.0


def both_vary(x, n, lr):
    return x * lr + n


def builtins_of(n, f):
    return int(f * n), float(n), abs(-n), max(n, 3), min(f, 0.5), bool(n), n ** 2, -f


def compared(x, n):
    if n > 3:
        y = x * n
    else:
        y = x - n
    return y, n >= 3, x > n


CALLS_INT = [(tf.constant(1.5), k) for k in (1, 2, 3, 4, 9, -5, 30000)]


@pytest.mark.parametrize("fn,calls", [
    (mixed, CALLS_INT),
    (wide, [(k,) for k in (1, 2, 3, 30000, 50000, 2 ** 31 - 1, -(2 ** 31), 2 ** 40, 7)]),
    (divided, [(k,) for k in (1, 2, 3, 4, 8, 9, 8, 5)]),
    (scaled, [(k,) for k in (0.1, 0.2, 0.3, 0.65, 1e300, 0.9)]),
    (stepped, [(tf.constant(1.0), k) for k in range(6)]),
    (both_vary, [(tf.constant([1.0, 2.0]), k, 0.1 * k) for k in range(1, 9)]),
    (builtins_of, [(k, 0.1 * k) for k in (1, 2, 3, 4, 5, -6, 0)]),
    (compared, [(tf.constant([1.0, 5.0]), k) for k in (1, 2, 5, 6, 2, 4, 0)]),
], ids=lambda v: getattr(v, "__name__", ""))
def test_a_varying_python_number_keeps_python_semantics(fn, calls):
    spec = differential(fn, calls)
    assert spec.imperative is None, spec.report()


def test_varying_numbers_run_as_one_graph():
    spec = janus.speculate(both_vary)
    x = tf.constant([1.0, 2.0])
    for k in range(1, 41):
        assert_same(both_vary(x, k, 0.1 * k), spec(x, k, 0.1 * k))
    stats = spec.stats()
    assert not stats["imperative"] and stats["graphs_built"] <= 3 and stats["graph_runs"] >= 35, spec.report()


def test_zero_division_falls_back_without_relaxing():
    spec = janus.speculate(divided)
    for k in (1, 2, 3, 4, 5):
        spec(k)
    built = spec.stats()["graphs_built"]
    for _ in range(3):
        with pytest.raises(ZeroDivisionError):
            spec(8)
    runs = spec.stats()["graph_runs"]
    assert_same(divided(9), spec(9))
    stats = spec.stats()
    assert stats["graph_runs"] == runs + 1 and stats["graphs_built"] == built, spec.report()


def test_an_int_past_64_bits_is_computed_by_python():
    spec = janus.speculate(wide)
    for k in (1, 2, 3, 4):
        spec(k)
    big = 2 ** 31 - 1
    assert_same(wide(big), spec(big))
    cube = janus.speculate(lambda_free_cube)
    for k in (1, 2, 3, 4, 2 ** 30, 5):
        assert_same(lambda_free_cube(k), cube(k))
    assert cube.stats()["graphs_built"] == 2 and cube.stats()["graph_runs"] == 2, cube.report()


def lambda_free_cube(n):
    return n * n * n


STATE = types.SimpleNamespace(total=0)


def accumulate(lr):
    STATE.total += lr
    return STATE.total


def test_an_int_attribute_plus_a_float_becomes_a_float():
    for lr in (0.1, 0.2, 0.3, 0.4, 0.5, 0.6):
        STATE.total = 0
        expected = accumulate(lr)
        STATE.total = 0
        spec_result = SPEC_ACC(lr)
        assert type(STATE.total) is float and STATE.total == expected == spec_result


SPEC_ACC = janus.speculate(accumulate)


def test_a_printed_number_prints_as_python_prints_it(capsys):
    spec = janus.speculate(stepped)
    for k in range(6):
        spec(tf.constant(1.0), k)
    out = capsys.readouterr().out.splitlines()
    assert out == [f"step {k} of {2 * k}" for k in range(6)]
    assert spec.stats()["graph_runs"] >= 2


LOG = []


def counts_calls(x):
    LOG.append(1)
    return x * len(LOG), len(LOG)


def test_the_length_of_a_growing_list_is_fed_not_rebuilt():
    eager_log, janus_log = [], []
    spec = janus.speculate(counts_calls)
    for _ in range(60):                  # the same list object, holding each run's own contents
        LOG[:] = eager_log
        expected = counts_calls(tf.constant(1.0))
        eager_log = list(LOG)
        LOG[:] = janus_log
        assert_same(expected, spec(tf.constant(1.0)))
        janus_log = list(LOG)
    assert janus_log == eager_log
    stats = spec.stats()
    assert stats["graphs_built"] <= 3 and stats["graph_runs"] >= 55, spec.report()


def negated(x, s):
    return x + 1.0, s * -1.0


def test_a_fed_zero_keeps_its_sign_after_a_negative_zero_was_fed():
    """TensorFlow caches the tensors of Python scalars by value, and -0.0 == 0.0."""
    x = tf.constant([1.0])
    spec = differential(negated, [(x, s) for s in [1.0, 2.0, 3.0, -0.0, 0.0, 1.0, -0.0, 0.0, -0.0, 4.0, 0.0]])
    assert spec.stats()["graph_runs"] >= 5, spec.report()


def past_int64_minus_a_tensor(n, a):
    return a * 3 - n


def test_a_python_int_past_64_bits_meeting_an_int_tensor_raises_as_eager():
    """Eager refuses a Python int outside int64 converted to an int tensor (`ValueError`); a
    graph's constant kept its low bits (`3 * 2**62 - n` was `-n`).  Inside int64 both wrap to
    int32 alike."""
    calls = [(tf.constant(i + 1), a) for a in (2 ** 62, 2 ** 63 + 5, -2 ** 64, 2 ** 40) for i in range(4)]
    differential(past_int64_minus_a_tensor, calls)


def past_int64_other_forms(x, n):
    return x + n, tf.constant(n, tf.int64) if n < 2 ** 63 else tf.cast(n, tf.float64)


def past_int64_constant(x, n):
    return tf.constant(n, tf.int64) + tf.cast(x, tf.int64)


def test_other_forms_of_a_python_int_past_64_bits_raise_as_eager():
    calls = [(tf.constant(i % 3 + 1), a) for a in (5, 2 ** 63, 2 ** 64 - 1, 3 * 2 ** 62, -2 ** 63 - 1) for i in range(3)]
    differential(past_int64_other_forms, calls)
    differential(past_int64_constant, calls)


def big_quotient(x, k):
    return x * 2.0, (k + 2 ** 60) / 3, k / 3


def test_a_quotient_of_a_fed_int_past_53_bits_is_pythons():
    """`k + 2**60` is a fed int made big by a constant: its `/` was computed in float64 without the
    2**53 check (3.843071682022823e+17 for eager's ...824e+17 at k = 100)."""
    differential(big_quotient, [(tf.constant([1.0]), k) for k in [1, 3, -2, 100, 5, 4, 29, 100, 29]])


ROUNDED = []


def rounds_a_computed_float(x):
    loss = tf.reduce_sum(x * x)
    ROUNDED.append((round(float(loss), 3), math.floor(float(loss) * 10), math.ceil(float(loss))))
    print("loss", round(float(loss), 2))
    return loss * 2.0


def test_round_floor_and_ceil_of_a_float_computed_from_a_tensor_run_in_python_between_graphs():
    """`round(float(loss), 5)` raised TypeError in the build (the stand-in had no `__round__`), and
    three such builds made the whole function run in Python."""
    ROUNDED.clear()
    differential(rounds_a_computed_float, [(tf.constant([0.1234 * i, 1.0]),) for i in range(8)])
    spec = janus.speculate(rounds_a_computed_float, profile_runs=2)
    for i in range(6):
        spec(tf.constant([0.5 * i, 1.0]))
    assert not spec.stats()["imperative"], spec.report()
