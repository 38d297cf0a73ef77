"""An item of an outside list read by index (`self.history[-1]` of a list each call appends to):
the graph reads the caller's item on every call instead of requiring the whole list unchanged, and
every call returns what eager returns and leaves the same list."""
import pytest
import tensorflow as tf

import janus
from tests.harness import assert_same, compare_on_states


class _Tracker:
    def __init__(self, history=None):
        self.history = [tf.constant(100.0)] if history is None else history
        self.bad = 0


def compare_to_last(o, x):
    loss = tf.reduce_sum(x * x)
    worse = loss >= o.history[-1]
    o.history.append(loss)
    return loss, worse


def last_then_first(o, x):
    return o.history[-1] - o.history[0] + x


def pop_then_last(o, x):
    o.history.pop()
    return o.history[-1] + x


def append_then_last(o, x):
    o.history.append(x)
    return o.history[-1] * 2.0


def returns_the_item(o, x):
    return o.history[-1]


_XS = [tf.constant([float(v), 1.0]) for v in (3, 1, 2, 0, 4, 1, 2, 5)]


def _run(fn, make, between=None):
    return compare_on_states(fn, make, _XS, between, graph_runs=False)[0]


@pytest.mark.parametrize("fn", [compare_to_last, last_then_first, pop_then_last, append_then_last],
                         ids=lambda f: f.__name__)
def test_an_item_of_a_growing_list_read_by_index_matches_eager(fn):
    def make():
        return _Tracker([tf.constant(100.0 - 10 * i) for i in range(10)])
    spec = _run(fn, make)
    assert spec.stats()["graph_runs"] > 0, spec.report()


def test_a_list_that_grows_every_call_keeps_one_graph():
    """Reading the newest loss and appending this call's: one graph serves every call."""
    spec = _run(compare_to_last, _Tracker)
    assert spec.stats()["graphs_built"] <= 2, spec.report()


def test_the_caller_changing_the_item_between_calls_is_seen():
    """The caller replaces the last item with a float64 tensor, then empties the list: the
    result follows (and the empty list raises IndexError, as eager)."""
    def between(o, i):
        if i == 4:
            o.history[-1] = tf.constant(7.0, tf.float64)
        if i == 6:
            o.history.clear()
    _run(last_then_first, lambda: _Tracker([tf.constant(100.0), tf.constant(50.0)]), between)


def test_returning_the_item_gives_the_callers_tensor():
    """Eager returns the caller's own tensor object."""
    eager_s, spec_s = _Tracker(), _Tracker()
    spec = janus.speculate(returns_the_item)
    for i, x in enumerate(_XS):
        eager_s.history.append(x * 2.0)
        spec_s.history.append(eager_s.history[-1])
        want, got = returns_the_item(eager_s, x), spec(spec_s, x)
        assert (want is eager_s.history[-1]) == (got is spec_s.history[-1]), f"call {i}"
        assert_same(want, got, f"call {i}")


class _Holder:
    pass


def returns_the_attribute(o, x):
    return o.t


def test_returning_a_tensor_attribute_gives_the_callers_tensor():
    """Eager returns the object's own tensor; it changes every call (so it is fed)."""
    o = _Holder()
    spec = janus.speculate(returns_the_attribute)
    for i in range(6):
        o.t = tf.constant([float(i)])
        assert spec(o, tf.constant(1.0)) is o.t, f"call {i}"


def newest_after_append(o, x):
    o.history.append(x * 2.0)
    return o.history[-1] + 1.0, len(o.history)


def test_the_item_just_appended_read_back_keeps_one_graph():
    """`lst[-1]` right after the call's own append is that item whatever the list held: the list's
    old items need not be checked, so one graph serves the growing list."""
    spec = _run(newest_after_append, _Tracker)
    assert spec.stats()["graphs_built"] <= 2, spec.report()


VOCAB = {f"w{i}": [i, i + 1] for i in range(2000)}


def one_word(x):
    return x * VOCAB["w7"][1]


def test_one_key_of_a_large_global_dict_is_checked_by_itself():
    """`VOCAB["w7"][1]` reads one key: another key changing between calls is no reason to build
    again, and a change to the key read is seen (eager: x * 8, then x * 9)."""
    spec = janus.speculate(one_word)
    for i in range(8):
        if i == 4:
            VOCAB["w3"] = [0, 0]
        if i == 6:
            VOCAB["w7"][1] = 9
        x = tf.constant(float(i))
        assert_same(one_word(x), spec(x), f"call {i}")
    assert spec.stats()["graphs_built"] <= 2, spec.report()
    VOCAB["w7"][1] = 8
