"""TensorFlow idioms of training code whose user Python is called back by TensorFlow while a
graph is traced: a `tf.custom_gradient` function and its gradient, the body given to
`tf.map_fn` or `tf.while_loop`, a branch given to `tf.cond`.  Eagerly TensorFlow calls that
Python on every call, so what it reads (a global, a list or dict item) is read again and
what it prints is printed again.  janus runs it as converted code: its reads are checked on
every call, and a print where TensorFlow traces a graph of its own (a branch, a loop body)
runs the call in Python."""
import contextlib
import io

import pytest
import tensorflow as tf

import janus
from tests.harness import assert_same

SCALE = 2.0
CFG = {"k": 2.0}
FACTORS = [2.0]


def _outcome(fn, *args):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        result = fn(*args)
    return result, out.getvalue()


def _compare(fn, spec, args):
    (expected, eprinted), (got, jprinted) = _outcome(fn, *args), _outcome(spec, *args)
    assert_same(expected, got)
    assert eprinted == jprinted, f"printed text differs:\neager: {eprinted!r}\njanus: {jprinted!r}"


# -- a custom gradient reads module state on every call ---------------------------------------

@tf.custom_gradient
def _scaled(x):
    def grad(dy):
        return dy * SCALE
    return x * SCALE, grad


def _scaled_step(w, x):
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(_scaled(w * x))
    return y, tape.gradient(y, w)


def test_a_custom_gradient_reads_the_global_it_scales_by_on_every_call():
    """`_scaled` is a user `tf.custom_gradient` whose forward and gradient multiply by the global
    SCALE.  After five calls SCALE goes from 2.0 to 10.0: eagerly the value and the gradient
    follow it (y = 110.0, gradient [10, 50] for x = [1, 5])."""
    global SCALE
    SCALE = 2.0
    try:
        spec = janus.speculate(_scaled_step)
        w = tf.Variable([1.0, 2.0])
        for i in range(8):
            if i == 5:
                SCALE = 10.0
            _compare(_scaled_step, spec, (w, tf.constant([1.0, float(i)])))
        assert spec.stats()["graph_runs"] > 0, spec.report()
    finally:
        SCALE = 2.0


def _make_noisy_step():
    @tf.custom_gradient
    def noisy(x):
        def grad(dy):
            print("gradient of noisy")
            return dy * 2.0
        return x * 1.0, grad

    def step(w, x):
        with tf.GradientTape() as tape:
            y = tf.reduce_sum(noisy(w * x))
        g = tape.gradient(y, w)
        w.assign_sub(0.1 * g)
        return g
    return step


def test_a_custom_gradient_prints_from_its_gradient_on_every_call():
    """A user `tf.custom_gradient` whose gradient function prints: eagerly every call prints
    'gradient of noisy' once, and so does the graph (the gradient is built in the function's graph)."""
    step = _make_noisy_step()
    spec = janus.speculate(_make_noisy_step())
    we, wj = tf.Variable([1.0, 2.0]), tf.Variable([1.0, 2.0])
    for i in range(7):
        x = tf.constant([1.0, float(i)])
        (ge, pe), (gj, pj) = _outcome(step, we, x), _outcome(spec, wj, x)
        assert_same(ge, gj)
        assert pe == pj == "gradient of noisy\n", (i, pe, pj)
        assert_same(we.read_value(), wj.read_value())
    assert spec.stats()["graph_runs"] > 0, spec.report()


# -- bodies given to TensorFlow's functional ops ----------------------------------------------

def _times_k(e):
    return e * CFG["k"]


def _map_times_k(x):
    return tf.map_fn(_times_k, x)


def test_a_map_fn_body_reads_a_global_dict_item_on_every_call():
    """`tf.map_fn(_times_k, x)` where `_times_k` multiplies by CFG["k"]; after five calls
    CFG["k"] goes from 2.0 to 10.0: eagerly x = [1, 5] gives [10, 50]."""
    CFG["k"] = 2.0
    try:
        spec = janus.speculate(_map_times_k)
        for i in range(8):
            if i == 5:
                CFG["k"] = 10.0
            _compare(_map_times_k, spec, (tf.constant([1.0, float(i)]),))
        assert spec.stats()["graph_runs"] > 0, spec.report()
    finally:
        CFG["k"] = 2.0


