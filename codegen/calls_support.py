"""Calls, name and attribute reads, and Python builtins on tensors, at build time.

`call` is where inlining happens: a user function is converted (with its own
profile sites) and its builder called on the current, possibly symbolic,
values; framework functions are called as they are and emit their own ops.
Reads of globals, closure cells and attributes of outside objects record an
entry check so a graph never runs on a value it was not built for.
"""
from __future__ import annotations

import builtins
import sys
import types

import tensorflow as tf

from codegen.context import Frame, PrintEvent, current
from codegen.heap import _NON_READING_MUTATORS, DELETED, read_outside
from codegen.trees import WeakNumber

_EAGER = type(tf.constant(0))
_LIBRARY_ROOTS = {"tensorflow", "keras", "tf_keras", "numpy", "absl", "janus", "codegen", "profiler", "bytecode",
                  "google", "jax", "scipy", "sklearn", "builtins", "optree"}
_MUTATORS = {"append", "extend", "insert", "pop", "remove", "clear", "update", "setdefault", "add", "discard",
             "sort", "reverse", "popitem", "__setitem__", "__delitem__"}
RECURSION_LIMIT = 64


def is_symbolic(x) -> bool:
    return isinstance(x, tf.Tensor) and type(x) is not _EAGER


def is_user_function(fn) -> bool:
    if not isinstance(fn, types.FunctionType):
        return False
    root = (getattr(fn, "__module__", None) or "").split(".")[0]
    if root in _LIBRARY_ROOTS or root in sys.stdlib_module_names:
        return False
    filename = fn.__code__.co_filename
    return not (filename.startswith("<") or "site-packages" in filename or "dist-packages" in filename)


