"""Reads of objects and classes that run no user code.

The profiler looks at the objects a call can reach before the call runs; eager never touches
them there, so nothing it does may call the user's ``__getattr__``, ``__getattribute__``, a
property or another descriptor, or a metaclass's hooks.  ``getattr(obj, name)`` can call all of
them, and so can ``isinstance(obj, cls)`` (when ``type(obj)`` is not a subclass of ``cls`` it
reads ``obj.__class__``).  These helpers go through ``type``'s own slots and the objects'
dictionaries instead.
"""
from __future__ import annotations

import types

_TYPE_DICT = type.__dict__["__dict__"].__get__        # cls.__dict__ without the metaclass
_TYPE_MRO = type.__dict__["__mro__"].__get__
_TYPE_MODULE = type.__dict__["__module__"].__get__
_TYPE_QUALNAME = type.__dict__["__qualname__"].__get__
_TYPE_NAME = type.__dict__["__name__"].__get__
_OBJECT_DICT = object.__getattribute__
_MISSING = object()
# What `type` puts in a class's dict for its instances' `__dict__` (a module's is a member).
_DICT_SLOTS = (types.GetSetDescriptorType, types.MemberDescriptorType)


def is_a(obj, classes) -> bool:
    """``isinstance`` decided from ``type(obj)`` alone (never reads ``obj.__class__``)."""
    return issubclass(type(obj), classes)


def class_dict(cls):
    """``cls.__dict__`` (a mapping proxy) read through ``type``."""
    return _TYPE_DICT(cls)


def mro(cls) -> tuple:
    return _TYPE_MRO(cls)


def module_of(cls):
    """``cls.__module__`` read through ``type`` (None when it cannot be read)."""
    try:
        return _TYPE_MODULE(cls)
    except (AttributeError, TypeError):
        return None


def qualname_of(cls) -> str:
    return _TYPE_QUALNAME(cls)


def name_of(cls) -> str:
    return _TYPE_NAME(cls)


def instance_dict(obj):
    """``obj.__dict__``, or None when it has none or a class in its MRO defines ``__dict__``
    itself (a property, a slot: reading it would run that class's code)."""
    for klass in mro(type(obj)):
        entry = class_dict(klass).get("__dict__", _MISSING)
        if entry is not _MISSING and not (type(entry) in _DICT_SLOTS and entry.__objclass__ is klass):
            return None
    try:
        d = _OBJECT_DICT(obj, "__dict__")
    except AttributeError:
        return None
    return d if type(d) is dict else None


def attribute(obj, name, default=None):
    """``obj.<name>`` as stored (an instance's dict entry, else a class's dict entry itself), not
    computed: no ``__getattr__``, no descriptor's ``__get__``, no metaclass hook (which
    ``inspect.getattr_static`` still runs, reading each class's ``__dict__``)."""
    own = instance_dict(obj)
    if own is not None and name in own:
        return own[name]
    for klass in mro(type(obj)):
        found = class_dict(klass).get(name, _MISSING)
        if found is not _MISSING:
            return found
    return default
