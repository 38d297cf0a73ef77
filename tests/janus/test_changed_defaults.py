"""Defaults the program changes between calls (`f.__defaults__ = ...`, a keyword-only default
changed in place): every call takes the defaults the function holds at that call, as eager
does, whether the speculated function or a function its graph inlines takes them."""
import inspect

import pytest
import tensorflow as tf

import janus
from codegen.operators.defaults import Defaults
from tests.harness import assert_same_outcome, run_capturing


def scaled(x, s=2.0):
    return x * s + 1.0


def helper(x, s=2.0):
    return x * s


def kw_helper(x, *, s=2.0):
    return x * s


def only_positional(x, acc=[], /):         # noqa: B006 - the pattern under test
    acc.append(1)
    return x * len(acc)


def calls_helpers(x):
    return helper(x) + kw_helper(x)


def calls_only_positional(x):
    return only_positional(x)


def weighted(x, w=tf.constant([1.0, 2.0])):
    return x * w


def keyword_scaled(x, *, s=2.0, shift=None):
    return x * s if shift is None else x * s + shift


@pytest.fixture
def restore():
    fns = (scaled, helper, kw_helper, weighted, keyword_scaled)
    saved = [(f, f.__defaults__, f.__kwdefaults__ and dict(f.__kwdefaults__)) for f in fns]
    yield
    for f, d, kw in saved:
        f.__defaults__, f.__kwdefaults__ = d, kw


def _compare(fn, changes, calls=8):
    """Call `fn` and its speculated twin; before call i, `changes[i]()` changes a default."""
    spec = janus.speculate(fn)
    for i in range(calls):
        if i in changes:
            changes[i]()
        x = tf.constant([1.0, float(i)])
        assert_same_outcome(run_capturing(fn, (x,)), run_capturing(spec, (x,)))
    return spec


def _set(fn, name, value):
    return lambda: setattr(fn, name, value)


def _set_item(fn, key, value):
    return lambda: fn.__kwdefaults__.__setitem__(key, value)


def test_unchanged_defaults_keep_one_graph(restore):
    for fn in (scaled, calls_helpers, keyword_scaled):
        spec = _compare(fn, {})
        assert spec.stats()["graphs_built"] == 1 and spec.stats()["graph_runs"] == 5, spec.report()


def test_a_replaced_default_of_the_speculated_function_is_taken(restore):
    spec = _compare(scaled, {5: _set(scaled, "__defaults__", (10.0,))})
    assert spec.stats()["graph_runs"] >= 4, spec.report()


def test_a_keyword_only_default_changed_in_place_is_taken(restore):
    _compare(keyword_scaled, {4: _set_item(keyword_scaled, "s", 5.0), 6: _set_item(keyword_scaled, "shift", 1.0)})


def test_a_tensor_default_replaced_by_another_tensor_is_taken(restore):
    _compare(weighted, {5: _set(weighted, "__defaults__", (tf.constant([3.0, 4.0]),))})


def test_defaults_of_an_inlined_function_replaced_or_changed_in_place_are_taken(restore):
    spec = _compare(calls_helpers, {4: _set(helper, "__defaults__", (10.0,)), 5: _set_item(kw_helper, "s", 7.0),
                                    7: _set(kw_helper, "__kwdefaults__", {"s": -1.0})}, calls=9)
    assert spec.stats()["graph_runs"] >= 4, spec.report()


def test_a_mutable_positional_only_default_of_an_inlined_function_keeps_the_graph():
    only_positional.__defaults__[0].clear()
    spec = janus.speculate(calls_only_positional)
    eager = [float(calls_only_positional(tf.constant(2.0))) for _ in range(3)]
    only_positional.__defaults__[0].clear()
    got = [float(spec(tf.constant(2.0))) for _ in range(6)]
    assert got[:3] == eager and got == [2.0 * k for k in range(1, 7)]
    assert spec.stats()["graph_runs"] >= 2, spec.report()
    assert only_positional.__defaults__[0] == [1] * 6


def _signatures():
    def a(x, y=1, z=2): pass                                # noqa: E704
    def b(x, /, y=1, *rest, k=3, m): pass                   # noqa: E704
    def c(x, *rest, k=3): pass                              # noqa: E704
    def d(*rest, **kw): pass                                # noqa: E704
    def e(x, y=1, /, *, k=3, **kw): pass                    # noqa: E704
    return a, b, c, d, e


@pytest.mark.parametrize("fn", _signatures(), ids=lambda f: f.__name__)
def test_defaults_are_filled_in_as_binding_the_signature_fills_them(fn):
    """The call janus makes passes what `inspect.signature(fn).bind(...).apply_defaults()` gives,
    or the call as it was where binding raises (the call then raises Python's own error)."""
    filler, signature = Defaults(fn), inspect.signature(fn)
    for n in range(5):
        for kwargs in ({}, {"k": 9}, {"m": 1}, {"y": 5}):
            args = tuple(range(n))
            try:
                bound = signature.bind(*args, **kwargs)
                bound.apply_defaults()
                want = (bound.args, bound.kwargs)
            except TypeError:
                want = (args, kwargs)
            got = filler.fill(args, kwargs)
            assert (tuple(got[0]), dict(got[1])) == (tuple(want[0]), dict(want[1])), (n, kwargs)
