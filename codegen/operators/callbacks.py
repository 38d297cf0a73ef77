"""The program's functions that TensorFlow calls back while the graph is built.

`tf.map_fn`, `tf.cond`, `tf.while_loop`, `tf.switch_case`, `tf.vectorized_map`,
`tf.nest.map_structure`, `tf.custom_gradient` (its function, and the gradient function that
returns) take a function of the program and call it themselves.  Called as it is, that
function would run once, as plain Python, when the graph is built: what it reads from globals
or objects would be baked into the graph unchecked, and what it prints or writes would happen
on that call only.  Eager calls it on every call.  So the function TensorFlow receives is a
stand-in that runs the program's function as converted code, inlined like a direct call: its
reads are guarded, its prints and writes deferred.  Where TensorFlow traces it into a graph of
its own (a branch, a loop body, a map's function), it runs once per taken branch, iteration or
element in eager, so there it may print or write nothing Python holds: such a build stops and
the call runs in Python.  `tf.vectorized_map` (and a `tf.function(..., autograph=False)`)
traces the function as plain Python, where a Python `if` on a tensor raises: in such a function
a tensor's truth or Python value stops the build too, and the call raises in Python as eager.
"""
from __future__ import annotations

import contextlib
import functools
import inspect
import itertools
import operator
import re
import threading
import types
import weakref

import tensorflow as tf
from tensorflow.python.ops import custom_gradient as custom_gradient_ops
from tensorflow.python.ops.parallel_for import control_flow_ops as parallel_for
from tensorflow.python.util import tf_decorator

from profiler.library import is_user_function

from codegen.operators.aliases import read_by_methods
from codegen.operators.context import active, current
from codegen.operators.general import no_writes_inside, state_before

_TENSORFLOW = ("tensorflow", "keras", "tf_keras")
_DECORATED = "custom_gradient.<locals>.decorated"    # what `tf.custom_gradient` binds a method to
_PLAIN_TRACERS = (parallel_for.vectorized_map, parallel_for.pfor)    # they trace without AutoGraph


def takes_callbacks(f) -> bool:
    """Whether `f` is TensorFlow's (or Keras's): a function of the program handed to it is called
    back by its code.  `tf.data` is not: a dataset's functions run while it is iterated, where
    the graph's checks cannot reach them."""
    modules = (getattr(f, "__module__", None) or "", type(f).__module__)     # (a decorator object: its class's)
    return any(m.split(".")[0] in _TENSORFLOW for m in modules) and \
        not any(m.startswith("tensorflow.python.data") for m in modules)


_PYTHON_CALLERS = frozenset({map, filter, sorted, min, max, functools.reduce, itertools.starmap, itertools.accumulate,
                             itertools.takewhile, itertools.dropwhile, itertools.filterfalse, itertools.groupby,
                             list.sort, re.sub, re.subn, iter})
GETTERS = (operator.attrgetter, operator.methodcaller)


def _python_caller(f, args) -> bool:
    """Whether `f` is one of Python's own functions that call a function handed to them while the
    call runs (`sorted(key=...)`, `map`, `functools.reduce`, `list.sort`, bound or not; `re.sub`;
    `iter(f, sentinel)`)."""
    try:
        if f in _PYTHON_CALLERS:
            return f is not iter or len(args) == 2
    except TypeError:                       # (an unhashable callable)
        return False
    return isinstance(f, types.BuiltinMethodType) and (
        f.__name__ == "sort" and isinstance(f.__self__, list) or
        f.__name__ in ("sub", "subn") and isinstance(f.__self__, re.Pattern))


