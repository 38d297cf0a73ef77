"""Deferred state: the build's local copies of outside state, and the write-back plan.

While a builder runs, reads of outside objects (reachable from the arguments,
globals and closures) go through `read_outside`: tensors are fed fresh on
every call, Python values are entry-checked, and lists and dicts are
replaced by *copies* that the builder may mutate.  Writes (`st_attr`,
`st_item`, `st_name`, `del_*`) go to the copies.  After the builder returns,
`write_back_plan` lists what janus must apply to the real objects, and in
which form, once the graph has finished and every guard passed: nothing is
ever written to the user's objects during a run.
"""
from __future__ import annotations

import dataclasses
import inspect
import operator
import types

import tensorflow as tf

from codegen.context import current

_EAGER = type(tf.constant(0))
DELETED = type("Deleted", (), {"__repr__": lambda self: "<deleted>"})()
_NON_READING_MUTATORS = {"append", "extend", "insert", "clear", "add", "update", "setdefault", "__setitem__",
                         "__delitem__", "discard"}
_LIBRARY_ROOTS = ("tensorflow", "keras", "tf_keras", "builtins")


@dataclasses.dataclass
class Shadow:
    """A container the builder sees in place of the user's list or dict."""

    real: object                 # the user's container; None for a rebuilt argument (see `path`)
    path: tuple | None           # ("args", 1) for argument containers, resolved when writing back
    copy: object
    snapshot: object
    source: str
    holder: tuple | None = None  # (access, holder, name) it was read from, for the identity check
    read: bool = False


class Heap:
    def __init__(self):
        self.attrs: dict[tuple, list] = {}      # (id(obj), name) -> [obj, name, value, source]
        self.names: dict[tuple, list] = {}      # (id(holder), name) -> [holder, access, name, value, source]
        self.shadows: dict[int, Shadow] = {}    # id(real or rebuilt) -> Shadow
        self.by_copy: dict[int, Shadow] = {}    # id(copy) -> Shadow
        self.fed: dict[tuple, object] = {}      # (access, id(holder), name) -> placeholder
        self.arg_tensors: dict = {}             # input placeholder ref -> its path in the arguments
        self.reads: list[str] = []
        self.writes: list[str] = []

    def shadow(self, real, source, path=None, holder=None):
        sh = self.shadows.get(id(real))
        if sh is None:
            copy = list(real) if type(real) is list else dict(real)
            sh = Shadow(None if path else real, path, copy, list(real) if type(real) is list else dict(real),
                        source, holder)
            self.shadows[id(real)] = sh
            self.by_copy[id(copy)] = sh
        return sh.copy

    def mark_read(self, value):
        sh = self.by_copy.get(id(value))
        if sh is not None:
            sh.read = True


def _note(lst, source):
    if source not in lst:
        lst.append(source)


# -- what may not be written through ---------------------------------------------------------
def _is_library(fn) -> bool:
    module = getattr(fn, "__module__", "") or ""
    return module.split(".")[0] in _LIBRARY_ROOTS


def refusal(obj, name: str | None, kind: str) -> str | None:
    """Why a write to `obj.name` (or `obj[...]`) cannot be deferred, or None."""
    cls = type(obj)
    if kind == "attr":
        for hook in ("__setattr__", "__delattr__", "__getattr__", "__getattribute__"):
            impl = getattr(cls, hook, None)
            base = getattr(object, hook, None)
            if impl is not None and impl is not base and not _is_library(impl) and cls.__module__ != "builtins":
                return f"{cls.__name__} defines {hook}"
        static = inspect.getattr_static(cls, name, None)
        if isinstance(static, property):
            return f"{cls.__name__}.{name} is a property"
        if hasattr(type(static), "__set__") and not isinstance(static, types.FunctionType):
            return f"{cls.__name__}.{name} is a data descriptor"
    else:
        for hook in ("__setitem__", "__delitem__"):
            impl = getattr(cls, hook, None)
            if impl is not None and not _is_library(impl):
                return f"{cls.__name__} defines {hook}"
    return None


def _refuse(reason: str, target: str):
    from codegen.errors import ConversionError, Reason
    ctx = current()
    raise ConversionError(Reason("custom-setattr", ctx.frame.converted.filename if ctx.frames else "",
                                 f"cannot defer the write to `{target}`: {reason}",
                                 "janus runs this function imperatively"))


# -- operators -------------------------------------------------------------------------------
def st_attr(obj, name, value):
    ctx = current()
    source = ctx.outside.get(id(obj))
    if source is None:                       # an object made while building: plain Python
        setattr(obj, name, value)
        return
    reason = refusal(obj, name, "attr")
    if reason:
        _refuse(reason, f"{source}.{name}")
    ctx.heap.attrs[(id(obj), name)] = [obj, name, value, f"{source}.{name}"]
    _note(ctx.heap.writes, f"{source}.{name}")


def del_attr(obj, name):
    ctx = current()
    if ctx.outside.get(id(obj)) is None:
        delattr(obj, name)
        return
    from codegen.calls_support import ld_attr
    ld_attr(obj, name)                       # raises AttributeError as eager would
    st_attr(obj, name, DELETED)


