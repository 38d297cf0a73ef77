"""Defaults, filled in at the call: a default is an argument of the call it is taken by.

A graph specialised on a default the call left out would keep it after the program changes
`f.__defaults__`, and a mutable one (`def f(x, acc=[])`) is state: a call that leaves `acc` out
changes the very list held in `f.__defaults__`.  Taken as a value of the build, its appends
would happen once, while the graph is built, and leave graph tensors in it.  So:
  - at the speculated function's own call, every default the call takes is passed as an
    argument (`Defaults.fill`): a graph is guarded on it like on any argument, a mutable one's
    contents are read on every call, checked against what the graph assumed, and the
    function's changes are written back to the very object;
  - where the graph inlines a call that takes a mutable one (`outside_defaults`), the default
    is read as outside state, `f.__defaults__[i]`, as a global is: checked at entry, writes
    deferred (an immutable default written into an inlined call is checked at entry as part
    of `f.__defaults__`)."""
from __future__ import annotations

import inspect
import types

import tensorflow as tf

from codegen.assumptions import Kind, Source
from codegen.operators import state
from codegen.operators.values import user_module

_IMMUTABLE = (type(None), bool, int, float, complex, str, bytes, range, type, types.FunctionType,
              types.BuiltinFunctionType, tf.Tensor, tf.DType, tf.TensorShape)


def immutable(value) -> bool:
    if isinstance(value, (tuple, frozenset)):
        return all(map(immutable, value))
    if isinstance(value, (types.BuiltinMethodType, types.MethodWrapperType)) \
            and not isinstance(value.__self__, (types.ModuleType, type(None))):
        return False                        # `emit=LOG.append`: bound to an object it may change
    return isinstance(value, _IMMUTABLE) or value is Ellipsis


class Defaults:
    """Fills in the defaults a call leaves out, so that they are arguments of the call: a graph
    is then specialised on them and guarded like any argument, and a default the program
    changes (`f.__defaults__ = ...`, or a mutable one changed in place) is seen at the next call,
    as eager sees it."""

    def __init__(self, fn):
        self.fn = fn
        self._defaults = self._kwdefaults = None
        self._signature = None
        code = fn.__code__
        self._positional = code.co_argcount         # a call passing these, and no keywords, takes none
        self._varargs = bool(code.co_flags & inspect.CO_VARARGS)
        self._kwonly = set(code.co_varnames[code.co_argcount:code.co_argcount + code.co_kwonlyargcount])

    def fill(self, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        fn = self.fn
        defaults, kwdefaults = fn.__defaults__, fn.__kwdefaults__
        if defaults is None and not kwdefaults:
            return args, kwargs
        if not kwargs and not kwdefaults and len(args) >= self._positional:
            return args, kwargs
        if not kwargs and self._positional - len(defaults or ()) <= len(args) and (
                len(args) <= self._positional or self._varargs) and (kwdefaults or {}).keys() >= self._kwonly:
            # (what `bind` and `apply_defaults` give, at a thirtieth of their cost)
            missing = self._positional - len(args)
            return (args + defaults[len(defaults) - missing:] if missing > 0 else args), dict(kwdefaults or {})
        if defaults is not self._defaults or not _same_items(kwdefaults, self._kwdefaults):
            self._signature = inspect.signature(fn, follow_wrapped=False)     # (with the defaults it has now)
            self._defaults, self._kwdefaults = defaults, kwdefaults and dict(kwdefaults)
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError:                   # (the call raises it, as eager's does)
            return args, kwargs
        bound.apply_defaults()
        return bound.args, bound.kwargs


def _same_items(a, b) -> bool:
    """Whether two keyword-default dicts (or None) hold the same objects under the same names."""
    if not a or not b:
        return not a and not b
    return a.keys() == b.keys() and all(a[k] is b[k] for k in a)


def outside_defaults(ctx, fn, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """`args` and `kwargs` of an inlined call of `fn`, with every default the call takes given
    explicitly (the converted function's own defaults are those of its source text): a mutable
    one read as outside state, and the graph holding while the immutable ones are the function's
    defaults still (see the module docstring)."""
    if not (fn.__defaults__ or fn.__kwdefaults__):
        return args, kwargs
    try:
        bound = inspect.signature(fn, follow_wrapped=False).bind(*args, **kwargs)
    except TypeError:
        return args, kwargs                 # (the inlined call raises it)
    given = set(bound.arguments)
    bound.apply_defaults()
    taken = [name for name in bound.arguments if name not in given]
    if not taken:
        return args, kwargs
    code = fn.__code__
    positional = code.co_varnames[:code.co_argcount]
    defaults = fn.__defaults__ or ()
    kwdefaults = fn.__kwdefaults__ or {}
    source = Source.global_name(user_module(fn), fn.__qualname__)
    for name in taken:
        if name in kwdefaults:
            ctx.check("attr", fn, "__kwdefaults__", kwdefaults, source.attr("__kwdefaults__"), kind=Kind.ID_MATCH,
                      expected=kwdefaults)
            holder, key, where = kwdefaults, name, source.attr("__kwdefaults__").item(name)
        else:
            check_defaults(ctx, fn)
            i = positional.index(name) - (len(positional) - len(defaults))
            holder, key, where = defaults, i, source.attr("__defaults__").item(i)
        value = holder[key]
        if not immutable(value):
            bound.arguments[name] = state.read_outside("item", holder, key, value, where)
        elif holder is kwdefaults:
            ctx.check("item", holder, key, value, where, kind=Kind.ID_MATCH, expected=value)
    return bound.args, bound.kwargs


def check_defaults(ctx, fn):
    """The graph took `fn`'s defaults: it holds while `fn.__defaults__` is this very tuple."""
    ctx.check("attr", fn, "__defaults__", fn.__defaults__, Source.global_name(user_module(fn), fn.__qualname__).attr(
        "__defaults__"), kind=Kind.ID_MATCH, expected=fn.__defaults__)
