"""The program's functions handed to TensorFlow and Keras, which call them back while a graph is
traced, in the forms programs write them: a `functools.partial`, an object with `__call__`, a
bound method as a layer's activation, a partial as a custom gradient's gradient function, a
nested function whose default reads a dict, a nested `@tf.function`, branches that give Python
values.  Eagerly each is called on every call, reads what it reads again and gives what Python
gives; the speculated function must do the same on every call."""
import functools

import numpy as np
import pytest
import tensorflow as tf

import janus
from tests.harness import assert_same
from tests.janus.test_tensorflow_callbacks import _compare

CFG = {"k": 2.0}


def _eight_calls_k_changes(fn, make_args, change):
    """Eight calls of `fn` and its speculated twin; `change()` runs before the sixth."""
    spec = janus.speculate(fn)
    for i in range(8):
        if i == 5:
            change()
        _compare(fn, spec, make_args(i))
    assert spec.stats()["graph_runs"] > 0, spec.report()


# -- a partial and a callable object given to tf.map_fn ---------------------------------------

def _scale(e, k):
    return e * k * CFG["k"]


def _map_partial(x):
    return tf.map_fn(functools.partial(_scale, k=3.0), x)


def test_a_partial_given_to_map_fn_reads_the_global_dict_item_on_every_call():
    """`tf.map_fn(functools.partial(_scale, k=3.0), x)`, `_scale` multiplying by CFG["k"] too.
    CFG["k"] goes from 2.0 to 10.0 before the sixth call: eagerly x = [1, 5] then gives
    [30, 150]."""
    CFG["k"] = 2.0
    try:
        _eight_calls_k_changes(_map_partial, lambda i: (tf.constant([1.0, float(i)]),),
                               lambda: CFG.update(k=10.0))
    finally:
        CFG["k"] = 2.0


class _Mul:
    def __init__(self):
        self.k = 2.0

    def __call__(self, e):
        return e * self.k


_MUL = _Mul()


def _map_callable_object(x):
    return tf.map_fn(_MUL, x)


def test_a_callable_object_given_to_map_fn_reads_its_attribute_on_every_call():
    """`tf.map_fn(obj, x)` where `obj.__call__` multiplies by `obj.k`; `obj.k` goes from 2.0
    to 7.0 before the sixth call: eagerly x = [1, 5] then gives [7, 35]."""
    _MUL.k = 2.0
    try:
        _eight_calls_k_changes(_map_callable_object, lambda i: (tf.constant([1.0, float(i)]),),
                               lambda: setattr(_MUL, "k", 7.0))
    finally:
        _MUL.k = 2.0


# -- a Keras layer's activation that is a bound method or a partial ---------------------------

class _Activation:
    def __init__(self):
        self.k = 2.0

    def act(self, t):
        return t * self.k


_ACT = _Activation()
_DENSE_METHOD = tf.keras.layers.Dense(2, activation=_ACT.act, kernel_initializer="ones")


def _scaled_activation(t, k):
    return t * k * CFG["k"]


_DENSE_PARTIAL = tf.keras.layers.Dense(2, activation=functools.partial(_scaled_activation, k=1.0),
                                       kernel_initializer="ones")


def _through_dense_method(x):
    return _DENSE_METHOD(x)


def _through_dense_partial(x):
    return _DENSE_PARTIAL(x)


def test_a_dense_layers_bound_method_activation_reads_its_attribute_on_every_call():
    """A module-level `Dense(2, activation=obj.act)`, ones kernel, `act` multiplying by
    `obj.k`; `obj.k` goes from 2.0 to 7.0 before the sixth call: eagerly [[1, 5]] then gives
    [[42, 42]]."""
    _ACT.k = 2.0
    try:
        _eight_calls_k_changes(_through_dense_method, lambda i: (tf.constant([[1.0, float(i)]]),),
                               lambda: setattr(_ACT, "k", 7.0))
    finally:
        _ACT.k = 2.0


def test_a_dense_layers_partial_activation_reads_the_global_on_every_call():
    """A module-level `Dense(2, activation=functools.partial(f, k=1.0))` whose `f` multiplies
    by CFG["k"]; CFG["k"] goes from 2.0 to 7.0 before the sixth call: eagerly [[1, 5]] then
    gives [[42, 42]]."""
    CFG["k"] = 2.0
    try:
        _eight_calls_k_changes(_through_dense_partial, lambda i: (tf.constant([[1.0, float(i)]]),),
                               lambda: CFG.update(k=7.0))
    finally:
        CFG["k"] = 2.0


# -- a custom gradient whose gradient function is a partial -----------------------------------

def _gradient_k(dy, k):
    return dy * k * CFG["k"]


@tf.custom_gradient
def _identity_partial_gradient(x):
    return x * 1.0, functools.partial(_gradient_k, k=1.0)