def getter_call(f, args, kwargs, run):
    """`operator.attrgetter(...)(obj)` or `operator.methodcaller(...)(obj)` as the reads and the call
    it stands for, made through `run` (`calls.call`): a property or method of the program then
    runs as converted code, where the getter's C code would run it as plain Python."""
    if len(args) != 1 or kwargs:
        return f(*args, **kwargs)           # (Python's TypeError)
    maker, held = f.__reduce__()
    if type(f) is operator.attrgetter:
        def read(path):
            value = args[0]
            for name in path.split("."):
                value = run(getattr, value, name)
            return value
        return read(held[0]) if len(held) == 1 else tuple(read(path) for path in held)
    if isinstance(maker, functools.partial):        # (keyword arguments)
        name, held, keywords = maker.args[0], held, maker.keywords
    else:
        name, held, keywords = held[0], held[1:], {}
    return run(run(getattr, args[0], name), *held, **keywords)


def python_call_with(f, args, kwargs, is_program, run):
    """`f` and its arguments; where `f` is one of Python's own callers (`_python_caller`, or a
    partial of one) in a build, the program's functions and classes among them run as converted
    code when called back (plain Python would read outside state once, at build time, unchecked),
    and a list's or dict's bound method among them (`map(d.get, ...)`) reads the container."""
    ctx = active()
    partial = isinstance(f, functools.partial) and _python_caller(f.func, f.args + args)
    if ctx is None or not (partial or _python_caller(f, args)):
        return f, args, kwargs
    if partial:                             # (`functools.partial(sorted, key=...)`)
        _, held, keywords = python_call_with(f.func, f.args, f.keywords, is_program, run)
        f = functools.partial(f.func, *held, **keywords)
    read_by_methods(ctx, (*args, *kwargs.values()))
    # Only where the caller takes the function it calls back: the items `max(f, g, key=...)`
    # compares are handed back as they are.
    shift = len(f.args) if partial else 0
    at = {i - shift for i in _callback_positions(f.func if partial else f)}

    def swap(v):
        return stand_in(ctx, v, run) if is_program(v) or program_class(v) or type(v) in GETTERS else v
    return (f, tuple(swap(a) if i in at else a for i, a in enumerate(args)),
            {k: swap(v) if k in _CALLBACK_KEYWORDS else v for k, v in kwargs.items()})


_CALLBACK_AT = {map: (0,), filter: (0,), functools.reduce: (0,), itertools.starmap: (0,), itertools.takewhile: (0,),
                itertools.dropwhile: (0,), itertools.filterfalse: (0,), iter: (0,), itertools.accumulate: (1,),
                itertools.groupby: (1,), re.sub: (1,), re.subn: (1,)}
_CALLBACK_KEYWORDS = ("key", "func", "repl", "function")


def _callback_positions(f) -> tuple:
    """Where `f`, one of Python's callers, takes the function it calls back, by position."""
    if isinstance(f, types.BuiltinMethodType) and f.__name__ in ("sub", "subn"):
        return (0,)                             # (a compiled pattern's: the pattern is its object)
    return _CALLBACK_AT.get(f, ())


def program_class(v) -> bool:
    """A class with methods of the program's own (`map(Boxed, xs)` runs its `__init__`)."""
    return isinstance(v, type) and any(is_user_function(m) for m in vars(v).values())


def call_with(ctx, f, args, kwargs, is_program, run):
    """`f(*args, **kwargs)`, a TensorFlow function called with the program's functions, which it
    calls back: they run as converted code; so does the function a `@tf.custom_gradient`
    decorates.  `is_program(v)`: whether `v` is the program's callable (a function, a bound
    method, a partial of one, an object of a class with its own `__call__`); `run(v, *args,
    **kwargs)` calls it as converted code (`calls.call`)."""
    target = custom_gradient_target(f)
    if target is not None and is_program(target):
        f = custom_gradient(ctx, target, is_program, run)
    elif f is tf.custom_gradient and len(args) == 1 and not kwargs and is_program(args[0]):
        return custom_gradient(ctx, args[0], is_program, run)
    else:
        # True: TensorFlow traces the functions without AutoGraph; False: `tf.function` converts
        # them (a tensor `if` works again inside); None: as where the call is
        plain = True if f in _PLAIN_TRACERS else (kwargs.get("autograph", True) is False) if f is tf.function \
            else None
        args, kwargs = with_stand_ins(ctx, args, kwargs, is_program, run, plain)
    with _held_by_layers(ctx, f, is_program, run):
        out = f(*args, **kwargs)
    refuse_foreign(ctx)
    return out


