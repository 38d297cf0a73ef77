"""Adversarial programs around attributes written on the sides of a tensor `if`, optimizer
hyperparameters set inside a step, and tensor truth inside `tf.vectorized_map` /
`tf.function(autograph=False)`: every call must match eager's result and state."""
import types

import pytest
import tensorflow as tf

import janus
from tests.harness import assert_same, compare_on_states


_compare = compare_on_states


_LOSSES = [tf.constant([v]) for v in (3.0, 2.0, 2.5, 1.0, 1.5, 1.7, 1.9, 0.5, 0.7, 0.6)]


class _AdamTrainer:
    def __init__(self, opt):
        self.w = tf.Variable([1.0, 2.0])
        self.opt = opt

    def grads(self, x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(self.w * x) ** 2
        return loss, tape.gradient(loss, [self.w])


def set_beta_1_then_step(t, x, b):
    t.opt.beta_1 = b
    loss, g = t.grads(x)
    t.opt.apply_gradients(zip(g, [t.w]))
    return loss


def set_clipnorm_then_step(t, x, c):
    t.opt.clipnorm = c
    loss, g = t.grads(x)
    t.opt.apply_gradients(zip(g, [t.w]))
    return loss


def _compare_trainers(step, make_opt, hyper):
    eager, spec_t = _AdamTrainer(make_opt()), _AdamTrainer(make_opt())
    spec = janus.speculate(step)
    for i in range(7):
        x = tf.constant([1.0, 0.1 * i])
        want, got = step(eager, x, hyper(i)), spec(spec_t, x, hyper(i))
        assert_same(want, got, f"call {i}")
        assert_same(eager.w.read_value(), spec_t.w.read_value(), f"weights after call {i}")
    # (the written attribute is read by the optimizer's own code: the call runs in Python)
    assert "stale-library-read" in spec.report(), spec.report()


def test_adam_beta_1_set_in_the_step_is_the_one_apply_gradients_uses():
    """`opt.beta_1 = b` (a plain attribute of a Keras Adam) then `apply_gradients`: eager's update
    uses the `b` just set, so the weights follow the falling beta_1 on every call."""
    _compare_trainers(set_beta_1_then_step, lambda: tf.keras.optimizers.Adam(0.1), lambda i: 0.9 - 0.1 * i)


def test_sgd_clipnorm_set_in_the_step_is_the_one_apply_gradients_uses():
    """`opt.clipnorm = c` then `apply_gradients`: eager clips the gradients to the `c` just set."""
    _compare_trainers(set_clipnorm_then_step, lambda: tf.keras.optimizers.SGD(0.1, clipnorm=1.0),
                      lambda i: 0.5 + 0.1 * i)


def write_then_attrgetter(o, x):
    import operator
    o.k = tf.reduce_sum(x) + 1
    return operator.attrgetter("k")(o)


def test_an_attribute_written_then_read_by_attrgetter_is_the_new_value():
    """`operator.attrgetter("k")(o)` right after `o.k = ...` gives eager the value just written."""
    _compare(write_then_attrgetter, lambda: types.SimpleNamespace(k=tf.constant(0.0)),
             [tf.constant([float(i)]) for i in range(7)], graph_runs=False)


# -- a tensor's Python use inside a function TensorFlow traces without AutoGraph -----------------

def _vmap_len(x):
    def body(e):
        return e * len(e)
    return tf.vectorized_map(body, x)


def _vmap_list_of_tensor(x):
    def body(e):
        return tf.stack(list(e))
    return tf.vectorized_map(body, x)


def _vmap_builtin_min(x):
    def body(e):
        return min(e[0], e[1])
    return tf.vectorized_map(body, x)


def _vmap_builtin_max(x):
    def body(e):
        return max(e[0], e[1])
    return tf.vectorized_map(body, x)


def _vmap_range_of_size(x):
    def body(e):
        s = e[0]
        for i in range(tf.size(e)):
            s += e[i]
        return s
    return tf.vectorized_map(body, x)


def _raises_as_eager(fn):
    spec = janus.speculate(fn)
    for i in range(6):
        x = tf.constant([[1.0, float(i)], [0.5, -1.0]])
        try:
            want = ("return", fn(x))
        except Exception as exc:        # noqa: BLE001 - compared below
            want = ("raise", type(exc))
        try:
            got = ("return", spec(x))
        except Exception as exc:        # noqa: BLE001 - compared below
            got = ("raise", type(exc))
        assert want[0] == "raise", f"call {i}: eager's trace should raise"
        assert want == got, f"call {i}: eager {want}, janus {got}"


@pytest.mark.parametrize("fn", [_vmap_len, _vmap_list_of_tensor, _vmap_builtin_min, _vmap_builtin_max,
                                _vmap_range_of_size])
def test_a_tensors_python_use_in_a_vectorized_map_function_raises_as_eager(fn):
    """`len(e)`, `list(e)`, `min(e[0], e[1])`, `max(...)`, `range(tf.size(e))` on the map's symbolic
    element: TensorFlow traces the function without AutoGraph, so eager raises on every call
    (TypeError or OperatorNotAllowedInGraphError)."""
    _raises_as_eager(fn)


def _autograph_off_calling_a_tf_function_with_an_if(x):
    @tf.function
    def inner(e):
        if tf.reduce_sum(e) > 2.0:
            e = e * 2.0
        return e

    def body(e):
        return inner(e) + 1
    return tf.function(body, autograph=False)(x)


def test_a_tf_function_called_from_an_autograph_off_function_keeps_its_autograph():
    """The inner `@tf.function` converts its own `if` (AutoGraph on), even when called from a
    `tf.function(..., autograph=False)`: eager returns a value on every call, and nothing in it
    needs Python, so the calls should run in janus's graph."""
    fn = _autograph_off_calling_a_tf_function_with_an_if
    spec = janus.speculate(fn)
    for i in range(6):
        x = tf.constant([[1.0, float(i)], [0.5, -1.0]])
        assert_same(fn(x), spec(x), f"call {i}")
    assert spec.stats()["graph_runs"] > 0, spec.report()


# -- the caller's object, where no writing side ran --------------------------------------------

def best_over_two_ifs(o, x):
    if x[0] > 1.0:
        o.best = x[0]
    if x[1] > 1.0:
        o.best = x[1] * 10
    return x


def best_over_a_python_loop(o, x):
    for i in range(2):
        if x[i] > 1.0:
            o.best = x[i]
    return x


_PAIRS = [tf.constant([a, b]) for a, b in ((0.5, 2.0), (2.0, 0.1), (0.0, 0.1), (0.2, 3.0), (0.4, 0.5),
                                           (1.5, 0.5), (0.1, 0.1), (2.5, 0.3), (0.1, 4.0))]


@pytest.mark.parametrize("fn", [best_over_two_ifs, best_over_a_python_loop])
def test_a_tensor_kept_where_no_tensor_if_writing_it_ran_is_the_callers_object(fn):
    """Two tensor `if`s (written out, or a Python loop's) each set `o.best` on one side; where
    neither side runs (both items <= 1), eager leaves the caller's very tensor on the object."""
    eager_s, spec_s = types.SimpleNamespace(best=tf.constant(1.0)), types.SimpleNamespace(best=tf.constant(1.0))
    spec = janus.speculate(fn)
    for i, x in enumerate(_PAIRS):
        was_e, was_s = eager_s.best, spec_s.best
        fn(eager_s, x)
        spec(spec_s, x)
        assert_same(eager_s.best, spec_s.best, f"call {i}")
        assert (eager_s.best is was_e) == (spec_s.best is was_s), f"call {i}: the caller's object kept"
    assert spec.stats()["graph_runs"] > 0
