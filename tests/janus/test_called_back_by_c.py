"""The program's code that Python's C code calls back while a graph is built: operator getters,
`re.sub` with a function (module-level or a compiled pattern's), a defaultdict's factory and
`iter(f, sentinel)`.  Each reads outside state that changes between calls, and must read it on
every call, as eager does (run once at build time, it would be baked into the graph)."""
import collections
import operator
import re

import tensorflow as tf

import janus

G = [1.0, 2.0, 3.0, 4.0]
LOG = []


class Item:
    def __init__(self, r):
        self.r = r

    @property
    def rank(self):
        return G[self.r]

    def score(self, k=1.0):
        return G[self.r] * k


ITEMS = [Item(2), Item(0), Item(1)]
DIGIT = re.compile(r"\d")


def getters(x):
    ranked = [i.r for i in sorted(ITEMS, key=operator.attrgetter("rank"))]
    return x, ranked, list(map(operator.methodcaller("score", k=2.0), ITEMS)), operator.attrgetter("r", "rank")(ITEMS[0])


def substituted(x):
    return x, DIGIT.sub(lambda m: str(G[int(m.group())]), "0 1"), re.subn(r"\d", lambda m: str(G[2]), "12")


def factory(x):
    d = collections.defaultdict(lambda: G[1])
    return x + d["a"], sorted(d.items())


def sentinel(x):
    it = iter([0, 1, 2, 3])
    return x, list(iter(lambda: G[next(it)], G[2]))


def appended(x):
    operator.methodcaller("append", G[0])(LOG)
    return x * 2.0


def _norm(v):
    if isinstance(v, tf.Tensor):
        return ("tensor", v.numpy().tolist())
    if isinstance(v, (list, tuple)):
        return type(v).__name__, [_norm(a) for a in v]
    return type(v).__name__, v


def _calls(fn):
    G[:] = [1.0, 2.0, 3.0, 4.0]
    LOG.clear()
    out = []
    for i in range(7):
        if i == 5:
            G[1], G[2] = 10.0, -1.0
        out.append((_norm(fn(tf.constant(float(i)))), list(G), list(LOG)))
    return out


def _check(fn):
    spec = janus.speculate(fn)
    assert _calls(spec) == _calls(fn)
    assert spec.stats()["graph_runs"] >= 3, spec.report()


def test_operator_getters_read_properties_and_call_methods_on_every_call():
    _check(getters)


def test_re_sub_functions_read_outside_state_on_every_call():
    _check(substituted)


def test_a_defaultdict_factory_reads_outside_state_on_every_call():
    _check(factory)


def test_iter_with_a_sentinel_calls_the_function_on_every_call():
    spec = janus.speculate(sentinel)
    assert _calls(spec) == _calls(sentinel)


def test_a_methodcaller_of_a_list_method_defers_the_write():
    _check(appended)