def _cond_times_factor(x):
    return tf.cond(tf.reduce_sum(x) > 0, lambda: x * FACTORS[0], lambda: x - 1)


def test_a_lambda_given_to_tf_cond_reads_a_global_list_item_on_every_call():
    """`tf.cond(..., lambda: x * FACTORS[0], ...)`; after five calls FACTORS[0] goes from 2.0
    to 10.0: eagerly x = [1, 5] gives [10, 50]; the item read inside the lambda is checked."""
    FACTORS[:] = [2.0]
    try:
        spec = janus.speculate(_cond_times_factor)
        for i in range(8):
            if i == 5:
                FACTORS[0] = 10.0
            _compare(_cond_times_factor, spec, (tf.constant([1.0, float(i)]),))
        assert spec.stats()["graph_runs"] > 0, spec.report()
    finally:
        FACTORS[:] = [2.0]


def _cond_that_prints(x):
    def bigger():
        print("bigger side")
        return x + 1
    return tf.cond(tf.reduce_sum(x) > 3, bigger, lambda: x - 1)


def test_a_print_in_a_tf_cond_branch_prints_on_every_call_that_takes_it():
    """A branch given to `tf.cond` prints 'bigger side'.  Eagerly only the side taken runs: the
    calls with x = [1, i], i >= 3, print it once each, the others print nothing."""
    spec = janus.speculate(_cond_that_prints)
    for i in range(8):
        _compare(_cond_that_prints, spec, (tf.constant([1.0, float(i)]),))


def _cond_that_prints_rarely(x):
    def huge():
        print("huge side")
        return x + 1
    return tf.cond(tf.reduce_sum(x) > 100, huge, lambda: x - 1)


def test_a_tf_cond_branch_not_taken_prints_nothing():
    """The same with a side no call takes (sum(x) > 100 never holds): eagerly nothing is ever
    printed (tracing the graph runs both sides)."""
    spec = janus.speculate(_cond_that_prints_rarely)
    for i in range(7):
        _compare(_cond_that_prints_rarely, spec, (tf.constant([1.0, float(i)]),))


def _loop_that_prints(x):
    def body(i, a):
        print("round")
        return i + 1, a * 2
    return tf.while_loop(lambda i, a: i < 3, body, (0, x))


def _map_that_prints(x):
    def body(e):
        print("element")
        return e * 2
    return tf.map_fn(body, x)


def test_a_print_in_a_while_loop_body_prints_every_round_of_every_call():
    """`tf.while_loop` over three rounds whose body prints 'round': eagerly each call prints it
    three times."""
    spec = janus.speculate(_loop_that_prints)
    for i in range(7):
        _compare(_loop_that_prints, spec, (tf.constant([1.0, float(i)]),))


def test_a_print_in_a_map_fn_body_prints_for_every_element_of_every_call():
    """`tf.map_fn` over two elements whose body prints 'element': eagerly each call prints it
    twice."""
    spec = janus.speculate(_map_that_prints)
    for i in range(7):
        _compare(_map_that_prints, spec, (tf.constant([1.0, float(i)]),))


# -- nested functions handed to TensorFlow run as graphs --------------------------------------

def _map_nested_def(x):
    def inner(t):
        return tf.square(t) * 3.0
    return tf.map_fn(inner, x)


def test_a_nested_def_given_to_map_fn_that_names_tf_runs_as_a_graph():
    """A nested `def` that calls `tf.square`, given to `tf.map_fn`: it reads the module's `tf`
    as its own code does, in the graph."""
    spec = janus.speculate(_map_nested_def)
    for i in range(7):
        _compare(_map_nested_def, spec, (tf.constant([1.0, float(i)]),))
    assert spec.stats()["graph_runs"] > 0, spec.report()


class _GradientReversal:
    def __init__(self):
        self.lam = 1.0

    def apply(self, x):
        @tf.custom_gradient
        def reverse(v):
            def grad(dy):
                return -self.lam * dy
            return tf.identity(v), grad
        return reverse(x)


def _reversal_step(grl, w, x):
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(grl.apply(w * x))
    return tape.gradient(y, w)


