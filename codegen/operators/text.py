"""Text of graph tensors and variables: user code may not format one while a graph is built.

`str(t)`, `repr(t)`, `format(t)`, an f-string or `%` on a graph tensor gives
`Tensor("Sum:0", ...)` while TensorFlow traces, where eager gives the
value's text (a variable's text in a graph has no value at all); a string
computed at build time would then be baked into the graph's results, writes
or prints.  The graph-tensor and variable classes' text methods are wrapped
once: called directly from the user's converted code while a janus build
runs on this thread, they stop the build with `NeedsPythonValue` (the
function runs in Python and the report names the line); called from
anywhere else (TensorFlow's own messages, other threads, other tracers)
they behave exactly as before.  Printing a tensor or a variable with
`print` stays deferred (`codegen.operators.printing`) and prints eager's
text after the run.
"""
from __future__ import annotations

import collections
import dataclasses
import sys
import types

from tensorflow.python.framework import ops as _tf_ops
from tensorflow.python.ops.resource_variable_ops import BaseResourceVariable as _Variable

from profiler.library import is_user_code

from codegen.errors import NeedsPythonValue, Reason
from codegen.operators.aliases import read_by_methods, read_deep
from codegen.operators.context import active
from codegen.operators.library_settings import no_stale_reads_of
from codegen.operators.values import DICT_VIEWS

_GRAPH_TENSOR = _tf_ops.SymbolicTensor
_TEXT_OF_VALUE = (_GRAPH_TENSOR, _Variable)     # a variable's text, read in a graph, has no value either


def refuse(ctx, name: str):
    raise NeedsPythonValue(Reason(
        "python-value-of-tensor", ctx.user_line(),
        f"`{name}` of a tensor needs its value as text (str, repr, format, an f-string or %)",
        "print the tensor itself (janus prints it after the run), or use tf.strings.format"))


def text_builtin(fn):
    """`str`, `repr`, `format`, `ascii` called from converted code: refused on a graph tensor, and
    on an object whose text your code gives (its `__repr__` would run once, at build time, on
    state that may change between calls)."""
    def call(*args, **kwargs):
        ctx = active()
        if ctx is not None and args and isinstance(args[0], _TEXT_OF_VALUE):
            refuse(ctx, fn.__name__)
        if ctx is not None and args:
            _no_own_text(ctx, f"`{fn.__name__}` of", args[0])
            if holds_graph_values(args[0]):
                refuse(ctx, fn.__name__)        # (a container's C code asks its tensors for their text)
            read_deep(ctx, args[0])     # (the text shows the lists in it: checked at entry)
            no_stale_reads_of(ctx, args[0])
        return fn(*args, **kwargs)
    return call


def read_by_c(ctx, f, args, kwargs):
    """What a library or C function reads besides its positional arguments (`calls.call` reads
    those): its keyword arguments, and the text of what `str.format` formats."""
    for a in kwargs.values():
        read_deep(ctx, a)
    read_by_methods(ctx, (*args, *kwargs.values()))
    if isinstance(f, types.BuiltinMethodType) and isinstance(f.__self__, str) and f.__name__ in ("format", "format_map"):
        for a in (*args, *kwargs.values()):
            formatted(a, f"`str.{f.__name__}`")      # (C code asks what it formats for its text)


def formatted(value, what: str = "an f-string"):
    """A value an f-string (or `%`) formats, refused as `format` refuses it."""
    ctx = active()
    if ctx is not None:
        _no_own_text(ctx, f"{what} of", value)
        if holds_graph_values(value):
            refuse(ctx, what)
        read_deep(ctx, value)               # (the text shows the lists in it: checked at entry)
    return value


def _no_own_text(ctx, what: str, value):
    if _holds_own_text(value, 0):
        raise NeedsPythonValue(Reason(
            "python-text", ctx.user_line(), f"{what} a {type(value).__name__}, whose text your code gives: a graph "
            "would keep the text it had when it was built", "this call runs in Python"))


def _holds_own_text(value, depth=0) -> bool:
    """Whether `value`, or an item of a list, tuple, set or dict it holds, gives its text by your code."""
    return _holds(value, depth, lambda v: own_text(type(v)))


def holds_graph_values(value) -> bool:
    """Whether `value`, or an item of a list, tuple, set, dict or dict view it holds, is a graph
    tensor or a variable: its text would be the graph's (`Tensor("mul:0", ...)`), not the value's."""
    return _holds(value, 0, lambda v: isinstance(v, _TEXT_OF_VALUE), {})


def _holds(value, depth, test, seen=None) -> bool:
    """`test` of `value` or of what it holds: the items of lists, tuples, sets, dicts, dict views
    and deques, and (with `seen`, for graph values) a dataclass's fields and a slice's bounds;
    past 4 levels (or 10,000 items) only with `seen`, which keeps each object visited once."""
    if test(value):
        return True
    if seen is not None:
        if id(value) in seen or len(seen) > 100000:
            return False
        seen[id(value)] = value             # (held: a view's item tuples are made as it is walked)
    elif depth > 4:
        return False
    if isinstance(value, slice):
        items = (value.start, value.stop, value.step)
    elif isinstance(value, (list, tuple, set, frozenset, dict, collections.deque, *DICT_VIEWS)):
        if seen is None and len(value) > 10000:
            return False
        items = [v for kv in value.items() for v in kv] if isinstance(value, dict) else value
    elif seen is not None and dataclasses.is_dataclass(value) and not isinstance(value, type):
        items = [getattr(value, f.name, None) for f in dataclasses.fields(value)]   # (its text shows them)
    else:
        return False
    return any(_holds(v, depth + 1, test, seen) for v in items)


def own_text(cls) -> bool:
    """Whether `cls` gives its text by a function of user code (`__repr__`, `__str__`, `__format__`)."""
    for name in ("__str__", "__repr__", "__format__"):
        impl = getattr(cls, name, None)
        if isinstance(impl, types.FunctionType) and is_user_code(impl):
            return True
    return False


def _guarded(name: str, original):
    def method(self, *args):
        ctx = active()
        if ctx is not None and ctx.frames \
                and sys._getframe(1).f_code.co_filename == ctx.frame.converted.filename:
            refuse(ctx, name)
        return original(self, *args)
    method.__janus_guarded__ = True
    method.__name__ = original.__name__
    return method


def install():
    """Wrap the graph-tensor and variable classes' text methods (once per process)."""
    for cls in _TEXT_OF_VALUE:
        for name in ("__str__", "__repr__", "__format__"):
            original = getattr(cls, name)
            if not getattr(original, "__janus_guarded__", False):
                setattr(cls, name, _guarded(name.strip("_"), original))


install()