_W = tf.Variable([1.5, 0.5])


def _partial_gradient_step(w, x):
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(_identity_partial_gradient(w * x))
    return tape.gradient(y, w)


def test_a_custom_gradients_partial_gradient_reads_the_global_on_every_call():
    """A `tf.custom_gradient` returning `functools.partial(g, k=1.0)` as its gradient, `g`
    multiplying by CFG["k"]; CFG["k"] goes from 2.0 to 7.0 before the sixth call: eagerly the
    gradient for x = [1, 5] is then [7, 35]."""
    CFG["k"] = 2.0
    try:
        _eight_calls_k_changes(_partial_gradient_step, lambda i: (_W, tf.constant([1.0, float(i)])),
                               lambda: CFG.update(k=7.0))
    finally:
        CFG["k"] = 2.0


# -- a nested function's default read from a dict --------------------------------------------

def _default_from_dict_map(x):
    return tf.map_fn(lambda t, k=CFG["k"]: t * k, x)


def _default_from_dict_direct(x):
    def times(t, k=CFG["k"]):
        return t * k
    return times(x)


def test_a_lambdas_default_read_from_a_dict_is_read_on_every_call():
    """`tf.map_fn(lambda t, k=CFG["k"]: t * k, x)`: the lambda, and its default, are made anew
    on every call.  CFG["k"] goes from 2.0 to 10.0 before the sixth call: eagerly x = [1, 5]
    then gives [10, 50]."""
    CFG["k"] = 2.0
    try:
        _eight_calls_k_changes(_default_from_dict_map, lambda i: (tf.constant([1.0, float(i)]),),
                               lambda: CFG.update(k=10.0))
    finally:
        CFG["k"] = 2.0


def test_a_nested_defs_default_read_from_a_dict_is_read_on_every_call():
    """A nested `def times(t, k=CFG["k"])` called directly: its default is evaluated on every
    call of the function.  CFG["k"] goes from 2.0 to 10.0 before the sixth call: eagerly
    x = [1, 5] then gives [10, 50]."""
    CFG["k"] = 2.0
    try:
        _eight_calls_k_changes(_default_from_dict_direct, lambda i: (tf.constant([1.0, float(i)]),),
                               lambda: CFG.update(k=10.0))
    finally:
        CFG["k"] = 2.0


# -- branches that give Python values ---------------------------------------------------------

def _cond_python_numbers(x):
    return tf.cond(tf.reduce_sum(x) > 3, lambda: (1, 0.5), lambda: (2, 1.5))


def _switch_python_floats(x, i):
    return tf.switch_case(i, [lambda: 1.0, lambda: 2.0])


def _case_python_int(x):
    return tf.case([(tf.reduce_sum(x) > 3, lambda: 1)], default=lambda: 0)


def test_tf_cond_branches_giving_python_numbers_give_python_numbers():
    """`tf.cond(sum(x) > 3, lambda: (1, 0.5), lambda: (2, 1.5))`: eagerly TensorFlow calls the
    side taken and returns what it gives, a tuple of a Python int and a Python float."""
    spec = janus.speculate(_cond_python_numbers)
    for i in range(8):
        _compare(_cond_python_numbers, spec, (tf.constant([1.0, float(i)]),))


def test_tf_switch_case_branches_giving_python_floats_give_python_floats():
    """`tf.switch_case(i, [lambda: 1.0, lambda: 2.0])`: eagerly a Python float."""
    spec = janus.speculate(_switch_python_floats)
    for i in range(8):
        _compare(_switch_python_floats, spec, (tf.constant([1.0, float(i)]), tf.constant(i % 2)))


def test_tf_case_branches_giving_python_ints_give_python_ints():
    """`tf.case([(sum(x) > 3, lambda: 1)], default=lambda: 0)`: eagerly a Python int."""
    spec = janus.speculate(_case_python_int)
    for i in range(8):
        _compare(_case_python_int, spec, (tf.constant([1.0, float(i)]),))


def _cond_gives_argument(x):
    return tf.cond(tf.reduce_sum(x) > 3, lambda: x, lambda: x * 2)


def test_a_tf_cond_side_that_gives_the_argument_gives_the_callers_tensor():
    """`tf.cond(sum(x) > 3, lambda: x, ...)` with x = [1, 5]: eagerly the side taken gives the
    caller's own tensor, `result is x`; a graph would give a new one, so the call runs in
    Python and says why."""
    spec = janus.speculate(_cond_gives_argument)
    x = tf.constant([1.0, 5.0])
    for _ in range(6):
        assert _cond_gives_argument(x) is x
        assert spec(x) is x
    assert "gives back a tensor the function was passed" in spec.report()


# -- a nested @tf.function ---------------------------------------------------------------------

