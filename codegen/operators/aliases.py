"""Outside state reached other than through janus's copies: an attribute a class write gives an
instance or subclass, and the items of containers janus keeps no copy of.

`state.ld_attr` and `state.ld_item` ask these first; each answers with what Python would read
within the call, and records the entry checks that keep that answer valid."""
from __future__ import annotations

import collections
import collections.abc
import copy
import inspect
import types

from profiler.library import is_library_module

from codegen.assumptions import Check, Kind, lacks
from codegen.operators.heap import DELETED

CONTAINERS = (collections.abc.MutableMapping, collections.abc.MutableSequence)


def bound_container(value):
    """The list, dict, set or other mutable container a C method is bound to (`LOG.append`), or
    None: held apart from it, the method still changes the container."""
    if isinstance(value, (types.BuiltinMethodType, types.MethodWrapperType)) \
            and isinstance(value.__self__, (*CONTAINERS, set)):
        return value.__self__
    return None


def check_key(ctx, obj, key):
    """An item read of an outside container janus keeps no copy of (an `OrderedDict`, a
    `defaultdict`): the caller reads it as outside state, checked at entry like an attribute (or
    fed, or copied), by a key the guard can name; any other key, or a `defaultdict` read that
    adds the key, runs the statement in Python."""
    if not isinstance(key, (str, int, bool, bytes)) or (isinstance(obj, collections.defaultdict) and key not in obj):
        ctx.fail("outside-container", f"`{ctx.outside[id(obj)]}[...]` reads a {type(obj).__name__} from outside the "
                 "call by a key the graph cannot check (or a defaultdict adds it on the read)",
                 "it runs in Python between graph segments")
    ctx.keep.append(obj)


def read_whole(ctx, obj):
    """`len`, `in`, iteration or a reading method of an outside container janus keeps no copy of:
    its contents (a snapshot, compared item by item) are checked at entry."""
    if isinstance(obj, CONTAINERS) and id(obj) in ctx.outside and id(obj) not in ctx.heap.by_copy \
            and not ctx.dry_run:
        key = ("items", id(obj), "")
        if key not in ctx.checks:
            ctx.keep.append(obj)
            ctx.checks[key] = Check(Kind.ITEMS_MATCH, ctx.outside[id(obj)], copy.copy(obj), obj, "", "self")


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


def proxied(holder):
    """The object a proxy (`wrapt`'s, as `tf.Module` wraps a dict attribute in) stands for, or None."""
    return holder.__wrapped__ if hasattr(type(holder), "__wrapped__") else None


def note_absent(ctx, obj, name):
    """`obj.name` of an outside object raised AttributeError (`hasattr` gave False, `getattr` its
    default): the entry guard checks that Python's plain lookup still finds no `name` on the
    object nor its class, so an attribute added later is seen.  Where the error came from code
    (a `__getattr__`, a descriptor), that code decides the answer on every call: Python runs it."""
    source = ctx.outside.get(id(obj))
    if source is None or ctx.dry_run or (isinstance(obj, types.ModuleType) and is_library_module(obj.__name__)):
        return
    plain = type(obj).__getattribute__ in (object.__getattribute__, type.__getattribute__,
                                           types.ModuleType.__getattribute__)
    if not plain or not lacks(obj, name) or inspect.getattr_static(type(obj), "__getattr__", None) is not None \
            or (isinstance(obj, types.ModuleType) and "__getattr__" in vars(obj)):
        ctx.fail("custom-getattr", f"`{source}.{name}` is missing, as code of its class decides "
                 "(a __getattr__ or a descriptor): whether it is there may change on any call",
                 "give the attribute a default value on the class, or test for it outside the function")
    ctx.check("absent", obj, name, True, source.lacks(name), kind=Kind.CONSTANT, expected=True)
