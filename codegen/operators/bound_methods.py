"""Bound methods from outside the call, and the objects they are bound to.

A bound method is a new object on every lookup (`m.pick` twice gives two objects), so what is
checked at entry is what it stands for: its function and the object (or class) it is bound to.
That object is outside state like any other reached from the arguments, globals or closures:
registered with its source (`args[0].__self__`, `CFG['cb'].__self__`), so the method's writes to
it (`self.steps += 1`, `cls.created += 1`) are deferred to after the run and applied once per
successful call, not made on the real object while the graph is built.
"""
from __future__ import annotations

import functools
import inspect
import types

from codegen.assumptions import SCALARS, Check, Kind, Source


def read_method(ctx, access: str, holder, name, value: types.MethodType, source):
    """A bound method read as `holder.name` (`access` "attr"), `holder[name]`, a global or a
    closure cell: its function and its object are checked at entry, and its object is outside."""
    prefix = "" if access == "attr" else access + "-"
    ctx.check(prefix + "method", holder, name, value.__func__, source, kind=Kind.ID_MATCH, expected=value.__func__)
    if value.__self__ is not holder:      # (its holder is checked already: it is outside)
        ctx.check(prefix + "bound", holder, name, value.__self__, source.attr("__self__"), kind=Kind.ID_MATCH,
                  expected=value.__self__)
    return value


def made_per_read(ctx, holder, name, value, source) -> bool:
    """`holder.name` is made anew on every read by a descriptor on the class (a method decorated
    by `@tf.custom_gradient`, which binds a new wrapper each time): its identity is no fact to
    check.  What decides it is: the object's class, the class's attribute (the descriptor, which
    the class gives back as itself), and that the object's own `__dict__` lacks the name.  Those
    are checked at entry (True); False where `value` is no such thing (`source`: the value's)."""
    cls = type(holder)
    static = inspect.getattr_static(cls, name, None)
    if id(holder) not in ctx.outside or static is None or static is value or isinstance(static, (types.FunctionType, property)) or \
            not hasattr(type(static), "__get__") or hasattr(type(static), "__set__") or \
            cls.__getattribute__ is not object.__getattribute__ or name in (getattr(holder, "__dict__", None) or ()):
        return False
    try:
        if getattr(cls, name) is not static:
            return False
    except AttributeError:
        return False
    place = ctx.outside[id(holder)]
    ctx.check("attr", holder, "__class__", cls, place.attr("__class__"), kind=Kind.ID_MATCH, expected=cls)
    where = ctx.outside.get(id(cls)) or Source.global_name(cls.__module__, cls.__qualname__)
    ctx.check("attr", cls, name, static, where.attr(name), kind=Kind.ID_MATCH, expected=static)
    if hasattr(holder, "__dict__"):
        ctx.check("owns", holder, name, False, place.owns(name), kind=Kind.CONSTANT, expected=False)
    return True


def register_owner(ctx, f: types.MethodType):
    """The object a called bound method is bound to, as outside state when the method is (a
    method passed in, or reached from outside state): its writes are then deferred."""
    source = ctx.outside.get(id(f))
    if source is not None and id(f.__self__) not in ctx.outside:
        ctx.outside[id(f.__self__)] = source.attr("__self__")
        ctx.keep.append(f.__self__)


def partial_parts(ctx, f: functools.partial):
    """A `functools.partial` of the program's function or method, called: what it holds, as
    outside state when the partial is, so the call is inlined as the program's code (called as
    it is, it would run once, while the graph is built)."""
    source = ctx.outside.get(id(f))
    if source is not None:
        held = [(f.func, source.attr("func"))] + [(a, source.attr("args").item(i)) for i, a in enumerate(f.args)]
        held += [(v, source.attr("keywords").item(k)) for k, v in f.keywords.items()]
        for value, where in held:
            if type(value) not in SCALARS and id(value) not in ctx.outside:
                ctx.outside[id(value)] = where
                ctx.keep.append(value)
        # Its function and arguments are fixed; its keywords dict may change in place.
        ctx.checks.setdefault(("length", id(f), "keywords"), Check(Kind.LENGTH_MATCH, source.attr("keywords"),
                                                                   len(f.keywords), f, "keywords", "attr"))
        for k, v in f.keywords.items():
            ctx.check("item", f.keywords, k, v, source.attr("keywords").item(k))
    return f.func, f.args, f.keywords
