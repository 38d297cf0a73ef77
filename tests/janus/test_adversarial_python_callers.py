"""helper-101: the program's functions handed to Python's own higher-order functions (`sorted`,
`list.sort`, `min`/`max`, `map`, `filter`, `functools.reduce`, `itertools`' callers) inside a
speculated function, compared with eager call by call: results bit for bit, Python types,
printed text, exceptions and Python state."""
import bisect
import contextlib
import functools
import io
import itertools
import operator
import re
import collections
import threading

import numpy as np
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
    if isinstance(r, float):
        return ("float", repr(r))
    if isinstance(r, (map, filter, zip, itertools.starmap, itertools.accumulate, itertools.takewhile,
                      itertools.dropwhile, itertools.filterfalse)):
        return (type(r).__name__, "ITER")      # consumed separately by the test
    if type(r).__module__ == __name__ and hasattr(r, "__dict__"):
        return (type(r).__name__, norm(dict(vars(r))))
    return (type(r).__name__, repr(r))

def once(f, *args):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            r = ("ok", norm(f(*args)))
        except Exception as e:  # noqa: BLE001 - compared with eager's
            r = ("exc", type(e).__name__, str(e))
    return r, out.getvalue()

def compare(fn, make, xs, between=None, graphs=True, after=None):
    """fn(state, x) eagerly and speculated, each on its own state from make(); the same result,
    printed text and state (and `after(state)`: what reading the state later gives) each call."""
    se, sj = make(), make()
    spec = janus.speculate(fn)
    for i, x in enumerate(xs):
        if between:
            between(se, i)
            between(sj, i)
        e, j = once(fn, se, x), once(spec, sj, x)
        assert e == j, f"call {i}: eager {e}\njanus {j}\n{spec.report()}"
        assert norm(se) == norm(sj), f"state after call {i}: eager {norm(se)}\njanus {norm(sj)}\n{spec.report()}"
        if after:
            e, j = once(after, se), once(after, sj)
            assert e == j, f"after call {i}: eager {e}\njanus {j}\n{spec.report()}"
    if graphs:
        assert spec.stats()["graph_runs"] + spec.stats().get("segment_graph_runs", 0) > 0, spec.report()
    return spec

class S:
    def __init__(self):
        self.count = 0
        self.log = []
        self.w = [3, 1, 2, 0]
        self.scale = 1


XS = [C(float(i)) for i in range(10)]


# ---- the listed callers: all equal to eager (regression tests) ---------------------------------------------------------------------------------

def k_writes(s, x):
    def key(v):
        s.count += 1
        s.log.append(v)
        return s.w[v]
    return x + 1.0, sorted(range(4), key=key)

def test_key_writes_state():
    compare(k_writes, S, XS)

def k_prints(s, x):
    def key(v):
        print("key", v)
        return -v
    return x * 2.0, sorted([1, 3, 2], key=key), max([1, 3, 2], key=key)

def test_key_prints():
    compare(k_prints, S, XS)

def k_raises(s, x):
    def key(v):
        s.log.append(v)
        if v == s.scale:
            raise KeyError(v)
        return v
    return x + 1.0, sorted([0, 1, 2, 3], key=key)

def test_key_raises_on_some_calls():
    def between(s, i):
        s.scale = 2 if i in (5, 8) else 9
    compare(k_raises, S, XS, between)

def k_map_escapes(s, x):
    def f(v):
        s.count += 1
        return v * s.scale
    s.m = map(f, [1, 2, 3])
    return x + 1.0

def test_map_stored_then_consumed():
    def between(s, i):
        s.scale = i
    compare(k_map_escapes, S, XS, between, graphs=False, after=lambda s: list(s.m) + [s.count])

def k_partial_next(s, x):
    m = map(lambda v: v * s.scale, s.w)
    a = next(m)
    s.rest = m
    return x + a

def test_partly_consumed_map_kept():
    def between(s, i):
        s.scale = i % 3 + 1
    compare(k_partial_next, S, XS, between, graphs=False, after=lambda s: list(s.rest))

def k_tensor_key_writes(s, x):
    def key(t):
        s.log.append(len(s.log))
        return t
    return sorted([x, x * -1.0, x + 1.0], key=key)