@contextlib.contextmanager
def _held_by_layers(ctx, f, is_program, run):
    """While a Keras layer (or a model) is called: the program's functions its layers hold (a
    `Lambda`'s function, a `Dense`'s activation) are stand-ins, as Keras calls them back."""
    owner = f if hasattr(f, "_flatten_layers") else getattr(f, "__self__", None)
    swapped = []
    if hasattr(owner, "_flatten_layers"):
        for layer in owner._flatten_layers(include_self=True):
            for name, value in list(vars(layer).items()):
                if callable(value) and not isinstance(value, type) and is_program(value):
                    _held_from_outside(ctx, layer, name, value)
                    swapped.append((layer, name, value))
                    object.__setattr__(layer, name, stand_in(ctx, value, run))
    try:
        yield
    finally:
        for layer, name, value in reversed(swapped):
            object.__setattr__(layer, name, value)


def _held_from_outside(ctx, layer, name, value):
    """A bound method, partial or callable object a layer from outside holds is outside state too
    (what it reads through its object is checked, its writes deferred); one a layer janus cannot
    name holds (a model's inner layer) stops the build.  A plain function reads through globals."""
    if inspect.isfunction(value):
        return
    source = ctx.outside.get(id(layer))
    if source is None:
        ctx.fail("callback-owner", f"a Keras layer inside another holds `{name}`, a method or callable object of the "
                 "program, which Keras calls: janus cannot check what it reads through its object",
                 "use a plain function, or a layer the function reads directly")
    if id(value) not in ctx.outside:
        ctx.outside[id(value)] = source.attr(name)
        ctx.keep.append(value)


def with_stand_ins(ctx, args, kwargs, is_program, run, plain=None, classes=False):
    """`args` and `kwargs` with each function of the program among them (or in a list, tuple or
    dict among them, as `tf.switch_case` and `tf.case` take them) replaced by its stand-in
    (`plain`: see `stand_in`; `classes`: the program's classes too)."""
    def swap(v, depth):
        if callable(v) and (classes or not isinstance(v, type)) and is_program(v):
            return stand_in(ctx, v, run, plain)
        if depth and type(v) in (list, tuple):
            items = [swap(x, depth - 1) for x in v]
            return v if all(a is b for a, b in zip(items, v)) else type(v)(items)
        if depth and type(v) is dict:
            items = {k: swap(x, depth - 1) for k, x in v.items()}
            return v if all(items[k] is v[k] for k in v) else items
        return v
    return tuple(swap(a, 2) for a in args), {k: swap(v, 2) for k, v in kwargs.items()}


