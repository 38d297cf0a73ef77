"""Which library calls janus runs once while it builds a graph, and which it may not.

A call into TensorFlow adds ops; a call into a pure Python library (`math`, `functools`,
`collections`) computes a value the graph holds.  A call into any other library may act on the
world (an environment's `step`, a queue, a logger, a file) and must run on every call, so it runs
in Python.  `copy` and `dataclasses` compute from the objects they are given: given the caller's
object, the copy they make at build time would share the caller's lists and hold its attribute
values unchecked, so such a call runs in Python (`refuse_copy_of_outside`).  Nor may a call that
gives a new value on every call (random numbers, clocks, input: `new_value_each_call`).
"""
from __future__ import annotations

import contextlib
import copy
import dataclasses
import sys
import types

from profiler.library import is_library_file, is_library_module



# Libraries whose calls janus may run once while building: TensorFlow's (they add ops) and pure
# Python ones.  A call into any other library may act on the world (an environment's `step`,
# a queue, a logger, a file) and must run on every call, so it runs in Python.
_GRAPH_SAFE = ("tensorflow", "keras", "tf_keras", "numpy", "builtins", "math", "cmath", "operator", "_operator",
               "functools", "_functools", "itertools", "collections", "_collections", "_collections_abc", "copy",
               "numbers", "enum", "dataclasses", "typing", "abc", "types", "fractions", "decimal", "_decimal",
               "string", "re", "janus", "codegen", "profiler")


def foreign(f) -> str:
    """The name of `f` when it is a library's Python code janus may not run at build time; else ""."""
    owner = getattr(f, "__self__", None)
    if isinstance(f, types.BuiltinMethodType) and not isinstance(owner, types.ModuleType):
        if type(owner) in (list, dict, set):
            return ""                           # the heap tracks these
        module = type(owner).__module__ or ""   # a C method of a library's object (a file's `write`)
    elif isinstance(f, types.MethodType):
        # A generic method (`Mapping.get`) of a library's object reads through that object's own
        # methods (`os.environ.get` reads the process's environment): the object's module counts.
        module = getattr(f.__func__, "__module__", None) or ""
        if not isinstance(owner, type) and _graph_safe(module):
            module = type(owner).__module__ or ""
    elif isinstance(f, types.FunctionType):
        # (where it was defined: a library's wrapper made by `functools.wraps` names the function
        # it wraps, as `contextlib`'s does for a `contextmanager` used as a decorator)
        module = f.__globals__.get("__name__") or getattr(f, "__module__", None) or ""
    elif isinstance(f, (types.BuiltinFunctionType, type)):
        module = getattr(f, "__module__", None) or ""
    else:
        module = type(f).__module__ or ""
    if not module or _graph_safe(module) or f in _NOTHING_PER_CALL or getattr(f, "__code__", None) is _MAKES_MANAGER:
        return ""
    file = getattr(sys.modules.get(module), "__file__", None)
    if not is_library_module(module) and not (file and is_library_file(file)):
        return ""                               # the user's own code (a class of theirs)
    return getattr(f, "__qualname__", None) or getattr(f, "__name__", None) or type(f).__name__


_NOTHING_PER_CALL = (contextlib.nullcontext, contextlib.suppress)    # managers entered once (`contexts`)
# The function `contextlib.contextmanager` returns only makes the manager (`tf.summary.record_if`,
# the program's own): `contexts.entered` then judges it.
_MAKES_MANAGER = contextlib.contextmanager(lambda: (yield)).__code__


def _graph_safe(module: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in _GRAPH_SAFE)


_COPIES = tuple(f for f in (copy.copy, copy.deepcopy, getattr(copy, "replace", None), dataclasses.replace,
                            dataclasses.asdict, dataclasses.astuple) if f is not None)


def refuse_copy_of_outside(ctx, f, args) -> None:
    """`copy.copy(obj)`, `dataclasses.replace(obj, ...)` and the like of an object of the caller's
    (not a list, dict or number): the call runs in Python."""
    if not args or not any(f is g for g in _COPIES) or id(args[0]) not in ctx.outside:
        return
    if hasattr(args[0], "__dict__") or hasattr(type(args[0]), "__slots__"):
        ctx.fail("copy-of-outside", f"`{f.__module__}.{f.__name__}` of an object the caller passed or the function "
                 "reads from outside: the copy made while the graph is built would share its lists and hold its "
                 "values of that call", "copy it outside the function, or build the new object field by field")


def dispatched(f, args, type_of):
    """The function a `functools.singledispatch` function `f` runs for `args` (chosen by the
    Python type of the first, which `type_of` gives for a number janus holds), or None."""
    if not (isinstance(f, types.FunctionType) and args and callable(getattr(f, "dispatch", None))
            and isinstance(getattr(f, "registry", None), types.MappingProxyType)):
        return None
    return f.dispatch(type_of(args[0]))


_PER_CALL_MODULES = ("random", "time", "secrets", "uuid", "numpy.random")
_PER_CALL_NAMES = {"now", "today", "utcnow", "urandom", "getrandom", "input"}


def new_value_each_call(ctx, f, args) -> str:
    """The name of `f` when calling it gives a new value (or a new effect) on every call of the
    user's function: random numbers, clocks, input, or `next()` on an iterator from outside."""
    if f is next:
        return "next()" if args and id(args[0]) in ctx.outside else ""
    owner = getattr(f, "__self__", None)
    modules = (getattr(f, "__module__", None) or "", type(owner).__module__ if owner is not None else "",
               getattr(owner, "__module__", None) or "")
    name = getattr(f, "__name__", "")
    if any(m == p or m.startswith(p + ".") for m in modules for p in _PER_CALL_MODULES) or name in _PER_CALL_NAMES:
        return f"{name}()"
    return ""