def _nested_tf_function_prints(x):
    @tf.function
    def inner(t):
        print("tracing inner")
        return t * 2.0
    return inner(x)


def test_a_nested_tf_function_made_on_every_call_prints_on_every_call():
    """A `@tf.function` nested `def` that prints: a new one is made, so traced, on every call,
    and eagerly every call prints 'tracing inner' once."""
    spec = janus.speculate(_nested_tf_function_prints)
    for i in range(7):
        _compare(_nested_tf_function_prints, spec, (tf.constant([1.0, float(i)]),))


def _nested_tf_function_reads_global(x):
    @tf.function
    def inner(t):
        return t * CFG["k"]
    return inner(x)


def test_a_nested_tf_function_reading_a_global_runs_as_a_graph():
    """A `@tf.function` nested `def` that multiplies by CFG["k"] (as `tf.function(inner)(x)`
    does, which janus runs as a graph): eagerly x = [1, i] gives [2, 2i].  The decorated
    function must see the module's globals: building it must not fail with NameError."""
    CFG["k"] = 2.0
    spec = janus.speculate(_nested_tf_function_reads_global)
    for i in range(7):
        _compare(_nested_tf_function_reads_global, spec, (tf.constant([1.0, float(i)]),))
    assert spec.stats()["graph_runs"] > 0, spec.report()


# -- a speculated function handed to tf.map_fn by plain Python --------------------------------

def _times_k(e):
    return e * CFG["k"]


def test_a_speculated_function_given_to_map_fn_in_eager_code_works_on_every_call():
    """Plain (eager) code calls `tf.map_fn(janus.speculate(_times_k), x)` five times, as it would
    with a `tf.function`: with `_times_k` itself each call gives [2, 4] for x = [1, 2]."""
    CFG["k"] = 2.0
    spec = janus.speculate(_times_k)
    x = tf.constant([1.0, 2.0])
    for _ in range(5):
        np.testing.assert_allclose(tf.map_fn(_times_k, x).numpy(), [2.0, 4.0])
        np.testing.assert_allclose(tf.map_fn(spec, x).numpy(), [2.0, 4.0])


# -- a function TensorFlow traces without AutoGraph ----------------------------------------------

def _vmap_with_python_if(x):
    def body(e):
        if tf.reduce_sum(e) > 2:
            return e * 2.0
        return e
    return tf.vectorized_map(body, x)


def test_a_python_if_on_a_tensor_in_a_vectorized_map_function_raises_on_every_call():
    """`tf.vectorized_map(body, x)` where `body` has a Python `if` on a tensor: eagerly
    TensorFlow traces `body` without AutoGraph, so every call raises
    OperatorNotAllowedInGraphError (a symbolic tensor used as a Python bool)."""
    spec = janus.speculate(_vmap_with_python_if)
    for i in range(7):
        x = tf.constant([[1.0, float(i)]])
        with pytest.raises(tf.errors.OperatorNotAllowedInGraphError):
            _vmap_with_python_if(x)
        with pytest.raises(tf.errors.OperatorNotAllowedInGraphError):
            spec(x)


def _vmap_plain(x):
    def body(e):
        return e * 2.0 + tf.reduce_sum(e)
    return tf.vectorized_map(body, x)


def test_a_vectorized_map_function_without_tensor_control_flow_runs_in_the_graph():
    """The same map without a Python `if`: janus's graph runs it and gives eager's values."""
    spec = janus.speculate(_vmap_plain)
    for i in range(6):
        x = tf.constant([[1.0, float(i)], [0.5, -1.0]])
        assert_same(_vmap_plain(x), spec(x), f"call {i}")
    assert spec.stats()["graph_runs"] > 0


def _untransformed_function_with_python_if(x):
    def body(e):
        if tf.reduce_sum(e) > 2:
            return e * 2.0
        return e
    return tf.function(body, autograph=False)(x)


def _vmap_with_python_float(x):
    def body(e):
        return e * float(tf.reduce_sum(e))
    return tf.vectorized_map(body, x)


@pytest.mark.parametrize("fn", [_untransformed_function_with_python_if, _vmap_with_python_float])
def test_a_tensors_python_value_where_tensorflow_traces_without_autograph_raises_as_eager(fn):
    """A Python `if` on a tensor in a `tf.function(..., autograph=False)`, and `float()` of a
    tensor in a `tf.vectorized_map` function: eager's trace raises on every call; so does janus."""
    spec = janus.speculate(fn)
    for i in range(6):
        x = tf.constant([[1.0, float(i)]])
        with pytest.raises(Exception) as want:
            fn(x)
        with pytest.raises(Exception) as got:
            spec(x)
        assert type(got.value) is type(want.value), f"call {i}"
        assert str(got.value) == str(want.value), f"call {i}"
