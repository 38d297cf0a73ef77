"""An object's attributes reached other than by `obj.name`: `object.__setattr__(obj, ...)`,
`obj.__setattr__(...)`, `type(obj)`, `vars(obj)` and `obj.__dict__`.

On an object from outside the call, `obj.name = v` is a deferred write, and `obj.name` reads it
back within the call.  These other ways reach the same storage:
  - `object.__setattr__`/`__delattr__` (also as `obj.__setattr__`, where the class keeps
    `object`'s) are that same deferred write, made into the object's `__dict__` as they make it;
  - `type(obj)` is `obj.__class__`, an outside class whose attributes are read and written as
    outside state (`type(self).count += 1`);
  - `vars(obj)` and `obj.__dict__` hand out the dict itself, whose writes and reads would bypass
    the deferred writes: the statement that takes it runs in Python, between graph segments.
`object_attrs` and `set_attrs` read and put back an object's attributes, slots included, for
the objects a graph's results rebuild."""
from __future__ import annotations

from codegen.operators.context import current
from codegen.operators.state import del_attr, ld_attr, st_attr
from codegen.operators.eager_view import reads_frame

PLAIN_SETATTR = (object.__setattr__, object.__delattr__)


def _outside(obj) -> bool:
    return id(obj) in current().outside


def _descriptor(cls, name) -> bool:
    found = next((k.__dict__[name] for k in cls.__mro__ if name in k.__dict__), None)
    return hasattr(type(found), "__set__") or hasattr(type(found), "__delete__")


def object_setattr(obj, name, value):
    if not _outside(obj) or type(name) is not str or isinstance(obj, type):
        return object.__setattr__(obj, name, value)
    if _descriptor(type(obj), name):
        dict_view(obj, f"object.__setattr__ of `{name}`, a descriptor of {type(obj).__qualname__}")
    return st_attr(obj, name, value)


def object_delattr(obj, name):
    if not _outside(obj) or type(name) is not str or isinstance(obj, type):
        return object.__delattr__(obj, name)
    if _descriptor(type(obj), name):
        dict_view(obj, f"object.__delattr__ of `{name}`, a descriptor of {type(obj).__qualname__}")
    return del_attr(obj, name)


def bound_setattr(f, args, kwargs) -> bool:
    """`obj.__setattr__(name, value)` / `obj.__delattr__(name)`, where `obj`'s class keeps
    `object`'s: made by the functions above (True); False for any other method."""
    obj = f.__self__
    if kwargs or not _outside(obj) or getattr(type(obj), f.__name__, None) not in PLAIN_SETATTR:
        return False
    (object_setattr if f.__name__ == "__setattr__" else object_delattr)(obj, *args)
    return True


def type_of(obj):
    """`type(obj)` of an outside object: its class read as `obj.__class__` is."""
    if _outside(obj) and getattr(obj, "__class__", None) is type(obj):
        return ld_attr(obj, "__class__")
    return type(obj)


def vars_of(*args):
    if not args:
        reads_frame("vars()")
    if len(args) == 1 and _outside(args[0]):
        dict_view(args[0], "vars() of an object from outside the call")
    return vars(*args)


def dict_view(obj, what):
    current().fail("object-dict", f"{what} reaches its attributes past janus's deferred writes: the statement "
                   "runs in Python", "read and write the attributes by name")


def slots(t: type) -> list:
    """The slot names of `t` and its bases (their values live outside any `__dict__`)."""
    names = []
    for cls in t.__mro__:
        own = cls.__dict__.get("__slots__", ())
        names += [own] if isinstance(own, str) else [n for n in own if n not in ("__dict__", "__weakref__")]
    return names


def object_attrs(value) -> dict:
    """An object's attributes: its `__dict__`, and the slots that hold a value."""
    attrs = dict(getattr(value, "__dict__", None) or {})
    for name in slots(type(value)):
        try:
            attrs.setdefault(name, object.__getattribute__(value, name))
        except AttributeError:
            pass                    # (a slot never set)
    return attrs


def set_attrs(new, attrs: dict) -> None:
    """Put back an object's attributes where `object_attrs` found them: a slot through its
    descriptor, anything else into the `__dict__` (past a property of the same name)."""
    names = set(slots(type(new)))
    own = getattr(new, "__dict__", None)
    for k, v in attrs.items():
        if k in names or own is None:
            object.__setattr__(new, k, v)
        else:
            own[k] = v
