"""What the user's code asks about how it runs, answered as eager answers it.

The graph tensor a build holds stands for the `EagerTensor` eager would have made, and the
builder runs where eager would be executing eagerly.  Asked from the user's converted code (these
operators are called only from builders; library code the graph calls still sees graph mode):
  - `tf.executing_eagerly()` (and `tf.compat.v1`'s) is True, `tf.inside_function()` False, and
    `tf.is_symbolic_tensor` is False of a tensor that stands for an eager one;
  - `hasattr(t, name)`, `getattr(t, name, default)` and `t.name` answer whether an eager tensor
    has the attribute (`t.numpy` exists, `t.op` and `t.graph` raise eager's `AttributeError`), and
    `t.__class__` is `EagerTensor`;
  - what only the eager tensor's value or placement can tell (`t.numpy`, `t.device`, `t.cpu()`,
    `dir(t)`, `tf.get_static_value(t)`) is a graph break: that statement runs in Python.
"""
from __future__ import annotations

import inspect
import sys

import tensorflow as tf

from codegen.errors import ConversionError, NeedsPythonValue, Reason
from codegen.operators.context import current
from codegen.operators.values import EAGER, is_symbolic

_SAMPLES: dict = {}


def _samples():
    """(an eager tensor, the attribute names of a graph tensor, the instance names a graph tensor
    is made with), made once, when a build first needs them (not at import: see `values.EAGER`)."""
    if "all" not in _SAMPLES:
        with tf.init_scope():
            eager = tf.constant(0.0)
        with tf.Graph().as_default():
            graph_tensor = tf.constant(0.0) * 2.0
        _SAMPLES["all"] = (eager, frozenset(dir(graph_tensor)), frozenset(vars(graph_tensor)))
    return _SAMPLES["all"]


# Attributes both kinds of tensor have whose values differ: eager's tell its placement or value.
_PLACEMENT_OR_VALUE = frozenset({"device", "backing_device", "__array__", "__bool__", "__nonzero__", "__reduce__",
                                 "__reduce_ex__"})


# Methods an eager tensor has that raise when called in eager mode, where a graph tensor's answer.
_EAGER_RAISES = frozenset({"consumers", "eval"})


def stands_for_eager(value) -> bool:
    """A graph tensor of this build: eager would hold an `EagerTensor` there."""
    if not is_symbolic(value):
        return False
    ctx = current()
    if ctx.dry_run or ctx.outer_graph is None:
        return True
    graph = getattr(value, "graph", None)
    while graph is not None:
        if graph is ctx.outer_graph:
            return True
        graph = getattr(graph, "outer_graph", None)
    return False


def _eager_has(tensor, name: str) -> bool:
    eager, _, internal = _samples()
    own = getattr(tensor, "__dict__", {})
    return hasattr(eager, name) or (name in own and name not in internal)


def _needs_value(what: str):
    raise NeedsPythonValue(Reason("python-value-of-tensor", current().user_line(),
                                  f"{what} of a tensor tells what only the eager tensor knows (its value or device)",
                                  "it runs in Python"))


ABSENT = object()


def tensor_attribute(tensor, name: str, default=ABSENT):
    """`tensor.name` as an eager tensor answers it, or `ABSENT` where the graph tensor's own
    attribute is eager's (its shape, dtype, methods that add ops)."""
    if name == "__class__":
        return EAGER
    if (id(tensor), name) in current().heap.attrs:     # written by this call: read back as written
        return ABSENT
    if not _eager_has(tensor, name):
        if default is not ABSENT:
            return default
        getattr(_samples()[0], name)            # raises eager's AttributeError
    _, graph_names, _ = _samples()
    if name in _EAGER_RAISES:
        return getattr(_samples()[0], name)     # (calling it raises eager's error)
    if name in _PLACEMENT_OR_VALUE or name not in graph_names and name not in getattr(tensor, "__dict__", {}):
        _needs_value(f"`.{name}`")
    return ABSENT


def tensor_hasattr(tensor, name: str) -> bool:
    return name == "__class__" or (id(tensor), name) in current().heap.attrs or _eager_has(tensor, name)


def _dir(*args):
    if not args:
        reads_frame("dir()")
    if len(args) == 1 and stands_for_eager(args[0]):
        _needs_value("`dir()`")
    return dir(*args)


def reads_frame(what: str):
    """Stop the build: `what` reads the function's own local variables, which the builder's
    frame does not hold as eager's does; the function runs in Python."""
    raise ConversionError(Reason("frame-introspection", current().user_line(), f"{what} reads the function's own "
                                 "local variables: the function runs in Python",
                                 "pass the values it needs explicitly instead of reading the frame"))


def _frame_reader(fn, name, needs_namespace=False):
    def read(*args, **kwargs):
        if not needs_namespace or len(args) < 2 and "globals" not in kwargs:
            reads_frame(f"{name}()")
        return fn(*args, **kwargs)
    return read


def _is_symbolic_tensor(value):
    return False if stands_for_eager(value) else tf.is_symbolic_tensor(value)


def _get_static_value(tensor, *args, **kwargs):
    if stands_for_eager(tensor):
        _needs_value("`tf.get_static_value`")
    return tf.get_static_value(tensor, *args, **kwargs)


ANSWERS = {
    tf.executing_eagerly: lambda: True,
    tf.compat.v1.executing_eagerly: lambda: True,
    tf.inside_function: lambda: False,
    tf.is_symbolic_tensor: _is_symbolic_tensor,
    tf.get_static_value: _get_static_value,
    dir: _dir,
    locals: _frame_reader(locals, "locals"),
    sys._getframe: _frame_reader(sys._getframe, "sys._getframe"),
    inspect.currentframe: _frame_reader(inspect.currentframe, "inspect.currentframe"),
    eval: _frame_reader(eval, "eval", True),
    exec: _frame_reader(exec, "exec", True),
}
