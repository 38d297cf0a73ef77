"""Mutable defaults (`def f(x, acc=[])`): the function changes the very object its default holds
on every call that leaves it out, in a graph as eagerly, and no graph tensor ends up in it."""
import tensorflow as tf

import janus


def appends(x, acc=[]):                    # noqa: B006 - the pattern under test
    acc.append(x * 2.0)
    return tf.add_n(acc), len(acc)


def helper(x, acc=[]):                     # noqa: B006
    acc.append(x * 2.0)
    return tf.add_n(acc), len(acc)


def calls_helper(x):
    return helper(x)


def keyword_only(x, *, seen={}):           # noqa: B006
    seen[len(seen)] = x
    return x * len(seen)


def reads_config(x, config={"scale": 2.0}):    # noqa: B006
    return x * config["scale"]


def _plain(value):
    return tf.nest.map_structure(lambda v: float(v) if isinstance(v, tf.Tensor) else v, value)


def _run(fn, reset, calls=6, between=None):
    out = []
    for i in range(calls):
        if between is not None:
            between(i)
        out.append(_plain(fn(tf.constant(float(i)))))
    return out


def _compare(fn, reset, between=None, state=None):
    reset()
    eager = _run(fn, reset, between=between)
    eager_state = state() if state else None
    reset()
    spec = janus.speculate(fn, profile_runs=2)
    assert _run(spec, reset, between=between) == eager
    if state:
        assert state() == eager_state
    return spec


def _eager_only(values):
    return all(type(v).__name__ == "EagerTensor" for v in values)


def test_a_default_list_the_function_appends_to_grows_on_every_call():
    spec = _compare(appends, appends.__defaults__[0].clear, state=lambda: len(appends.__defaults__[0]))
    assert spec.stats()["graph_runs"] >= 3
    assert _eager_only(appends.__defaults__[0])


def test_an_inlined_helper_appending_to_its_default_list():
    spec = _compare(calls_helper, helper.__defaults__[0].clear, state=lambda: len(helper.__defaults__[0]))
    assert spec.stats()["graph_runs"] >= 3
    assert _eager_only(helper.__defaults__[0])


def test_a_keyword_only_default_dict():
    spec = _compare(keyword_only, keyword_only.__kwdefaults__["seen"].clear,
                    state=lambda: sorted(keyword_only.__kwdefaults__["seen"]))
    assert spec.stats()["graph_runs"] >= 3
    assert _eager_only(keyword_only.__kwdefaults__["seen"].values())


def test_a_default_dict_changed_from_outside_between_calls():
    config = reads_config.__defaults__[0]

    def between(i):
        if i == 4:
            config["scale"] = 5.0

    spec = _compare(reads_config, lambda: config.update(scale=2.0), between=between)
    assert spec.stats()["graph_runs"] >= 2


def test_a_default_list_replaced_between_calls():
    original = appends.__defaults__

    def between(i):
        if i == 4:
            appends.__defaults__ = ([tf.constant(10.0)],)

    try:
        _compare(appends, lambda: setattr(appends, "__defaults__", ([],)), between=between,
                 state=lambda: len(appends.__defaults__[0]))
    finally:
        appends.__defaults__ = original


EMITTED = []


def emits(x, emit=EMITTED.append):
    emit(7)
    return x * len(EMITTED)


def test_a_bound_method_of_a_list_as_a_default():
    spec = _compare(emits, EMITTED.clear, state=lambda: list(EMITTED))
    assert spec.report()