def test_tensor_key_writes():
    compare(k_tensor_key_writes, S, XS, graphs=False)

def k_filter_tensor_pred(s, x):
    def pred(t):
        s.count += 1
        return t > 2.0
    return list(filter(pred, [x, x - 1.0, x + 1.0]))

def test_filter_tensor_predicate():
    compare(k_filter_tensor_pred, S, XS, graphs=False)

def k_reduce_accumulate(s, x):
    def add(a, b):
        s.count += 1
        return a + b * s.scale
    return functools.reduce(add, [x, x, 1.0]), list(itertools.accumulate([x, 2.0, 3.0], add))

def test_reduce_accumulate_tensors():
    def between(s, i):
        s.scale = 2 if i >= 6 else 1
    compare(k_reduce_accumulate, S, XS, between)

class Counter:
    def __init__(self):
        self.n = 0
        self.k = 2

    def __call__(self, v):
        self.n += 1
        return v * self.k

    def pair(self, a, b):
        self.n += 10
        return a - b * self.k

class S2(S):
    def __init__(self):
        super().__init__()
        self.c = Counter()

def k_callable_objects(s, x):
    a = list(map(s.c, [1, 2, 3]))
    b = list(itertools.starmap(s.c.pair, [(1, 2), (3, 4)]))
    c = sorted([3, 1, 2], key=functools.partial(s.c.pair, 5))
    return x + a[0], a, b, c

def test_callable_object_bound_method_partial():
    def between(s, i):
        s.c.k = 3 if i in (4, 5, 9) else 2
    compare(k_callable_objects, S2, XS, between)

def gen_fn(v):
    yield v
    yield v * 2

def k_generator_fn(s, x):
    return x, [list(g) for g in map(gen_fn, s.w)]

def test_generator_function_mapped():
    def between(s, i):
        s.w[i % 4] = i
    compare(k_generator_fn, S, XS, between, graphs=False)

def depth(v):
    return 0 if not isinstance(v, list) else 1 + max(map(depth, v), default=0)

def k_recursive_key(s, x):
    return x, sorted(s.nest, key=depth), max(s.nest, key=depth)

class S3(S):
    def __init__(self):
        super().__init__()
        self.nest = [[[1]], 1, [2], [[[3]]]]

def test_recursive_key():
    def between(s, i):
        if i in (5, 8):
            s.nest[1] = [[[[[i]]]]]
    compare(k_recursive_key, S3, XS, between)

@janus.speculate
def spec_key(v):
    return -v * GSCALE[0]

GSCALE = [1]

def k_spec_key(s, x):
    return x, sorted([1, 2, 3], key=spec_key)

def test_speculated_function_as_key():
    def between(s, i):
        GSCALE[0] = -1 if i in (5, 6) else 1
    compare(k_spec_key, S, XS, between)

def k_builtins(s, x):
    return x, sorted(s.words, key=str.lower), sorted(s.words, key=len), list(map(str.upper, s.words)), \
        max(s.words, key=len), list(map(x.__add__, [1.0, 2.0])), list(map(len, s.words))

class S4(S):
    def __init__(self):
        super().__init__()
        self.words = ["bb", "A", "ccc"]

def test_builtin_keys():
    def between(s, i):
        s.words[i % 3] = "Z" * (i % 4)
    compare(k_builtins, S4, XS, between)

def k_same_lambda_twice(s, x):
    f = lambda v: s.w[v] * s.scale  # noqa: E731
    return x, sorted(range(4), key=f), list(map(f, range(4))), min(range(4), key=f)

def test_same_lambda_twice():
    def between(s, i):
        s.w[i % 4] = -i
    compare(k_same_lambda_twice, S, XS, between)

def k_default_args(s, x):
    fs = [lambda v, k=k: v * k + s.scale for k in range(3)]
    return x, [list(map(f, s.w)) for f in fs]

def test_lambda_defaults_loop_vars():
    def between(s, i):
        s.scale = i % 2
    compare(k_default_args, S, XS, between)

def k_mutating_key(s, x):
    lst = list(s.w)

    def key(v):
        if v == s.scale:
            lst.append(v)
        return v
    lst.sort(key=key)
    return x, lst