def test_a_gradient_reversal_defined_in_a_method_runs_as_a_graph():
    """The domain-adaptation gradient reversal: a method defines a nested `@tf.custom_gradient`
    whose gradient is `-self.lam * dy`.  Eagerly the gradient follows `lam` (changed from 1.0
    to 0.25 after five calls).  The decorator reads the module's `tf`, and the gradient
    function the closure's `self`, as in eager."""
    ge, gj = _GradientReversal(), _GradientReversal()
    spec = janus.speculate(_reversal_step)
    w = tf.Variable([1.0, 2.0])
    for i in range(8):
        if i == 5:
            ge.lam = gj.lam = 0.25
        x = tf.constant([1.0, float(i)])
        assert_same(_reversal_step(ge, w, x), spec(gj, w, x))
    assert spec.stats()["graph_runs"] > 0, spec.report()


# -- more of TensorFlow's callers: each reads the global again on every call -------------------

V = tf.Variable([1.0, 2.0])


def _nest_print(x):
    def show(t):
        print("leaf", FACTORS[0])        # tf.nest calls it per leaf, in the function's own graph
        return t * FACTORS[0]
    return tf.nest.map_structure(show, {"a": x, "b": [x, x]})


@tf.custom_gradient
def _with_variables(x):
    y = x * V

    def grad(dy, variables=None):        # TensorFlow reads this signature
        return dy * FACTORS[0], [dy * x]
    return y, grad


def _variables_step(x):
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(_with_variables(x))
    return tape.gradient(y, V)


def _switch(x, i):
    return tf.switch_case(i, [lambda: x * FACTORS[0], lambda: x - FACTORS[0]])


def _scan(x):
    return tf.scan(lambda a, e: a + e * FACTORS[0], x)


def _nested_tf_function(x):
    return tf.function(lambda t: t * FACTORS[0])(x)


@pytest.mark.parametrize("fn", [_nest_print, _variables_step, _switch, _scan, _nested_tf_function],
                         ids=lambda f: f.__name__)
def test_tensorflow_calls_back_the_programs_function_on_every_call(fn):
    FACTORS[:] = [2.0]
    try:
        spec = janus.speculate(fn)
        for i in range(8):
            if i == 5:
                FACTORS[0] = 3.0
            args = (tf.constant([1.0, float(i)]),) + ((tf.constant(i % 2),) if fn is _switch else ())
            _compare(fn, spec, args)
        assert spec.stats()["graph_runs"] > 0, spec.report()
    finally:
        FACTORS[:] = [2.0]


# -- the program's functions a Keras layer holds ------------------------------------------------

def _activation(t):
    return t * FACTORS[0]


_SCALE = lambda t: t * FACTORS[0]       # noqa: E731 - a Lambda layer's function, as users write it
_LAMBDA = tf.keras.layers.Lambda(_SCALE)
_SEQUENTIAL = tf.keras.Sequential([tf.keras.layers.Lambda(lambda t: t + FACTORS[0])])
_DENSE = tf.keras.layers.Dense(2, activation=_activation, kernel_initializer="ones")


def _through_lambda(x):
    return _LAMBDA(x)


def _through_sequential(x):
    return _SEQUENTIAL(x)


def _through_dense(x):
    return _DENSE(x)


@pytest.mark.parametrize("fn", [_through_lambda, _through_sequential, _through_dense], ids=lambda f: f.__name__)
def test_a_function_a_keras_layer_holds_reads_the_global_on_every_call(fn):
    """A `Lambda` layer's function, a model's `Lambda` layer, a `Dense` layer's activation: Keras
    calls them when the layer is called; they read `FACTORS[0]` again on every call."""
    FACTORS[:] = [2.0]
    try:
        spec = janus.speculate(fn)
        for i in range(8):
            if i == 5:
                FACTORS[0] = 10.0
            _compare(fn, spec, (tf.constant([[1.0, float(i)]]),))
        assert spec.stats()["graph_runs"] > 0, spec.report()
        assert _LAMBDA.function is _SCALE and _DENSE.activation is _activation     # (the layers' own again)
    finally:
        FACTORS[:] = [2.0]
