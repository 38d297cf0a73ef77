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
import types

from codegen.assumptions import SCALARS, Kind


def read_method(ctx, access: str, holder, name, value: types.MethodType, source):
    """A bound method read as `holder.name` (`access` "attr"), `holder[name]`, a global or a
    closure cell: its function and its object are checked at entry, and its object is outside."""
    prefix = "" if access == "attr" else access + "-"
    ctx.check(prefix + "method", holder, name, value.__func__, source, kind=Kind.ID_MATCH, expected=value.__func__)
    if value.__self__ is not holder:      # (its holder is checked already: it is outside)
        ctx.check(prefix + "bound", holder, name, value.__self__, source.attr("__self__"), kind=Kind.ID_MATCH,
                  expected=value.__self__)
    return value


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
    return f.func, f.args, f.keywords
