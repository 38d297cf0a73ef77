"""Outside state reached other than through janus's copies: an attribute a class write gives an
instance or subclass, the items of containers janus keeps no copy of, and what a copied outside
container holds.

`state.ld_attr` and `state.ld_item` ask these first; each answers with what Python would read
within the call, and records the entry checks that keep that answer valid."""
from __future__ import annotations

import collections
import collections.abc
import copy
import inspect
import types

import tensorflow as tf

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


def held_item(ctx, sh, key, value):
    """What an outside container (copied as `sh`) holds at `key` is outside too.  A list or dict
    is given as the build's copy of it: its items are re-checked at entry when read
    (`CFG["scales"][1] = 10` between calls is seen) and a change to it is a deferred write.
    Another object is an outside object (its attributes read fresh or guarded)."""
    if sh.holder is None:
        return value        # (an argument container's items are arguments: the signature feeds them)
    if sh.real is not None and type(value) in (list, dict) and not ctx.dry_run:
        if id(value) in ctx.heap.by_copy:
            return value
        return ctx.heap.shadow(value, sh.source.item(key), holder=("item", sh.real, key))
    held_outside(ctx, sh, key, value)
    return value


def held_outside(ctx, sh, key, value):
    """An object held in an outside container is outside too: its attributes are read fresh
    (tensors) or guarded (Python values) like those of any outside object."""
    if sh.holder is not None and not isinstance(value, (tf.Tensor, tf.Variable, int, float, str, bool, type(None))):
        ctx.outside.setdefault(id(value), sh.source.item(key))
        ctx.keep.append(value)


def read_container(ctx, x, whole=True):
    """`x`'s contents are read as a whole (iteration, a reading method such as `items`, `values`,
    `get` or `setdefault`, or `x` passed to a call): a copied outside container then holds the
    copies of the lists and dicts in it in place of them, so what it hands out is what the build
    reads and writes, never the user's own list.  (`whole=False`: one item is handed out; the
    contents are not read.)"""
    sh = ctx.heap.by_copy.get(id(x))
    if whole:
        ctx.heap.mark_read(x)
    if sh is None or sh.holder is None or sh.exposed:
        return
    sh.exposed = not ctx.dry_run
    snap = sh.snapshot
    keys = range(min(len(x), len(snap))) if type(x) is list else [k for k in x if k in snap]
    for k in keys:
        if x[k] is snap[k]:
            x[k] = held_item(ctx, sh, k, x[k])
