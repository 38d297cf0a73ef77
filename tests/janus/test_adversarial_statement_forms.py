"""Adversarial round on less common statements and 3.8-3.11 syntax in speculated functions and
methods: `match`, walrus, positional-only/keyword-only parameters, star targets, `del`,
`except*`, `try/finally`, several context managers, nested definitions, generators, f-strings,
chained comparisons on tensors, `global` and class attributes.  Each program runs eagerly and
through janus on fresh state, call by call with changing inputs: result bits and Python types,
exception type and message, printed text and the state after each call."""
import contextlib
import functools
import io
import itertools

import numpy as np
import tensorflow as tf

import janus

C = tf.constant


def norm(r, path="r"):
    if isinstance(r, BaseException):
        return ("exc", type(r).__name__, str(r), norm(r.__cause__, path + ".cause") if r.__cause__ else None)
    if isinstance(r, tf.Variable):
        return ("V", r.dtype.name, r.numpy().tobytes())
    if isinstance(r, tf.Tensor):
        assert not tf.is_symbolic_tensor(r), f"graph tensor leaked at {path}: {r!r}"
        return ("T", r.dtype.name, tuple(r.shape), r.numpy().tobytes())
    if isinstance(r, np.ndarray):
        return ("A", r.dtype.name, r.shape, r.tobytes())
    if isinstance(r, (list, tuple)):
        return (type(r).__name__, tuple(norm(x, f"{path}[{i}]") for i, x in enumerate(r)))
    if isinstance(r, dict):
        return ("dict", tuple((k, norm(v, f"{path}[{k!r}]")) for k, v in r.items()))
    if isinstance(r, float):
        return ("float", repr(r))
    if isinstance(r, (int, str, bool, type(None))):
        return (type(r).__name__, r)
    if hasattr(r, "__dict__"):
        return (type(r).__name__, norm(dict(vars(r)), path))
    return (type(r).__name__, repr(r))


def outcome(fn, args, kwargs):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            res = ("return", norm(fn(*args, **kwargs)))
        except Exception as e:  # noqa: BLE001 - compared with eager's
            res = ("raise", norm(e))
    return res, out.getvalue()


def compare(make, calls, min_graph=1, **options):
    """`make(deco)` -> (function, state()); run all calls eagerly (deco = identity), then on fresh
    state through janus (deco = janus.speculate); every call's outcome, text and state equal."""
    runs = []
    for deco in (lambda f: f, functools.partial(janus.speculate, **options)):
        fn, state = make(deco)
        seq = []
        for args in (calls() if callable(calls) else calls):
            args, kwargs = (args if isinstance(args, tuple) and len(args) == 2 and isinstance(args[1], dict)
                            and isinstance(args[0], tuple) else (args, {}))
            seq.append((outcome(fn, args, kwargs), norm(state())))
        runs.append((fn, seq))
    (_, eager), (spec, spec_seq) = runs
    spec = getattr(spec, "__func__", spec)
    for k, (e, j) in enumerate(zip(eager, spec_seq)):
        assert e == j, f"call {k}:\neager {e}\njanus {j}\n{spec.report()}"
    st = spec.stats()
    assert st["graph_runs"] + st["segment_graph_runs"] >= min_graph, spec.report()
    return spec


# -- match ------------------------------------------------------------------------------------
class Pt:
    __match_args__ = ("x", "y")

    def __init__(self, x, y):
        self.x, self.y = x, y


def make_match_structures(deco):
    class M:
        count = 0

        def __init__(self):
            self.hits = {}
            self.last = None

        @deco
        def step(self, x, item):
            y = tf.reduce_sum(x) * 1.0
            match item:
                case [a, b, *rest]:
                    self.hits["seq"] = self.hits.get("seq", 0) + 1
                    y = y + a * b + len(rest)
                case {"k": v, **others}:
                    self.last = v
                    y = y * v + len(others)
                case Pt(px, py) if px > py:
                    type(self).count += 1
                    y = y - px
                case Pt(x=px):
                    y = y + px
                case str() as s:
                    self.last = s
                case _:
                    self.hits["other"] = self.hits.get("other", 0) + 1
            return y * 2.0
    m = M()
    M.count = 0
    return m.step, lambda: (m.hits, m.last, M.count)


