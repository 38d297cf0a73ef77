"""helper: attacks on the watch for the program's code run unconverted during a build
(`codegen/operators/unconverted.py`): program code reached through library objects and plain
arguments while the watch is paused, finalisers, gradients, exec'd code, user tracers, threads.
Each program runs eagerly and speculated on fresh state, call by call; G changes from call 5 on."""
import contextlib
import functools
import io
import sys
import threading
import types

import numpy as np
import tensorflow as tf

import janus

XS = [tf.constant(float(i)) for i in range(10)]
G = [1, 2, 3, 4]
LOG = []


def norm(r):
    if isinstance(r, tf.Tensor):
        assert not tf.is_symbolic_tensor(r), r
        return ("T", r.dtype.name, tuple(r.shape), r.numpy().tobytes())
    if isinstance(r, np.ndarray):
        return ("A", r.dtype.name, r.shape, repr(r.tolist()) if r.dtype == object else r.tobytes())
    if isinstance(r, (list, tuple)):
        return (type(r).__name__, tuple(norm(x) for x in r))
    if isinstance(r, float):
        return ("float", repr(r))
    return (type(r).__name__, repr(r))


def once(f, *args):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            r = ("ok", norm(f(*args)))
        except Exception as e:  # noqa: BLE001 - compared with eager's
            r = ("exc", type(e).__name__, str(e))
    return r, out.getvalue()


def compare(fn, graphs=True, calls=10, extra=lambda i: ()):
    spec = janus.speculate(fn)
    for i, x in enumerate(XS[:calls]):
        G[:] = [1, 2, 3, 4] if i < 5 else [i, 1, 2 * i, 1]
        LOG.clear()
        e = once(fn, x, *extra(i)), list(LOG)
        LOG.clear()
        j = once(spec, x, *extra(i)), list(LOG)
        assert e == j, f"call {i}: eager {e}\njanus {j}\n{spec.report()}"
    if graphs:
        assert spec.stats()["graph_runs"] > 0, spec.report()
    return spec


# ==== program code reached by a library object or a plain-looking argument (watch paused) ==========

class Num:
    def __init__(self, v):
        self.v = v
    def __add__(self, o):
        LOG.append("add")
        return Num(self.v + (o.v if isinstance(o, Num) else o) + G[0])
    __radd__ = __add__
    def __repr__(self):
        return f"Num({self.v})"

OBJS = np.array([Num(1), Num(2)], dtype=object)

def k_object_array_sum(x):
    return x + 1.0, np.sum(OBJS)
def test_object_array_sum_runs_program_add():
    """An object ndarray counts as 'plain' (isinstance np.ndarray): np.sum runs Num.__add__."""
    compare(k_object_array_sum, graphs=False)


class MyArr(np.ndarray):
    def __array_finalize__(self, obj):
        LOG.append("finalize")

MYA = np.arange(3.0).view(MyArr)
LOG.clear()

def k_ndarray_subclass(x):
    return x + 1.0, np.asarray(np.add(MYA, 1.0))
def test_ndarray_subclass_hook():
    """A program subclass of np.ndarray passes isinstance(np.ndarray): its __array_finalize__ runs."""
    compare(k_ndarray_subclass, graphs=False)


def scaled(v):
    LOG.append("scaled")
    return v * G[0]

VEC = np.vectorize(scaled)

def k_vectorize(x):
    return x + 1.0, VEC(np.arange(3))
def test_numpy_vectorize_of_program_function():
    """np.vectorize is numpy's object, the argument an array: the watch is paused, `scaled` runs."""
    compare(k_vectorize, graphs=False)


UFUNC = np.frompyfunc(scaled, 1, 1)

def k_frompyfunc(x):
    return x + 1.0, UFUNC(np.arange(2))
def test_numpy_frompyfunc_of_program_function():
    compare(k_frompyfunc, graphs=False)


