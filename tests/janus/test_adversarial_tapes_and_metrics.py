"""Adversarial training steps: gradient tapes, custom gradients, Keras metrics and optimizers
inside a speculated function, compared with eager on fresh identical state after every call:
the result (bit for bit, same Python types), the printed text, the variables, the metrics'
results, the optimizer's variables and the Python state the step keeps."""
import contextlib
import io

import keras
import numpy as np
import pytest
import tensorflow as tf

import janus


# -- strict comparison -----------------------------------------------------------------------

def _same(a, b, path="result"):
    if isinstance(a, tf.Variable):
        assert isinstance(b, tf.Variable), f"{path}: eager gave a variable, janus {type(b).__name__}"
        a, b = a.read_value(), b.read_value()
    if isinstance(a, tf.Tensor):
        assert isinstance(b, tf.Tensor) and hasattr(b, "numpy"), f"{path}: {b!r} is no eager tensor"
        assert (a.dtype, a.shape) == (b.dtype, b.shape), f"{path}: {a.dtype}{a.shape} != {b.dtype}{b.shape}"
        assert np.array_equal(a.numpy(), b.numpy(), equal_nan=a.dtype.is_floating), f"{path}: {a} != {b}"
        return
    assert type(a) is type(b), f"{path}: eager gave {type(a).__name__}, janus {type(b).__name__} ({b!r})"
    if isinstance(a, tf.IndexedSlices):
        _same((a.values, a.indices), (b.values, b.indices), path)
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), f"{path}: length {len(a)} != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{path}[{i}]")
    elif isinstance(a, dict):
        assert list(a) == list(b), f"{path}: keys"
        for k in a:
            _same(a[k], b[k], f"{path}[{k!r}]")
    elif isinstance(a, float):
        assert repr(a) == repr(b), f"{path}: {a!r} != {b!r}"
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


def _run(fn, args):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            return ("return", fn(*args)), out.getvalue()
        except Exception as exc:  # noqa: BLE001 - compared
            return ("raise", exc), out.getvalue()


def _drive(fn, make, args_of, state, calls=10, graph_runs=True):
    """`fn(*args_of(s, i))` eagerly on one `make()` and speculated on another, call by call."""
    eager_s, spec_s = make(), make()
    spec = janus.speculate(fn)
    for i in range(calls):
        (ek, ev), eout = _run(fn, args_of(eager_s, i))
        (jk, jv), jout = _run(spec, args_of(spec_s, i))
        assert ek == jk, f"call {i}: eager {ek}s {ev!r}, janus {jk}s {jv!r}"
        if ek == "raise":
            assert type(ev) is type(jv) and str(ev) == str(jv), f"call {i}: {ev!r} != {jv!r}"
        else:
            _same(ev, jv, f"call {i}")
        assert eout == jout, f"call {i}: printed {eout!r}, janus {jout!r}"
        _same(state(eager_s), state(spec_s), f"state after call {i}")
    if graph_runs:
        assert spec.stats()["graph_runs"] > 0, spec.report()
    return spec


# -- programs on a small state: one variable vector, one table, a log --------------------------

