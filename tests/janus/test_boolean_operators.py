"""`and`, `or`, `not` and comparison chains on tensors keep Python's meaning in the graph: the
result is one of the operands (its dtype, its Python type), the right side is evaluated only
where eager evaluates it, `not t` is a Python bool, and the truth of a non-scalar raises as eager
does.  Each is compared with eager."""
import tensorflow as tf

import janus
from tests.harness import assert_same, differential

COUNTER = tf.Variable(0.0)


def scalars(pairs, dtype=tf.float32):
    return [(tf.constant(a, dtype), tf.constant(b, dtype)) for a, b in pairs]


def both(x, y):
    return x and y


def either_doubled(x, y):
    z = x or y
    return z * 2


def negated(x):
    return not x


def test_and_of_float_tensors_returns_an_operand_not_its_truth():
    spec = differential(both, scalars([(1., 2.), (3., 4.), (5., 6.), (7., 8.), (0., 1.), (2., 0.), (0., 0.)]))
    assert spec.stats()["graph_runs"] > 0, spec.report()


def test_or_of_int_tensors_returns_an_operand_not_its_truth():
    spec = differential(either_doubled, scalars([(1, 2), (3, 4), (5, 6), (7, 8), (0, 10), (0, 1)], tf.int32))
    assert spec.stats()["graph_runs"] > 0, spec.report()


def chosen(x, y):
    r = x or y
    return r, x and y, x or x * 2.0


def test_an_operand_returned_by_and_or_is_the_callers_own_tensor():
    """Eager's `x or y` is `x` or `y` itself: the caller gets back its own tensor object."""
    spec = janus.speculate(chosen)
    for a, b in [(1., 2.), (0., 3.), (2., 0.), (0., 0.), (5., 1.), (0., 7.), (4., 4.)]:
        x, y = tf.constant(a), tf.constant(b)
        expected, got = chosen(x, y), spec(x, y)
        assert_same(expected, got)
        for e, g in zip(expected, got):
            assert [e is x, e is y] == [g is x, g is y], (a, b)
    assert spec.stats()["graph_runs"] > 0, spec.report()


def test_and_of_a_tensor_and_a_python_int_gives_eagers_type():
    differential(lambda x: (x > 1) and 5, [(tf.constant(float(v)),) for v in (2, 3, 4, 0, 5, -1)])


def counted(x):
    added = x > 0 and COUNTER.assign_add(x) > 0
    return COUNTER.value(), added


def test_the_right_side_of_and_runs_only_where_eager_runs_it():
    spec = _against_eager_from_zero(counted, [tf.constant(float(v)) for v in (1, 2, 3, -1, 4, -2, 5)])
    assert spec.stats()["graph_runs"] > 0, spec.report()


def test_not_of_a_tensor_is_a_python_bool():
    spec = differential(negated, [(tf.constant(float(v)),) for v in range(6)] + [(tf.constant(0.0),)])
    assert spec.stats()["graph_runs"] > 0, spec.report()


def in_unit(x):
    return 0 < x < 1


def test_a_comparison_chain_on_a_tensor_is_pythons_and():
    spec = differential(in_unit, [(tf.constant(v),) for v in (0.5, 2., -1., 0.3, 0.9, 1.5, -3.)])
    assert spec.stats()["graph_runs"] > 0, spec.report()


def test_the_truth_of_a_non_scalar_tensor_raises_as_eager():
    calls = [(tf.constant([0.5, 0.2]),)] * 6
    for fn in (in_unit, lambda x: (x > 0) and (x < 1), lambda x: (x > 0) or (x < 1), lambda x: not (x > 0)):
        differential(fn, calls)


def flagged(x):
    r = 0.0
    if bool(x > 0) and COUNTER.assign_add(1.0) > 0:
        r = 100.0
    return COUNTER.value() + r


def test_the_right_side_of_a_tested_and_after_a_python_bool_runs_only_where_eager_runs_it():
    spec = _against_eager_from_zero(flagged, [tf.constant(float(v)) for v in (1, 2, 3, -1, 4, -2, 5, -3)])
    assert "right side prints, writes a variable" in spec.report(), spec.report()    # (it runs in Python)


def _index_after_a_test(x, t):
    n = int(x)
    if n > 0 and t[n - 1] > 0:          # the right side computes with `n` (a guarded int), and writes nothing
        return t * 2.0
    return t


def test_a_tested_and_after_a_python_bool_whose_right_side_writes_nothing_keeps_the_graph():
    t = tf.constant([1.0, -1.0, 2.0])
    spec = differential(_index_after_a_test, [(tf.constant(i % 4 - 1), t) for i in range(8)])
    assert spec.stats()["graph_runs"] > 0, spec.report()


class _Tally:
    n = 0


TALLY = _Tally()


def _tally():
    TALLY.n += 1
    return True


def _value_of_and_after_a_computed_bool(x):
    flag = bool(tf.reduce_sum(x) > 2.0)
    r = flag and bool(COUNTER.assign_add(1.0) > 0)       # its value is used, not only tested
    q = flag or _tally()
    return x * 2.0, r, q, COUNTER.read_value(), TALLY.n


def test_the_right_side_of_a_used_and_after_a_python_bool_writes_only_where_eager_does():
    _against_eager_from_zero(_value_of_and_after_a_computed_bool, [tf.constant([1.0, float(k % 4)]) for k in range(8)])


def _against_eager_from_zero(fn, calls):
    """Each call of `fn` eagerly, then speculated, each run from `COUNTER` (and `TALLY`) at zero."""
    COUNTER.assign(0.0)
    TALLY.n = 0
    eager = [fn(x) for x in calls]
    COUNTER.assign(0.0)
    TALLY.n = 0
    spec = janus.speculate(fn)
    for x, expected in zip(calls, eager):
        assert_same(expected, spec(x))
    return spec
