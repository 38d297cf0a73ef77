"""helper-99: adversarial round on keyed dict writes (`d[n] = v`, n a varying Python int), the text
of containers, and `:=` inside janus's thunks.  Each program runs eagerly and under janus on fresh
equal state, call by call: result bits and Python types, dict key order and key types, printed
text, exception type and message, and the state after each call."""
import collections
import contextlib
import copy
import dataclasses
import io
import json
import logging

import numpy as np
import pytest
import tensorflow as tf

import janus

C = tf.constant


def norm(r, path="r"):
    if isinstance(r, BaseException):
        return ("exc", type(r).__name__, str(r))
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
        return ("dict", tuple((type(k).__name__, norm(k), norm(v, f"{path}[{k!r}]")) for k, v in r.items()))
    if isinstance(r, float):
        return ("float", repr(r))
    if isinstance(r, (int, str, bool, type(None), np.generic)):
        return (type(r).__name__, repr(r))
    if hasattr(r, "__dict__"):
        return (type(r).__name__, norm(dict(vars(r)), path))
    return (type(r).__name__, repr(r))


def outcome(fn, args):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            res = ("return", norm(fn(*args)))
        except Exception as e:  # noqa: BLE001 - compared with eager's
            res = ("raise", norm(e))
    return res, out.getvalue()


def compare(fn, make, calls, min_graph=1):
    """`fn(state, *args)` eagerly and under janus on equal fresh `make()` states."""
    runs = []
    for f in (fn, janus.speculate(fn)):
        s = make()
        runs.append([(outcome(f, (s, *args)), norm(s)) for args in calls])
        spec = f
    for k, (e, j) in enumerate(zip(*runs)):
        assert e == j, f"call {k}:\neager {e}\njanus {j}\n{spec.report()}"
    st = spec.stats()
    assert st["graph_runs"] + st.get("segment_graph_runs", 0) >= min_graph, spec.report()
    return spec


class H:
    def __init__(self):
        self.d = {1: "one", 0: "zero"}
        self.e = {}


def _kx(keys=(2, 0, 1, 5, 0, 7, 1, 3, 0, 2)):
    return [(k, C(float(k))) for k in keys]


# -- 1. keyed writes: a use of the dict after the write must not read a stale copy ---------------
def u_splat(h, k, x):
    h.d[k] = x
    return {**h.d}


def u_or(h, k, x):
    h.d[k] = x
    return h.d | {}


def u_eq(h, k, x):
    h.d[k] = 1
    return h.d == {1: "one", 0: "zero", 2: 1}


def u_unpack(h, k, x):
    h.d[k] = x
    a, *b = h.d
    return a, b


def u_for(h, k, x):
    h.d[k] = x
    n = 0
    for key in h.d:
        n += 1
    return n


def u_max(h, k, x):
    h.d[k] = 9
    return max(h.d)


def u_in_keys(h, k, x):
    h.d[k] = x
    return 5 in h.d.keys()


def u_list(h, k, x):
    h.d[k] = x
    return list(h.d)


def u_json(h, k, x):
    h.d[k] = 3
    return json.dumps(h.d)


def u_sum(h, k, x):
    h.d[k] = 3
    h.e[k] = 4
    return sum(h.e.values())


def u_copy(h, k, x):
    h.d[k] = x
    return copy.copy(h.d)


def u_bool(h, k, x):
    h.e[k] = x
    return bool(h.e)


def u_if(h, k, x):
    h.e[k] = x
    if h.e:
        return x + 1.0
    return x - 1.0


def u_not(h, k, x):
    h.e[k] = x
    return not h.e


def u_or_default(h, k, x):
    h.e[k] = 1
    return h.e or {"empty": True}


def _reads(d):
    return len(d) + (5 in d)


def u_helper(h, k, x):
    h.d[k] = x
    return _reads(h.d)


def u_tuple(h, k, x):
    h.d[k] = x
    return (h.d, x)


class Sink:
    pass


SINK = Sink()


def u_store(h, k, x):
    h.e[k] = x
    SINK.ref = h.e
    return x


def u_print(h, k, x):
    h.e[k] = 2
    print(h.e)


def u_tf_print(h, k, x):
    h.e[k] = 2
    tf.print(h.e)


