"""Writes to outside Python state that janus cannot defer to after the run: to an object whose
class intercepts attribute or item access, through a property or another data descriptor, or
from inside a recursion that runs as a machine (its blocks are traced once, not once per call)."""
from __future__ import annotations

import inspect
import types

from profiler.library import is_library_module

from codegen.errors import ConversionError, Reason
from codegen.operators.context import current


def _is_library(fn) -> bool:
    return is_library_module(getattr(fn, "__module__", "") or "")


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


def refuse(reason: str, target: str):
    ctx = current()
    raise ConversionError(Reason("custom-setattr", ctx.frame.converted.filename if ctx.frames else "",
                                 f"cannot defer the write to `{target}`: {reason}",
                                 "janus runs this function imperatively"))


def no_write_in_machine(ctx, target):
    """Python state written inside a recursion that runs as a machine would be written once per
    graph run (the machine's blocks are traced once), not once per call: the function runs in
    Python, and the report names the line."""
    if ctx.in_machine:
        raise ConversionError(Reason("write-in-recursion", ctx.user_line(),
                                     f"`{target}` is written inside a recursive function",
                                     "return the value from the recursion and write it outside"))
