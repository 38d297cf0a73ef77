"""Python builtins on tensors: `print`, `len`, `range`, `min`/`max`, iteration.

Each keeps Python's meaning on Python values and gets its graph meaning on
symbolic tensors.  `print` is deferred: its tensor arguments leave the graph
as outputs and janus prints, in program order, after the run succeeded
(`codegen.operators.printing`).
"""
from __future__ import annotations

import dis
import functools
import types

import numpy as np
import tensorflow as tf

from codegen.errors import ConversionError, NeedsPythonValue, Reason
from codegen.operators import call_time, dunders, node_tests
from codegen.operators.context import active, current
from codegen.operators.fed_lists import identity_of
from codegen.operators.eager_view import ANSWERS, tensor_attribute, tensor_hasattr, stands_for_eager, ABSENT
from codegen.operators.aliases import no_lists_handed_out, read_deep, read_whole
from codegen.operators.arrays import PyArray
from codegen.operators.numbers import PyNumber, convert, convert_tensor, is_computed
from codegen.operators.object_access import object_delattr, object_setattr, type_of, vars_of
from codegen.operators.printing import deferred_print, deferred_tf_print
from codegen.operators.lists import GrowList
from codegen.operators.state import del_attr, ld_attr, outside_reader, st_attr
from codegen.operators.text import text_builtin
from codegen.operators.node_classes import NodeClass, class_test
from codegen.operators.trees import Pointer, none_read
from codegen.operators.weak_numbers import WeakNumber, bool_number, held_minmax
from codegen.operators.values import BUILDER_CODE, EAGER, OutsideValue, is_symbolic, user_globals


