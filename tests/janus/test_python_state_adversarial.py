"""Programs an adversarial round wrote against the `UNCHANGED` check and the replaying re-run,
each compared call by call with eager from the same fresh state: results or exception types, the
state involved, and how often the Python the graph calls ran (it must run once per call)."""
import functools
import math
import types

import numpy as np
import pytest
import tensorflow as tf

import janus

INPUTS = [1, 2, 3, 1, 2, 5, 1, 6, 2, 3, 7, 1]


def _run(make, wrap):
    """`make()` -> (fn, call, dump): call `call(fn, x)` on every input; the outcome per call."""
    fn, call, dump = make()
    fn = wrap(fn)
    out = []
    for v in INPUTS:
        try:
            out.append(("ok", np.asarray(call(fn, tf.constant(float(v)))).tolist()))
        except Exception as exc:  # noqa: BLE001 - compared below
            out.append(("raised", type(exc).__name__))
        out.append(("state", repr(dump())))
    return out, fn


def _same(make, graph_runs=0):
    eager, _ = _run(make, lambda f: f)
    got, spec = _run(make, janus.speculate)
    assert got == eager
    assert spec.stats()["graph_runs"] >= graph_runs, spec.report()
    return spec


def _plain(fn, x):
    return fn(x)


def raising_call():
    log, n = [], [0]

    def g(x):
        n[0] += 1
        log.append(float(x))
        if x > 4:
            raise ValueError(f"too big {x}")
        return x

    def fn(x):
        return tf.numpy_function(g, [x], tf.float32) + 1
    return fn, _plain, lambda: (log, n)


def partial_call():
    log, n = [], [0]

    def g(x, k):
        n[0] += 1
        if x > 4:
            log.append(float(x))
        return x * k

    def fn(x):
        y = tf.numpy_function(functools.partial(g, k=np.float32(2)), [x], tf.float32)
        return y + float(len(log))
    return fn, _plain, lambda: (log, n)


def function_swapped():
    box = types.SimpleNamespace(scale=lambda v: v * 2.0, other=lambda v: v * 3.0, n=0)

    def swap(x):
        box.n += 1
        if x > 4:
            box.scale, box.other = box.other, box.scale
        return x

    def fn(x):
        return box.scale(tf.numpy_function(swap, [x], tf.float32))
    return fn, _plain, lambda: (box.scale(1.0), box.n)


def dict_order():
    table = {"a": 1.0, "b": 10.0, "c": 100.0}

    def rot(x):
        if x > 4:
            k = next(iter(table))
            table[k] = table.pop(k)
        return x

    def fn(x):
        y = tf.numpy_function(rot, [x], tf.float32)
        return y * list(table.values())[0]
    return fn, _plain, lambda: list(table.items())


def negative_zero():
    box = types.SimpleNamespace(g=0.0)

    def flip(x):
        if x > 4:
            box.g = -0.0 if math.copysign(1.0, box.g) > 0 else 0.0
        return x

    def fn(x):
        return tf.numpy_function(flip, [x], tf.float32) * math.copysign(1.0, box.g)
    return fn, _plain, lambda: box.g


def argument_list():
    items = [1.0]

    def g(x):
        if x > 4:
            items.append(float(x))
        return x

    def fn(x, lst):
        y = tf.numpy_function(g, [x], tf.float32)
        return y + len(lst) + lst[-1]
    return fn, (lambda f, x: f(x, items)), lambda: list(items)


def argument_array():
    arr = np.ones(3, np.float32)

    def g(x):
        if x > 4:
            arr[0] += 1.0
        return x

    def fn(x, a):
        y = tf.numpy_function(g, [x], tf.float32)
        return y + tf.reduce_sum(tf.convert_to_tensor(a))
    return fn, (lambda f, x: f(x, arr)), lambda: arr.tolist()


def large_early_read():
    big, flag = list(range(2500)), [0]

    def g(v):
        big.append(1)
        if v > 4:
            flag[0] += 1
        return v

    def fn(x):
        n = len(big)
        y = tf.numpy_function(g, [x], tf.float32)
        return y + float(n) + flag[0]
    return fn, _plain, lambda: (len(big), flag)


@pytest.mark.parametrize("make", [raising_call, partial_call, function_swapped, dict_order, negative_zero,
                                  argument_list, argument_array, large_early_read])
def test_python_the_graph_calls_changes_state_as_in_eager(make):
    _same(make)


N = [0]


def nested_def(x):
    def inner(v):
        N[0] += 1                               # a global of this module, read when the graph runs
        return v * 2
    return tf.numpy_function(inner, [x], tf.float32) + 1


def test_a_nested_function_the_graph_calls_sees_the_modules_globals():
    N[0] = 0
    eager = [float(nested_def(tf.constant(float(v)))) for v in INPUTS]
    calls = N[0]
    N[0] = 0
    spec = janus.speculate(nested_def)
    assert [float(spec(tf.constant(float(v)))) for v in INPUTS] == eager and N[0] == calls
    assert spec.stats()["graph_runs"] >= 8, spec.report()


CFG = types.ModuleType("janus_test_cfg")
CFG.K = 1.0
SET = {1, 2}
NESTED = {"hist": [1, 2]}


def module_attribute(x):
    return x * CFG.K


def set_read(x):
    return x + float(len(SET)) + (100.0 if 5 in SET else 0.0)


def nested_length(x):
    return x + float(len(NESTED["hist"]))