def test_match_on_structures_in_a_method():
    x = C([1.0, 2.0])
    items = [[1.0, 2.0], [C(3.0), C(4.0), 5], {"k": 2.0}, {"k": C(3.0), "j": 1}, Pt(3.0, 1.0),
             Pt(1.0, 3.0), "s", 7, [1.0, 2.0, 3.0, 4.0], {"k": 0.5}, Pt(C(5.0), C(4.0)), [2.0, 2.0]]
    # (the values are what is compared: the case bodies' segments see too few calls to build)
    compare(make_match_structures, [(x, it) for it in items], min_graph=0)


# -- walrus -----------------------------------------------------------------------------------
def make_walrus(deco):
    @deco
    def f(xs, n):
        ys = [y := x * float(i) for i, x in enumerate(xs)]
        big = None
        if any((big := v) > 2.0 for v in xs):
            flag = "big"
        else:
            flag = "small"
        k = n
        out = tf.constant(0.0)
        while (k := k - 1) > 0:
            out = out + y
        return ys, y, big, flag, out, k
    return f, lambda: None


def test_walrus_in_comprehensions_any_and_while():
    calls = [([C(1.0), C(3.0)], 3), ([C(1.0), C(1.5)], 2), ([C(4.0), C(0.0), C(1.0)], 4),
             ([C(1.0), C(3.0)], 3), ([C(0.5), C(0.5)], 1), ([C(1.0), C(3.0)], 5),
             ([C(1.0), C(2.0)], 3), ([C(3.0), C(1.0)], 3), ([C(1.0), C(3.0)], 3), ([C(1.0), C(1.0)], 2)]
    compare(make_walrus, calls, min_graph=0)      # (`any` over tensor bools: runs in Python)


# -- parameters -------------------------------------------------------------------------------
def _helper(*args, scale=1.0, **kw):
    return sum(args) * scale + len(kw)


def make_params(deco):
    @deco
    def f(x, /, k=2, *rest, acc=[], **kw):
        acc.append(k)
        y = _helper(x, *rest, **kw) * k
        return y, len(acc), tuple(sorted(kw))
    return f, lambda: getattr(f, "python_function", f).__kwdefaults__


def test_positional_only_keyword_only_and_a_mutated_default():
    calls = lambda: [((C(1.0),), {}), ((C(1.0), 3), {}), ((C(2.0), 3, C(1.0)), {"scale": 2.0}),
             ((C(1.0),), {"acc": []}), ((C(1.0), 2), {"z": 1}), ((C(1.0), 2), {}), ((C(1.0), 2), {}),
             ((C(1.0), 2.5, 1.0, 2.0), {}), ((C(1.0), 2), {"x": 5}), ((C(1.0),), {}), ((C(3.0), 4), {})]
    compare(make_params, calls)


def make_match_star_capture(deco):
    @deco
    def f(x, item):
        y = tf.reduce_sum(x) * 1.0
        match item:
            case [a, b, *rest]:
                y = y + a * b + len(rest)
            case _:
                y = y - 1.0
        return y * 2.0
    return f, lambda: None


def test_match_sequence_capture_with_star_is_seen_by_its_case_body():
    """The case body becomes a graph segment after profiling; the names the pattern captured
    (`a`, `b`, `rest`) must reach it.  Eagerly [1.0, 5.0] gives (1 + 5) * 2 = 12."""
    compare(make_match_star_capture, [(C([1.0]), it) for it in
                                      [[1.0, 2.0], [2.0, 3.0], [1.0, 2.0], 3, [1.0, 5.0], [C(2.0), C(2.0), 7],
                                       "ab", [3.0, 1.0, 1.0, 1.0]]], min_graph=0)