def u_sorted_items(h, k, x):
    h.e[k] = 5
    return sorted(h.e.items())


def u_setdefault(h, k, x):
    h.e[k] = 5
    return h.e.setdefault(k, 6)


def u_clear(h, k, x):
    h.e[k] = 5
    h.e.clear()


def u_ior(h, k, x):
    h.e[k] = 5
    h.e |= {0: 1}


def u_popitem(h, k, x):
    h.e[k] = 5
    return h.e.popitem()


def u_iter_next(h, k, x):
    h.d[k] = 5
    return next(iter(h.d))


def u_reversed(h, k, x):
    h.d[k] = 5
    return list(reversed(h.d))


def u_set_of(h, k, x):
    h.d[k] = 5
    return sorted(set(h.d))


def u_enumerate(h, k, x):
    h.d[k] = 5
    return [i for i, _ in enumerate(h.d)]


def u_zip(h, k, x):
    h.d[k] = 5
    return list(zip(h.d, h.d))


def u_fstring(h, k, x):
    h.e[k] = 5
    return f"{h.e}"


def u_vars_len(h, k, x):
    h.e[k] = 5
    return len(vars(h)["e"])


def u_getattr(h, k, x):
    h.e[k] = 5
    return len(getattr(h, "e"))


_STALE = [u_splat, u_or, u_unpack, u_fstring]
_USES = [u_eq, u_for, u_max, u_in_keys, u_list, u_json, u_sum, u_copy, u_bool, u_if, u_not, u_or_default,
         u_helper, u_tuple, u_store, u_print, u_tf_print, u_sorted_items, u_setdefault, u_clear, u_popitem,
         u_iter_next, u_reversed, u_set_of, u_enumerate, u_zip, u_vars_len, u_getattr]


@pytest.mark.parametrize("fn", _STALE, ids=lambda f: f.__name__)
def test_a_use_after_a_keyed_write_that_reads_the_stale_copy(fn):
    """`{**d}`, `d | {}`, `a, *b = d`, `f"{d}"` after `d[k] = v` give the build's copy (without the
    keyed item) in graph calls: no read flag is set, so nothing stops the build."""
    compare(fn, H, _kx(), min_graph=0)


def star_list(h, k, x):
    h.d[k] = 5
    return [*h.d], sorted({*h.d}), max(*h.d)


def test_star_unpacking_after_a_keyed_write_reads_the_stale_copy():
    compare(star_list, H, _kx(), min_graph=0)


def test_ior_after_a_keyed_write_is_applied_before_it():
    """eager: `e[k] = 5; e |= {0: 1}` leaves e[0] == 1 when k == 0; janus writes the `|=` items back
    first and the keyed item last, so e[0] == 5 (wrong state)."""
    compare(u_ior, H, _kx(), min_graph=0)


@pytest.mark.parametrize("fn", _USES, ids=lambda f: f.__name__)
def test_use_after_keyed_write(fn):
    compare(fn, H, _kx(), min_graph=0)


class A:
    def __init__(self):
        self.a = {1: "one"}
        self.b = self.a             # the same dict under two names
        self.step = 0
        self.outer = {"in": {0: "z"}, "l": [{}]}


def put_int(s, k, x):
    s.a[k] = 1
    return x


def alias_splat(s, k, x):
    s.a[k] = 3
    return {**s.b}


def _put(d, k, v):
    d[k] = v


def helper_then_splat(s, k, x):
    _put(s.a, k, x)
    return {**s.a}


def test_keyed_write_then_splat_through_an_alias_or_a_helper_reads_the_stale_copy():
    compare(alias_splat, A, _kx(), min_graph=0)
    compare(helper_then_splat, A, _kx(), min_graph=0)


def alias_len(s, k, x):
    s.a[k] = x
    return len(s.b), s.b.get(k, -1.0)


def inner(s, k, x):
    s.outer["in"][k] = x
    s.outer["l"][0][k] = 2
    return str(s.outer), s.outer == {"in": {0: "z", 2: 1}, "l": [{}]}


def step_key(s, k, x):
    s.a[s.step] = x
    s.a[-k] = x * 2.0
    s.step += k
    return s.step


def in_loop_and_helper(s, k, x):
    for i in range(3):
        s.a[k] = x * float(i)
    _put(s.b, k, i)
    return len(s.a)


