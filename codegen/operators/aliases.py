"""Outside state reached other than through janus's copies: an attribute a class write gives an
instance or subclass, and the items of containers janus keeps no copy of.

`state.ld_attr` and `state.ld_item` ask these first; each answers with what Python would read
within the call, and records the entry checks that keep that answer valid."""
from __future__ import annotations

import collections
import collections.abc

import tensorflow as tf

from codegen.operators.heap import DELETED

CONTAINERS = (collections.abc.MutableMapping, collections.abc.MutableSequence)


def outside_item(ctx, obj, key):
    """An item of an outside container janus keeps no copy of (an `OrderedDict`, a `defaultdict`,
    a `Counter`): checked at entry like an attribute, and outside itself, so a change between
    calls builds another graph and a change by the call runs that statement in Python."""
    source = ctx.outside[id(obj)]
    if not isinstance(key, (str, int, bool, bytes)) or (isinstance(obj, collections.defaultdict) and key not in obj):
        ctx.fail("outside-container", f"`{source}[...]` reads a {type(obj).__name__} from outside the call by a key "
                 "the graph cannot check (or a defaultdict adds it on the read)", "it runs in Python between graph segments")
    value = obj[key]
    ctx.check("item", obj, key, value, source.item(key))
    ctx.keep.append(obj)
    if not isinstance(value, (tf.Tensor, tf.Variable, int, float, str, bool, bytes, type(None))):
        ctx.outside.setdefault(id(value), source.item(key))     # (its mutators stop the build)
        ctx.keep.append(value)
    return value


def written_on_class(ctx, obj, name):
    """The call's pending write of `name` on the class `obj` reads it from: for an instance whose
    `__dict__` lacks it, its class or a base (`Model.steps += 1`, then `self.steps`); for a class,
    a base (`Base.count += 1`, then `Sub.count`).  None where Python finds it first elsewhere.
    The graph then holds while the instance and the classes before the writer still lack it."""
    is_class = isinstance(obj, type)
    if not is_class and name in (getattr(obj, "__dict__", None) or ()):
        return None
    lacking = [] if is_class else [obj]
    for klass in (obj if is_class else type(obj)).__mro__:
        written = ctx.heap.attrs.get((id(klass), name)) if klass is not obj else None
        if written is not None:
            if written[2] is DELETED:
                return None
            for holder in lacking:
                if id(holder) in ctx.outside:
                    ctx.check("owns", holder, name, False, ctx.outside[id(holder)].owns(name))
            return written
        if name in klass.__dict__:
            return None
        lacking.append(klass)
    return None