def test_key_mutates_list_sorted():
    def between(s, i):
        s.scale = 2 if i in (5, 7) else 9
    compare(k_mutating_key, S, XS, between)

def k_mutating_outside(s, x):
    def key(v):
        if v == s.scale:
            s.w.append(v)
        return -v
    s.w.sort(key=key)
    return x + 1.0

def test_key_mutates_outside_list_sorted():
    def between(s, i):
        s.scale = 2 if i in (5, 7) else 9
        s.w[:] = [3, 1, 2, 0]
    compare(k_mutating_outside, S, XS, between)


# ---- other ways C code calls the program back: stale reads at build time (FAIL) --------------------------------------------------------

G = [3, 1, 2, 0]

def reset_g(s, i):
    G[:] = [3, 1, 2, 0] if i < 4 else [0, 1, 2, 3 + i]

def k_cmp_to_key(s, x):
    def cmp(a, b):
        return G[a] - G[b]
    return x, sorted(range(4), key=functools.cmp_to_key(cmp))

def test_cmp_to_key_reads_global():
    compare(k_cmp_to_key, S, XS, reset_g, graphs=False)  # runs in Python

def k_list_sort_unbound(s, x):
    lst = [0, 1, 2, 3]
    list.sort(lst, key=lambda i: -G[i])
    return x, lst

def test_unbound_list_sort():
    compare(k_list_sort_unbound, S, XS, reset_g)

class MyList(list):
    pass

def k_list_subclass_sort(s, x):
    lst = MyList([0, 1, 2, 3])
    lst.sort(key=lambda i: -G[i])
    return x, list(lst)

def test_list_subclass_sort():
    compare(k_list_subclass_sort, S, XS, reset_g)

def k_partial_of_sorted(s, x):
    by = functools.partial(sorted, key=lambda i: G[i])
    return x, by(range(4))

def test_partial_of_sorted():
    compare(k_partial_of_sorted, S, XS, reset_g)

class Boxed:
    made = 0

    def __init__(self, v):
        Boxed.made += 1
        self.v = v * G[3]

def k_class_mapped(s, x):
    return x, [b.v for b in map(Boxed, [1, 2])]

def test_class_handed_to_map():
    """`map(Boxed, ...)`: each eager call runs `Boxed.__init__` twice (a class attribute counts)."""
    spec = janus.speculate(k_class_mapped)
    for i, x in enumerate(XS):
        reset_g(None, i)
        Boxed.made = 0
        e = once(k_class_mapped, None, x), Boxed.made
        Boxed.made = 0
        j = once(spec, None, x), Boxed.made
        assert e == j, f"call {i}: eager {e}\njanus {j}\n{spec.report()}"

class Ranked:
    def __init__(self, i):
        self.i = i

    def __lt__(self, other):
        return G[self.i] < G[other.i]

def k_dunder_lt_by_sorted(s, x):
    return x, [r.i for r in sorted([Ranked(0), Ranked(1), Ranked(2), Ranked(3)])], max([Ranked(0), Ranked(3)]).i

def test_dunder_lt_called_by_sorted():
    compare(k_dunder_lt_by_sorted, S, XS, reset_g, graphs=False)  # runs in Python

def k_bisect_key(s, x):
    return x, bisect.bisect([0, 1, 2, 3], 2, key=lambda i: G[i])

def test_bisect_key():
    compare(k_bisect_key, S, XS, reset_g, graphs=False)  # runs in Python

class Item:
    def __init__(self, i):
        self.i = i

    @property
    def rank(self):
        return G[self.i]

    def score(self):
        return -G[self.i]

def k_operator_getters(s, x):
    items = [Item(0), Item(1), Item(2), Item(3)]
    return x, [it.i for it in sorted(items, key=operator.attrgetter("rank"))], \
        list(map(operator.methodcaller("score"), items))

def test_attrgetter_property_and_methodcaller():
    compare(k_operator_getters, S, XS, reset_g)

def k_defaultdict_factory(s, x):
    d = collections.defaultdict(lambda: G[0])
    return x, d["a"] + d["b"]

def test_defaultdict_factory():
    compare(k_defaultdict_factory, S, XS, reset_g)

