"""`with` statements in a graph: which context managers the build may enter once.

A builder keeps `with m as v:` as Python, so `m.__enter__` and `m.__exit__` run once, while
the graph is built.  That is what TensorFlow's own managers mean there (`tf.GradientTape`,
`tf.name_scope`, `tf.device`, `tf.control_dependencies`: they shape the graph).  A manager of
the program's own (a class whose `__enter__`/`__exit__` it wrote, a `contextlib.contextmanager`
generator, an `ExitStack` that calls back into it) acts on every call eagerly: it prints,
counts, appends, binds a fresh value.  Such a `with` runs in Python (the function is split
around it, or runs in Python), where its code runs on every call as eager's does."""
from __future__ import annotations

import contextlib

from profiler.library import is_user_function

from codegen.operators.context import current

_CALLING_BACK = (contextlib.ExitStack, contextlib.AsyncExitStack)


def entered(manager):
    """`manager`, when the build may enter it once for every call (see the module docstring)."""
    why = _runs_user_code(manager)
    if why:
        current().fail("context-manager", f"`with` {why}: it would run once, while the graph is built, "
                       "instead of on every call", "keep the `with` outside the speculated function")
    return manager


def _runs_user_code(manager) -> str:
    cls = type(manager)
    for name in ("__enter__", "__exit__"):
        method = getattr(cls, name, None)
        if method is not None and is_user_function(method):
            return f"{cls.__qualname__}.{name} is the program's own code"
    func = getattr(manager, "func", None)
    if isinstance(manager, contextlib._GeneratorContextManagerBase) and func is not None and is_user_function(func):
        return f"{getattr(func, '__qualname__', func)} is a contextmanager of the program"
    if isinstance(manager, _CALLING_BACK):
        return f"a {cls.__name__} calls back into the program"
    return ""
