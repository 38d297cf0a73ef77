"""Graph breaks and the function's frame: the driver and each graph segment are frames of their
own, so what needs the function's variables to be one frame's must stay whole or be exact.

Closure cells written after a closure could see them, reads of the frame (`locals()`, `eval`),
private names of a method (compiled outside its class), and iterators a segment would hand on."""
from __future__ import annotations

import collections

import pytest
import tensorflow as tf

import janus
from codegen.syntax import split
from tests.harness import assert_same_outcome, differential, run_capturing


@pytest.fixture(autouse=True)
def small_segments(monkeypatch):
    monkeypatch.setattr(split, "MIN_WORK", 1)


def _imperative_kind(spec):
    return spec.imperative.kind if spec.imperative is not None else None


# -- closure cells --------------------------------------------------------------------------------

def test_a_nonlocal_counter_written_by_a_closure_called_in_a_loop():
    def f(x):
        n = 0

        def add(v):
            nonlocal n
            n += int(v.numpy())
        for t in tf.unstack(x):
            add(t)
        return n
    spec = differential(f, [(tf.constant([1, 2, k]),) for k in range(8)])
    assert _imperative_kind(spec) == "closure-cells", spec.report()
    assert "`n`" in spec.imperative.explanation and "test_graph_breaks_frames.py:" in spec.imperative.where


def test_nonlocal_accumulators_in_a_while_loop_that_breaks():
    def f(x):
        tot = 0.0
        steps = 0

        def take(v):
            nonlocal tot, steps
            tot += float(v.numpy())
            steps += 1
            return tot > 4
        i = 0
        while i < 5:
            if take(x[i]):
                break
            i += 1
        return tot, steps, i
    differential(f, [(tf.constant([1., 1., float(k), 2., 0.5]),) for k in range(8)])


def test_a_nonlocal_best_value_and_a_tensor_result():
    def f(x):
        best = None
        total = 0

        def consider(v):
            nonlocal best, total
            val = v.numpy().item()
            total += 1
            print("v", val)
            if best is None or val > best:
                best = val
        for t in tf.unstack(x):
            consider(t)
        return best, x * total + tf.reduce_sum(x)
    differential(f, [(tf.constant([1., -3., float(k)]),) for k in range(8)])


def test_a_nonlocal_write_from_a_closure_made_in_the_loop():
    def f(x):
        acc = 0.0
        for t in tf.unstack(x):
            def bump(v=t):
                nonlocal acc
                acc += float(v.numpy()) * 2.0
            bump()
            y = t * acc + tf.reduce_sum(x)
        return acc, y
    differential(f, [(tf.constant([1., 2., float(k)]),) for k in range(8)])


def test_a_lambda_reads_a_local_assigned_again_after_the_break():
    def f(x):
        k = 1.0
        scale = lambda v: v * k  # noqa: E731
        print("x", x.numpy())
        k = float(tf.reduce_sum(x * 2.0 + 1.0) - tf.reduce_max(x))
        return scale(x) + tf.reduce_mean(x * 3.0)
    spec = differential(f, [(tf.constant([1.0, float(k)]),) for k in range(8)])
    assert _imperative_kind(spec) == "closure-cells", spec.report()
    assert "`k`" in spec.imperative.explanation


def test_a_nested_def_reads_a_local_a_loop_updates():
    def f(x):
        scale = 1

        def mul(v):
            return v * scale
        out = []
        for t in tf.unstack(x):
            out.append(int(mul(t).numpy()))
            y = mul(t) * 2 + tf.reduce_sum(x)
            scale += 1
        return out, scale, y
    differential(f, [(tf.constant([1, 2, k]),) for k in range(8)])


def test_a_closure_made_before_the_local_it_reads_is_assigned():
    def f(x):
        get = lambda: k  # noqa: E731
        print("x", x.numpy())
        k = tf.reduce_sum(x) * 2.0
        return get() + tf.reduce_mean(x)
    differential(f, [(tf.constant([1.0, float(k)]),) for k in range(8)])