def _between_calls(fn, change):
    """State changed between calls (no Python inside the graph): janus must see every change."""
    def make():
        return fn, (lambda f, x: (change(x), f(x))[1]), lambda: (CFG.K, sorted(SET), NESTED)
    snapshot = (CFG.K, set(SET), list(NESTED["hist"]))

    def reset():
        CFG.K, NESTED["hist"][:] = snapshot[0], snapshot[2]
        SET.clear()
        SET.update(snapshot[1])
    reset()
    eager, _ = _run(make, lambda f: f)
    reset()
    got, spec = _run(make, janus.speculate)
    reset()
    assert got == eager
    return spec


def _bump_k(x):
    if float(x) > 4:
        CFG.K += 1.0


def test_a_user_modules_attribute_changed_between_calls_is_read_fresh():
    _between_calls(module_attribute, _bump_k)


def test_a_set_changed_between_calls_is_checked_by_its_items():
    _between_calls(set_read, lambda x: SET.add(int(float(x))) if float(x) > 4 else None)


def test_a_nested_lists_length_fed_per_call_reads_the_nested_list():
    spec = _between_calls(nested_length, lambda x: NESTED["hist"].append(1) if float(x) > 4 else None)
    assert spec.stats()["graph_runs"] >= 4, spec.report()


VAR = tf.Variable(0.0)
VLOG = []


def variable_before_call(x):
    a = VAR.read_value()

    def bump(v):
        VAR.assign_add(1.0)
        if v > 4:
            VLOG.append(1)
        return v
    y = tf.numpy_function(bump, [x], tf.float32)
    return a + y + float(len(VLOG))


def test_a_variable_the_called_python_assigns_is_read_as_the_run_found_it():
    """The re-run after a failed run reads the variable as the run found it, not as the Python the
    run called left it, and the replayed call leaves its assignment."""
    def make():
        VAR.assign(0.0)
        VLOG.clear()
        return variable_before_call, _plain, lambda: (float(VAR.numpy()), list(VLOG))
    _same(make)


ORDERED = tf.Variable(0.0)


def read_call_read(x):
    before = ORDERED.read_value()

    def bump(v):
        ORDERED.assign_add(1.0)
        return v
    y = tf.numpy_function(bump, [x], tf.float32)
    return before * 100.0 + y + ORDERED.read_value()


def test_variable_reads_before_and_after_a_python_call_keep_its_order():
    """TensorFlow orders ops on the same variable, not a Python call that assigns it: the read
    before the call must not run after it, nor the read after it before."""
    ORDERED.assign(0.0)
    eager = [float(read_call_read(tf.constant(float(v)))) for v in range(40)]
    ORDERED.assign(0.0)
    spec = janus.speculate(read_call_read)
    assert [float(spec(tf.constant(float(v)))) for v in range(40)] == eager
    assert spec.stats()["graph_runs"] >= 30, spec.report()


# A third round: state the rewind must put back without running the user's code, and objects the
# function makes on every call, which a graph would keep from its build.

class _Slotted:
    __slots__ = ("k",)

    def __init__(self):
        self.k = 1.0


class _Logged:
    def __init__(self):
        object.__setattr__(self, "writes", [])
        object.__setattr__(self, "k", 1.0)

    def __setattr__(self, name, value):
        self.writes.append(name)
        object.__setattr__(self, name, value)


class _Shadowed:
    k = 1.0


def _changes_k(holder, step):
    def py(x):
        if x > 4:
            step(holder)
        return x

    def fn(x):
        a = x * holder.k
        y = tf.numpy_function(py, [x], tf.float32)
        tf.debugging.assert_less(y, 6.0)            # fails after the call changed holder.k
        return a + y * holder.k
    return fn


def slots_field():
    holder = _Slotted()
    return _changes_k(holder, lambda h: setattr(h, "k", h.k + 3.0)), _plain, lambda: holder.k


def logging_setattr():
    holder = _Logged()
    return (_changes_k(holder, lambda h: setattr(h, "k", h.k * 2.0)), _plain,
            lambda: (holder.k, list(holder.writes)))


def class_attribute_shadowed():
    holder = _Shadowed()
    return (_changes_k(holder, lambda h: setattr(h, "k", h.k + 10.0)), _plain,
            lambda: (holder.k, "k" in vars(holder)))


def replaced_after_change():
    box, hist = types.SimpleNamespace(items=[1.0]), []

    def py(x):
        if x > 4:
            box.items.append(float(x))
            hist.append(box.items)
            box.items = [0.0]
        return x

    def fn(x):
        a = x * len(box.items)
        y = tf.numpy_function(py, [x], tf.float32)
        tf.debugging.assert_less(y, 6.0)
        return a + y
    return fn, _plain, lambda: (box.items, hist)


def variable_written_by_both():
    v = tf.Variable(1.0)

    def py(x):
        v.assign(v.numpy() * 2.0)
        return x

    def fn(x):
        v.assign_add(x)
        y = tf.numpy_function(py, [x], tf.float32)
        tf.debugging.assert_less(y, 6.0)
        return y + v
    return fn, _plain, lambda: float(v.numpy())


class _Helper:
    def __init__(self, scale):
        self.scale, self.calls = scale, 0

    def run(self, x):
        self.calls += 1
        return x * self.scale + self.calls


def fresh_per_call():
    def fn(x):
        acc = []

        def g(v):
            acc.append(v)
            return np.float32(len(acc))
        helper = _Helper(2.0)
        a = tf.numpy_function(g, [x], tf.float32)
        b = tf.numpy_function(helper.run, [x], tf.float32)
        c = tf.numpy_function(functools.partial(helper.run), [x], tf.float32)
        return a + b + c
    return fn, _plain, lambda: None


@pytest.mark.parametrize("make", [slots_field, logging_setattr, class_attribute_shadowed, replaced_after_change,
                                  variable_written_by_both, fresh_per_call])
def test_the_rewind_and_the_called_functions_keep_eagers_state(make):
    _same(make)
