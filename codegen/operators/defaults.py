"""Defaults a function may change (`def f(x, acc=[])`), treated as the state they are.

A call that leaves `acc` out changes the very list held in `f.__defaults__`.  Taken as a value
of the call, the build would see a list the function made itself: its appends would happen
once, while the graph is built, and leave graph tensors in it.  So:
  - at the speculated function's own call, such a default is passed as an argument
    (`Defaults.fill`): its contents are read on every call, checked against what the graph
    assumed, and the function's changes are written back to the very object;
  - where the graph inlines a call that takes one (`outside_defaults`), the default is read as
    outside state, `f.__defaults__[i]`, as a global is: checked at entry, writes deferred."""
from __future__ import annotations

import inspect
import types

import tensorflow as tf

from codegen.assumptions import Source
from codegen.operators import state

_IMMUTABLE = (type(None), bool, int, float, complex, str, bytes, range, type, types.FunctionType,
              types.BuiltinFunctionType, tf.Tensor, tf.DType, tf.TensorShape)


def immutable(value) -> bool:
    if isinstance(value, (tuple, frozenset)):
        return all(map(immutable, value))
    if isinstance(value, (types.BuiltinMethodType, types.MethodWrapperType)) \
            and not isinstance(value.__self__, (types.ModuleType, type(None))):
        return False                        # `emit=LOG.append`: bound to an object it may change
    return isinstance(value, _IMMUTABLE) or value is Ellipsis


def _mutable(fn) -> bool:
    return not all(map(immutable, (*(fn.__defaults__ or ()), *(fn.__kwdefaults__ or {}).values())))


class Defaults:
    """Fills in the defaults a call takes, when one of the function's defaults is mutable."""

    def __init__(self, fn):
        self.fn = fn
        self._key = None
        self._signature = None

    def fill(self, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        fn = self.fn
        key = (fn.__defaults__, fn.__kwdefaults__ and tuple(fn.__kwdefaults__.items()))
        if key != self._key:
            self._signature = inspect.signature(fn) if _mutable(fn) else None
            self._key = key
        if self._signature is None:
            return args, kwargs
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError:                   # (the call raises it, as eager's does)
            return args, kwargs
        bound.apply_defaults()
        return bound.args, bound.kwargs


def outside_defaults(ctx, fn, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """`args` and `kwargs` of an inlined call of `fn`, with each mutable default the call takes
    given explicitly, read as outside state (see the module docstring)."""
    if not (fn.__defaults__ or fn.__kwdefaults__) or not _mutable(fn):
        return args, kwargs
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs)
    except TypeError:
        return args, kwargs                 # (the inlined call raises it)
    code = fn.__code__
    positional = code.co_varnames[:code.co_argcount]
    defaults = fn.__defaults__ or ()
    source = Source.global_name(fn.__module__, fn.__qualname__)
    kwargs = dict(kwargs)
    for i, name in enumerate(positional[len(positional) - len(defaults):]):
        value = defaults[i]
        if name not in bound.arguments and not immutable(value):
            if positional.index(name) < code.co_posonlyargcount:
                ctx.fail("mutable-default", f"{fn.__qualname__}() takes its mutable default `{name}`, a "
                         "positional-only parameter", f"pass `{name}` explicitly")
            kwargs[name] = state.read_outside("item", defaults, i, value, source.attr("__defaults__").item(i))
    for name, value in (fn.__kwdefaults__ or {}).items():
        if name not in bound.arguments and not immutable(value):
            kwargs[name] = state.read_outside("item", fn.__kwdefaults__, name, value,
                                              source.attr("__kwdefaults__").item(name))
    return args, kwargs
