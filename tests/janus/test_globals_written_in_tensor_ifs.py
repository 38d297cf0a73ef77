"""Globals and closure variables written inside a tensor `if` (a `tf.cond`): a counter of the
calls that took a side, the last value that passed a test.  Every call must return what eager
returns and leave the same globals; where the side that ran left a global alone, the caller's
own object stays there."""
import tensorflow as tf

import janus
from tests.harness import assert_same, run_capturing

_XS = [tf.constant([v]) for v in (3.0, -2.0, 2.5, -1.0, 1.5, -1.7, 1.9, 0.5, -0.7, 0.6, -3.0, 2.0)]

COUNT = 0
LAST = None
SIGN = 0
LABEL = "none"


def _reset():
    global COUNT, LAST, SIGN, LABEL
    COUNT, LAST, SIGN, LABEL = 0, tf.constant(0.0), 0, "none"


def _globals():
    return {"COUNT": COUNT, "LAST": LAST, "SIGN": SIGN, "LABEL": LABEL}


def _compare(fn, xs=_XS, graph_runs=True):
    """`fn(x)` eagerly, then speculated, from the same globals: the same result (or exception)
    and globals after every call; where eager left a global's object in place, janus did too."""
    _reset()
    eager = []
    for x in xs:
        before = _globals()
        out = run_capturing(fn, (x,))[0]
        eager.append((out, _globals(), {k: v is before[k] for k, v in _globals().items()}))
    _reset()
    spec = janus.speculate(fn)
    for i, x in enumerate(xs):
        before = _globals()
        out = run_capturing(spec, (x,))[0]
        assert out[0] == eager[i][0][0], f"call {i}: eager {eager[i][0]}, janus {out}"
        if out[0] == "raise":
            assert (type(out[1]), str(out[1])) == (type(eager[i][0][1]), str(eager[i][0][1])), f"call {i}"
        else:
            assert_same(eager[i][0][1], out[1], f"call {i}")
        assert_same(eager[i][1], _globals(), f"globals after call {i}")
        assert eager[i][2] == {k: v is before[k] for k, v in _globals().items()}, f"identities after call {i}"
    if graph_runs:
        assert spec.stats()["graph_runs"] > 0, spec.report()
    return spec


def count_positive(x):
    global COUNT
    y = tf.reduce_sum(x)
    if y > 0:
        COUNT += 1
    return y


def test_a_global_counter_on_one_side_runs_in_the_graph_and_stays_an_int():
    _compare(count_positive)


def keep_last_positive(x):
    global LAST
    y = tf.reduce_sum(x) * 2.0
    if y > 0:
        LAST = y
    return y


def test_a_global_tensor_set_on_one_side_is_the_callers_object_where_the_other_side_ran():
    _compare(keep_last_positive)


def sign_both_sides(x):
    global SIGN
    if tf.reduce_sum(x) > 0:
        SIGN = 1
    else:
        SIGN = -1
    return SIGN


def test_a_global_both_sides_write():
    _compare(sign_both_sides)


def two_ifs(x):
    global COUNT, LAST
    y = tf.reduce_sum(x)
    if y > 1.0:
        COUNT += 10
        LAST = y
    if y < -1.0:
        COUNT += 1
    return COUNT


def test_two_tensor_ifs_write_the_same_global():
    _compare(two_ifs)


def written_before_and_in_a_side(x):
    global COUNT
    COUNT += 100
    if tf.reduce_sum(x) > 0:
        COUNT += 1
    return x * 2.0


def test_a_global_written_before_the_if_and_on_one_side():
    _compare(written_before_and_in_a_side)


def label_on_one_side(x):
    global LABEL
    if tf.reduce_sum(x) > 0:
        LABEL = "positive"
    return x


def test_a_string_global_set_on_one_side_matches_eager():
    """No tensor carries a string: the call runs in Python, with eager's globals."""
    _compare(label_on_one_side, graph_runs=False)


def first_set_inside(x):
    global NEVER_SET_BEFORE
    if tf.reduce_sum(x) > 0:
        NEVER_SET_BEFORE = 1
    return x


def test_a_global_first_set_inside_a_tensor_if_matches_eager():
    _compare(first_set_inside, graph_runs=False)
    globals().pop("NEVER_SET_BEFORE", None)


def raises_after_the_write(x):
    global COUNT
    y = tf.reduce_sum(x)
    if y > 0:
        COUNT += 1
    if COUNT > 3:
        raise ValueError(f"too many: {COUNT}")
    return y


def test_a_raise_after_a_global_written_in_a_side_leaves_eagers_count():
    _compare(raises_after_the_write, graph_runs=False)


def _closure_counter():
    seen = 0

    def count(x):
        nonlocal seen
        y = tf.reduce_sum(x)
        if y > 0:
            seen += 1
        return y, seen
    return count


def test_a_closure_counter_written_on_one_side():
    eager_fn, spec = _closure_counter(), janus.speculate(_closure_counter())
    for i, x in enumerate(_XS):
        assert_same(run_capturing(eager_fn, (x,))[0], run_capturing(spec, (x,))[0], f"call {i}")
    assert spec.stats()["graph_runs"] > 0, spec.report()
