"""Containers of Python's library that the function makes and returns (`OrderedDict`, `deque`,
`defaultdict`, `ChainMap`, `Counter`, `SimpleNamespace`) hold what eager's hold: a Python number
a recursion computed stays a Python number of its type, a tensor is an eager tensor, and a library
object janus cannot make again with the run's values runs the function in Python."""
import argparse
import collections
import types

import pytest
import tensorflow as tf

import janus
from tests.harness import assert_same


def ieven(m):
    if m <= 0:
        return 1
    return iodd(m - 1)


def iodd(m):
    if m <= 0:
        return 0
    return ieven(m - 1) + 1


def _parity(n):
    """`n` plus a Python int from a mutual recursion on a tensor: the int and float of `n`."""
    return n + int(ieven(tf.constant(abs(n) % 7)))


def ordered(x, n):
    return collections.OrderedDict(t=x * 1.0, k=_parity(n))


def queued(x, n):
    return collections.deque([x * 1.0, _parity(n)])


def defaulted(x, n):
    out = collections.defaultdict(list, k=_parity(n))
    out["t"] = x * 1.0
    return out


def chained(x, n):
    return collections.ChainMap({"k": _parity(n)}, {"t": x * 1.0})


def _plain(value):
    """A structure `assert_same` compares: the library containers as dicts and lists."""
    if isinstance(value, collections.deque):
        return [_plain(v) for v in value]
    if isinstance(value, types.SimpleNamespace):
        return {k: _plain(v) for k, v in vars(value).items()}
    if isinstance(value, collections.ChainMap):
        return {k: _plain(value[k]) for k in sorted(value)}
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


@pytest.mark.parametrize("fn", [ordered, queued, defaulted, chained], ids=lambda f: f.__name__)
def test_a_recursions_python_number_stays_python_in_a_library_container(fn):
    """Found by the differential fuzzer: after calls with an int and an int tensor, a call with
    7.5 returned the recursion's sum as a float32 tensor in an `OrderedDict` (eager: 7.5).  A
    `ChainMap` keeps its dicts in a list janus does not make again: it runs in Python."""
    spec = janus.speculate(fn)
    for n in [19, tf.constant(17), 1, 7.5, 2.5, 3, 4.0]:
        x = tf.constant([1.0, 2.0])
        expected, got = fn(x, n), spec(x, n)
        assert type(got) is type(expected)
        assert_same(_plain(expected), _plain(got))
    if fn is chained:
        assert spec.stats()["graph_runs"] == 0 and "a ChainMap the function made holds graph" in spec.report()
    else:
        assert spec.stats()["graph_runs"] >= 3, spec.report()


def namespace(x):
    ns = types.SimpleNamespace(t=x * 2.0, n=3)
    ns.inner = [x + 1.0, {"u": x * 3.0}]
    return ns


def test_a_simple_namespace_returned_holds_eager_tensors():
    """A `SimpleNamespace` holding the function's tensors came back holding graph tensors."""
    spec = janus.speculate(namespace)
    for i in range(5):
        x = tf.constant([float(i)])
        expected, got = namespace(x), spec(x)
        assert type(got) is types.SimpleNamespace
        assert_same(_plain(expected), _plain(got))
    assert spec.stats()["graph_runs"] >= 2, spec.report()


def shared_namespace(x):
    ns = types.SimpleNamespace(t=x * 2.0)
    return [ns, ns]


def test_one_namespace_returned_twice_is_one_object():
    spec = janus.speculate(shared_namespace)
    for i in range(5):
        got = spec(tf.constant([float(i)]))
        assert got[0] is got[1] and float(got[0].t[0]) == 2.0 * i


def counted(x):
    return collections.Counter(a=x * 2.0, b=3)


def test_a_counter_returned_holds_its_keys_and_values():
    """The copy was filled by `Counter.update`, which counts the (key, value) pairs."""
    spec = janus.speculate(counted)
    for i in range(5):
        x = tf.constant([float(i)])
        expected, got = counted(x), spec(x)
        assert type(got) is collections.Counter
        assert_same(dict(expected), dict(got))
    assert spec.stats()["graph_runs"] >= 2, spec.report()


def parsed(x):
    return argparse.Namespace(t=x * 2.0)


def test_a_library_object_holding_a_tensor_runs_in_python():
    """A library object the function made, holding a graph value, that janus cannot make again
    with the run's values: the function runs in Python (eager's object, eager's tensor)."""
    spec = janus.speculate(parsed)
    for i in range(5):
        got = spec(tf.constant([float(i)]))
        assert type(got) is argparse.Namespace and type(got.t) is type(parsed(tf.constant([0.0])).t)
        assert float(got.t[0]) == 2.0 * i
    assert spec.stats()["graph_runs"] == 0, spec.report()
