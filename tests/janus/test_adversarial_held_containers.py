"""Lists and dicts held inside outside state (attributes, globals, closure cells, class
attributes, items of other containers), reached by a speculated function through reading methods
and iteration: every call must return what eager returns and leave the same Python state."""
import collections
import types

import pytest
import tensorflow as tf

import janus
from tests.harness import assert_same, compare_on_states


_compare = compare_on_states


def _rows():
    return types.SimpleNamespace(rows=[[], [0.0]], d={"a": [], "b": [0.0]})


def _xs(n=6):
    return [tf.constant(float(i)) for i in range(n)]


def _checked_vars(o):
    """`vars(o)`, after checking it holds no graph tensor anywhere."""
    _no_graph_tensor(vars(o))
    return vars(o)


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
    _compare(fn, _rows, _xs(), graph_runs=True, state=_checked_vars)


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


def every_list_of_the_dict_has_items(o, x):
    return x + 1.0 if all(o.d.values()) else x


def the_dicts_lists_equal_a_literal(o, x):
    return x + 1.0 if list(o.d.values()) == [[1.0], [0.0]] else x


@pytest.mark.parametrize("fn", [length_of_the_summed_rows, text_of_the_rows, length_of_the_longest_row,
                                total_length_through_map, every_list_of_the_dict_has_items,
                                the_dicts_lists_equal_a_literal],
                         ids=lambda f: f.__name__)
def test_inner_lists_read_by_a_builtin_see_the_callers_appends(fn):
    """`sum(rows, [])`, `str(rows)`, `max(rows, key=len)`, `map(len, rows)`, `all(d.values())`, `list(d.values()) == [...]` read
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


def first_of_a_tuple_grows(o, x):
    o.pair[0].append(x)
    return len(o.pair[0])


def each_of_a_tuple_grows(o, x):
    for lst in o.pair:
        lst.append(x)
    return len(o.pair[0]) + len(o.pair[1])


def each_list_of_a_list_of_tuples_grows(o, x):
    for lst, scale in o.rows:
        lst.append(x * scale)
    return len(o.rows[0][0])


def _pairs():
    return types.SimpleNamespace(pair=([], [1.0]), rows=[([], 2.0)])


@pytest.mark.parametrize("fn", [first_of_a_tuple_grows, each_of_a_tuple_grows, each_list_of_a_list_of_tuples_grows],
                         ids=lambda f: f.__name__)
def test_a_list_inside_an_outside_tuple_grows_on_every_call(fn):
    """An attribute tuple holds lists (`self.pair = ([], [1.0])`); the function appends each
    call's tensor to them: eager's lists grow by one EagerTensor per call."""
    _compare(fn, _pairs, _xs(), graph_runs=False, state=_checked_vars)


PAIR = ([], [1.0])


def first_of_a_global_tuple_grows(x):
    PAIR[0].append(x)
    return len(PAIR[0])


def test_a_list_inside_a_global_tuple_grows_on_every_call():
    """`PAIR = ([], [1.0])`; each call appends its tensor to `PAIR[0]`: after 6 calls it holds
    the six EagerTensors 0.0 ... 5.0, and the call returns its new length."""
    PAIR[0].clear()
    spec = janus.speculate(first_of_a_global_tuple_grows)
    for i in range(6):
        assert spec(tf.constant(float(i))) == i + 1
        _no_graph_tensor(PAIR, f"PAIR after call {i}")
    assert [float(v) for v in PAIR[0]] == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]


def grow_through_values(o, x):
    for v in o.hist.values():
        v.append(x)
    return len(o.hist["a"])


def grow_through_get(o, x):
    o.hist.get("a").append(x)
    return len(o.hist["a"])


def _ordered():
    return types.SimpleNamespace(hist=collections.OrderedDict(a=[], b=[1.0]))


def _default():
    d = collections.defaultdict(list)
    d["a"], d["b"] = [], [1.0]
    return types.SimpleNamespace(hist=d)


@pytest.mark.parametrize("make", [_ordered, _default], ids=["OrderedDict", "defaultdict"])
@pytest.mark.parametrize("fn", [grow_through_values, grow_through_get], ids=lambda f: f.__name__)
def test_the_lists_of_an_outside_dict_subclass_grow_on_every_call(fn, make):
    """`self.hist` is an `OrderedDict` / `defaultdict(list)` of lists; the function appends each
    call's tensor through `values()` or `get()`: eager's lists grow by one EagerTensor per call."""
    _compare(fn, make, _xs(), graph_runs=False, state=_checked_vars)


class _Obj:
    def __init__(self, **kw):
        self.__dict__.update(kw)


def reset_then_append(o, x):
    o.d["a"] = []
    o.d["a"].append(x)
    return len(o.d["a"])


def new_key_then_append(o, x):
    o.d["n"] = []
    o.d["n"].append(x)
    return len(o.d["n"])


def new_row_then_append(o, x):
    o.rows.append([])
    o.rows[-1].append(x)
    return len(o.rows)


def new_dict_then_item(o, x):
    o.d["n"] = {}
    o.d["n"]["k"] = x
    return len(o.d["n"])


@pytest.mark.parametrize("fn", [reset_then_append, new_key_then_append, new_row_then_append, new_dict_then_item],
                         ids=lambda f: f.__name__)
def test_a_list_the_call_puts_in_an_outside_container_is_its_own(fn):
    """The function stores a new empty list in an outside dict or list and appends to it through
    the container (`self.d["a"] = []; self.d["a"].append(x)`): eager leaves a fresh one-item list
    there on every call (`reset_then_append` returns 1 each time; a new dict likewise holds one key)."""
    _compare(fn, lambda: _Obj(d={"a": [], "b": [1.0]}, rows=[[0.0]]), _xs())


def detach_and_refill(o, x):
    v = o.d["a"]
    o.d["a"] = []
    v.append(x)
    o.d["a"].append(x + 1.0)
    return len(v)


def test_a_list_detached_from_a_dict_and_the_new_one_both_grow():
    """The dict's list is taken out and replaced by a new one; the old list (which the caller also
    holds as `keep`, and puts back before each call) gets `x`, the new one `x + 1`."""
    def make():
        o = _Obj(d={"a": [], "b": [1.0]})
        o.keep = o.d["a"]
        return o

    def between(o, i):
        o.d["a"] = o.keep
    _compare(detach_and_refill, make, _xs(), between)