def make_walrus_graph(deco):
    @deco
    def f(x, n):
        scaled = [(last := x * float(i)) + 1.0 for i in range(n)]
        if (m := tf.reduce_max(x)) > 1.0:
            r = m * 2.0
        else:
            r = m - 1.0
        return scaled, last, r, m
    return f, lambda: None


def test_walrus_binding_from_a_comprehension_and_a_tensor_if():
    """`[(last := x * i) + 1.0 for i in range(n)]` binds `last` in the function (PEP 572): the
    graph's function binds it too."""
    compare(make_walrus_graph, [(C([0.5, 2.0]), 3), (C([0.5, 0.2]), 3), (C([3.0, 2.0]), 2), (C([0.5, 2.0]), 4),
                                (C([0.5, 0.7]), 1), (C([5.0, 2.0]), 3), (C([0.5, 2.0]), 3), (C([0.1, 0.2]), 2),
                                (C([0.5, 2.0]), 5), (C([1.5, 2.0]), 3)])


def make_while_walrus(deco):
    @deco
    def f(x, n):
        k = n
        r = x
        while (k := k - 1) > 0:
            r = r + x
        return r, k
    return f, lambda: None


def test_a_walrus_rebinding_a_local_in_a_while_condition_builds_a_graph():
    """`while (k := k - 1) > 0:` on a Python int: the test's binding is the loop's state."""
    compare(make_while_walrus, [(C(1.0), 3)] * 8)


# -- assignment targets -----------------------------------------------------------------------
class Holder:
    def __init__(self):
        self.a, self.b = C(1.0), 2.0
        self.d = {"k": C(0.0), "n": 0}
        self.xs = [1, 2.5, C(3.0)]


def make_targets(deco):
    h = Holder()

    @deco
    def f(ts, i, v):
        first, *mid, last = ts
        (p, (q, r)) = (first, (last, len(mid)))
        h.a, h.b = h.b, h.a
        u = w = []
        u.append(v)
        h.d["k"] += first * v
        h.d["n"] += i
        h.xs[i % 3] *= 2
        h.xs[-1] += last
        return p + q * r, mid, w, u is w
    return f, lambda: vars(h)


def test_star_targets_swaps_chained_and_augmented_item_assignment():
    calls = [([C(1.0), C(2.0)], 0, 1.5), ([C(1.0), C(2.0), C(3.0)], 1, 2.0), ([C(1.0), C(2.0)], 2, 1.5),
             ([C(1.0), C(2.0)], 0, 1.5), ([C(4.0), C(2.0)], 1, 0.5), ([C(1.0), C(2.0), C(3.0), C(4.0)], 2, 1.0),
             ([C(1.0), C(2.0)], 0, 1.5), ([C(2.0), C(2.0)], 1, 1.5), ([C(1.0), C(-2.0)], 1, 3),
             ([C(1.0), C(2.0)], 2, 1.5), ([C(1.0), C(2.0)], 0, 1.5)]
    compare(make_targets, calls)


# -- del --------------------------------------------------------------------------------------
def make_del(deco):
    h = Holder()
    log = [C(1.0), 2, C(3.0), 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]
    table = {i: float(i) for i in range(20)}

    @deco
    def f(x, k):
        y = x * 2.0
        t = y + 1.0
        del t
        del log[0]
        del table[k]
        if hasattr(h, "a"):
            del h.a
        else:
            h.a = y
        if k > 5:
            return t            # noqa: F821 - unbound after `del`: eager raises UnboundLocalError
        return y + len(log) + len(table)
    return f, lambda: (vars(h), log, table)


def test_del_of_locals_attributes_items_and_keys_applies_once():
    compare(make_del, [(C(1.0), k) for k in [1, 2, 3, 4, 6, 5, 0, 7, 8, 9, 10, 3]])