def tensor_if(s, k, x):
    if x > 2.0:
        s.a[k] = x
    return x + 1.0


def then_fail(s, k, x):
    s.a[k] = x
    y = tf.gather(tf.constant([1.0, 2.0, 3.0]), k)      # k = 5, 7 raise after the write, as in eager
    tf.debugging.assert_less(x, 6.0)
    return y


def rmw(s, k, x):
    s.a.setdefault(k, 0)
    s.a[k] += 1
    s.a.setdefault(-k, []).append(1)
    return s.a.pop(k)


@pytest.mark.parametrize("fn", [alias_len, inner, step_key, in_loop_and_helper, tensor_if, then_fail, rmw],
                         ids=lambda f: f.__name__)
def test_keyed_writes_in_context(fn):
    compare(fn, A, _kx(), min_graph=0)


@pytest.mark.parametrize("keys", [
    [True, False, True, False, False, True, True, False, True, False],
    [2, True, 3, False, 4, True, 0, 1, True, 2],
    [2, 3, 4, 5, 6, 7, np.int64(8), np.int32(9), np.uint8(200), np.int8(-3), np.uint64(2**64 - 1), 1],
    [2, 3, 4, 5, 6, 7, 8.0, 9.5, 10, 11],
    [2, 3, 4, 5, 6, 7, 2**70, -2**70, 2**63, -2**63, 2**63 - 1, 10],
    [2, 3, 4, 5, 6, 7, C(8), C(9), 10, 11]], ids=["bool", "bool_int", "numpy", "float", "huge", "tensor"])
def test_keyed_write_key_types(keys):
    compare(put_int, A, [(k, C(float(i))) for i, k in enumerate(keys)], min_graph=0)


class Trainer:
    def __init__(self):
        self.step, self.losses = 0, {}

    @janus.speculate
    def train(self, x):
        loss = tf.reduce_sum(x * 2.0)
        self.losses[self.step] = loss
        self.step += 1
        return loss


def test_two_threads_on_two_trainers():
    import threading
    ts = [Trainer(), Trainer()]
    errors = []

    def run(t, off):
        try:
            for i in range(12):
                t.train(C([float(i + off)]))
        except Exception as e:  # noqa: BLE001
            errors.append(e)
    th = [threading.Thread(target=run, args=(t, 100 * n)) for n, t in enumerate(ts)]
    [t.start() for t in th]
    [t.join(120) for t in th]
    assert not errors
    for n, t in enumerate(ts):
        assert t.step == 12 and list(t.losses) == list(range(12))
        assert [float(v) for v in t.losses.values()] == [2.0 * (i + 100 * n) for i in range(12)]


# -- outside containers read by C code janus does not see: stale in graph calls (no keyed write) ----
GL = [1, 2]
GD = {1: "one"}
OB = Sink()


def g_concat(x):
    return GL + [], [0] + GL, OB.h + [5], GL * 2, x * float(len(GL + [3]))


def g_dict_ops(x):
    return {**GD}, GD | {}, {} | GD, x + 1.0


def g_unpack(x):
    a, *b = GL
    return b, [*GL], max(*GL), sorted({*GD}), x + 1.0


def g_text(x):
    return f"{GD}", f"{GL!r:>20}", "%s" % (GL,), "%(a)s" % {"a": GL}, "{a}".format(a=GD), x + 1.0


def g_seen(x):
    return GL[:], GL.copy(), sum(GL), [v for v in GL], 3 in GL, str(GL), "{}".format(GL), GL == [1], x


@pytest.mark.parametrize("fn", [g_concat, g_dict_ops, g_unpack, g_text, g_seen], ids=lambda f: f.__name__)
def test_an_outside_container_changed_between_calls(fn):
    """`GL + []`, `{**GD}`, `GD | {}`, `[*GL]`, `a, *b = GL`, f-strings, `%` and `format(a=GD)` of a
    global list or dict changed between calls give the graph's build-time copy: the copy is not
    marked read, so only its identity is checked at entry (g_seen: the forms that are checked)."""
    GL[:], OB.h = [1, 2], [1]
    GD.clear()
    spec = janus.speculate(fn)
    for i in range(8):
        GD[i] = i * 10
        GL.append(i)
        OB.h.append(i)
        assert outcome(spec, (C(1.0),)) == outcome(fn, (C(1.0),)), f"call {i}\n{spec.report()}"
    assert spec.stats()["graph_runs"] > 0