def k_re_sub_function(s, x):
    return x, re.sub(r"\d", lambda m: str(G[int(m.group())]), "0-3")

def test_re_sub_function_repl():
    compare(k_re_sub_function, S, XS, reset_g)

def k_iter_sentinel(s, x):
    it = iter([0, 1, 2, 3])
    return x, list(iter(lambda: G[next(it)], 2))

def test_iter_callable_sentinel():
    compare(k_iter_sentinel, S, XS, reset_g)


# ---- where the caller runs ---------------------------------------------------------------------

def k_in_tensor_if(s, x):
    if x > 4.0:
        y = x + float(sorted([1, 2, 3], key=lambda v: G[v])[0])
    else:
        y = x - float(max([1, 2, 3], key=lambda v: G[v]))
    return y

def test_sorted_in_tensor_if():
    compare(k_in_tensor_if, S, XS, reset_g)

def k_in_tensor_for(s, x):
    acc = x
    for i in tf.range(3):
        acc = acc + float(sum(map(lambda v: G[v], [1, 2])))
    return acc

def test_map_in_tensor_for():
    compare(k_in_tensor_for, S, XS, reset_g)

def k_in_tensor_if_writes(s, x):
    if x > 4.0:
        s.log.append(sorted([1, 2, 3], key=lambda v: (s.log.append(v), -v)[1]))
    return x

def test_key_writes_in_tensor_if():
    compare(k_in_tensor_if_writes, S, XS, graphs=False)

def rec_sum(s, n, x):
    if n == 0:
        return x
    order = sorted(range(4), key=lambda i: G[i] * n)
    return rec_sum(s, n - 1, x + float(order[0]))

def k_recursive(s, x):
    return rec_sum(s, 3, x)

def test_sorted_in_recursive_function():
    compare(k_recursive, S, XS, reset_g, graphs=False)  # runs in Python

class Model:
    def __init__(self):
        self.calls = 0
        self.order = [2, 0, 1]

    @janus.speculate
    def step(self, x):
        ranked = sorted(range(3), key=self.rank)
        return x * float(ranked[0]), list(map(self.rank, ranked))

    def rank(self, i):
        self.calls += 1
        return self.order[i]

def test_method_speculated_in_class():
    me, mj = Model(), Model()
    for i, x in enumerate(XS):
        if i >= 4:
            for m in (me, mj):
                m.order[i % 3] = -i
        e, j = once(Model.step.__wrapped__ if hasattr(Model.step, "__wrapped__") else None, me, x), once(mj.step, x)
        assert e == j and me.calls == mj.calls, (i, e, j, me.calls, mj.calls)

def k_nested_map(s, x):
    inner = map(lambda v: v + s.scale, s.w)
    return x, list(map(lambda v: v * G[0], inner)), next(map(lambda v: -v, s.w))

def test_nested_and_partly_consumed_map():
    def between(s, i):
        reset_g(s, i)
        s.scale = i % 3
        s.w[i % 4] = i
    compare(k_nested_map, S, XS, between)

def k_closure_cell(s, x):
    fs = []
    for k in range(2):
        fs.append(lambda v: v * s.w[k])
    return x, [list(map(f, [1, 2])) for f in fs]

def test_closure_cell_loop_var():
    def between(s, i):
        s.w[1] = i
    compare(k_closure_cell, S, XS, between)

def k_map_raises_on_tensor(s, x):
    def f(v):
        s.log.append(1)
        if v > 6.0:
            raise ValueError("big")
        return v * 2.0
    return list(map(f, [x - 1.0, x, x + 1.0]))

def test_map_raises_on_tensor_value():
    compare(k_map_raises_on_tensor, S, XS)

SP = janus.speculate(k_writes)

def test_two_threads():
    errors = []
    states = [S() for _ in range(4)]

    def work(s):
        try:
            for x in XS:
                r = SP(s, x)
                assert r[1] == [3, 1, 2, 0], r
        except Exception as e:  # noqa: BLE001
            errors.append(e)
    threads = [threading.Thread(target=work, args=(s,)) for s in states]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    for s in states:
        assert s.count == 40 and s.log == [0, 1, 2, 3] * 10, (s.count, s.log)