class S:
    def __init__(self):
        self.w = tf.Variable([1.0, 2.0])
        self.emb = tf.Variable([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
        self.log = []
        self.n = 0


def _xs(s, i):
    return (s, tf.constant([0.5 + i, -1.0 * i]))


def _s_state(s):
    return [s.w, s.emb, list(s.log), s.n]


def persistent_twice(s, x):
    with tf.GradientTape(persistent=True) as t:
        t.watch(x)
        y = x * x * s.w
        z = tf.reduce_sum(y)
    g1 = t.gradient(z, x)
    g2 = t.gradient(y, s.w)
    del t
    s.w.assign_sub(0.1 * g2)
    return g1, g2


def stop_recording(s, x):
    with tf.GradientTape() as t:
        t.watch(x)
        a = x * s.w
        with t.stop_recording():
            b = a * 3.0
            s.log.append(1)
        c = a + b
    return t.gradient(c, [x, s.w])


def second_derivative(s, x):
    with tf.GradientTape() as t2:
        t2.watch(x)
        with tf.GradientTape() as t1:
            t1.watch(x)
            y = tf.reduce_sum(x ** 3 * s.w)
        g = t1.gradient(y, x)
    return y, g, t2.gradient(g, x)


def jacobians(s, x):
    x2 = tf.reshape(x, [2, 1])
    with tf.GradientTape(persistent=True) as t:
        t.watch(x)
        t.watch(x2)
        y = tf.sin(x)[None, :] * s.w[:, None]
        yb = tf.concat([x2 * s.w[0], x2 ** 2], axis=1)
    return t.jacobian(y, x), t.batch_jacobian(yb, x2)


def unconnected_and_ints(s, x):
    xi = tf.cast(x, tf.int32)
    with tf.GradientTape(persistent=True) as t:
        t.watch(x)
        t.watch(xi)
        y = tf.reduce_sum(s.w * 2.0)
        yi = xi * 2
    zero = t.gradient(y, [x, s.w], unconnected_gradients=tf.UnconnectedGradients.ZERO)
    return zero, t.gradient(yi, xi), t.gradient(y, x)


def custom_gradient_counts(s, x):
    @tf.custom_gradient
    def doubled(v):
        def grad(dy):
            s.n += 1
            s.log.append(dy)
            print("grad", dy.shape)
            return dy * 2.0
        return v * 1.0, grad
    with tf.GradientTape() as t:
        y = tf.reduce_sum(doubled(s.w) * x)
    g = t.gradient(y, s.w)
    s.w.assign_add(g)
    return g, s.n


def recompute_and_stop(s, x):
    f = tf.recompute_grad(lambda v: tf.sin(v) * 2.0)
    with tf.GradientTape() as t:
        t.watch(x)
        y = tf.reduce_sum(f(x * s.w)) + tf.reduce_sum(tf.stop_gradient(s.w * x) * s.w)
    return t.gradient(y, [x, s.w])


def sparse_and_dict_grads(s, x):
    with tf.GradientTape(watch_accessed_variables=False) as t:
        t.watch(s.emb)
        t.watch(x)
        y = tf.reduce_sum(tf.gather(s.emb, [0, 2]) * x) + tf.reduce_sum(s.w)
    return t.gradient(y, {"emb": s.emb, "w": s.w, "x": x}, output_gradients=tf.constant(0.5))


def assign_results_used(s, x):
    r = s.w.assign_add(x)
    r2 = s.emb.assign(s.emb * 0.5)
    return r is s.w, r2 * 2.0, r.read_value()


@pytest.mark.parametrize("fn", [persistent_twice, stop_recording, second_derivative, jacobians,
                                unconnected_and_ints, custom_gradient_counts,
                                recompute_and_stop,
                                sparse_and_dict_grads, assign_results_used])
def test_tape_programs_match_eager(fn):
    _drive(fn, S, _xs, _s_state)


# -- graph objects handed back where eager gives None -----------------------------------------

def assign_without_read(s, x):
    s.log.append(s.w.assign_add(x, read_value=False))
    return s.w.read_value()


def assert_and_group_results(s, x):
    a = tf.debugging.assert_less(x, 100.0)
    b = tf.group(s.w.assign_add(x))
    return a, b


def test_an_assign_without_read_gives_none_as_eager():
    """`v.assign_add(x, read_value=False)` is None eagerly; the step keeps it in a list. From the
    first graph call on, janus stores a graph `tf.Operation` (AssignAddVariableOp) in the user's
    list: a graph object leaks into user state."""
    _drive(assign_without_read, S, _xs, _s_state)


def test_assert_and_group_results_are_none_as_eager():
    """`tf.debugging.assert_less(...)` and `tf.group(...)` return None eagerly; the graph calls
    return graph `tf.Operation`s."""
    _drive(assert_and_group_results, S, _xs, _s_state)


# -- a tape returned to the caller ---------------------------------------------------------------

def return_the_tape(s, x):
    with tf.GradientTape(persistent=True) as t:
        y = tf.reduce_sum(s.w * x)
    return t, y


def test_a_returned_persistent_tape_still_gives_gradients():
    """`return tape, loss` and the caller takes `tape.gradient(loss, w)`: eagerly [x0, x1]. From
    the first graph call the returned tape is the one recorded while tracing (the same object on
    every call), and its gradient of the returned (eager) loss is None."""
    es, js = S(), S()
    spec = janus.speculate(return_the_tape)
    for i in range(6):
        t1, y1 = return_the_tape(*_xs(es, i))
        t2, y2 = spec(*_xs(js, i))
        _same(y1, y2, f"call {i} loss")
        _same(t1.gradient(y1, es.w), t2.gradient(y2, js.w), f"call {i} gradient")


# -- Keras metrics and optimizers ---------------------------------------------------------------

class T:
    def __init__(self, **opt):
        self.w = tf.Variable([[0.5, -0.3], [0.2, 0.8]])
        self.b = tf.Variable([0.1, -0.1])
        self.loss_m = keras.metrics.Mean()
        self.acc = keras.metrics.BinaryAccuracy()
        self.opt = keras.optimizers.Adam(0.01, **opt)
        self.accum = None
        self.hist = []
        self.steps = 0


def _vs(t):
    return [t.w, t.b]


def _data(t, i):
    return (t, tf.constant([[1.0 + i, 2.0], [-1.0, 0.5 * i]]), tf.constant([[1.0, 0.0], [0.0, 1.0]]))


def _opt_vars(opt):
    return [tf.convert_to_tensor(v) for v in opt.variables]       # Keras 3 variables


def _t_state(t):
    return [t.w, t.b, t.loss_m.result(), t.acc.result(), list(t.hist), t.steps] + _opt_vars(t.opt)


def metrics_step(t, x, y):
    with tf.GradientTape() as tape:
        p = tf.sigmoid(x @ t.w + t.b)
        loss = tf.reduce_mean((p - y) ** 2)
    t.opt.apply_gradients(zip(tape.gradient(loss, _vs(t)), _vs(t)))
    t.loss_m.update_state(loss)
    t.acc.update_state(y, p)
    r = t.loss_m.result()
    if t.steps % 3 == 2:
        t.loss_m.reset_state()
    t.steps += 1
    return loss, r, t.loss_m.result()


def accumulate_step(t, x, y):
    if t.accum is None:
        t.accum = [tf.Variable(tf.zeros_like(v), trainable=False) for v in _vs(t)]
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((x @ t.w + t.b - y) ** 2)
    for a, g in zip(t.accum, tape.gradient(loss, _vs(t))):
        a.assign_add(g)
    t.steps += 1
    if t.steps % 2 == 0:
        gv = zip([a / 2.0 for a in t.accum], _vs(t))
        t.opt.apply_gradients(gv)
        t.hist.append(len(list(gv)))
        for a in t.accum:
            a.assign(tf.zeros_like(a))
    return loss


def empty_batch_step(t, x, y):
    if x.shape[0] == 0:
        return 0.0
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((x @ t.w + t.b - y) ** 2)
    g, norm = tf.clip_by_global_norm(tape.gradient(loss, _vs(t)), 1.0)
    t.opt.apply_gradients(zip(g, _vs(t)))
    return loss, norm


def _some_empty(t, i):
    return (t, tf.zeros([0, 2]), tf.zeros([0, 2])) if i % 3 == 2 else _data(t, i)


def raising_step(t, x, y):
    it = t.opt.iterations
    before = tf.identity(it)
    t.loss_m.update_state(tf.reduce_sum(x))
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.math.log(x @ t.w + 1.0))
    t.opt.apply_gradients(zip(tape.gradient(loss, _vs(t)), _vs(t)))
    tf.debugging.check_numerics(loss, "loss")
    t.hist.append(t.steps)
    if t.steps == 7:
        t.steps = 100
        raise RuntimeError("stop at 7")
    t.steps += 1
    return before, it + 0, it is t.opt.iterations


def _sometimes_nan(t, i):
    x = tf.constant([[-50.0, -50.0], [0.3, 0.1]]) if i in (5, 9) else tf.constant([[0.1 * i, 0.2], [0.3, 0.1]])
    return (t, x, tf.zeros([2, 2]))


@pytest.mark.parametrize("fn,args_of,opt", [
    (metrics_step, _data, {}),
    (metrics_step, _data, {"clipnorm": 0.01}),
    (accumulate_step, _data, {}),
    (empty_batch_step, _some_empty, {}),
    (raising_step, _sometimes_nan, {}),
], ids=["metrics", "metrics-clipnorm", "accumulate", "empty-batch", "raising"])
def test_training_steps_match_eager(fn, args_of, opt):
    _drive(fn, lambda: T(**opt), args_of, _t_state, calls=11)


def plain_step(t, x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((x @ t.w + t.b - y) ** 2)
    t.opt.apply_gradients(zip(tape.gradient(loss, _vs(t)), _vs(t)))
    return loss


@pytest.mark.parametrize("make_opt", [lambda: keras.optimizers.Adam(0.02),
                                      lambda: keras.optimizers.SGD(0.1, momentum=0.9)],
                         ids=["adam", "sgd-momentum"])
def test_a_second_trainer_with_an_unbuilt_optimizer_trains_as_eager(make_opt):
    """One `train_step` serves two trainers in turn (a sweep, or a fresh model after the first):
    the second trainer's optimizer has not been applied yet, so its slot variables are made on
    its first `apply_gradients`. Eagerly the second run trains exactly as the first. Under janus
    the first call on the new optimizer misses the cache (ID_MATCH opt) and a graph build starts
    tracing `apply_gradients`; Keras's `build` sets `opt.built = True`, then creating the slot
    variables stops the build (variable-creation), and the optimizer is left `built` without
    `_momentums`: that call and every later one (also the plain-Python fallback, and outside
    janus) raise AttributeError / IndexError, and the second model never trains."""
    def make():
        t = T()
        t.next_opt = make_opt()
        return t

    def swap(t, i):
        if i == 6:
            t.opt = t.next_opt
        return _data(t, i)

    _drive(plain_step, make, swap, lambda t: [t.w, t.b] + _opt_vars(t.opt), calls=10)
