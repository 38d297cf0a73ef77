"""Lists and dicts held inside an outside list or dict, reached through a reading method
(`items`, `values`, `get`, `setdefault`, iteration, a call given the container): each call must
return what eager returns and leave the same Python state, also when the caller replaces or
changes an inner list between calls."""
import types

import tensorflow as tf

import janus
from tests.harness import assert_same, compare_on_states


_compare = compare_on_states


def _hist():
    return types.SimpleNamespace(hist={"a": [], "b": [1.0]})


def append_through_values(o, x):
    for v in o.hist.values():
        v.append(x * 2)
    return [len(v) for v in o.hist.values()]


def test_appends_through_values_reach_the_callers_lists():
    _compare(append_through_values, _hist, [tf.constant(float(i)) for i in range(6)])


def newest_through_get(o, x):
    o.hist.get("a").append(x)
    return o.hist.get("a")[-1] + o.hist["b"][0]


def test_items_read_through_get_are_this_calls():
    _compare(newest_through_get, _hist, [tf.constant(float(i)) for i in range(6)])


def rows_grow(o, x):
    for row in o.rows:
        row.append(x)
    return sum(len(r) for r in o.rows), o.rows[0][-1]


def test_rows_of_an_outside_list_of_lists_each_grow():
    def make():
        return types.SimpleNamespace(rows=[[], [0.0]])
    _compare(rows_grow, make, [tf.constant(float(i)) for i in range(6)])


def last_of_each(o, x):
    return {k: (v[-1] if v else x) for k, v in o.hist.items()}


def test_an_inner_list_the_caller_changes_between_calls_is_seen():
    """The caller appends to one inner list and replaces the other between calls."""
    def between(o, i):
        o.hist["b"].append(float(i) * 10)
        if i == 3:
            o.hist["a"] = [7.0]
    _compare(last_of_each, _hist, [tf.constant(float(i)) for i in range(6)], between)


def count_models(o, x):
    total = x
    for name, m in o.models.items():
        m.calls += 1
        total = total + m.scale
    return total


def test_objects_held_in_an_outside_dict_are_written_back_not_during_the_build():
    class M:
        def __init__(self, s):
            self.calls, self.scale = 0, s

    def make():
        return types.SimpleNamespace(models={"p": M(1.0), "q": M(2.0)})
    eager_s, spec_s = make(), make()
    spec = janus.speculate(count_models)
    for i in range(6):
        want, got = count_models(eager_s, tf.constant(float(i))), spec(spec_s, tf.constant(float(i)))
        assert_same(want, got, f"call {i}")
        assert [m.calls for m in spec_s.models.values()] == [m.calls for m in eager_s.models.values()]
    assert spec.stats()["graph_runs"] > 0


def two_keys_one_list(o, x):
    for k, v in o.hist.items():
        if k == "a":
            v.append(x)
    return len(o.hist["b"])


def test_one_list_under_two_keys_stays_one_list():
    def make():
        shared = []
        return types.SimpleNamespace(hist={"a": shared, "b": shared})
    eager_s, spec_s = make(), make()
    spec = janus.speculate(two_keys_one_list)
    for i in range(5):
        want, got = two_keys_one_list(eager_s, tf.constant(float(i))), spec(spec_s, tf.constant(float(i)))
        assert want == got
        assert spec_s.hist["a"] is spec_s.hist["b"]
        assert_same(eager_s.hist, spec_s.hist, f"state after call {i}")


def nested_twice(o, x):
    for group in o.cfg.values():
        for lst in group.values():
            lst.append(x)
    return len(o.cfg["g"]["l"])


def test_lists_two_levels_down_grow():
    def make():
        return types.SimpleNamespace(cfg={"g": {"l": [], "m": [1.0]}})
    _compare(nested_twice, make, [tf.constant(float(i)) for i in range(5)])


def flat_copy(o, x):
    rows = list(o.hist.values())
    rows[0].append(x)
    return len(o.hist["a"])


def test_a_list_built_from_the_values_hands_out_the_callers_lists():
    _compare(flat_copy, _hist, [tf.constant(float(i)) for i in range(5)])


HIST = {"loss": []}


def log_global(x):
    HIST.setdefault("loss", []).append(x)
    return {k: v[-1] for k, v in HIST.items()}


def test_a_global_dict_of_lists_through_setdefault_and_items():
    HIST["loss"].clear()
    eager = []
    spec = janus.speculate(log_global)
    for i in range(6):
        x = tf.constant(float(i))
        got = spec(x)
        eager.append(x)
        assert_same({"loss": x}, got, f"call {i}")
        assert_same(eager, HIST["loss"], f"state after call {i}")
    assert spec.stats()["graph_runs"] > 0


def lengths_in_a_branch(o, x):
    if tf.reduce_sum(x) > 0:
        y = x + float(sum(len(v) for v in o.hist.values()))
    else:
        y = x - 1.0
    return y


def test_reading_the_lists_first_inside_a_tensor_if_is_not_a_write():
    """Both sides are taken while profiling, so the `if` is a tf.cond; the dict's lists are first
    handed out inside its branch, which writes nothing: the graph runs."""
    def between(o, i):
        o.hist["a"].append(float(i))
    _compare(lengths_in_a_branch, _hist, [tf.constant(float(i % 2) * 2.0 - 1.0) for i in range(8)], between)
