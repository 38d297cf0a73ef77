"""helper-100: stale reads of outside lists and dicts.  Each program reads a global list or dict
(an item of one, an attribute, an argument) through some Python form; the containers are changed
IN PLACE between calls (the same objects), and every call's result must equal eager's, bit for
bit.  `s_*` programs gave the build's items on later calls (stale values); `p_*` programs agree."""
import collections
import copy
import dataclasses
import functools
import itertools
import operator

import numpy as np
import pytest
import tensorflow as tf

import janus

C = tf.constant


def norm(r):
    if isinstance(r, tf.Variable):
        return ("V", r.dtype.name, r.numpy().tobytes())
    if isinstance(r, tf.Tensor):
        assert not tf.is_symbolic_tensor(r), r
        return ("T", r.dtype.name, tuple(r.shape), r.numpy().tobytes())
    if isinstance(r, np.ndarray):
        return ("A", r.dtype.name, r.shape, r.tobytes())
    if isinstance(r, (list, tuple)):
        return (type(r).__name__, tuple(norm(x) for x in r))
    if isinstance(r, dict):
        return ("dict", tuple((norm(k), norm(v)) for k, v in r.items()))
    if isinstance(r, (set, frozenset)):
        return (type(r).__name__, tuple(sorted(repr(x) for x in r)))
    if isinstance(r, float):
        return ("float", repr(r))
    return (type(r).__name__, repr(r))


GL = [1, 2, 3, 4]
GD = {"a": 1, "b": 2}
GN = [[1, 2], [3, 4]]
GDL = {"a": [1, 2], "b": [3]}
GS = ["p", "q"]
GT = [C(1.0), C(2.0)]
GV = [tf.Variable(1.0), tf.Variable(2.0)]
GK = {1: "a", 2: "b"}
GSCALE = 2


def reset():
    global GSCALE
    GL[:] = [1, 2, 3, 4]
    GD.clear()
    GD.update(a=1, b=2)
    GN[:] = [[1, 2], [3, 4]]
    GDL.clear()
    GDL.update(a=[1, 2], b=[3])
    GS[:] = ["p", "q"]
    GT[:] = [C(1.0), C(2.0)]
    GV[:] = [tf.Variable(1.0), tf.Variable(2.0)]
    GK.clear()
    GK.update({1: "a", 2: "b"})
    GSCALE = 2


def change(k):
    """In-place changes before call k (profiling and the first graph see the first state)."""
    global GSCALE
    if k < 4:
        return
    GL[k % 4] = 10 + k
    GN[k % 2][0] = 20 + k
    GD["a"] = 30 + k
    GDL["a"][0] = 40 + k
    GS[k % 2] = "s%d" % k
    GT[0] = C(float(k))
    if k in (6, 9):
        GV[k % 2] = tf.Variable(float(k))
        GK.pop(1)
        GK[True] = "t"
    if k in (5, 8):
        GSCALE = k
    if k == 9:
        GL.append(2)
        GD["z"] = 0
        GN[0].append(7)


def run(fn, args=(), calls=11):
    runs = []
    for f in (fn, janus.speculate(fn)):
        reset()
        out = []
        for k in range(calls):
            change(k)
            try:
                out.append(norm(f(C(2.0), *args)))
            except Exception as e:  # noqa: BLE001 - compared with eager's
                out.append(("exc", type(e).__name__, str(e)))
        runs.append(out)
        spec = f
    bad = [k for k, (a, b) in enumerate(zip(*runs)) if a != b]
    assert not bad, (f"calls {bad}:\neager {[runs[0][k] for k in bad][:2]}\n"
                     f"janus {[runs[1][k] for k in bad][:2]}\n{spec.report()}")
    st = spec.stats()
    assert st["graph_runs"] + st.get("segment_graph_runs", 0) >= 1, spec.report()


class Cfg:
    def __init__(self):
        self.items = GL
        self.table = GD


@dataclasses.dataclass
class DC:
    vals: list


class K:
    table = GL
    rows = GN


class Holder:
    def __init__(self, xs):
        self.xs = xs

    def total(self):
        return sum(self.xs)


CFG = Cfg()
DCO = DC(GL)


def helper_sum(xs):
    t = 0
    for v in xs:
        t += v
    return t


def times_scale(v):
    return v * GSCALE


def item_of(i):
    return GL[i]


