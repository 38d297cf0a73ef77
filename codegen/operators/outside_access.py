"""The readers and writers of outside values that a graph keeps.

A graph keeps the functions that read an outside value on every call (`call_time`) and those
that put one back after a failed run (`unchanged`).  They hold an object they read from weakly
where Python allows it: the entry guard's checks keep alive what a graph needs, and the objects
a graph was specialised on, which those hold weakly (`codegen.graph.held_weakly`), must be free
to go with whatever they hold.
"""
from __future__ import annotations

import inspect
import types
import weakref

from codegen.operators import unchanged


def _getter(holder):
    """A function returning `holder`: through a weak reference where one can be made."""
    try:
        return weakref.ref(holder)
    except TypeError:
        return lambda: holder


def outside_reader(access, holder, name):
    """A function reading the outside value `holder`.`name` (or its cell) when called."""
    get = _getter(holder)
    if access == "attr":
        return lambda: getattr(get(), name)
    if access in ("global", "item"):            # ("item": a container's item, the holder of a shadow)
        return lambda: get()[name]
    return lambda: get().cell_contents


def outside_writer(access, holder, name):
    """A function putting a value back at `holder`.`name` (or its cell) without running the
    user's code; `unchanged.GONE` deletes it.  None where that is not possible (a property)."""
    get = _getter(holder)
    if access == "attr":
        return _attribute_writer(holder, get, name)
    if access in ("global", "item"):
        return lambda v: get().pop(name, None) if v is unchanged.GONE else get().__setitem__(name, v)
    return lambda v: delattr(get(), "cell_contents") if v is unchanged.GONE else setattr(get(), "cell_contents", v)


def _attribute_writer(holder, get, name):
    """Into the object's `__dict__` directly (its `__setattr__` may log, or refuse a frozen
    dataclass), through a slot's descriptor, or, for a name its class provides (a method, a class
    attribute), by taking out what a call put into the instance; a class's own attribute with
    `setattr`.  None for a property or another descriptor."""
    if isinstance(holder, type):
        return lambda v: delattr(get(), name) if v is unchanged.GONE else setattr(get(), name, v)
    found = inspect.getattr_static(type(holder), name, None)
    if isinstance(found, types.MemberDescriptorType):              # a __slots__ field
        return lambda v: found.__delete__(get()) if v is unchanged.GONE else found.__set__(get(), v)
    own = getattr(holder, "__dict__", None)
    if not isinstance(own, dict) or hasattr(type(found), "__set__") or hasattr(type(found), "__delete__"):
        return None

    def write(value):
        obj = get()
        if value is unchanged.GONE or (found is not None and _same_binding(value, found, obj)):
            obj.__dict__.pop(name, None)
        else:
            obj.__dict__[name] = value
    return write


def _same_binding(value, found, holder) -> bool:
    """`value` is what the class gives for the name (a bound method is a new object each time)."""
    if isinstance(value, types.MethodType):
        return value.__self__ is holder and value.__func__ is found
    return value is found
