"""Writes to outside Python state that janus cannot defer to after the run: to an object whose
class intercepts attribute or item access, through a property or another data descriptor, or
from inside a recursion that runs as a machine (its blocks are traced once, not once per call)."""
from __future__ import annotations

import inspect
import types

from profiler.library import is_library_module

from codegen.errors import ConversionError, Reason
from codegen.operators.context import current

_OPS_LIBRARIES = ("tensorflow", "keras", "tf_keras")


def _is_library(fn) -> bool:
    return is_library_module(getattr(fn, "__module__", "") or "")


def refusal(obj, name: str | None, kind: str) -> str | None:
    """Why a write to `obj.name` (or `obj[...]`) cannot be deferred, or None."""
    cls = type(obj)
    if kind == "attr":
        for hook in ("__setattr__", "__delattr__", "__getattr__", "__getattribute__"):
            impl = getattr(cls, hook, None)
            base = getattr(type if isinstance(obj, type) else object, hook, None)   # (a class: `type`'s hooks)
            # (`types.SimpleNamespace` defines the hooks as Python's generic attribute access)
            if impl is not None and impl is not base and not _is_library(impl) and \
                    cls.__module__ not in ("builtins", "types"):
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


def _optimizer(cls) -> bool:
    """Whether `cls` is an optimizer class of Keras or TensorFlow, whose property setters assign
    the object's own variables (a layer's `trainable` setter changes other objects too)."""
    return any(c.__name__ in ("BaseOptimizer", "OptimizerV2", "Optimizer") and
               (c.__module__ or "").split(".")[0] in _OPS_LIBRARIES for c in cls.__mro__)


def library_setter(ctx, obj, name, value, source) -> bool:
    """`obj.name = value` where `name` is a property of a TensorFlow or Keras optimizer's class
    (`learning_rate`, a hyperparameter): its setter is library code and runs while the graph is built,
    as the library's methods do, when all it does is add ops (a variable's `assign`): the
    object's attributes must be the same objects after it.  If they are not (`learning_rate = a
    schedule` replaces one), they are put back and False is returned: the write is refused.
    What the setter read of its object (the variable it assigns) is checked at entry: each of the
    object's attributes, by identity or value (`source`: where the object was found)."""
    static = inspect.getattr_static(type(obj), name, None)
    if not isinstance(static, property) or static.fset is None or not _optimizer(type(obj)) or \
            (getattr(static.fset, "__module__", None) or "").split(".")[0] not in _OPS_LIBRARIES:
        return False
    attrs = getattr(obj, "__dict__", None)
    if attrs is None:
        return False
    before = dict(attrs)
    try:
        static.fset(obj, value)
    except BaseException:
        _put_back(attrs, before)
        raise
    if attrs.keys() != before.keys() or any(attrs[k] is not v for k, v in before.items()):
        _put_back(attrs, before)
        return False
    for k, v in before.items():
        ctx.check("attr", obj, k, v, source.attr(k))
    return True


def _put_back(attrs: dict, before: dict):
    attrs.clear()
    attrs.update(before)


def refuse(reason: str, target: str):
    ctx = current()
    raise ConversionError(Reason("custom-setattr", ctx.user_line() if ctx.frames else "",
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
