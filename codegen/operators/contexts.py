"""`with` statements in a graph: which context managers the build may enter once.

A builder keeps `with m as v:` as Python, so `m.__enter__` and `m.__exit__` run once, while
the graph is built.  That is what TensorFlow's and Keras's own managers mean there
(`tf.GradientTape`, `tf.name_scope`, `tf.device`, `tf.control_dependencies`: they shape the
graph), and what `contextlib.nullcontext` and `contextlib.suppress` allow (an error the graph
raises runs the call in Python, where `suppress` sees it).  Any other manager acts on every call
eagerly: the program's own prints, counts, appends, binds a fresh value; a library's redirects
output (`redirect_stdout`), closes (`closing`), takes a lock.  Such a `with` runs in Python (the
function is split around it, or runs in Python), where its code runs on every call as eager's
does.  The classes that define `__enter__` and `__exit__` decide, so a subclass that overrides
neither counts as its base."""
from __future__ import annotations

import contextlib

from profiler.library import is_user_function

from codegen.operators.context import current
from codegen.operators.values import OutsideValue

_ONCE = (contextlib.nullcontext, contextlib.suppress)      # nothing to do on every call
_GRAPH_MODULES = ("tensorflow", "keras", "tf_keras")


def entered(manager):
    """`manager`, when the build may enter it once for every call (see the module docstring)."""
    why = _acts_per_call(manager)
    if why:
        current().fail("context-manager", f"`with` {why}: it would run once, while the graph is built, "
                       "instead of on every call", "keep the `with` outside the speculated function")
    return manager


def _acts_per_call(manager) -> str:
    if isinstance(manager, OutsideValue):           # made by a Python call the graph would run
        return "on a manager a Python call makes"
    if isinstance(manager, contextlib._GeneratorContextManagerBase):
        func = getattr(manager, "func", None)       # (TensorFlow's `tf.device` in a graph is one)
        module = getattr(func, "__globals__", {}).get("__name__", "")
        if func is None or is_user_function(func) or not _graph_module(module):
            return f"{getattr(func, '__qualname__', func)} is a contextmanager that acts on every call"
        return ""
    cls = type(manager)
    for name in ("__enter__", "__exit__"):
        owner = next((k for k in cls.__mro__ if name in k.__dict__), None)
        if owner is None:
            return f"{cls.__qualname__} has no {name}"      # (Python raises it, in the Python run)
        if is_user_function(owner.__dict__[name]):
            return f"{owner.__qualname__}.{name} is the program's own code"
        if owner not in _ONCE and not _graph_module(owner.__module__):
            return f"{owner.__module__}.{owner.__qualname__} acts on every call"
    return ""


def _graph_module(module: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in _GRAPH_MODULES)
