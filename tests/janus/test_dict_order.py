"""Dict order: a dict iterates in the order its keys were inserted, so a graph built for one order
must not serve a call whose dict (or `**kwargs`) comes in another.  The entry guard checks the
keys of argument dicts in order (and their types: a key `True` finds the entry of `1`), and the
order of the keywords where the function takes `**kwargs`."""
import collections

import tensorflow as tf

from tests.harness import assert_same_outcome, differential, run_capturing

import janus

X = tf.constant([1.0, 2.0])


def _keys_and_values(d):
    return [k for k in d], [v + 1.0 for v in d.values()], list({k: v * 2.0 for k, v in d.items()})


def _ab(i, flip_at=4):
    return {"a": X, "b": X * 3.0} if i < flip_at else {"b": X * 3.0, "a": X}


def test_a_dict_argument_in_one_order_runs_the_graph():
    spec = differential(_keys_and_values, [(_ab(i, flip_at=99),) for i in range(6)])
    assert spec.stats()["graph_runs"] > 0, spec.report()


def test_a_dict_argument_whose_key_order_changes():
    spec = differential(_keys_and_values, [(_ab(i),) for i in range(8)])
    assert spec.stats()["graph_runs"] > 0, spec.report()


def test_dicts_nested_in_lists_tuples_and_dicts_keep_their_order():
    def f(items):
        return _keys_and_values(items[0][0]), _keys_and_values(items[1]["inner"])

    spec = differential(f, [([(_ab(i), 1), {"inner": _ab(i, flip_at=5)}],) for i in range(8)])
    assert spec.stats()["graph_runs"] > 0, spec.report()


def test_int_keys_in_another_order_and_a_bool_key_equal_to_an_int():
    def f(d):
        return [(type(k).__name__, k) for k in d], [v * 2.0 for v in d.values()]

    calls = [({1: X, 2: X},)] * 4 + [({2: X, 1: X},), ({True: X, 2: X},), ({1: X, 2: X},)]
    spec = differential(f, calls)
    assert spec.stats()["graph_runs"] > 0, spec.report()


def test_kwargs_order_reaches_a_function_that_takes_kwargs():
    def f(x, **options):
        return [k for k in options], [x * v for v in options.values()]

    calls = [{"args": (X,), "kwargs": {"a": 1.0, "b": X} if i < 4 else {"b": X, "a": 1.0}} for i in range(7)]
    spec = differential(f, calls)
    assert spec.stats()["graph_runs"] > 0, spec.report()


def test_kwargs_order_does_not_matter_to_named_parameters():
    def f(x, a=0.0, b=0.0):
        return x * a + b

    calls = [{"args": (X,), "kwargs": {"a": 2.0, "b": 3.0} if i % 2 else {"b": 3.0, "a": 2.0}} for i in range(8)]
    spec = differential(f, calls)
    assert spec.stats()["graph_runs"] >= 4 and spec.stats()["graphs_built"] == 1, spec.report()


CONFIG = {"a": X, "b": X * 3.0}
ORDERED = collections.OrderedDict(a=X, b=X * 3.0)


class Model:
    def __init__(self):
        self.cfg = {"a": X, "b": X * 3.0}


def _reorder(d):
    d["a"] = d.pop("a")


def test_outside_dicts_reordered_in_place():
    def f(m, x):
        return _keys_and_values(CONFIG), _keys_and_values(ORDERED), _keys_and_values(m.cfg), x * 2.0

    model = Model()
    spec = janus.speculate(f)
    for i in range(8):
        if i == 5:
            _reorder(CONFIG)
            ORDERED.move_to_end("a")
            _reorder(model.cfg)
        assert_same_outcome(run_capturing(f, (model, X)), run_capturing(spec, (model, X)))
    assert spec.stats()["graph_runs"] > 0, spec.report()