def ld_item(obj, key):
    ctx = current()
    value = obj[key]
    sh = ctx.heap.by_copy.get(id(obj))
    if sh is not None:
        sh.read = True
        if not isinstance(value, (tf.Tensor, tf.Variable, int, float, str, bool, type(None))):
            # An object held in an outside container is outside too: its attributes are guarded.
            ctx.outside.setdefault(id(value), f"{sh.source}[{key!r}]")
            ctx.keep.append(value)
    return value


def _container_write(obj):
    ctx = current()
    if id(obj) in ctx.heap.by_copy:
        return
    source = ctx.outside.get(id(obj))
    if source is not None:
        reason = refusal(obj, None, "item") or f"{type(obj).__name__} objects are not copied for deferred writes"
        _refuse(reason, f"{source}[...]")


def st_item(obj, key, value):
    _container_write(obj)
    sh = current().heap.by_copy.get(id(obj))
    if sh is not None:
        _note(current().heap.writes, f"{sh.source}[{key!r}]" if not hasattr(key, "dtype") else f"{sh.source}[...]")
    obj[key] = value


def del_item(obj, key):
    _container_write(obj)
    del obj[key]


def _name_holder(name):
    ctx = current()
    fn = ctx.frame.converted.fn
    if name in fn.__code__.co_freevars:
        return "closure", fn.__closure__[fn.__code__.co_freevars.index(name)], f"{fn.__qualname__}.<closure {name}>"
    return "global", fn.__globals__, f"{fn.__module__}.{name}"


def st_name(name, value):
    ctx = current()
    access, holder, source = _name_holder(name)
    ctx.heap.names[(id(holder), name)] = [holder, access, name, value, source]
    _note(ctx.heap.writes, source)


def del_name(name):
    from codegen.calls_support import ld
    ld(name)
    st_name(name, DELETED)


_INPLACE = {"add": operator.iadd, "sub": operator.isub, "mult": operator.imul, "div": operator.itruediv,
            "floordiv": operator.ifloordiv, "mod": operator.imod, "pow": operator.ipow,
            "matmult": operator.imatmul, "bitand": operator.iand, "bitor": operator.ior,
            "bitxor": operator.ixor, "lshift": operator.ilshift, "rshift": operator.irshift}


def inplace(op, current_value, value):
    return _INPLACE[op](current_value, value)


# -- reads of outside values -----------------------------------------------------------------
def _closure(access, holder, name):
    if access == "attr":
        return lambda: getattr(holder, name)
    if access == "global":
        return lambda: holder[name]
    return lambda: holder.cell_contents


def read_outside(access, holder, name, value, source):
    """What the builder sees for an outside value, with the entry check that keeps it valid."""
    ctx = current()
    heap = ctx.heap
    if ctx.dry_run:
        return value
    if type(value) is _EAGER:
        key = (access, id(holder), name)
        if key not in heap.fed:
            shape = value.shape.as_list() if value.shape.rank is not None else None
            for d in ctx.relaxed_state_dims.get(source, ()):
                if shape is not None and d < len(shape):
                    shape[d] = None
            spec = tf.TensorSpec(shape, value.dtype)
            graph = ctx.outer_graph
            with graph.as_default():
                heap.fed[key] = graph.capture_call_time_value(_closure(access, holder, name), spec)
            ctx.check(access, holder, name, value, source, mode="tensor", expected=(value.dtype, shape))
            _note(heap.reads, source)
        return heap.fed[key]
    if type(value) is tuple and 0 < len(value) <= 16 and all(type(v) is _EAGER for v in value):
        # A tuple of tensors (an LSTM's (h, c)): each element is fed fresh, like a tensor.
        key = (access, id(holder), name)
        if key not in heap.fed:
            read = _closure(access, holder, name)
            graph = ctx.outer_graph
            specs = []
            fed = []
            for i, item in enumerate(value):
                shape = item.shape.as_list()
                for d in ctx.relaxed_state_dims.get(f"{source}[{i}]", ()):
                    if d < len(shape):
                        shape[d] = None
                specs.append((item.dtype, shape))
                with graph.as_default():
                    fed.append(graph.capture_call_time_value(lambda i=i: read()[i], tf.TensorSpec(shape, item.dtype)))
            heap.fed[key] = tuple(fed)
            ctx.check(access, holder, name, value, source, mode="tensors", expected=specs)
            _note(heap.reads, source)
        return heap.fed[key]
    if type(value) in (int, float) and source in ctx.relaxed_state_scalars:
        key = (access, id(holder), name)
        if key not in heap.fed:
            dtype = tf.as_dtype(ctx.relaxed_state_scalars[source])
            read = _closure(access, holder, name)
            graph = ctx.outer_graph
            with graph.as_default():
                heap.fed[key] = graph.capture_call_time_value(lambda: tf.constant(read(), dtype),
                                                              tf.TensorSpec((), dtype))
            ctx.check(access, holder, name, value, source, mode="type", expected=type(value))
            _note(heap.reads, source)
        return heap.fed[key]
    if type(value) in (list, dict):
        ctx.check(access, holder, name, value, source, mode="id", expected=value)
        _note(heap.reads, source)
        copy = heap.shadow(value, source, holder=(access, holder, name))
        return copy
    ctx.check(access, holder, name, value, source)
    return value
