"""Which functions are user code, and which of them a call can reach.

Only user code is instrumented: library frames (TensorFlow, Keras, NumPy,
the standard library, janus itself) are what we are *not* trying to
convert, and instrumenting them would be slow and risky.  Reachability is
found statically before the call -- names the code loads from its globals,
closure cells, and the methods of the classes of the call's arguments and of
the objects they hold -- because the profiler swaps ``__code__`` of those
functions for the duration of the call instead of tracing.
"""

from __future__ import annotations

import types

from profiler import static
from profiler.library import is_library_file, is_library_module, is_user_code

#: Upper bound on the functions discovered for one call.
MAX_FUNCTIONS = 2000
#: Upper bound on the attributes / container elements visited per object.
MAX_HELD = 256

#: The default ``is_user_code`` of ``reachable_functions``.
default_is_user_code = is_user_code


# Every read below goes through `profiler.static`: the call has not started, and eager runs none
# of the user's attribute hooks here.

def _is_user_class(cls, is_user_code) -> bool:
    if not static.is_a(cls, type) or is_library_module(static.module_of(cls)):
        return False
    return any(is_user_code(f) for f in _class_functions(cls))


def _class_functions(cls):
    """Plain functions defined in ``cls`` (methods, static/class methods,
    property accessors)."""
    try:
        items = list(static.class_dict(cls).values())
    except TypeError:
        return []
    out = []
    for obj in items:
        if static.is_a(obj, (staticmethod, classmethod)):
            obj = obj.__func__
        if static.is_a(obj, property):
            out.extend(f for f in (obj.fget, obj.fset, obj.fdel)
                       if static.is_a(f, types.FunctionType))
        elif static.is_a(obj, types.FunctionType):
            out.append(obj)
    return out


def _methods_of_class(cls):
    for klass in static.mro(cls):
        if klass is object or is_library_module(static.module_of(klass)):
            continue
        yield from _class_functions(klass)


def _attribute_values(obj):
    """Values held in ``obj.__dict__`` (read without running user code), with the elements of
    list/tuple/dict values."""
    d = static.instance_dict(obj)
    if d is None:
        return []
    out = []
    for value in list(d.values())[:MAX_HELD]:
        out.append(value)
        if type(value) in (list, tuple):
            out.extend(value[:MAX_HELD])
        elif type(value) is dict:
            out.extend(list(value.values())[:MAX_HELD])
    return out


def _code_names(code):
    """``co_names`` of a code object and of the code objects nested in it."""
    names = set(code.co_names)
    for const in code.co_consts:
        if type(const) is types.CodeType:
            names |= _code_names(const)
    return names


def reachable_functions(fn, args=(), kwargs=None, is_user_code=None) -> list:
    """User functions ``fn(*args, **kwargs)`` may call, ``fn`` first.

    Transitive over globals named by the code (and attributes of user
    modules named by it), closure cells and user classes found that way;
    plus the methods of the classes of ``fn``'s bound ``self``, the
    arguments, and the objects held in the arguments' attributes (one level).
    """
    is_user_code = is_user_code or default_is_user_code
    found: dict[int, types.FunctionType] = {}
    seen_classes: set[int] = set()
    work: list = []

    def add_function(f, force=False):
        if type(f) is types.MethodType:
            f = f.__func__
        if not static.is_a(f, types.FunctionType) or id(f) in found:
            return
        if len(found) >= MAX_FUNCTIONS or not (force or is_user_code(f)):
            return
        found[id(f)] = f
        work.append(f)

    def add_class(cls):
        if id(cls) in seen_classes or not _is_user_class(cls, is_user_code):
            return
        seen_classes.add(id(cls))
        for f in _methods_of_class(cls):
            add_function(f)

    def add_object(obj, held=False):
        """Functions, classes and instances; ``held`` also visits the
        objects an instance of a user class holds (one level)."""
        if static.is_a(obj, (types.FunctionType, types.MethodType)):
            add_function(obj)
            if type(obj) is types.MethodType and obj.__self__ is not None:
                add_class(type(obj.__self__))
        elif static.is_a(obj, type):
            add_class(obj)
        elif not static.is_a(obj, types.ModuleType):
            wrapped = static.attribute(obj, "__wrapped__")
            if static.is_a(wrapped, types.FunctionType):   # a decorator's wrapper (functools.wraps)
                add_function(wrapped)
            add_class(type(obj))
            if held and (id(type(obj)) in seen_classes or type(obj) in (list, tuple, dict)):
                if type(obj) is dict:
                    held_values = list(obj.values())[:MAX_HELD]
                elif type(obj) in (list, tuple):
                    held_values = obj[:MAX_HELD]
                else:
                    held_values = _attribute_values(obj)
                for value in held_values:
                    add_object(value)

    add_function(fn, force=True)
    if type(fn) is types.MethodType:
        add_object(fn.__self__)
    elif not static.is_a(fn, types.FunctionType):
        add_object(fn)  # a callable object: its class's __call__ and friends
    roots = list(args) + list((kwargs or {}).values())
    if type(fn) is types.MethodType:
        roots.append(fn.__self__)
    for arg in roots:
        add_object(arg)
        for held in _attribute_values(arg):
            add_object(held)
        if type(arg) in (list, tuple, dict):
            add_object(arg, held=True)

    while work:
        _follow_names(work.pop(), add_object)
    return list(found.values())


def _follow_names(f, add_object):
    """Hand every global, user-module member and closure value ``f`` names to ``add_object``."""
    glb = f.__globals__
    for name in _code_names(f.__code__):
        value = glb.get(name)
        if value is None:
            continue
        if static.is_a(value, types.ModuleType):
            members = static.instance_dict(value) or {}    # (a module's __getattr__ is the user's)
            if not is_library_module(members.get("__name__")) and not is_library_file(
                    members.get("__file__") or ""):
                for attr in _code_names(f.__code__):
                    member = members.get(attr)
                    if member is not None and not static.is_a(member, types.ModuleType):
                        add_object(member, held=True)
            continue
        add_object(value, held=True)
    for cell in f.__closure__ or ():
        try:
            add_object(cell.cell_contents, held=True)
        except ValueError:  # empty cell
            pass