# -- exceptions -------------------------------------------------------------------------------
def make_except_star(deco):
    log = []

    @deco
    def f(x, k):
        y = x * 2.0
        try:
            if k == 1:
                raise ExceptionGroup("g", [ValueError("v"), TypeError("t")])
            if k == 2:
                raise ExceptionGroup("h", [KeyError(k)])
            y = y + 1.0
        except* ValueError as eg:
            log.append(("v", len(eg.exceptions), str(eg)))
            y = y - 1.0
        except* TypeError:
            log.append("t")
        return y * 3.0
    return f, lambda: log


def test_except_star_with_exception_groups():
    compare(make_except_star, [(C(1.0), k) for k in [0, 1, 0, 2, 0, 0, 1, 0, 2, 0, 0]])


def make_finally(deco):
    log = []

    @deco
    def f(x, k):
        try:
            r = 1 / k
        except ZeroDivisionError as e:
            log.append(str(e))
            raise ValueError(f"bad {k}") from e
        else:
            log.append(f"else {r}")
            r = x * r
        finally:
            log.append("fin")
            if k == 3:
                return x - 1.0
        return r + 0.5
    return f, lambda: log


def test_try_else_finally_return_in_finally_and_raise_from():
    compare(make_finally, [(C(2.0), k) for k in [1, 2, 0, 3, 4, 1, 0, 3, 5, 2, 1]], min_graph=0)


class Store:
    def __init__(self):
        self.err = None
        self.n = 0


def make_tensor_exception(deco):
    st = Store()

    @deco
    def f(x):
        y = tf.reduce_sum(x) * 2.0
        try:
            if len(x.shape) and x.shape[0] > 2:
                raise ValueError(y, "too long")
            st.n += 1
        except ValueError as e:
            st.err = e.args
            return e.args[0] + 1.0
        return y
    return f, lambda: vars(st)


def test_an_exception_carrying_a_tensor_stored_in_state():
    xs = [C([1.0]), C([1.0, 2.0]), C([1.0, 2.0, 3.0]), C([1.0]), C([4.0, 2.0]), C([1.0, 2.0, 3.0, 4.0]),
          C([1.0]), C([5.0, 1.0, 1.0]), C([1.0, 2.0]), C([3.0])]
    compare(make_tensor_exception, [(x,) for x in xs])


# -- with ------------------------------------------------------------------------------------
class Swallow:
    def __init__(self, log, name):
        self.log, self.name = log, name

    def __enter__(self):
        self.log.append(f"enter {self.name}")
        return self

    def __exit__(self, et, ev, tb):
        self.log.append(f"exit {self.name} {et.__name__ if et else None}")
        return et is KeyError


def make_with(deco):
    log = []

    @deco
    def f(x, k):
        y = x + 1.0
        with Swallow(log, "a") as a, Swallow(log, "b"):
            y = y * 2.0
            if k % 3 == 0:
                raise KeyError(k)
            if k % 5 == 0:
                raise IndexError(k)
            y = y + float(k)
            a.last = k
        return y, len(log)
    return f, lambda: log


def test_several_context_managers_one_swallowing():
    compare(make_with, [(C(1.0), k) for k in [1, 2, 3, 4, 5, 7, 6, 8, 10, 11, 1]], min_graph=0)


# -- text -------------------------------------------------------------------------------------
def make_text(deco):
    st = Store()
    buf = io.StringIO()

    @deco
    def f(x, n):
        y = x * 2.0
        st.err = f"{n!r}:{n:>4}|{y}"
        print(y, n, sep="|", end="!\n")
        print(n, float(n), file=buf)
        print(f"{n=}", str(n), repr(n / 3))
        return y + n, f"{n * 2}", str(n), repr(n)
    return f, lambda: (vars(st), buf.getvalue())


def test_f_strings_str_repr_and_print_keywords():
    compare(make_text, [(C(1.0), n) for n in [1, 2, 2.5, 3, 1, 7, -1, 0.1, 2, 10 ** 12, 3]])


# -- globals and class attributes in methods --------------------------------------------------
COUNT = 0
SEEN = []