def stand_in(ctx, original, run_program, plain=None):
    """What TensorFlow calls in place of the program's `original`: its converted code, inlined
    into the graph being built, with Python's signature (TensorFlow reads it: `variables` of a
    custom gradient, a Keras `Lambda`'s `training`).  `plain`: True where TensorFlow traces
    `original` without AutoGraph (`ctx.plain_traces` counts the runs under way), False where a
    `tf.function` converts it (no such run counts inside it), None as where it is called."""
    building, home = threading.get_ident(), tf.compat.v1.get_default_graph()
    # TensorFlow may keep what it calls for ever (a custom gradient's function, in its global
    # gradient registry): it holds the build's context weakly, which holds the call's objects.
    weak_ctx = weakref.ref(ctx)

    def run(*args, **kwargs):
        ctx = weak_ctx()
        if threading.get_ident() != building or ctx is None or current() is not ctx:
            if ctx is not None:
                ctx.foreign_callbacks += 1      # after the build, or on TensorFlow's own thread
            return original(*args, **kwargs)
        if plain is None:
            return _run(ctx, *args, **kwargs)
        was = ctx.plain_traces
        ctx.plain_traces = was + 1 if plain else 0
        try:
            return _run(ctx, *args, **kwargs)
        finally:
            ctx.plain_traces = was

    def _run(ctx, *args, **kwargs):
        if tf.compat.v1.get_default_graph() is home:
            return run_program(original, *args, **kwargs)           # part of the call's own flow
        before = state_before(ctx, ())
        ctx.general_depth += 1                  # (prints and Python writes stop the build there)
        try:
            out = run_program(original, *args, **kwargs)
        finally:
            ctx.general_depth -= 1
        no_writes_inside(ctx, before, "function TensorFlow traces")
        _only_graph_values(ctx, out, run.__name__)
        return out

    try:
        run.__signature__ = inspect.signature(original)
    except (TypeError, ValueError):
        pass
    run.__name__ = getattr(original, "__name__", "callback")
    run.__qualname__ = getattr(original, "__qualname__", run.__name__)
    run.autograph_info__ = None     # (janus converts it: AutoGraph, under a nested tf.function, does not)
    return run


def custom_gradient_target(f):
    """The program's function a `@tf.custom_gradient` decorates (bound, for a method), or None."""
    if type(f) is custom_gradient_ops.Bind and getattr(f._d, "__qualname__", "") == _DECORATED:
        return f._f                     # (a method: the class holds the decorator, bound per read)
    if not callable(f) or getattr(f, "_tf_decorator", None) is None:
        return None
    decorators, target = tf_decorator.unwrap(f)
    if [d.decorator_name for d in decorators] != ["custom_gradient"]:
        return None
    return target


def custom_gradient(ctx, target, is_program, run_program):
    """`tf.custom_gradient` of `target`'s stand-in, whose gradient function is one too."""
    forward = stand_in(ctx, target, run_program)

    def run(*args, **kwargs):
        out = forward(*args, **kwargs)
        if type(out) is tuple and len(out) == 2 and callable(out[1]) and is_program(out[1]):
            out = (out[0], stand_in(ctx, out[1], run_program))
        return out
    run.__signature__ = getattr(forward, "__signature__", None)
    run.__name__, run.__qualname__ = forward.__name__, forward.__qualname__
    run.autograph_info__ = None
    return tf.custom_gradient(run)


def _only_graph_values(ctx, out, name):
    """A function TensorFlow traces into a graph of its own gives its results back as that
    graph's tensors, where eager hands back what the function returned: a Python number, an
    argument's own tensor.  Such a result stops the build (the call runs in Python)."""
    for leaf in tf.nest.flatten(out):
        if tf.is_tensor(leaf) and hasattr(leaf, "ref") and leaf.ref() in ctx.heap.arg_tensors:
            ctx.fail("callback-python-value", f"`{name}`, which TensorFlow calls in a branch or loop body, gives "
                     "back a tensor the function was passed: eager returns the caller's own tensor, the graph a "
                     "new one", "return tf.identity(x) if the identity does not matter")
        if leaf is not None and not tf.is_tensor(leaf) and not isinstance(leaf, tf.Operation):
            ctx.fail("callback-python-value", f"`{name}`, which TensorFlow calls in a branch or loop body, gives "
                     f"a {type(leaf).__name__}: eager hands it back as it is, the graph as a tensor",
                     "return tensors (tf.constant) from the function")


def refuse_foreign(ctx):
    """A stand-in TensorFlow called on another thread ran the program's Python as it is, once."""
    if ctx.foreign_callbacks:
        ctx.fail("callback-thread", "TensorFlow called the program's function on another thread while the graph "
                 "was built: it ran as plain Python, once", "call it directly, outside the TensorFlow function")