# -- STALE: ordered comparisons of an outside list (`jn.ordered` does not read the copy through) ---
def s_lt(x): return x, GL < [1, 2, 3, 5]
def s_le(x): return x, GL <= [1, 2, 3, 4]
def s_gt(x): return x, GL > [12, 0]
def s_ge(x): return x, GL >= [12, 0]
def s_lt_item(x): return x, GN[0] < [2]
def s_lt_nested(x): return x, GN < [[1, 2], [3, 5]]
def s_lt_attr(x): return x, CFG.items < [1, 2, 3, 5]


# -- STALE: a comprehension's second `for` clause walks an item of an outside container -----------
def s_comp_rows(x): return x, [v for row in GN for v in row]
def s_gen_rows(x): return x * sum(v for row in GN for v in row)
def s_setcomp_rows(x): return x, {v for row in GN for v in row}
def s_dictcomp_rows(x): return x, {i: v for i, row in enumerate(GN) for v in row}
def s_comp_range_item(x): return x, [v for i in range(2) for v in GN[i]]
def s_comp_dict_item(x): return x, [v for k in GDL for v in GDL[k]]
def s_comp_dict_values(x): return x, [v for vs in GDL.values() for v in vs]
def s_comp_class_rows(x): return x, [v for r in K.rows for v in r]


# -- STALE: a bound method of an outside container handed to a builtin ---------------------------
def s_map_getitem(x): return x, list(map(GL.__getitem__, [0, 1]))
def s_map_get(x): return x, list(map(GD.get, ["a", "b"]))
def s_sorted_key_get(x): return x, sorted(["b", "a"], key=GD.get)
def s_max_key_getitem(x): return x, max(["a", "b"], key=GD.__getitem__)
def s_filter_contains(x): return x, list(filter(GL.__contains__, [14, 15, 2]))


# -- STALE: a lambda or function the program hands to a builtin reads outside state ---------------
def s_sorted_key_lambda(x): return x, sorted([0, 1, 2, 3], key=lambda i: GL[i])
def s_map_lambda(x): return x, list(map(lambda i: GL[i], [0, 1]))
def s_max_key_lambda(x): return x, max(range(4), key=lambda i: GL[i])
def s_reduce_lambda(x): return x * functools.reduce(lambda a, b: a + GL[b], [0, 1, 2], 0)
def s_map_function_global(x): return x, list(map(times_scale, [1, 2]))     # GSCALE rebound
def s_map_function_item(x): return x, list(map(item_of, [0, 1]))
def s_sorted_key_function(x): return x, sorted([0, 1, 2, 3], key=item_of)


# -- agree with eager (regression) ---------------------------------------------------------------
def p_slices(x): return x * sum(GL[-2:]), GL[1:], GL[::-1]
def p_varying_index(x): return x * GL[len(GL) - 3] * GL[GL[0] % 4]
def p_index_count(x): return x * GL.index(GL[-1]), GL.count(2)
def p_reductions(x): return x * (min(GL) + max(GL) + sum(GL)), any(v > 12 for v in GL), all(GL)
def p_orders(x): return x, sorted(GL), list(reversed(GL)), [i * v for i, v in enumerate(GL)]
def p_zip_map_filter(x): return x, list(zip(GL, GS)), list(map(abs, GL)), list(filter(None, GL))
def p_builders(x): return x, set(GL), frozenset(GL), dict.fromkeys(GL), dict(zip(GS, GL))
def p_dict_reads(x): return x * GD.get("a", 0), [(k, v) for k, v in GD.items()], "z" in GD, GD.copy()
def p_dict_views(x): return x, GD.items() & {("a", 34)}, GD.keys() - {"b"}, 35 in GD.values()
def p_view_item_in(x): return x, ("a", 35) in GD.items(), sorted(GD.keys() | {"q"})
def p_deepcopy(x): return x, copy.deepcopy(GN), copy.copy(GN)
def p_numpy(x): return x * np.array(GL, dtype=np.float32).sum() * float(np.mean(GL))
def p_numpy_nested(x): return x * np.array(GN, np.float32)
def p_tf_constant(x): return x * tf.reduce_sum(tf.constant(GL, tf.float32)) * tf.constant(GN, tf.float32)
def p_tf_stack(x): return x * tf.stack(GT)
def p_tf_ragged(x): return x * tf.ragged.constant(GN, tf.float32)
def p_nest_flatten(x): return x, tf.nest.flatten(GD), tf.nest.flatten(GDL)
def p_map_structure(x): return x, tf.nest.map_structure(lambda v: v + GL[0], [1, 2])
def p_chain_reduce(x): return x * functools.reduce(operator.add, GL), list(itertools.chain(GL, GS))
def p_itemgetter(x): return x * operator.itemgetter(0)(GL), "-".join(GS)
def p_eq_hash_bool(x): return x, GL == [1, 2, 3, 4], hash(tuple(GL)), bool(GL), GN == [[1, 2], [3, 4]]
def p_counter(x): return x, dict(collections.Counter(GL))
def p_text(x): return x, str(GL), repr(GN)
def p_dict_of_lists(x): return x * sum(GDL["a"]) * len(GDL["a"]), dict(GDL), list(GDL.items())
def p_statement_nested_loop(x):
    out = []
    for row in GN:
        for v in row:
            out.append(v)
    return x, out
