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

from profiler.library import is_library_file, is_library_module, is_user_code

#: Upper bound on the functions discovered for one call.
MAX_FUNCTIONS = 2000
#: Upper bound on the attributes / container elements visited per object.
MAX_HELD = 256

#: The default ``is_user_code`` of ``reachable_functions``.
default_is_user_code = is_user_code


def _is_user_class(cls, is_user_code) -> bool:
    if not isinstance(cls, type) or is_library_module(getattr(cls, "__module__", None)):
        return False
    return any(is_user_code(f) for f in _class_functions(cls))


def _class_functions(cls):
    """Plain functions defined in ``cls`` (methods, static/class methods,
    property accessors)."""
    try:
        items = list(vars(cls).values())
    except TypeError:
        return []
    out = []
    for obj in items:
        if isinstance(obj, (staticmethod, classmethod)):
            obj = obj.__func__
        if isinstance(obj, property):
            out.extend(f for f in (obj.fget, obj.fset, obj.fdel)
                       if isinstance(f, types.FunctionType))
        elif isinstance(obj, types.FunctionType):
            out.append(obj)
    return out


def _methods_of_class(cls):
    for klass in getattr(cls, "__mro__", (cls,)):
        if klass is object or is_library_module(getattr(klass, "__module__", None)):
            continue
        yield from _class_functions(klass)


def _attribute_values(obj):
    """Values held in ``obj.__dict__`` (read without calling ``__getattr__``),
    with the elements of list/tuple/dict values."""
    try:
        d = object.__getattribute__(obj, "__dict__")
    except Exception:
        return []
    if not isinstance(d, dict):
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
        if isinstance(const, types.CodeType):
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
        f = getattr(f, "__func__", f)
        if not isinstance(f, types.FunctionType) or id(f) in found:
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
        if isinstance(obj, (types.FunctionType, types.MethodType)):
            add_function(obj)
            self_obj = getattr(obj, "__self__", None)
            if self_obj is not None:
                add_class(type(self_obj))
        elif isinstance(obj, type):
            add_class(obj)
        elif not isinstance(obj, types.ModuleType):
            wrapped = getattr(obj, "__wrapped__", None)
            if isinstance(wrapped, types.FunctionType):   # a decorator's wrapper (functools.wraps)
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
    if isinstance(fn, types.MethodType):
        add_object(fn.__self__)
    elif not isinstance(fn, types.FunctionType):
        add_object(fn)  # a callable object: its class's __call__ and friends
    roots = list(args) + list((kwargs or {}).values())
    if isinstance(fn, types.MethodType):
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
    glb = getattr(f, "__globals__", {})
    for name in _code_names(f.__code__):
        value = glb.get(name)
        if value is None:
            continue
        if isinstance(value, types.ModuleType):
            if not is_library_module(value.__name__) and not is_library_file(
                    getattr(value, "__file__", None) or ""):
                for attr in _code_names(f.__code__):
                    member = vars(value).get(attr)
                    if member is not None and not isinstance(member, types.ModuleType):
                        add_object(member, held=True)
            continue
        add_object(value, held=True)
    for cell in f.__closure__ or ():
        try:
            add_object(cell.cell_contents, held=True)
        except ValueError:  # empty cell
            pass