class Box:
    __class_getitem__ = classmethod(types.GenericAlias)
    def __init__(self, v):
        LOG.append("box")
        self.v = v * G[0]

def k_builtin_style_alias(x):
    return x + 1.0, Box[int](3).v
def test_types_generic_alias_of_program_class():
    """`Box[int]` is a types.GenericAlias (not typing's): its origin is not checked."""
    compare(k_builtin_style_alias, graphs=False)


def act(t):
    LOG.append("act")
    return t * float(G[0])

LAMBDA_LAYER = tf.keras.layers.Lambda(act)

def k_keras_lambda(x):
    return LAMBDA_LAYER(tf.reshape(x, [1, 1]))
def test_keras_lambda_layer_with_program_function():
    """A library layer holding the program's function, called on a tensor."""
    compare(k_keras_lambda, graphs=False)


STATIC = staticmethod(scaled)

def k_staticmethod_object(x):
    return x + 1.0, STATIC(2)
def test_staticmethod_object_called():
    compare(k_staticmethod_object, graphs=False)


@functools.singledispatch
def kind(v):
    return "base"

@kind.register
def _(v: int):
    LOG.append("int")
    return "int" + str(G[0])

def k_singledispatch(x):
    return x + 1.0, kind(3), kind("s")
def test_singledispatch_program_impl():
    compare(k_singledispatch, graphs=False)


EXECED = {}
exec("def from_exec(n):\n    LOG.append('exec')\n    return n * G[0]\n", globals(), EXECED)
from_exec = EXECED["from_exec"]

def k_exec_function(x):
    return x + 1.0, from_exec(2)
def test_function_made_by_exec():
    """A function of `<string>` code: `_not_program` counts every '<' file as not the program's."""
    compare(k_exec_function, graphs=False)


# ==== finalisers and gradients ======================================================================

class Noisy:
    def __init__(self, v):
        self.v = v
    def __del__(self):
        LOG.append(("del", G[0]))

def k_finaliser(x):
    n = Noisy(3)
    y = x + float(n.v)
    del n
    return y
def test_program_finaliser_runs_each_call():
    """eager: Noisy.__del__ logs once per call (refcount drop at `del n`)."""
    compare(k_finaliser, graphs=False)


@tf.custom_gradient
def clipped(t):
    def grad(dy):
        LOG.append("grad")
        return dy * float(G[0])
    return tf.identity(t), grad