def make_globals(deco):
    global COUNT
    COUNT = 0
    SEEN.clear()

    class K:
        count = 0

        def __init__(self):
            self.total = C(0.0)

        @deco
        def step(self, x, n):
            global COUNT
            COUNT += n
            type(self).count += 1
            SEEN.append(n)
            self.total = self.total + x * n
            return self.total, COUNT, K.count
    k = K()
    return k.step, lambda: (COUNT, K.count, list(SEEN), k.total)


def test_global_statements_and_class_counters_in_a_method():
    compare(make_globals, [(C(1.5), n) for n in [1, 2, 1, 3, 3, 2.5, 1, 4, 1, 1, 0]])


def make_chain(deco):
    log = []

    @deco
    def f(x, ys):
        inside = 0.0 < x < 1.0
        if 0.0 < x < 1.0:
            log.append("in")
            r = x * 2.0
        else:
            r = x - 1.0
        return inside, r, ys[0] > x
    return f, lambda: log


def make_in(deco):
    @deco
    def f(x, ys):
        return x * 2.0, x in ys
    return f, lambda: None


def test_in_over_a_list_of_scalar_tensors_gives_eagers_answers():
    """`x in [t1, t2]` of scalar tensors: eager compares by identity, then `bool(x == t)`, the
    value of a tensor: the function runs in Python (the report says why), with eager's results."""
    compare(make_in, [(C(float(v)), [C(2.0), C(1.0)]) for v in [1, 2, 3, 1, 0, 2, 5, 1]], min_graph=0)


def test_chained_comparison_on_scalar_tensors_in_an_if():
    compare(make_chain, [(C(v), [C(2.0), C(w)]) for v, w in
                         [(0.5, 0.5), (0.2, 1.0), (0.7, 3.0), (0.7, 0.7), (0.4, 1.0), (0.5, 0.1), (0.9, 0.9),
                          (1.0, 1.0), (0.0, 0.5), (0.3, 2.0), (0.6, 0.6), (-2.0, 3.0)]])


def _gen(xs):
    yield from (v * 2.0 for v in xs)
    yield xs[0]


def make_functional(deco):
    @deco
    def f(xs, scale):
        total = 0

        def bump(v):
            nonlocal total
            total += 1
            return v * scale

        class Acc:
            k = scale
        g = _gen(xs)
        head = [next(g)] + [bump(v) for v in itertools.islice(g, 1)]
        ordered = sorted(xs, key=lambda t: -float(t))
        prod = functools.reduce(lambda u, v: u * v, xs)
        runs = list(itertools.accumulate(xs))
        first, *_, last = runs
        return ordered, prod * scale, runs, last - first, sum(v for v in xs if float(v) > 1.0), head, Acc.k, total
    return f, lambda: None


def test_nested_def_class_nonlocal_generator_sorted_reduce_accumulate():
    calls = [([C(1.0), C(2.0), C(3.0)], 2.0), ([C(3.0), C(0.5)], 2.0), ([C(1.0), C(2.0), C(3.0)], 1.5),
             ([C(2.0), C(2.0), C(3.0)], 2.0), ([C(1.0), C(4.0)], 3), ([C(1.0), C(2.0), C(3.0)], 2.0),
             ([C(0.0), C(2.0), C(-3.0)], 2.0), ([C(1.0), C(2.0), C(3.0)], 2.0), ([C(5.0), C(2.0)], 2.0)]
    compare(make_functional, calls, min_graph=0)       # (`float(t)` as a sort key: Python)


def make_finally_swallows(deco):
    log = []

    @deco
    def f(x, k):
        y = x * 2.0
        try:
            y = y + 1.0
            if k % 4 == 0:
                raise RuntimeError(f"k={k}")
            log.append(k)
        finally:
            y = y * 3.0
            if k % 2 == 0:
                return y, "finally"
        return y, "body"
    return f, lambda: log


def test_a_return_in_finally_swallows_the_raise():
    compare(make_finally_swallows, [(C(1.0), k) for k in [1, 2, 4, 3, 1, 5, 8, 2, 6, 4, 7, 1]], min_graph=0)