class TensorRange:
    """`range()` over tensor bounds: a trip count the graph computes."""

    def __init__(self, *args):
        # range() of Python numbers that vary between calls yields Python ints, as eager's does.
        self.python = not any(is_symbolic(a) for a in args)
        self.computed = is_computed(*args)
        args = [tf.cast(tf.convert_to_tensor(a), tf.int32) if is_symbolic(a) or isinstance(a, PyNumber)
                else tf.constant(int(a), tf.int32) for a in args]
        if len(args) == 1:
            self.start, self.stop, self.step = tf.constant(0), args[0], tf.constant(1)
        elif len(args) == 2:
            (self.start, self.stop), self.step = args, tf.constant(1)
        else:
            self.start, self.stop, self.step = args

    def count(self):
        sign = tf.sign(self.step)
        return tf.maximum(0, (self.stop - self.start + self.step - sign) // self.step)

    def item(self, i):
        return self.value(self.start + i * self.step)

    def value(self, tensor):
        """An item as the program sees it: a Python int (`PyNumber`) for a range of Python numbers."""
        return PyNumber(tensor, int, self.computed) if self.python else tensor


def whole(value):
    """A mapping C code reads whole (`{**d}`, `f(**d)`): the copies of outside lists and dicts it
    reaches count as read (their items checked at entry)."""
    ctx = active()
    if ctx is not None:                     # (none in converted code TensorFlow calls back at run time)
        read_whole(ctx, value)
        read_deep(ctx, value)
    return value


def py_iter(x):
    """An iterable Python can walk at build time (tensors with a static first dimension unstack);
    the program's own `__iter__` runs as its code, and the iterator it gives is walked."""
    if (found := dunders.iterate(x)) is not dunders.NOT_USER:
        x = found
    ctx = active()
    if ctx is None:
        return x                            # (converted code TensorFlow calls back at run time)
    ctx.heap.mark_read(x)
    read_whole(ctx, x)
    no_lists_handed_out(ctx, x, "__iter__")
    if is_symbolic(x):
        ctx.refuse_plain_truth("iterating a tensor")
        if x.shape.rank and x.shape[0] is not None:
            return tf.unstack(x)
        current().fail("dynamic-iteration", "iterating a tensor of unknown length in Python code",
                       "loop with `for` over the tensor instead of a comprehension")
    return x


def _len(x):
    if isinstance(x, GrowList):
        return x.length()
    if (found := dunders.length(x)) is not dunders.NOT_USER:
        return found                # the program's own `__len__`, run as its code
    ctx = current()
    sh = ctx.heap.by_copy.get(id(x))
    if sh is not None and sh.holder is not None and not ctx.dry_run:
        return _outside_length(ctx, sh)
    ctx.heap.mark_read(x)
    read_whole(ctx, x)
    if is_symbolic(x):
        ctx.refuse_plain_truth("`len()` of a tensor")
        n = x.shape[0] if x.shape.rank else None
        return n if n is not None else tf.shape(x)[0]
    return len(x)


def _outside_length(ctx, sh):
    """`len()` of a container from outside: the length only (checked at entry), or, once it
    varied between calls, fed per call plus what this call added or removed so far."""
    sh.length_read = True
    if sh.source not in ctx.relaxed_state_lengths:
        return len(sh.copy)
    access, holder, name = sh.holder
    key = ("length", access, id(holder), name)
    if key not in ctx.heap.fed:
        read = outside_reader(*sh.holder)
        with ctx.outer_graph.as_default():
            ctx.heap.fed[key] = call_time.feed(ctx.outer_graph, lambda: tf.constant(len(read()), tf.int64),
                                               tf.TensorSpec((), tf.int64))
    return PyNumber(ctx.heap.fed[key], int) + (len(sh.copy) - len(sh.snapshot))


def _range(*args):
    if any(is_symbolic(a) for a in args):
        current().refuse_plain_truth("`range()` of a tensor")
    if any(is_symbolic(a) or isinstance(a, PyNumber) for a in args):
        return TensorRange(*args)
    return range(*args)


def _minmax(py, tf_fn):
    def fn(*args, **kwargs):
        if len(args) == 1 or kwargs:
            read_deep(current(), args)        # (`max(rows, key=len)` reads the lists in it)
        if len(args) == 2 and not kwargs and (is_symbolic(args[0]) or is_symbolic(args[1])):
            current().refuse_plain_truth(f"`{py.__name__}()` of tensors")
            if not all(is_symbolic(a) and a.shape.rank == 0 for a in args):
                # eager compares with `bool()` of a tensor and returns one of the two objects: a
                # Python number or the tensor, by the values (a non-scalar tensor raises)
                raise NeedsPythonValue(Reason("python-value-of-tensor", current().user_line(),
                                              f"`{py.__name__}` of a tensor and another value picks one of them by "
                                              "the tensor's value", f"use tf.{tf_fn.__name__}"))
            a, b = args
            if a.dtype != b.dtype:
                # eager compares them with `>` / `<`, which raises for tensors of two dtypes
                raise NeedsPythonValue(Reason("python-value-of-tensor", current().user_line(),
                                              f"`{py.__name__}` of a {a.dtype.name} and a {b.dtype.name} tensor",
                                              f"cast one, or use tf.{tf_fn.__name__}"))
            # Python keeps the first unless the second is greater (max) or less (min): with a NaN
            # that is the first, where tf.maximum gives NaN (and a tie keeps the first's sign).
            return tf.where(b > a if py is max else b < a, b, a)
        if len(args) == 2 and not kwargs and any(isinstance(a, PyNumber) for a in args) \
                and all(type(a) in (int, float, bool) or isinstance(a, PyNumber) for a in args):
            kinds = {_ptype(a) for a in args}
            if kinds != {bool}:
                kinds = {int if k is bool else k for k in kinds}
            if len(kinds) > 1 or (kinds == {int} and bool in map(_ptype, args)):
                return py(*args, **kwargs)   # the result's type depends on which one wins
            kind = kinds.pop()
            if kind is bool:
                return PyNumber(tf_fn(*(tf.cast(a.tensor, tf.int8) if isinstance(a, PyNumber) else tf.constant(a, tf.int8)
                                        for a in args)) > 0, bool)
            wide = tf.float64 if kind is float else tf.int64
            computed = any(isinstance(x, PyNumber) and x.computed for x in args)
            a, b = (tf.cast(a.tensor, wide) if isinstance(a, PyNumber) else tf.constant(a, wide) for a in args)
            # Python keeps the first unless the second is greater (max) or less (min): with a NaN
            # that is the first, where tf.maximum gives NaN.
            return PyNumber(tf.where(b > a if py is max else b < a, b, a), kind, computed)
        if len(args) >= 2 and not kwargs and any(isinstance(a, WeakNumber) for a in args):
            return functools.reduce(lambda a, b: held_minmax(py, a, b), args)
        return py(*args, **kwargs)
    return fn


def _ptype(a):
    return a.ptype if isinstance(a, PyNumber) else type(a)


def _number(kind):
    """`int(n)`, `float(n)`, `bool(n)`, `abs(n)`: Python's on a fed number; `int(t)`, `float(t)`,
    `bool(t)` of a scalar graph tensor: the Python number eager's conversion gives, computed in
    the graph (a recursion machine's frames keep the builtin, which stops the build); `bool(node)`
    of a tree node stand-in: its truth (`node_tests`); the builtin otherwise."""
    def fn(*args, **kwargs):
        if len(args) == 1 and not kwargs and isinstance(args[0], PyNumber):
            return abs(args[0]) if kind is abs else convert(kind, args[0])
        if kind is bool and len(args) == 1 and not kwargs and isinstance(args[0], Pointer):
            return bool_number(node_tests.truth(args[0]))
        if kind is bool and len(args) == 1 and not kwargs and (found := dunders.truth(args[0])) is not dunders.NOT_USER:
            return found
        if len(args) == 1 and not kwargs and (found := dunders.converted(kind, args[0])) is not dunders.NOT_USER:
            return found
        if len(args) == 1 and not kwargs and isinstance(args[0], WeakNumber) and (
                args[0].ptype in (int, float, bool) or args[0].either or _numpy_scalar(args[0].ptype)):
            return _tree_number(kind, args[0])
        value = args[0] if len(args) == 1 else None
        if isinstance(value, PyArray) and value.tensor.shape.rank == 0:
            value = value.tensor                # a NumPy scalar or 0-d array: converted as its value
        if len(args) == 1 and not kwargs and kind is not abs and is_symbolic(value) and not current().in_machine:
            number = convert_tensor(kind, value)
            if number is not None:
                return number
        return kind(*args, **kwargs)
    return fn


def _tree_number(kind, number: WeakNumber):
    """`float(node.w)`, `int(node.n)`, `bool(node.w)`, `abs(node.w)` of a tree attribute's Python
    or NumPy number (an int on some nodes and a float on others too), computed in the graph; `int`
    of a float runs in Python (a NaN or an infinity raises)."""
    t = number.tensor
    if kind is abs:
        return abs(number)
    if kind is float:
        return WeakNumber(tf.cast(t, tf.float64), float)
    if kind is bool:
        return bool_number(tf.not_equal(t, tf.zeros_like(t)))
    if kind is int and (number.ptype in (int, bool) or _numpy_scalar(number.ptype, (np.integer, np.bool_))):
        return WeakNumber(tf.cast(t, tf.int32) if t.dtype == tf.bool else t, int)
    current().fail("held-number", f"`{kind.__name__}()` of a tree attribute that may hold a float",
                   "the function runs in Python")


def _numpy_scalar(ptype, kind=None) -> bool:
    """Whether a tree column's numbers are NumPy scalars (of `kind`, or any number)."""
    return isinstance(ptype, type) and issubclass(ptype, kind or (np.integer, np.floating, np.bool_))


_NO_DEFAULT = object()


def _getattr(obj, name, default=_NO_DEFAULT):
    if type(name) is not str:
        return getattr(obj, name) if default is _NO_DEFAULT else getattr(obj, name, default)
    if isinstance(obj, (PyNumber, PyArray)) and name not in ("shape", "ndim", "dtype"):
        if not hasattr(_eager_type(obj), name):          # (the stand-in has no attributes of its own)
            if default is _NO_DEFAULT:
                raise AttributeError(f"'{_eager_type(obj).__name__}' object has no attribute '{name}'")
            return default
        obj._python_value() if isinstance(obj, PyNumber) else obj._numpy_value()
    if isinstance(obj, Pointer) and default is not _NO_DEFAULT and (found := obj.read_or(name, default)) is not None:
        return found                                # per node: its value, or the default where it lacks one
    if stands_for_eager(obj):
        found = tensor_attribute(obj, name, *(() if default is _NO_DEFAULT else (default,)))
        if found is not ABSENT:
            return found
    try:
        return ld_attr(obj, name)
    except AttributeError:
        if default is _NO_DEFAULT:
            raise
        return default


def _hasattr(obj, name):
    if isinstance(obj, (PyNumber, PyArray)) and type(name) is str:
        return hasattr(_eager_type(obj), name)      # (answered by the type eager's value has)
    if isinstance(obj, Pointer) and type(name) is str and (found := obj.has(name)) is not None:
        return bool_number(found)                   # per node: whether it has the attribute
    if type(name) is str and stands_for_eager(obj):
        return tensor_hasattr(obj, name)
    try:
        _getattr(obj, name)
        return True
    except AttributeError:
        return False


def _eager_type(value):
    """The type eager has where the graph holds a stand-in (a Python number fed as a tensor, a
    NumPy array, a tree attribute, a graph tensor for eager's `EagerTensor`); None for any other
    value."""
    if isinstance(value, OutsideValue):
        value.refuse()
    if none_read(value) is not None:
        current().fail("tree-attribute-kind", "the type of a tree attribute that is None on some nodes differs "
                       "between nodes", "test it with `is None`")
    if is_symbolic(value):
        return EAGER
    if isinstance(value, PyNumber):
        return value.ptype
    if isinstance(value, PyArray):
        return np.dtype(value.tensor.dtype.as_numpy_dtype).type if value.scalar else np.ndarray
    if isinstance(value, WeakNumber):
        if value.ptype is None:
            raise ConversionError(Reason("node-class", current().user_line(), "the Python type of this tree attribute "
                                         "differs between nodes (or is NumPy's); inside the graph it is a tensor",
                                         "give the attribute one Python type on every node"))
        return value.ptype
    return None


def _isinstance(value, classes):
    if isinstance(value, Pointer):
        return class_test(value, lambda c: issubclass(c, classes))
    stand_in = _eager_type(value)
    return isinstance(value, classes) if stand_in is None else issubclass(stand_in, classes)


def _id(value):
    """`id(node)` of a tree node stand-in would be the stand-in's: the build stops."""
    if isinstance(value, Pointer):
        node_tests.refuse_protocol("id")
    identity_of(current().heap, value)
    if is_symbolic(value):
        current().fail("identity-of-tensor", "`id()` of a tensor in a graph: eager's is a new tensor's on every "
                       "call (or the caller's), the graph's one object's", "this call runs in Python")
    return id(value)


def _type(*args, **kwargs):
    if len(args) == 1 and not kwargs:
        if isinstance(args[0], Pointer):
            return NodeClass(args[0])
        stand_in = _eager_type(args[0])
        if stand_in is not None:
            return stand_in
        return type_of(args[0])
    return type(*args, **kwargs)


def pending_effects(ctx) -> bool:
    """Python state writes the graph defers to after its run, or text it prints after it."""
    heap = ctx.heap
    if heap.attrs or heap.names or ctx.prints:
        return True
    for sh in heap.shadows.values():
        copy, snap = sh.copy, sh.snapshot
        if sh.mutated or len(copy) != len(snap) or (
                any(heap.real_of(a) is not b for a, b in zip(copy, snap)) if type(copy) is list
                else any(k not in snap or heap.real_of(copy[k]) is not snap[k] for k in copy)):
            return True
    return False


def _python_function(real):
    """`tf.numpy_function` / `tf.py_function` in a graph: the Python runs while the graph runs,
    so state written or text printed before it, which the graph applies after the run, would
    follow it: then that statement runs in Python, between graph segments."""
    def call(func, *args, **kwargs):
        ctx = current()
        if pending_effects(ctx):
            raise ConversionError(Reason("python-call", ctx.user_line(), "a Python function the graph calls would "
                                         "run before the Python state writes or prints that come before it",
                                         "it runs in Python between graph segments"))
        return real(_as_users(ctx, func), *args, **kwargs)
    return call


def _as_users(ctx, func):
    """The function the graph calls, as eager would call it.  One the user's code defines inside
    the function being built is made inside the builder, whose globals hold only builtins: the
    graph calls a copy with the user's module globals.  A function or object made while the
    function runs (a nested function's list, `Helper(...).run`, a `functools.partial`) would be
    the one made when the graph was built, on every call: that statement runs in Python."""
    parts = [func]
    if isinstance(func, types.MethodType):
        parts = [func.__func__, func.__self__]
    elif isinstance(func, functools.partial):
        parts = [func.func, *func.args, *func.keywords.values()]
    nested = [p for p in parts if isinstance(p, types.FunctionType) and p.__code__ in BUILDER_CODE]
    fresh = [p for p in parts if p not in nested and made_in_this_call(ctx, p)]
    fresh += [c for p in nested for c in map(_contents, p.__closure__ or ()) if made_in_this_call(ctx, c)]
    fresh += [d for p in nested for d in (p.__defaults__ or ()) + tuple((p.__kwdefaults__ or {}).values())
              if made_in_this_call(ctx, d)]
    if fresh or (nested and func is not nested[0]):
        raise ConversionError(Reason("python-call", ctx.user_line(), "the Python function the graph would call uses "
                                     "an object made while the function runs, which the graph would keep from "
                                     "its build", "it runs in Python between graph segments"))
    if not nested:
        return func
    code, closure = func.__code__, func.__closure__
    if code.co_name == "<lambda>":
        code, closure = _users_lambda(ctx, func)
    closure = _as_at_the_call(ctx, code, closure)
    made = types.FunctionType(code, user_globals(ctx.frame.converted.fn), func.__name__, func.__defaults__, closure)
    made.__kwdefaults__, made.__qualname__ = func.__kwdefaults__, func.__qualname__
    return made


def _as_at_the_call(ctx, code, closure):
    """The cells a nested function reads, with the function's own locals as they are now, when
    eager would call it (the graph calls it later, when the builder's cells hold the values the
    locals had at the end of the build).  The enclosing function's free names stay live cells.
    A nested function that assigns one of them runs in Python."""
    if not closure:
        return closure
    stored = {i.argval for i in dis.get_instructions(code) if i.opname in ("STORE_DEREF", "DELETE_DEREF")}
    if stored & set(code.co_freevars):
        raise ConversionError(Reason("python-call", ctx.user_line(), "the Python function the graph would call "
                                     "assigns a variable of the function that makes it",
                                     "it runs in Python between graph segments"))
    outer = {id(c) for c in ctx.frame.converted.fn.__closure__ or ()}
    return tuple(c if id(c) in outer else _cell_now(c) for c in closure)


def _cell_now(cell):
    try:
        return types.CellType(cell.cell_contents)
    except ValueError:                  # not assigned yet
        return types.CellType()


def _users_lambda(ctx, func):
    """The code of the user's own `lambda` behind one made in the builder (whose free names the
    lowering reads through janus's operators), with the builder's cells for its free names."""
    found, stack = [], [ctx.frame.converted.fn.__code__]     # the user's lambdas of that line
    while stack:
        code = stack.pop()
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                stack.append(const)
                if const.co_name == "<lambda>" and const.co_firstlineno == func.__code__.co_firstlineno \
                        and const.co_argcount == func.__code__.co_argcount:
                    found.append(const)
    user_fn = ctx.frame.converted.fn
    cells = dict(zip(user_fn.__code__.co_freevars, user_fn.__closure__ or ()))     # the function's own free names
    cells.update(zip(func.__code__.co_freevars, func.__closure__ or ()))          # its locals, as the builder holds them
    if len(found) != 1 or not set(found[0].co_freevars) <= set(cells):
        raise ConversionError(Reason("python-call", ctx.user_line(), "janus cannot tell which lambda of this line "
                                     "the graph would call", "it runs in Python between graph segments"))
    return found[0], tuple(cells[name] for name in found[0].co_freevars) or None


_IMMUTABLE = (int, float, complex, str, bytes, bool, type(None), types.ModuleType, type, types.BuiltinFunctionType,
              np.ufunc, np.generic)


def made_in_this_call(ctx, obj) -> bool:
    """Whether `obj` may be an object the function made while it runs (janus knows every outside
    object the build read, and immutable values need no care)."""
    if isinstance(obj, _IMMUTABLE) or id(obj) in ctx.outside:
        return False
    if isinstance(obj, tuple):
        return any(made_in_this_call(ctx, x) for x in obj)
    if isinstance(obj, types.FunctionType):
        return obj.__code__ in BUILDER_CODE
    return True


def _contents(cell):
    try:
        return cell.cell_contents
    except ValueError:                  # not assigned yet
        return None


BUILTINS = {
    print: deferred_print,
    tf.print: deferred_tf_print,
    len: _len,
    range: _range,
    enumerate: lambda x, start=0: enumerate(py_iter(x), start),
    zip: lambda *xs, **kw: zip(*map(py_iter, xs), **kw),
    max: _minmax(max, tf.maximum),
    min: _minmax(min, tf.minimum),
    list: lambda *x: list(py_iter(x[0])) if x else [],
    tuple: lambda *x: tuple(py_iter(x[0])) if x else (),
    reversed: lambda x: x.reversed() if isinstance(x, GrowList) else reversed(py_iter(x)),
    int: _number(int),
    float: _number(float),
    bool: _number(bool),
    abs: _number(abs),
    str: text_builtin(str),
    repr: text_builtin(repr),
    format: text_builtin(format),
    ascii: text_builtin(ascii),
    tf.numpy_function: _python_function(tf.numpy_function),
    tf.py_function: _python_function(tf.py_function),
    tf.compat.v1.py_func: _python_function(tf.compat.v1.py_func),
    isinstance: _isinstance,
    type: _type,
    id: _id,
    # attribute access by name: the same deferred writes and guarded reads as `obj.name`
    getattr: _getattr,
    hasattr: _hasattr,
    setattr: st_attr,
    delattr: del_attr,
    object.__setattr__: object_setattr,
    object.__delattr__: object_delattr,
    vars: vars_of,
    **ANSWERS,      # how the code runs, and what a tensor is, as eager answers
}