def test_a_local_assigned_once_before_its_closure_stays_split():
    def f(x):
        k = 3.0
        scale = lambda v: v * k  # noqa: E731
        y = tf.tanh(x) * 2.0 + tf.reduce_sum(x)
        print("y", y.numpy())
        z = scale(y) + tf.reduce_mean(y * y)
        return z * 2.0 - tf.reduce_max(z)
    spec = differential(f, [(tf.constant([1.0, float(k)]),) for k in range(12)])
    assert spec.imperative is None and spec.stats()["segment_graph_runs"] >= 4, spec.report()


# -- private names ---------------------------------------------------------------------------------

def test_a_private_attribute_after_the_break():
    class A:
        def __init__(self):
            self.__w = 2.0

        def step(self, x):
            print("x", x.numpy())
            return x * self.__w + tf.reduce_sum(x * 3.0) - tf.reduce_max(x)
    ae, aj = A(), A()
    spec = janus.speculate(aj.step)
    for k in range(12):
        x = tf.constant([1.0, float(k)])
        assert_same_outcome(run_capturing(ae.step, (x,)), run_capturing(spec, (x,)))
    assert spec.stats()["segment_graph_runs"] >= 4, spec.report()


def test_a_private_attribute_written_around_the_break_with_super():
    class Base:
        def scale(self, x):
            return x * 2.0

    class A(Base):
        def __init__(self):
            self.__hidden = 1.0
            self.log = []

        def scale(self, x):
            return x * 5.0

        def step(self, x):
            y = super().scale(x) + tf.reduce_sum(x * 3.0) - tf.reduce_max(x)
            self.log.append(float(y.numpy()[0]))
            self.__hidden = self.__hidden + float(tf.reduce_sum(y * 2.0))
            return super().scale(y) * self.__hidden + tf.reduce_mean(x * 3.0)
    ae, aj = A(), A()
    spec = janus.speculate(aj.step)
    for k in range(8):
        x = tf.constant([1.0, float(k)])
        assert_same_outcome(run_capturing(ae.step, (x,)), run_capturing(spec, (x,)))
        assert ae.log == aj.log and vars(ae).keys() == vars(aj).keys()
        assert ae._A__hidden == aj._A__hidden


def test_private_local_names_and_parameters_in_a_method():
    class _Model:
        __scale = 3.0

        def step(self, x, __bias=1.0):
            __y = x * self.__scale + __bias
            print("y", __y.numpy())
            __z = __y * 2.0 + tf.reduce_sum(__y)
            return __z - tf.reduce_max(__z), _Model.__scale
    m = _Model()
    spec = differential(m.step, [(tf.constant([1.0, float(k)]),) for k in range(12)])
    assert spec.stats()["segment_graph_runs"] >= 4, spec.report()


def test_a_private_attribute_in_a_method_without_a_break_builds_a_graph():
    class A:
        def __init__(self):
            self.__w = 2.0

        def step(self, x):
            return x * self.__w + tf.reduce_sum(x * 3.0)
    a = A()
    spec = differential(a.step, [(tf.constant([1.0, float(k)]),) for k in range(8)])
    assert spec.imperative is None and spec.stats()["graph_runs"] >= 4, spec.report()


# -- reads of the frame ------------------------------------------------------------------------------

def test_locals_and_eval_around_a_break():
    def f(x):
        a = x * 2.0 + tf.reduce_sum(x * 3.0) - tf.reduce_max(x)
        b = a * 2.0
        print(sorted(locals()), x.numpy())
        return eval("b") + 1.0
    spec = differential(f, [(tf.constant([1.0, float(k)]),) for k in range(8)])
    assert _imperative_kind(spec) == "frame-introspection", spec.report()


def test_vars_dir_and_exec_see_the_functions_variables():
    def f(x):
        a = x * 2.0 + tf.reduce_sum(x * 3.0)
        print("x", x.numpy(), sorted(dir()))
        c = a * 3.0 - tf.reduce_max(a)
        exec("print(sorted(vars()))")
        return c + a
    differential(f, [(tf.constant([1.0, float(k)]),) for k in range(8)])