# -- 2. text of containers holding the call's tensors -----------------------------------------------
@dataclasses.dataclass
class DC:
    xs: list


def t_deep(x):
    return str([[[[[[x * 2.0]]]]]])


def t_deep_dict(x):
    return repr({"a": {"b": {"c": {"d": {"e": {"f": x * 2.0}}}}}})


def t_dataclass(x):
    return str(DC([x * 2.0]))


def t_deque(x):
    return str(collections.deque([x * 2.0]))


def t_format(x):
    return "{}".format([x * 2.0]), "{a}".format(a=[x]), "{0[0]}".format([x * 2.0]), "{a}".format_map({"a": [x]})


def t_slice(x):
    return str(slice(x * 2.0))


_LEAKS = [t_deep, t_deep_dict, t_dataclass, t_deque, t_format, t_slice]


def t_ok(x):
    P = collections.namedtuple("P", "a b")
    v = [x * 2.0]
    print([[[[[[x]]]]]], P(x, v), sep=str(v))
    logging.getLogger("h99").debug("v %s", v)
    return (str(P(x, 1)), str({x}), f"{v!r:>30}", f"{v=}", "%r %s" % (v, 1), "%(a)s" % {"a": v}, ascii(v),
            "-".join(str(w) for w in v), str(list({"a": x}.items())), str([range(3), x]))


@pytest.mark.parametrize("fn", _LEAKS + [t_ok], ids=lambda f: f.__name__)
def test_text_of_a_container_holding_the_calls_tensor(fn):
    """Eager's text holds `numpy=6.0`; janus's graph calls give `Tensor("mul:0", ...)`: depth > 4
    (`text._holds`), dataclass / deque / slice reprs, and `str.format` / `format_map` arguments."""
    spec = janus.speculate(fn)
    for i in range(6):
        assert outcome(spec, (C(float(i)),)) == outcome(fn, (C(float(i)),)), f"call {i}"


# -- 3. `:=` (all pass: regression tests) -------------------------------------------------------------
LOG = []


def _note(v):
    LOG.append(v)
    return v


def w_bool(x, n):
    m = f = -1
    ok = (n > 1 and (m := n * 2) > 3) or (n < 0 and (m := -n))
    ok2 = n > 3 or (m := _note(n)) > 1
    ok3 = n is not None and (lambda v: (f := v + 1) * 2)(n) > 2
    return m, f, ok, ok2, ok3, 0 < n < (q := n + 1) < 5, q, len(LOG), x * 2.0


def w_gens(x, n):
    hit = last = acc = -1
    tot = x
    found = any((hit := v) > 2 for v in range(n))
    ok = all((last := v) < 3 for v in range(n))
    t = sum((acc := acc + v) for v in range(n))
    s = sum((tot := tot + float(v)) for v in range(n))
    ys = [v for v in range(n) if (z := v * 2) > 2]
    return found, hit, ok, last, t, acc, s, tot, ys, z if n > 0 else None


def w_places(x, n):
    assert (m := n * 3) < 20, m
    i = 0
    xs = [x, x * 2.0, x * 3.0]
    r = tf.add(p := x * 2.0, p)
    for v in (ys := [1.0, 2.0][: n % 3]):
        r = r + v
    match n:
        case v if (y := v * 2) > 3:
            r = r * float(y)
        case [a, *rest]:
            r = r + a + len(rest)
    return xs[(i := i + n % 3)], i, r, ys, y, (w := x * float(n)) + w


@pytest.mark.parametrize("fn", [w_bool, w_gens, w_places], ids=lambda f: f.__name__)
def test_walrus(fn):
    calls = [(C(float(v)), n) for v, n in [(1, 0), (2, 3), (3, 1), (-1, 4), (5, 2), (0, 5), (2, 3), (7, 6), (4, 1)]]
    LOG.clear()
    e = [outcome(fn, c) + (len(LOG),) for c in calls]
    LOG.clear()
    spec = janus.speculate(fn)
    assert [outcome(spec, c) + (len(LOG),) for c in calls] == e
