"""Attributes of the caller's objects written inside a tensor `if` (a `tf.cond`): an early-stopping
counter, a best loss kept on `self`.  Every call must return what eager returns and leave the same
attributes, the caller's own object where the side that ran left it alone."""
import types

import tensorflow as tf

import janus
from tests.harness import assert_same, compare_on_states


_compare = compare_on_states


def _early():
    return types.SimpleNamespace(best=tf.constant(100.0), bad=0)


def early_stopping(o, x):
    loss = tf.reduce_sum(x * x)
    if loss < o.best:
        o.best = loss
        o.bad = 0
    else:
        o.bad += 1
    return loss, o.bad > 2


_LOSSES = [tf.constant([v]) for v in (3.0, 2.0, 2.5, 1.0, 1.5, 1.7, 1.9, 0.5, 0.7, 0.6)]


def test_an_early_stopping_counter_on_self_runs_in_the_graph():
    """Both sides write `bad`; one writes `best`: eager's result and attributes on every call."""
    _compare(early_stopping, _early, _LOSSES)


def keep_best(o, x):
    loss = tf.reduce_sum(x)
    if loss < o.best:
        o.best = loss
    return loss


def test_a_best_tensor_kept_where_the_if_is_not_taken_is_the_callers_object():
    """Where the loss is not lower, eager leaves the caller's tensor on the object (the same
    object, not an equal one)."""
    eager_s, spec_s = _early(), _early()
    spec = janus.speculate(keep_best)
    for i, x in enumerate(_LOSSES):
        was_e, was_s = eager_s.best, spec_s.best
        keep_best(eager_s, x)
        spec(spec_s, x)
        assert (eager_s.best is was_e) == (spec_s.best is was_s), f"call {i}"
        assert_same(eager_s.best, spec_s.best, f"call {i}")
    assert spec.stats()["graph_runs"] > 0


def count_positive(o, x):
    if tf.reduce_sum(x) > 1.0:
        o.count += 1
    return o.count


def test_a_python_int_counted_on_one_side_stays_a_python_int():
    def make():
        return types.SimpleNamespace(count=0)
    _compare(count_positive, make, _LOSSES)


def flag_first_set_inside(o, x):
    if tf.reduce_sum(x) > 1.0:
        o.flag = True
    return getattr(o, "flag", False)


def test_an_attribute_first_set_inside_a_tensor_if_matches_eager():
    """The attribute does not exist before the first call that takes the side: janus cannot
    merge "unset" with a value, and the call runs in Python."""
    _compare(flag_first_set_inside, lambda: types.SimpleNamespace(), _LOSSES, graph_runs=False)


def nested_ifs(o, x):
    s = tf.reduce_sum(x)
    if s > 1.0:
        if s > 2.0:
            o.level = o.level + 2
        else:
            o.level = o.level + 1
    else:
        o.low += 1
    return s


def test_attributes_written_in_nested_tensor_ifs():
    def make():
        return types.SimpleNamespace(level=0, low=0)
    _compare(nested_ifs, make, _LOSSES)


def written_before_and_inside(o, x):
    o.steps += 1
    if tf.reduce_sum(x) > 1.5:
        o.steps = o.steps * 10
    return o.steps


def test_an_attribute_written_before_the_if_and_on_one_side():
    def make():
        return types.SimpleNamespace(steps=1)
    _compare(written_before_and_inside, make, _LOSSES)


def label_on_one_side(o, x):
    if tf.reduce_sum(x) > 1.5:
        o.state = "high"
    else:
        o.state = "low"
    return o.state


def test_a_string_attribute_set_on_either_side_matches_eager():
    """The sides leave different strings, which no graph output can carry: the call runs in Python."""
    _compare(label_on_one_side, lambda: types.SimpleNamespace(state="none"), _LOSSES, graph_runs=False)


def per_element(o, x):
    for i in range(2):
        if x[i] > 1.0:
            o.hits += 1
        else:
            o.total = o.total + x[i]
    return o.hits


def test_a_python_loop_of_tensor_ifs_writing_attributes():
    def make():
        return types.SimpleNamespace(hits=0, total=tf.constant(0.0))
    xs = [tf.constant([a, b]) for a, b in ((0.5, 2.0), (2.0, 2.0), (0.0, 0.1), (3.0, 0.2), (0.4, 5.0), (1.5, 1.5),
                                           (0.1, 0.1), (2.5, 0.3))]
    _compare(per_element, make, xs)


def in_tensor_loop(o, x):
    i = tf.constant(0)
    while i < tf.size(x):
        if x[i] > 1.0:
            o.hits += 1
        i += 1
    return o.hits


def test_a_tensor_if_inside_a_tensor_loop_writing_an_attribute_matches_eager():
    def make():
        return types.SimpleNamespace(hits=0)
    xs = [tf.constant([a, b]) for a, b in ((0.5, 2.0), (2.0, 2.0), (0.0, 0.1), (3.0, 0.2), (0.4, 5.0), (1.5, 1.5))]
    _compare(in_tensor_loop, make, xs, graph_runs=False)


def raises_after(o, x):
    if tf.reduce_sum(x) > 1.5:
        o.bad += 1
    if o.bad > 3:
        raise ValueError(f"too many: {o.bad}")
    return o.bad


def test_a_counter_written_in_a_tensor_if_then_a_raise_leaves_eagers_state():
    """Eager raises once the counter passes 3, with the counter already increased."""
    def make():
        return types.SimpleNamespace(bad=0)
    _compare(raises_after, make, _LOSSES, graph_runs=False)


def test_the_caller_changing_the_counter_between_calls_is_seen():
    def between(o, i):
        if i == 5:
            o.bad = 7
    _compare(early_stopping, _early, _LOSSES, between=between)
