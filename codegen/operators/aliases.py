"""Outside state reached other than through janus's copies: an attribute a class write gives an
instance or subclass, the items of containers janus keeps no copy of, and what a copied outside
container holds.

`state.ld_attr` and `state.ld_item` ask these first; each answers with what Python would read
within the call, and records the entry checks that keep that answer valid."""
from __future__ import annotations

import collections
import collections.abc
import copy
import gc
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


def outside_copy(ctx, value, source, holder):
    """The build's copy of the outside list or dict `value` (read from `holder`: (access, holder,
    name)).  What it holds is outside too, and the copy holds it as such from the start, so no
    way of reading it (an item, iteration, a reading method, unpacking, `+`, C code given it)
    reaches the user's own inner lists: each list or dict in it is its own copy (its items
    re-checked at entry when read, a change to it a deferred write), each other object an
    outside object.  A tuple in it that holds lists or dicts stops the build (janus keeps no
    copy of a tuple)."""
    copy = ctx.heap.shadow(value, source, holder=holder)
    sh = ctx.heap.by_copy[id(copy)]
    if sh.exposed or sh.fed or ctx.dry_run:
        return copy
    sh.exposed = True
    for key, item in (list(enumerate(copy)) if type(copy) is list else list(copy.items())):
        if type(item) in (list, dict):
            copy[key] = outside_copy(ctx, item, source.item(key), ("item", value, key))
        else:
            no_tuple_of_containers(ctx, item, source.item(key))
            held_outside(ctx, sh, key, item)
    return copy


def no_tuple_of_containers(ctx, value, source):
    """A tuple from outside that holds lists or dicts (at any depth through tuples): janus keeps
    no copy of it, so an append to its lists would reach the user's list while the graph is
    built.  The build stops (the call runs in Python)."""
    if isinstance(value, tuple) and _holds_containers(value):
        ctx.fail("outside-container", f"`{source}` is a tuple holding lists or dicts, which janus keeps no copy of",
                 "keep the lists in a list or dict")


def _holds_containers(value, depth=0) -> bool:
    return depth < 20 and any(type(v) in (list, dict) or (isinstance(v, tuple) and _holds_containers(v, depth + 1))
                              for v in value)


def held_item(ctx, sh, key, value):
    """What a copied container (`sh`) gives for `key`: the copies of the lists and dicts an
    outside container held are already in it (`outside_copy`); a list the call itself put there
    is the call's own."""
    if sh.holder is not None and ctx.dry_run:
        held_outside(ctx, sh, key, value)       # (the machine's scratch runs make no copies)
    return value


def held_outside(ctx, sh, key, value):
    """An object held in an outside container is outside too: its attributes are read fresh
    (tensors) or guarded (Python values) like those of any outside object."""
    if sh.holder is not None and not isinstance(value, (tf.Tensor, tf.Variable, int, float, str, bool, type(None))):
        ctx.outside.setdefault(id(value), sh.source.item(key))
        ctx.keep.append(value)


_HANDING_OUT = {"values", "items", "get", "pop", "popitem", "setdefault", "copy", "popleft", "__iter__",
                "__reversed__"}


def no_lists_handed_out(ctx, obj, method: str):
    """`obj.method(...)` (or iteration, `method` "__iter__") of an outside container janus keeps
    no copy of (an `OrderedDict`, a `defaultdict`, a `deque`) that holds lists or dicts: what it
    hands out would be the user's own lists, which an append would change while the graph is
    built.  The build stops (the call runs in Python).  Its items read by key are copied
    (`state.read_outside`)."""
    if method not in _HANDING_OUT or not isinstance(obj, CONTAINERS) or id(obj) not in ctx.outside \
            or id(obj) in ctx.heap.by_copy or ctx.dry_run:
        return
    if method == "__iter__" and isinstance(obj, collections.abc.Mapping):
        return                                  # (its keys)
    values = obj.values() if isinstance(obj, collections.abc.Mapping) else obj
    if any(type(v) in (list, dict) for v in values):
        ctx.fail("outside-container", f"`{ctx.outside[id(obj)]}.{method}` hands out the lists or dicts a "
                 f"{type(obj).__name__} from outside holds, which janus keeps no copy of",
                 "use a plain dict or list, or read its items by key")


_VIEWS = (type({}.keys()), type({}.values()), type({}.items()))


def read_by_methods(ctx, values):
    """A list's or dict's bound method among `values`, handed to code that calls it
    (`map(GL.__getitem__, ...)`, `sorted(keys, key=GD.get)`): the container counts as read."""
    for v in values:
        if isinstance(v, (types.BuiltinMethodType, types.MethodWrapperType)) and type(v.__self__) in (list, dict):
            read_deep(ctx, v.__self__)


def read_deep(ctx, value):
    """C code reads `value` through and through (`sum(rows, [])`, `str(d)`, `sorted(d.values(),
    key=len)`, `==`): every copy of an outside list or dict it reaches, through lists, tuples,
    dicts and dict views, counts as read (its items checked at entry)."""
    seen, stack = set(), [value]
    while stack:
        v = stack.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        if type(v) in _VIEWS:
            stack += gc.get_referents(v)          # (a view refers to its dict)
            continue
        if type(v) not in (list, tuple, dict):
            continue
        sh = ctx.heap.by_copy.get(id(v))
        if sh is not None:
            sh.read = True
        stack += list(v.values()) if type(v) is dict else list(v)


def appended_item(sh, obj, key) -> bool:
    """`lst[-k]` is an item this call appended to the copy of an outside list (its old items
    still in place): what it is does not depend on what the list held."""
    snap = sh.snapshot
    return type(obj) is list and type(key) is int and key < 0 and -key <= len(obj) - len(snap) \
        and all(a is b for a, b in zip(obj, snap))


def assign_item(sh, obj, key) -> bool:
    """Record `obj[key] = v` on the copy of an outside dict, or of a list at an int index, as an
    assignment written back by key (the list's other items need not be the build's: its length
    is checked at entry); False for another key (a slice), which needs the contents the build saw."""
    if type(obj) is dict:
        sh.assigned.add(key)
        return True
    if type(obj) is list and type(key) is int and -len(obj) <= key < len(obj):
        sh.assigned.add(key % len(obj))
        return True
    return False


def own_item(sh, obj, key) -> bool:
    """`lst[i]` of an outside list's copy is an item this call assigned or appended, its old
    items in their places (only appends and item assignments so far): the call's own value."""
    if type(obj) is not list or type(key) is not int or sh.mutated or not -len(obj) <= key < len(obj):
        return False
    index = key % len(obj)
    return index >= len(sh.snapshot) or index in sh.assigned


_KEYS = (str, int, float, bool, tuple, bytes, type(None))


def item_fed(ctx, sh, obj, key, value) -> bool:
    """`d[k]` or `lst[i]` (a Python key) of an outside container's copy that still holds the
    user's item there: the item is read like an outside attribute, from the user's container on
    every call (a tensor fed fresh, a Python value checked by itself, a list or dict copied),
    instead of requiring the container's every item unchanged at entry (`self.losses[-1]` of a
    list the call appends to; `VOCAB["w7"]` of a large dict)."""
    if sh.holder is None or sh.real is None or sh.fed or ctx.dry_run or type(key) not in _KEYS:
        return False
    snap, held = sh.snapshot, ctx.heap.real_of(value)
    if type(obj) is dict:
        return key in snap and snap[key] is held
    if type(obj) is not list or type(key) is not int or not -len(snap) <= key < len(snap) or snap[key] is not held:
        return False
    return key >= 0 or len(obj) == len(snap)      # (a negative index: the same item only at the same length)