def p_comp_one_clause(x): return x, [v for v in GN[0]], [r[0] for r in GN], [[v for v in r] for r in GN]
def p_comp_two_globals(x): return x, [(a, b) for a in GS for b in GL]
def p_nested_builtins(x): return x, list(map(sum, GN)), list(map(tuple, GN)), list(zip(*GN)), sum(GN, [])
def p_nested_search(x): return x, [1, 2] in GN, GN.count([1, 2]), sorted(GN), max(GN), 24 in GN[0]
def p_nested_chain(x): return x, list(itertools.chain.from_iterable(GN)), list(itertools.starmap(operator.add, GN))
def p_sorted_key_nested(x): return x, sorted(GN, key=lambda r: -r[0]), max(GN, key=len)
def p_if(x): return x * 2 if GL[0] > 10 else x
def p_while_local(x):
    local, n = list(GL), 0
    while local:
        n += local.pop()
    return x * n
def p_helper(x): return x * helper_sum(GL) * Holder(GL).total(), Holder(GN).xs[0][0]
def p_attr_dataclass(x): return x * sum(CFG.items) + CFG.table["a"], DCO.vals[:2], K.table[1:]
def p_getattr_varying(x): return x, len(getattr(CFG, "items" if GL[0] > 10 else "table"))
def p_dunder_calls(x): return x * GL.__len__() * dict.get(GD, "a") * list.__getitem__(GL, 0), GL.__lt__([1, 2, 3, 5])
def p_held_bound(x):
    g, h = GL.copy, GL.__getitem__
    return x * h(0), g(), operator.lt(GL, [1, 2, 3, 5])
def p_iter_next(x):
    it = iter(GL)
    next(it)
    return x * next(it)
def p_partial(x): return x * functools.partial(operator.getitem, GL)(0)
def p_call_lambda(x): return x * (lambda i: GL[i])(0), [(lambda i: GL[i])(i) for i in range(2)]
def p_map_scalar_lambda(x): return x, list(map(lambda v: v * GSCALE, [1, 2]))
def p_tensor_and_list(x): return x + GL, tf.add(x, tf.cast(GL, tf.float32)), tf.gather(tf.range(40), GL)
def p_variables(x): return x * GV[0] * tf.add_n(GV)
def p_keys_true(x): return x, list(GK), GK.get(1)
def p_print(x):
    print(GL[1:], GN[0])
    return x


def make_closure():
    cell = GL

    def p_closure(x):
        return x, cell[:], cell < [1, 2, 3, 5]
    return p_closure


p_closure = make_closure()
STALE = sorted(n for n in dir() if n.startswith("s_"))
PASSING = sorted(n for n in dir() if n.startswith("p_"))


@pytest.mark.parametrize("name", STALE)
def test_stale_read(name):
    run(globals()[name])


@pytest.mark.parametrize("name", PASSING)
def test_read_agrees(name, capsys):
    run(globals()[name])


def a_nested(x, rows): return x, [v for row in rows for v in row]
def a_lt(x, lst): return x, lst < [1, 2, 3, 5]
def a_reads(x, lst, d): return x, lst[1:], sorted(d.items())


def test_stale_argument_rows_in_a_comprehension():
    run(a_nested, (GN,))


def test_argument_list_compared():
    run(a_lt, (GL,))


def test_argument_slices_and_dict_items():
    run(a_reads, (GL, GD))


def r_ident(x): return x, GN[0], GL


def test_returned_outside_lists_are_the_same_objects():
    spec = janus.speculate(r_ident)
    reset()
    for k in range(8):
        change(k)
        _, row, whole = spec(C(2.0))
        assert row is GN[0] and whole is GL, k
    assert spec.stats()["graph_runs"] >= 1