def test_frame_reads_without_a_break_run_in_python():
    """`dir()` and `vars()` without an argument, `locals()` and `eval` in a function that has no
    other break: the builder's frame is not the function's, so the function runs in Python."""
    def listed(x):
        a = x * 2.0
        return a, sorted(dir()), sorted(vars())

    def evaluated(x):
        a = x * 2.0
        return eval("a") * 3.0, sorted(locals())
    for fn in (listed, evaluated):
        spec = differential(fn, [(tf.constant(float(k)),) for k in range(6)])
        assert _imperative_kind(spec) == "frame-introspection", spec.report()


def test_a_frame_read_through_a_name_imported_from_sys_or_inspect():
    from sys import _getframe

    def f(x):
        y = x * 2.0 + tf.reduce_sum(x * 3.0)
        print("x", x.numpy())
        z = y * 3.0 - tf.reduce_max(y)
        return z, sorted(_getframe().f_locals)
    spec = differential(f, [(tf.constant([1.0, float(k)]),) for k in range(8)])
    assert _imperative_kind(spec) == "frame-introspection", spec.report()


def test_a_cell_assigned_in_an_if_before_its_closure_keeps_the_split():
    def f(x, scale=None):
        if scale is None:
            k = 0.5
        else:
            k = scale
        act = lambda v: v * k + 0.5     # noqa: E731
        y = act(x) * 2.0 + tf.reduce_sum(x * 3.0)
        print("x", x.numpy())
        return act(y) * 3.0 - tf.reduce_max(y)
    spec = differential(f, [(tf.constant([1.0, float(k)]),) for k in range(8)])
    assert spec.stats()["segment_graph_runs"] > 0, spec.report()


# -- iterators handed between Python and segments ---------------------------------------------------

def test_an_iterator_made_in_a_segment_and_walked_after_the_break():
    def f(xs):
        it = iter(xs)
        first = next(it)
        acc = first * 2.0 + tf.reduce_sum(first * 3.0) - tf.reduce_max(first)
        for t in it:
            acc = acc + t * 2.0 + tf.reduce_sum(t)
            if float(acc.numpy()[0]) > 10:
                break
        return acc
    differential(f, [([tf.constant([1.0, float(j)]) for j in range(1 + k % 5)],) for k in range(12)])


def test_a_zip_and_a_dict_view_made_before_the_break():
    def f(x):
        pairs = zip([x * 2.0, x + 1.0], [1.0, 2.0])
        d = {"a": x * 3.0, "b": tf.reduce_sum(x)}
        v = d.values()
        print(x.numpy())
        return [a * b for a, b in pairs], list(v)
    differential(f, [(tf.constant([1.0, float(k)]),) for k in range(8)])


def test_a_dict_view_made_before_the_break_sees_the_segments_write():
    def f(x):
        d = {"a": x}
        ks = d.keys()
        y = x * 2.0 + 1.0
        n = y.numpy()
        d["b"] = y + float(n[0])
        z = d["b"] * 3.0 + 2.0
        return list(ks), z
    differential(f, [(tf.constant([1.0, 2.0] if k < 4 else [3.0, -1.0]),) for k in range(12)])


def test_an_iterator_made_in_python_and_walked_by_a_segment():
    def f(xs):
        print("n", len(xs), float(xs[0].numpy()[0]))
        it = iter(xs)
        a = next(it) * 2.0 + tf.reduce_sum(xs[0])
        b = next(it) * 3.0 + a
        return b + tf.reduce_mean(b), list(it)
    differential(f, [([tf.constant([1.0, float(j)]) for j in range(3 + k % 2)],) for k in range(10)])


def test_a_function_returning_an_iterator_runs_in_python():
    def f(x):
        y = x * 2.0 + tf.reduce_sum(x)
        return iter([y, y + 1.0])
    spec = janus.speculate(f)
    for k in range(8):
        x = tf.constant([1.0, float(k)])
        eager, got = list(f(x)), list(spec(x))
        assert len(eager) == len(got)
        for a, b in zip(eager, got):
            assert_same_outcome((("return", a), ""), (("return", b), ""))


def test_a_deque_made_before_the_break_is_a_new_one_per_call():
    def f(x):
        s = collections.deque([1, 2])
        y = x * 2.0 + tf.reduce_sum(x)
        print(x.numpy())
        s.append(len(s))
        return y, list(s)
    differential(f, [(tf.constant([1.0, float(k)]),) for k in range(8)])
