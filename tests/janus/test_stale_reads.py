"""Entry guards cover every outside value a graph depends on: lists inside outside
containers, NumPy arrays changed in place (fed per call), methods patched on the instance or
the class, and an argument list that is also a global."""
import types

import numpy as np
import tensorflow as tf

import janus

X = tf.constant([1.0, 2.0])
CFG = {"scales": [1, 2], "names": {"a": 3}}
ARR = np.array([1.0, 2.0])
LOG = []


def reads_nested_containers(x):
    return x * CFG["scales"][1] + CFG["names"]["a"]


def reads_a_numpy_global(x):
    return x * ARR + 1.0


class Model:
    def act(self, x):
        return x + 1.0


MODEL = Model()


def times_100(self, x):
    return x * 100.0


def minus_7(self, x):
    return x - 7.0


def calls_a_method(x):
    return MODEL.act(x) * 2.0


def appends_to_argument_and_reads_global(x, lst):
    lst[0] = lst[0] + 1
    return x * LOG[0]


def run_and_mutate(fn, mutate_at, mutate, calls=10):
    """Eager and janus agree on every call when the state changes between calls."""
    spec = janus.speculate(fn)
    for i in range(calls):
        if i == mutate_at:
            mutate()
        want, got = fn(X), spec(X)
        assert want.numpy().tolist() == got.numpy().tolist(), (i, want, got)
    return spec


def test_lists_inside_outside_containers_are_checked():
    def mutate():
        CFG["scales"][1] = 10
        CFG["names"]["a"] = -4
    spec = run_and_mutate(reads_nested_containers, 5, mutate)
    assert spec.stats()["graph_runs"] >= 5, spec.report()
    assert any("scales" in m for m in spec.misses), spec.misses


def test_a_numpy_global_changed_in_place_is_fed_per_call():
    ARR[:] = [1.0, 2.0]

    def mutate():
        ARR[0] = 100.0
    spec = run_and_mutate(reads_a_numpy_global, 5, mutate)
    assert spec.stats()["graphs_built"] == 1, spec.report()    # same dtype and shape: the graph stays


def test_a_numpy_global_of_another_shape_or_dtype_misses_the_cache():
    global ARR
    ARR = np.array([1.0, 2.0])

    def mutate():
        global ARR
        ARR = np.array([3.0, 4.0], dtype=np.float32)
    spec = run_and_mutate(reads_a_numpy_global, 5, mutate)
    assert any("ARRAY_MATCH" in m for m in spec.misses), spec.misses


def test_a_method_patched_on_the_instance_or_the_class_is_called():
    spec = run_and_mutate(calls_a_method, 4, lambda: setattr(MODEL, "act", types.MethodType(times_100, MODEL)))
    del MODEL.act
    assert spec.stats()["graph_runs"] >= 4, spec.report()
    spec = run_and_mutate(calls_a_method, 4, lambda: setattr(Model, "act", minus_7))
    assert spec.stats()["graph_runs"] >= 4, spec.report()


def alias_runs(which):
    """Eager, then janus, each on fresh lists: results and LOG after every call."""
    runs = []
    for fn in (appends_to_argument_and_reads_global, janus.speculate(appends_to_argument_and_reads_global)):
        LOG[:] = [0]
        mine = [0]
        out = [(fn(X, LOG if w == "global" else mine).numpy().tolist(), list(LOG), list(mine)) for w in which]
        runs.append((out, fn))
    assert runs[0][0] == runs[1][0]
    return runs[1][1]


def test_an_argument_list_that_is_also_a_global_is_one_list():
    spec = alias_runs(["global"] * 7)
    assert spec.imperative is not None, spec.report()


def test_an_argument_list_that_is_another_list_runs_as_a_graph():
    spec = alias_runs(["mine"] * 6 + ["global"] * 2 + ["mine"] * 2)
    assert spec.stats()["graph_runs"] >= 4, spec.report()
    assert any("ALIASING" in m for m in spec.misses), spec.misses


BOX = types.SimpleNamespace(y=1.0)


def writes_then_introspects(x):
    BOX.y = 5.0
    BOX.z = 2.0
    return x * getattr(BOX, "y") + (3.0 if hasattr(BOX, "z") else 0.0) + len(vars(BOX))


def test_getattr_hasattr_vars_see_writes_of_the_same_call():
    eager_state, spec_state = [], []
    spec = janus.speculate(writes_then_introspects)
    for _ in range(6):
        BOX.__dict__.clear()
        BOX.y = 1.0
        want = writes_then_introspects(X)
        eager_state.append(dict(vars(BOX)))
        BOX.__dict__.clear()
        BOX.y = 1.0
        got = spec(X)
        spec_state.append(dict(vars(BOX)))
        assert want.numpy().tolist() == got.numpy().tolist()
    assert eager_state == spec_state


class Seen:
    def __init__(self):
        self.seen = {}

    def update(self, x, tag):
        self.seen[tag] = self.seen.get(tag, 0) + 1
        return x * 2.0


def test_a_dict_whose_values_changed_is_read_fresh():
    """`seen[tag] = seen.get(tag, 0) + 1`: the entry check compared a dict's keys only, so the
    graph kept the count it was built with (t0 counted 4 where eager counted 100)."""
    counts = []
    for speculated in (False, True):
        s = Seen()
        update = janus.speculate(Seen.update) if speculated else Seen.update
        for k in range(30):
            update(s, X, "warm" if k < 4 else f"t{k % 2}")
        counts.append(dict(s.seen))
    assert counts[0] == counts[1]