def k_custom_gradient(x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = clipped(x * 2.0)
    return tape.gradient(y, x)
def test_custom_gradient_reads_global():
    """The gradient function (the program's) runs in `checked_gradient`, where the watch is paused."""
    compare(k_custom_gradient, graphs=False)


# ==== refusal swallowed by the library ==============================================================

class Lazy:
    def __getattr__(self, name):
        LOG.append(("getattr", name))
        if G[0] > 1:
            return G[0]
        raise AttributeError(name)

LAZY = Lazy()

def k_hasattr(x):
    return x + 1.0, hasattr(LAZY, "zz"), getattr(LAZY, "qq", -1)
def test_hasattr_swallows_refusal():
    compare(k_hasattr, graphs=False)


# ==== user tracers and threads ======================================================================

def k_plain(x):
    return x * 2.0 + float(G[0])

def test_user_tracer_keeps_events_and_stays():
    seen = []
    def tracer(frame, event, arg):
        if frame.f_code is k_plain.__code__ or frame.f_code.co_name == "k_plain":
            seen.append(event)
        return None
    spec = janus.speculate(k_plain)
    old = sys.gettrace()
    sys.settrace(tracer)
    try:
        for i, x in enumerate(XS):
            G[:] = [1, 2, 3, 4] if i < 5 else [i, 1, 2 * i, 1]
            assert norm(spec(x)) == norm(k_plain(x))
            assert sys.gettrace() is tracer
    finally:
        sys.settrace(old)
        G[:] = [1, 2, 3, 4]
    assert seen, "the user's tracer saw no frame of k_plain"


def test_two_threads_one_traced():
    spec = janus.speculate(k_plain)
    errors = []
    def work(traced):
        if traced:
            sys.settrace(lambda f, e, a: None)
        try:
            for x in XS:
                r = spec(x)
                if not np.array_equal(r.numpy(), (x * 2.0 + 1.0).numpy()):
                    errors.append((traced, r))
        except Exception as e:  # noqa: BLE001
            errors.append((traced, repr(e)))
        finally:
            sys.settrace(None)
    ts = [threading.Thread(target=work, args=(t,)) for t in (True, False)]
    [t.start() for t in ts]
    [t.join(120) for t in ts]
    assert not errors, errors
    assert not any(t.is_alive() for t in ts)


# ==== the same paths without effects: the global read at build time is baked into the graph ========

def pure(v):
    return v * G[0]

PURE_VEC = np.vectorize(pure, otypes=[np.int64])
PURE_STATIC = staticmethod(pure)
exec("def pure_exec(n):\n    return n * G[0]\n", globals(), EXECED)
pure_exec = EXECED["pure_exec"]

def k_baked_vectorize(x):
    return x + 1.0, PURE_VEC(np.arange(3))
def test_vectorize_global_read_baked():
    compare(k_baked_vectorize, graphs=False)

def k_baked_static(x):
    return x + 1.0, PURE_STATIC(2)
def test_staticmethod_global_read_baked():
    compare(k_baked_static, graphs=False)

def k_baked_exec(x):
    return x + 1.0, pure_exec(2)
def test_exec_function_global_read_baked():
    compare(k_baked_exec, graphs=False)


def test_profile_hook_kept_and_sees_program_frames():
    seen = []
    def prof(frame, event, arg):
        if event == "call" and frame.f_code.co_name == "k_plain":
            seen.append(event)
    spec = janus.speculate(k_plain)
    sys.setprofile(prof)
    try:
        for x in XS:
            spec(x)
            assert sys.getprofile() is prof
    finally:
        sys.setprofile(None)
    assert seen and spec.stats()["graph_runs"] > 0


class Thing:
    @functools.cached_property
    def val(self):
        LOG.append("val")
        return G[0] * 3

def k_cached_property(x):
    t = Thing()
    return x + 1.0, t.val, t.val
def test_cached_property_of_fresh_object():
    compare(k_cached_property, graphs=False)


class PureBox:
    __class_getitem__ = classmethod(types.GenericAlias)
    def __init__(self, v):
        self.v = v * G[0]

def k_alias_value(x):
    return x + 1.0, PureBox[int](3).v
def test_types_generic_alias_global_read_baked():
    compare(k_alias_value, graphs=False)


# ==== inside recursion (the machine pauses the watch) ===============================================

class Node:
    def __init__(self, left=None, right=None, word=0):
        self.left, self.right, self._word = left, right, word
    @property
    def word(self):
        LOG.append("word")
        return self._word

TREES = [Node(Node(word=1), Node(Node(word=2), Node(word=3))), Node(Node(word=4), Node(word=5)),
         Node(Node(Node(word=1), Node(word=1)), Node(word=2))]

def rec_exec(node):
    if node.left is None:
        return tf.constant(float(pure_exec(node._word)))
    return rec_exec(node.left) * 0.5 + rec_exec(node.right)

def k_recursion_exec(x, tree):
    return x + rec_exec(tree)
def test_recursion_calling_exec_function():
    compare(k_recursion_exec, graphs=False, extra=lambda i: (TREES[i % 3],))

def rec_prop(node):
    if node.left is None:
        return tf.constant(float(node.word))
    return rec_prop(node.left) * 0.5 + rec_prop(node.right)

def k_recursion_property(x, tree):
    return x + rec_prop(tree)
def test_recursion_reading_logging_property():
    compare(k_recursion_property, graphs=False, extra=lambda i: (TREES[i % 3],))
