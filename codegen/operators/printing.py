"""`print` and `tf.print` in converted code: deferred while the graph is built, replayed after
a successful run in program order, with eager's text.  A printed graph tensor or a Python or
NumPy number the graph holds leaves the graph as an output; a printed list, tuple, set or dict
is copied as it is at the `print` (the function may change it later), its items deferred the
same way."""
from __future__ import annotations

import collections
import types

import numpy as np
import tensorflow as tf
from tensorflow.python.framework import ops
from tensorflow.python.ops.resource_variable_ops import BaseResourceVariable

from codegen.operators import node_tests
from codegen.operators.aliases import read_deep
from codegen.operators.arrays import PyArray, as_numpy
from codegen.operators.context import PrintEvent, current
from codegen.operators.numbers import PyNumber
from codegen.operators.text import holds_graph_values, own_text
from codegen.operators.values import DICT_VIEWS, EitherKind, is_symbolic
from codegen.operators.weak_numbers import WeakNumber


class _Out:
    """A printed value that leaves the graph as output `index`; `ptype` turns it back into the
    Python number eager printed."""

    __slots__ = ("index", "ptype")

    def __init__(self, index, ptype=None):
        self.index = index
        self.ptype = ptype


def deferred_print(*args, sep=" ", end="\n", file=None, flush=False):
    ctx = current()
    if ctx.general_depth:
        ctx.fail("print-in-general-lowering", "print inside a tf.cond/tf.while_loop cannot be deferred",
                 "print outside the data-dependent branch or loop")
    _same_print_options(ctx, args)
    ctx.prints.append(PrintEvent([_deferred(ctx, a) for a in args], dict(sep=sep, end=end, file=file, flush=flush)))


def _same_print_options(ctx, args):
    """A print replayed after the run formats arrays and tensors under the caller's NumPy print
    options; one made while the function has changed them (`with np.printoptions(...)`) must run
    in Python."""
    if not all(isinstance(a, str) for a in args) and np.get_printoptions() != ctx.print_options:
        ctx.fail("print-options", "this print runs while the function has changed NumPy's print options, "
                 "and a print is replayed after the graph run, under the options the caller has then",
                 "print outside the `np.printoptions` block, or format the text with np.array2string")


class _Nest:
    """A printed list, tuple, set or dict as it was when printed: its items deferred, rebuilt
    after the run (the function may change the container later; eager printed it then)."""

    __slots__ = ("kind", "items")

    def __init__(self, kind, items):
        self.kind, self.items = kind, items


class _Text(str):
    """A printed set's text at the `print` (a set rebuilt after the run could iterate in another
    order); a set inside a container stays itself."""


def _deferred(ctx, a, depth=0):
    """A printed argument: a graph tensor leaves the graph as an output and is printed after the
    run; a container is copied with its items deferred."""
    if isinstance(a, (list, tuple, set, frozenset, dict, collections.deque)):
        return _container(ctx, a, depth)
    if isinstance(a, tf.Tensor) and is_symbolic(a):
        ctx.print_tensors.append(a)
        return _Out(len(ctx.print_tensors) - 1)
    if isinstance(a, EitherKind):
        a._used()                           # (whether it prints as a number or a tensor, only the run tells)
    if isinstance(a, PyNumber) or (isinstance(a, WeakNumber) and a.ptype is not None):
        ctx.print_tensors.append(a.tensor)
        return _Out(len(ctx.print_tensors) - 1, a.ptype)
    if isinstance(a, WeakNumber):           # a tree attribute whose Python type varies by node
        ctx.fail("tree-value-escapes", "printing a tree attribute whose Python type differs between nodes",
                 "print a tensor computed from it")
    if isinstance(a, PyArray):
        ctx.print_tensors.append(a.tensor)
        return _Out(len(ctx.print_tensors) - 1, as_numpy(a))
    if isinstance(a, tf.Variable) and type(a).__repr__ is BaseResourceVariable.__repr__ \
            and type(a).__str__ is BaseResourceVariable.__str__:
        ctx.print_tensors.append(a.read_value())         # its value at the print, not after the run
        return _Out(len(ctx.print_tensors) - 1, _VariableText(a))
    if node_tests.contains_node(a):
        node_tests.refuse_protocol("print")     # (after the run it would print the stand-in)
    if isinstance(a, DICT_VIEWS) and holds_graph_values(a):
        ctx.fail("print", "printing a dict view holding values only the graph's run gives",
                 "print the dict, or a list made of the view")
    if isinstance(a, tf.TensorShape) and not (a.rank is not None and a.is_fully_defined()):
        ctx.fail("shape-read", "printing a shape whose dimensions vary between calls",
                 "janus keeps those dimensions specialised")
    _no_own_text(ctx, a)
    _note_printed(ctx, a)
    return a


def _no_own_text(ctx, a):
    """An object whose class gives its text by code of yours (`__repr__`, `__str__`, a dataclass's)
    would print what that code reads after the run, which the function, or one before the next
    print, may change (a class attribute, a global, a nested object): the function runs in Python."""
    if own_text(type(a)):
        ctx.fail("print-object", f"printing a {type(a).__name__}, whose text your code gives: janus would run "
                 "that code after the graph, when the state it reads may have changed", "print the values it shows")


