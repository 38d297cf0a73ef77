"""Lists and dicts held inside outside state (attributes, globals, closure cells, class
attributes, items of other containers), reached by a speculated function through reading methods
and iteration: every call must return what eager returns and leave the same Python state."""
import types

import pytest
import tensorflow as tf

import janus
from tests.harness import assert_same


def _compare(fn, make, xs, between=None, graph_runs=True):
    """Calls `fn(state, x)` eagerly and speculated on two equal states, one `x` per call;
    `between(state, i)` changes both states before call `i`."""
    eager_s, spec_s = make(), make()
    spec = janus.speculate(fn)
    for i, x in enumerate(xs):
        if between is not None:
            between(eager_s, i)
            between(spec_s, i)
        want, got = fn(eager_s, x), spec(spec_s, x)
        assert_same(want, got, f"call {i}")
        assert_same(vars(eager_s), vars(spec_s), f"state after call {i}")
    if graph_runs:
        assert spec.stats()["graph_runs"] > 0
    return spec


def _rows():
    return types.SimpleNamespace(rows=[[], [0.0]], d={"a": [], "b": [0.0]})


def _xs(n=6):
    return [tf.constant(float(i)) for i in range(n)]


def _no_graph_tensor(value, path="state"):
    if isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _no_graph_tensor(v, f"{path}[{i}]")
    elif isinstance(value, dict):
        for k, v in value.items():
            _no_graph_tensor(v, f"{path}[{k!r}]")
    else:
        assert not (isinstance(value, tf.Tensor) and not hasattr(value, "numpy")), f"{path}: a graph tensor"


def shortest_row_by_min(o, x):
    min(o.rows, key=len).append(x)
    return len(o.rows[0]) + len(o.rows[1])


def row_of_an_unpacked_list(o, x):
    [*o.rows][0].append(x)
    return len(o.rows[0])


def row_of_a_concatenation(o, x):
    (o.rows + [])[0].append(x)
    return len(o.rows[0])


def row_of_a_repetition(o, x):
    (o.rows * 1)[0].append(x)
    return len(o.rows[0])


def list_of_an_unpacked_dict(o, x):
    {**o.d}["a"].append(x)
    return len(o.d["a"])


def list_of_a_dict_union(o, x):
    (o.d | {})["a"].append(x)
    return len(o.d["a"])



@pytest.mark.parametrize("fn", [shortest_row_by_min, row_of_an_unpacked_list, row_of_a_concatenation,
                                row_of_a_repetition, list_of_an_unpacked_dict, list_of_a_dict_union],
                         ids=lambda f: f.__name__)
def test_an_inner_list_reached_through_a_new_container_grows_on_every_call(fn):
    """`min(rows, key=len)`, `[*rows]`, `rows + []`, `rows * 1`, `{**d}`, `d | {}` hold the caller's
    own inner lists, so appending to what they give appends to the caller's list on every call
    (eager: one more item per call, all EagerTensors)."""
    eager_s, spec_s = _rows(), _rows()
    spec = janus.speculate(fn)
    for i, x in enumerate(_xs()):
        want, got = fn(eager_s, x), spec(spec_s, x)
        _no_graph_tensor(vars(spec_s), f"state after call {i}")
        assert_same(want, got, f"call {i}")
        assert_same(vars(eager_s), vars(spec_s), f"state after call {i}")
    assert spec.stats()["graph_runs"] > 0


def grow_rows(o, i):
    o.rows[i % 2].append(float(i))
    if i == 4:
        o.d["a"].append(1.0)


def length_of_the_summed_rows(o, x):
    return x + float(len(sum(o.rows, [])))


def text_of_the_rows(o, x):
    return len(str(o.rows))


def length_of_the_longest_row(o, x):
    return x + float(len(max(o.rows, key=len)))


def total_length_through_map(o, x):
    return x + float(sum(map(len, o.rows)))


def any_list_of_the_dict_has_items(o, x):
    return x + 1.0 if any(o.d.values()) else x


@pytest.mark.parametrize("fn", [length_of_the_summed_rows, text_of_the_rows, length_of_the_longest_row,
                                total_length_through_map, any_list_of_the_dict_has_items],
                         ids=lambda f: f.__name__)
def test_inner_lists_read_by_a_builtin_see_the_callers_appends(fn):
    """`sum(rows, [])`, `str(rows)`, `max(rows, key=len)`, `map(len, rows)`, `any(d.values())` read
    the inner lists' contents; the caller appends to them between calls, and eager sees it."""
    _compare(fn, _rows, _xs(7), grow_rows)


def first_by_length_grows(o, x):
    sorted(o.d.values(), key=len)[0].append(x)
    return [len(v) for v in o.d.values()]


def test_the_list_sorted_first_by_length_is_chosen_by_this_calls_lengths():
    """The shorter of two lists (the first on a tie) gets each call's item, so the two take turns:
    eager's lengths go [1, 1], [2, 1], [2, 2], [3, 2], ..."""
    _compare(first_by_length_grows, lambda: types.SimpleNamespace(d={"a": [], "b": [1.0]}), _xs(8))


LOG = [1.0, 2.0, 3.0]


def newest_two_of_a_global_list(x):
    return x + float(sum(LOG[-2:]))


def test_a_slice_of_a_global_list_keeps_the_graph():
    """`sum(LOG[-2:])` of a global list of floats: eager returns x + 5.0 (x + 7.0 after the caller
    appends 2.0); the slice is a new list, and the function is plain graph material."""
    LOG[:] = [1.0, 2.0, 3.0]
    spec = janus.speculate(newest_two_of_a_global_list)
    for i in range(6):
        if i == 4:
            LOG.append(4.0)
        x = tf.constant(float(i))
        assert_same(newest_two_of_a_global_list(x), spec(x), f"call {i}")
    assert spec.stats()["graph_runs"] > 0, spec.report()