class TensorRange:
    """`range()` over tensor bounds: a trip count the graph computes."""

    def __init__(self, *args):
        args = [tf.cast(a, tf.int32) if is_symbolic(a) else tf.constant(int(a), tf.int32) for a in args]
        if len(args) == 1:
            self.start, self.stop, self.step = tf.constant(0), args[0], tf.constant(1)
        elif len(args) == 2:
            (self.start, self.stop), self.step = args, tf.constant(1)
        else:
            self.start, self.stop, self.step = args

    def count(self):
        sign = tf.sign(self.step)
        return tf.maximum(0, (self.stop - self.start + self.step - sign) // self.step)

    def item(self, i: int):
        return self.start + i * self.step


# -- name and attribute reads ----------------------------------------------------------------
def ld(name: str):
    ctx = current()
    fn = ctx.frame.converted.fn
    code = fn.__code__
    if name in code.co_freevars:
        access, holder = "closure", fn.__closure__[code.co_freevars.index(name)]
        source = f"{fn.__qualname__}.<closure {name}>"
    elif name in fn.__globals__ or (id(fn.__globals__), name) in ctx.heap.names:
        access, holder, source = "global", fn.__globals__, f"{fn.__module__}.{name}"
    else:
        try:
            return getattr(builtins, name)
        except AttributeError:
            raise NameError(f"name '{name}' is not defined") from None
    written = ctx.heap.names.get((id(holder), name))
    if written is not None:
        if written[3] is DELETED:
            raise NameError(f"name '{name}' is not defined")
        return written[3]
    if access == "closure":
        try:
            value = holder.cell_contents
        except ValueError:
            raise NameError(f"free variable '{name}' referenced before assignment in enclosing scope") from None
    else:
        value = holder[name]
    return read_outside(access, holder, name, value, source)


def ld_attr(obj, name: str):
    ctx = current()
    written = ctx.heap.attrs.get((id(obj), name))
    if written is not None:
        if written[2] is DELETED:
            raise AttributeError(f"'{type(obj).__name__}' object has no attribute '{name}'")
        return written[2]
    value = _read_attr(ctx, obj, name)
    if ctx.in_machine and isinstance(value, tf.Variable):
        return tf.convert_to_tensor(value)     # a plain read vectorises across frames; a resource op does not
    return value


def _read_attr(ctx, obj, name):
    value = getattr(obj, name)
    source = ctx.outside.get(id(obj))
    if source is None or isinstance(obj, types.ModuleType):
        return value
    if type(value) is list and name not in getattr(obj, "__dict__", {}):
        # Computed (a property): a fresh list per read, checked by its items, never written back.
        ctx.check("attr", obj, name, value, f"{source}.{name}", mode="items", expected=value)
        return value
    return read_outside("attr", obj, name, value, f"{source}.{name}")


def py_iter(x):
    """An iterable Python can walk at build time (tensors with a static first dimension unstack)."""
    current().heap.mark_read(x)
    if is_symbolic(x):
        if x.shape.rank and x.shape[0] is not None:
            return tf.unstack(x)
        current().fail("dynamic-iteration", "iterating a tensor of unknown length in Python code",
                       "loop with `for` over the tensor instead of a comprehension")
    return x


# -- builtins --------------------------------------------------------------------------------
class _Out:
    __slots__ = ("index",)

    def __init__(self, index):
        self.index = index


def _print(*args, sep=" ", end="\n", file=None, flush=False):
    ctx = current()
    if ctx.general_depth:
        ctx.fail("print-in-general-lowering", "print inside a tf.cond/tf.while_loop cannot be deferred",
                 "print outside the data-dependent branch or loop")
    out = []
    for a in args:
        if isinstance(a, tf.Tensor) and is_symbolic(a):
            out.append(_Out(len(ctx.print_tensors)))
            ctx.print_tensors.append(a)
        else:
            out.append(a)
    ctx.prints.append(PrintEvent(out, dict(sep=sep, end=end, file=file, flush=flush)))


def replay_prints(events, values):
    for event in events:
        args = [values[a.index] if isinstance(a, _Out) else a for a in event.args]
        print(*args, **event.kwargs)


def _len(x):
    current().heap.mark_read(x)
    if is_symbolic(x):
        n = x.shape[0] if x.shape.rank else None
        return n if n is not None else tf.shape(x)[0]
    return len(x)


def _range(*args):
    if any(is_symbolic(a) for a in args):
        return TensorRange(*args)
    return range(*args)


def _minmax(py, tf_fn):
    def fn(*args, **kwargs):
        if len(args) == 2 and not kwargs and (is_symbolic(args[0]) or is_symbolic(args[1])):
            return tf_fn(args[0], args[1])
        return py(*args, **kwargs)
    return fn


_BUILTINS = {
    print: _print,
    len: _len,
    range: _range,
    enumerate: lambda x, start=0: enumerate(py_iter(x), start),
    zip: lambda *xs, **kw: zip(*map(py_iter, xs), **kw),
    max: _minmax(max, tf.maximum),
    min: _minmax(min, tf.minimum),
    list: lambda *x: list(py_iter(x[0])) if x else [],
    tuple: lambda *x: tuple(py_iter(x[0])) if x else (),
    reversed: lambda x: reversed(py_iter(x)),
}


def _unwrap(f):
    """A speculated function called from converted code is inlined as its Python function."""
    if type(f).__name__ == "SpeculativeFunction":
        return f.python_function
    if isinstance(f, types.MethodType) and type(f.__func__).__name__ == "SpeculativeFunction":
        return types.MethodType(f.__func__.python_function, f.__self__)
    return f


def call(f, *args, **kwargs):
    f = _unwrap(f)
    handler = _BUILTINS.get(f) if _hashable(f) else None
    if handler is not None:
        return handler(*args, **kwargs)
    ctx = current()
    if isinstance(f, types.MethodType) and is_user_function(f.__func__):
        return _inline(ctx, f.__func__, (f.__self__,) + args, kwargs)
    if is_user_function(f):
        return _inline(ctx, f, args, kwargs)
    owner = getattr(f, "__self__", None) if isinstance(f, types.BuiltinMethodType) else None
    if owner is not None and id(owner) in ctx.heap.by_copy:
        if f.__name__ not in _NON_READING_MUTATORS:
            ctx.heap.mark_read(owner)
        else:
            ctx.heap.writes.append(ctx.heap.by_copy[id(owner)].source) if \
                ctx.heap.by_copy[id(owner)].source not in ctx.heap.writes else None
    elif owner is not None and f.__name__ in _MUTATORS and id(owner) in ctx.outside:
        ctx.fail("state-write", f"`{ctx.outside[id(owner)]}.{f.__name__}(...)` mutates a {type(owner).__name__}, "
                 "which janus does not copy for deferred writes", "use a list or a dict")
    for a in args:
        ctx.heap.mark_read(a)
    call_method = getattr(type(f), "__call__", None)
    if not isinstance(f, type) and isinstance(call_method, types.FunctionType) and is_user_function(call_method):
        return _inline(ctx, call_method, (f,) + args, kwargs)
    # Library code sees plain tensors where tree attributes stood for Python numbers.
    return f(*_plain(args), **{k: _plain(v) for k, v in kwargs.items()})


def _plain(value):
    if isinstance(value, WeakNumber):
        return value.tensor
    if type(value) in (list, tuple):
        return type(value)(_plain(v) for v in value)
    return value


def _hashable(f) -> bool:
    try:
        hash(f)
        return True
    except TypeError:
        return False


def _inline(ctx, fn, args, kwargs):
    from codegen import machine
    if not kwargs and machine.wants_machine(fn, args):   # recursion on tensors or trees
        return machine.run(machine.cycle_of(fn), fn, args)
    converted = ctx.convert(fn)
    depth = sum(1 for fr in ctx.frames if fr.converted.code is fn.__code__)
    if depth >= RECURSION_LIMIT:
        refused = machine.REFUSED.get(fn)
        ctx.fail("recursion", f"{fn.__qualname__} recurses deeper than {RECURSION_LIMIT} levels while building"
                 + (f"; it cannot run as a Call/Return machine: {refused.explanation}" if refused else ""),
                 refused.hint if refused else "make the recursion end on a tensor test or a tree")
    ctx.frames.append(Frame(converted))
    try:
        return converted.builder(*args, **kwargs)
    finally:
        ctx.frames.pop()


# -- joined calls (see codegen.lowering.join_calls) ------------------------------------------------
class Joined:
    """Results of calls a loop makes, computed by one machine before the loop runs."""

    def __init__(self, results, where, graph, ops, writes):
        self.results, self.where = list(results), where
        self.graph, self.ops, self.writes = graph, ops, writes   # graph size and deferred writes when joined


def _user_callee(f, args):
    """(function, args) for a call of a user function or method, else None."""
    f = _unwrap(f)
    if isinstance(f, types.MethodType) and is_user_function(f.__func__):
        return f.__func__, (f.__self__,) + tuple(args)
    if is_user_function(f):
        return f, tuple(args)
    return None


def join(items, spec, where):
    """One machine run for `f(*args)` of every item, when the loop will call a recursion the machine
    runs on each item of a Python list or tuple; else None (the loop calls as usual)."""
    from codegen import machine
    ctx = current()
    if type(items) not in (list, tuple) or len(items) < 2 or ctx.in_machine or ctx.dry_run \
            or ("join", where) in ctx.relaxed:
        return None
    calls = [_user_callee(*spec(item)) for item in items]
    if any(c is None for c in calls) or len({c[0] for c in calls}) != 1:
        return None
    fn = calls[0][0]
    if not all(machine.wants_machine(fn, args) for _, args in calls):
        return None
    results = machine.run_many(machine.cycle_of(fn), fn, [args for _, args in calls])
    if results is None:
        return None
    graph = tf.compat.v1.get_default_graph()           # the graph the loop is built in (maybe a branch's)
    return Joined(results, where, graph, len(graph.get_operations()), len(ctx.heap.writes))


def joined(j, thunk):
    """The next joined result (the loop makes its calls in the order they were joined), or the call."""
    if j is None:
        return thunk()
    return j.results.pop(0)


def join_end(j):
    """After the loop: the joined calls ran before its body; if the body wrote a variable or deferred
    state, they might have read it too late, so the build is redone without this join."""
    if j is None:
        return
    from codegen.errors import JoinBroken
    from codegen.frame_specs import WRITES
    ctx = current()
    graph = j.graph
    # A write inside a tf.cond/while_loop sits in its branch graph: such a stateful control-flow op
    # counts as a write (at worst the calls run one machine each).
    wrote = ctx.heap.writes[j.writes:] or any(
        op.type.startswith(WRITES) or op.type in ("If", "While", "StatefulPartitionedCall")
        for op in graph.get_operations()[j.ops:])
    if wrote or j.results:
        raise JoinBroken(("join", j.where))