_UNCHANGING = (str, bytes, int, float, complex, bool, type(None), tf.Tensor, tf.DType, tf.TensorShape, type,
               types.FunctionType, types.BuiltinFunctionType, types.ModuleType)


class _Shown:
    """Text printed as it is, alone or inside a container."""

    __slots__ = ("text",)

    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return self.text

    __str__ = __repr__


class _VariableText:
    """A printed `tf.Variable`'s text, with the value it had at the print."""

    __slots__ = ("variable",)

    def __init__(self, variable):
        self.variable = variable

    def __call__(self, value):
        v = self.variable
        shown = ops.value_text(tf.constant(value, v.dtype), is_repr=True)
        return _Shown(f"<tf.Variable '{v.name}' shape={v.get_shape()} dtype={v.dtype.name}, {shown}>")


def _note_printed(ctx, a):
    """An object the replay prints as the run leaves it (and the containers it holds): the function
    may not change it after the print (`not_printed`)."""
    if isinstance(a, _UNCHANGING):
        return
    ctx.printed_objects[id(a)] = a
    source = ctx.outside.get(id(a))
    if source is not None:
        ctx.printed_objects[source] = a
    held = getattr(a, "__dict__", None)
    if type(held) is dict:
        for v in held.values():
            if isinstance(v, (list, dict, set, bytearray, collections.deque)):
                ctx.printed_objects[id(v)] = a


def _container(ctx, a, depth):
    """A printed list, tuple (a named one too), set or dict as a `_Nest` of deferred items; a set
    of values Python has, as its text; a deque or another subclass as itself, unless it holds
    values only the run gives (the function then runs in Python)."""
    if depth > 50:
        ctx.fail("print-nesting", "printing a container nested deeper than 50 (or holding itself)", "print its parts")
    _no_own_text(ctx, a)
    if not depth:
        read_deep(ctx, a)           # (what the build's copy of an outside container holds is checked at entry)
    if isinstance(a, dict):
        nest = _Nest(type(a), [(_deferred(ctx, k, depth + 1), _deferred(ctx, v, depth + 1)) for k, v in a.items()])
    else:
        nest = _Nest(type(a), [_deferred(ctx, v, depth + 1) for v in a])
    named = isinstance(a, tuple) and hasattr(type(a), "_fields")
    needs_run = _needs_run(nest)
    if type(a) in (list, tuple, dict) or named or (needs_run and type(a) in (set, frozenset)):
        return nest
    if needs_run:
        ctx.fail("print", f"printing a {type(a).__name__} holding values only the graph's run gives",
                 "print a list, tuple or dict of them")
    if type(a) in (set, frozenset) and not depth:
        return _Text(str(a))
    if id(a) not in ctx.outside:     # an OrderedDict, a deque, a Counter the function made: its text now
        return _Shown(repr(a))
    _note_printed(ctx, a)            # (one from outside: printed as the run leaves it)
    return a


def _needs_run(a) -> bool:
    if isinstance(a, _Out):
        return True
    return isinstance(a, _Nest) and any(_needs_run(v) for item in a.items
                                        for v in (item if issubclass(a.kind, dict) else (item,)))


def deferred_tf_print(*inputs, **kwargs):
    """`tf.print` is deferred like `print` (so a failed guard does not print twice and the output
    keeps program order with `print`), and replayed by `tf.print` itself on the values: eager's
    text.  Inside a tf.cond / tf.while_loop it stays an op, printing once per run of its branch."""
    ctx = current()
    if ctx.general_depth or ctx.in_machine:
        return tf.print(*inputs, **kwargs)
    structure = tf.nest.map_structure(lambda v: v, list(inputs))      # (as it is now: it may change later)
    # (`tf.print` prints a variable's value, read at the print)
    leaves = [a.read_value() if isinstance(a, tf.Variable) else a for a in tf.nest.flatten(structure)]

    def printer(*values, **kw):
        tf.print(*tf.nest.pack_sequence_as(structure, list(values)), **kw)
    ctx.prints.append(PrintEvent([_deferred(ctx, a) for a in leaves], dict(kwargs), printer))


def replay_prints(events, values):
    for event in events:
        event.printer(*[_replayed(a, values) for a in event.args], **event.kwargs)


def _replayed(a, values):
    if isinstance(a, _Out):
        return _printed(values[a.index], a.ptype)
    if isinstance(a, _Nest):
        if a.kind is dict:
            return {_replayed(k, values): _replayed(v, values) for k, v in a.items}
        items = [_replayed(v, values) for v in a.items]
        return a.kind(*items) if hasattr(a.kind, "_fields") else a.kind(items)
    return a


def _printed(value, ptype):
    return value if ptype is None else ptype(value.numpy())


def not_printed(ctx, obj, source=None):
    """A print is replayed after the run, with the printed objects as the run left them: an
    object printed and changed later in the call (`print(box); box.v = 2`, or a list it holds
    appended to) would print as changed, so the function runs in Python."""
    printed = ctx.printed_objects
    if not printed:
        return
    hit = printed.get(id(obj))
    while hit is None and source is not None:
        hit = printed.get(source)
        source = source.parent
    if hit is not None:
        ctx.fail("print-then-change", f"a {type(hit).__name__} object is printed, then changed by the function; "
                 "janus prints after the run, which would show the change", "print the values it shows instead")
