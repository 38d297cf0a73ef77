"""Python settings of the objects whose library code a graph calls, checked at entry.

A Keras layer's `activation`, `rate` or `momentum`, an optimizer's `clipvalue` or `momentum`:
the library's methods are called, not converted, so they read these while the graph is built and
the graph holds what they were.  Eager reads them on every call.  So where the graph calls a
library method of an object from outside the call (`opt.apply_gradients(...)`, `layer(x)`),
every public attribute of that object holding a Python number, string, None or function is
checked at entry, and so are those of the library objects it holds (its layers: under a public
name, or in a list under any name, as Keras keeps a model's in `_layers`), up to `_DEPTH` levels
and `_LIMIT` objects: a change builds another graph.  Only names the library's own classes of the
object mention in their code count (`activation` is in `Dense`'s; an `epoch` a program keeps on
its `keras.Model` subclass, and changes on every call, is in none of Keras's, and is read, where
the program reads it, by the program's converted code)."""
from __future__ import annotations

import collections
import dis
import functools
import types

import numpy as np
import tensorflow as tf

from profiler import versions
from profiler.library import is_library_module, is_user_function

from codegen.assumptions import SCALARS, Kind
from codegen.operators.unconverted import unwatched

_DEPTH = 2
_LIMIT = 64
_REACH = 6          # levels below what library code is given
_REACH_LIMIT = 256
_ONLY_HOLD = (functools.partial, iter)     # (library code that keeps what it is given, reading nothing)
_FUNCTIONS = (types.FunctionType, types.BuiltinFunctionType)
_NOT_OBJECTS = (type, types.ModuleType, *_FUNCTIONS, types.MethodType, tf.Tensor, tf.Variable, np.ndarray,
                list, tuple, dict, set)


def check_settings(ctx, f):
    """The entry checks for the objects whose library method `f` is (see the module docstring)."""
    owner = f.__self__ if isinstance(f, types.MethodType) else f
    if isinstance(owner, _NOT_OBJECTS) or not isinstance(getattr(owner, "__dict__", None), dict):
        return
    source = ctx.outside.get(id(owner))
    if source is None or id(owner) in ctx.settings_checked:
        return
    _walk(ctx, owner, source, _DEPTH)


def no_stale_reads(ctx, f, args, kwargs):
    """Library code reads objects' attributes as they are, and a write the call made to one is
    still deferred (`opt.beta_1 = b`, then `opt.apply_gradients(...)` would use the old `b`).
    The build stops (the call runs in Python) where library code can reach a written attribute:
    one its own classes' code names, on the object whose method runs or on a library object it
    holds (a `Sequential`'s layers); or any written attribute of what it is given, or of what
    that holds (`operator.attrgetter("a.k")(o)`, `copy.deepcopy([o])`)."""
    if not ctx.heap.attrs or any(f is h for h in _ONLY_HOLD):
        return
    owner = getattr(f, "__self__", None) if isinstance(f, (types.MethodType, types.BuiltinMethodType)) else (
        f if not isinstance(f, _NOT_OBJECTS) else None)
    written = _written(ctx)
    found = _reach_written(written, [owner], named=True) if owner is not None else None
    _refuse_stale(ctx, found or _reach_written(written, [*args, *kwargs.values()], named=False))


def no_stale_reads_of(ctx, value):
    """`no_stale_reads` for a value library code is given to read through (`repr(o)`)."""
    if ctx.heap.attrs:
        _refuse_stale(ctx, _reach_written(_written(ctx), [value], named=False))


def _written(ctx) -> dict:
    written: dict = {}
    for obj, name, *_ in ctx.heap.attrs.values():
        written.setdefault(id(obj), []).append(name)
    return written


def _refuse_stale(ctx, found):
    if found is None:
        return
    obj, name = found
    if name is None:
        ctx.fail("stale-library-read", f"library code is given objects this call wrote attributes of, through more "
                 f"than {_REACH} levels or {_REACH_LIMIT} values: janus writes them only after the run",
                 "pass the values to the library call instead of setting the attributes first")
    where = ctx.outside.get(id(obj))
    ctx.fail("stale-library-read", f"`{where.attr(name) if where is not None else name}` is written in this call "
             "and library code reads the object: janus writes it only after the run",
             "pass the value to the library call instead of setting the attribute first")


def _reach_written(written: dict, roots: list, named: bool):
    """The first (object, attribute) written in this call that library code given `roots` can
    read: objects, what their attributes and slots hold, and the items (and keys) of the lists,
    tuples, dicts, sets and deques they hold, up to `_REACH` levels and `_REACH_LIMIT` objects.
    `named`: only attributes the object's library classes name in their code count (the library
    runs its own methods on what it holds); otherwise every one (code given an object may read
    any attribute of it).  Where the bounds leave unread a value no library object holds,
    (that value, None): the walk cannot tell.  (A library object's insides, beyond the bounds,
    are taken to hold nothing the call wrote.)"""
    seen: set = set()
    level = [(value, False) for value in roots]         # (a value, whether a library object holds it)
    for _ in range(_REACH + 1):
        below: list = []
        for value, in_library in level:
            if id(value) in seen:
                continue
            if len(seen) >= _REACH_LIMIT:
                if not in_library:
                    return value, None
                continue
            seen.add(id(value))
            names = written.get(id(value), ())
            by_name = named and not (in_library and _is_user_class(type(value)))   # (its code run by the library)
            hit = [n for n in names if n in _library_names(type(value))] if by_name and names else names
            if hit:
                return value, hit[0]
            inside = in_library or (_is_object(value) and not _is_user_class(type(value)))
            below.extend((v, inside) for v in _held(value))
        level = below
    return next(((v, None) for v, in_library in level if not in_library and id(v) not in seen), None)


_CONTAINERS = (list, tuple, set, frozenset, collections.deque)


def _held(value) -> list:
    """What library code reading `value` reaches from it that may hold attributes."""
    if isinstance(value, _CONTAINERS):
        items = value
    elif isinstance(value, dict):
        items = [*value.keys(), *value.values()]
    elif isinstance(value, functools.partial):            # (the program's function, called back, is converted)
        items = [] if _is_program_code(value.func) else [value.func, *value.args, *value.keywords.values()]
    elif isinstance(value, types.MethodType):
        items = [] if is_user_function(value.__func__) else [value.__self__]
    else:
        items = [v for k, v in vars(value).items() if not k.startswith("__")] if _is_object(value) else []
        items += _slot_values(value)
    return [v for v in items if isinstance(v, (*_CONTAINERS, dict, functools.partial, types.MethodType))
            or _is_object(v) or _slot_values(v)]


def _slot_values(value) -> list:
    """What the `__slots__` of `value`'s class (and its bases) hold."""
    if isinstance(value, _NOT_OBJECTS) or type(value) in SCALARS:
        return []
    names = [n for klass in type(value).__mro__ for n in _slots_of(klass)]
    return [v for n in names if (v := getattr(value, n, _MISSING)) is not _MISSING]


def _slots_of(klass) -> tuple:
    slots = vars(klass).get("__slots__", ())
    return (slots,) if isinstance(slots, str) else tuple(n for n in slots if n not in ("__dict__", "__weakref__"))


_MISSING = object()


def _walk(ctx, obj, source, depth, held=False):
    """`held`: a library object holds `obj`.  An object of the program's own class that a library
    object holds (the program's RNN cell in `keras.layers.RNN`) has its code run by the library
    as it is, not converted: every public setting of it counts."""
    if len(ctx.settings_checked) >= _LIMIT or id(obj) in ctx.settings_checked:
        return
    ctx.settings_checked.add(id(obj))
    own = _is_user_class(type(obj))
    mentioned = _library_names(type(obj))
    for name, value in list(vars(obj).items()):
        public = not name.startswith("_") and (name in mentioned or (held and own))
        if type(value) in SCALARS or isinstance(value, _FUNCTIONS):
            if public:
                ctx.check("attr", obj, name, value, source.attr(name))
        elif public and _plain_setting(value):      # (`pool_size = (2,)`, a Lambda's `arguments`)
            ctx.check("attr", obj, name, value, source.attr(name), kind=Kind.CONSTANT,
                      expected=dict(value) if type(value) is dict else value)
        elif depth and _is_object(value) and (not name.startswith("_") or _schedule_like(name, value, mentioned)):
            ctx.check("attr", obj, name, value, source.attr(name))         # the very object
            _walk(ctx, value, source.attr(name), depth - 1, held or not own)
        elif depth and isinstance(value, (list, tuple)) and 0 < len(value) <= 64 and any(map(_is_object, value)):
            ctx.check("attr", obj, name, value, source.attr(name))         # the very items
            for i, item in enumerate(value):
                if _is_object(item):
                    _walk(ctx, item, source.attr(name).item(i), depth - 1, held or not own)


def _schedule_like(name: str, value, mentioned) -> bool:
    """A library object under a private name the holder's library code names, which the holder
    calls for a value (an optimizer's learning-rate schedule in `_learning_rate`): its settings
    count as the holder's own."""
    return name in mentioned and callable(value) and not _is_user_class(type(value)) \
        and not isinstance(value, (tf.Module, tf.Variable)) and type(value).__call__ is not object.__call__


def _plain_setting(value, depth=0) -> bool:
    """A tuple of Python scalars (or of such tuples), or a small dict of them by str keys: a
    setting compared by value at entry."""
    if type(value) in SCALARS:
        return depth > 0
    if depth > 3:
        return False
    if type(value) is tuple:
        return len(value) <= 16 and all(_plain_setting(v, depth + 1) for v in value)
    if type(value) is dict:
        return len(value) <= 16 and all(type(k) is str and _plain_setting(v, depth + 1) for k, v in value.items())
    return False


def _is_program_code(f) -> bool:
    return is_user_function(f.__func__ if isinstance(f, types.MethodType) else f)


def _is_object(value) -> bool:
    return not isinstance(value, _NOT_OBJECTS) and type(value) not in SCALARS and \
        isinstance(getattr(value, "__dict__", None), dict)


_NAMES: dict = {}


def _library_names(cls) -> frozenset:
    """The attribute names the library classes of `cls` can read on their object: their own
    members, names their code reads on its first argument (`self.rate`, also in nested functions),
    stores on any object (`layer.built = True`: the library's own attributes, also read through
    other names such as `for layer in self._flatten_layers()`), and strings it holds (`getattr(self,
    "name")`).  A name their code reads only on other objects (`config.mode`) or as a global does
    not count: a program's own `self.mode` on its `keras.Model` is not read by Keras."""
    names = _NAMES.get(cls)
    if names is None:
        found: set = set()
        for klass in cls.__mro__:
            if klass is object or _is_user_class(klass):
                continue
            found.update(vars(klass))
            for member in vars(klass).values():
                for fn in _functions(member):
                    _code_names(fn.__code__, found)
        names = frozenset(found)
        if len(_NAMES) < 1024:
            _NAMES[cls] = names
    return names


def _is_user_class(klass) -> bool:
    return any(is_user_function(m) for m in vars(klass).values() if isinstance(m, types.FunctionType)) or (
        not is_library_module(klass.__module__))


def _functions(member):
    if isinstance(member, (staticmethod, classmethod)):
        member = member.__func__
    if isinstance(member, property):
        return [f for f in (member.fget, member.fset) if isinstance(f, types.FunctionType)]
    return [member] if isinstance(member, types.FunctionType) else []


@unwatched                          # (it reads code objects, and runs none)
def _code_names(code, found: set, receivers: frozenset = frozenset({"self"})):
    ops = versions.current()
    if code.co_argcount:
        receivers = receivers | {code.co_varnames[0]}
    before = None
    for ins in dis.get_instructions(code):
        if ins.opname in (ops.store_attr, "DELETE_ATTR"):
            found.add(ins.argval)
        elif ins.opname in (ops.load_attr, ops.load_method) and before is not None and \
                before.opname.startswith(("LOAD_FAST", "LOAD_DEREF")) and _names_receiver(before.argval, receivers):
            found.add(ins.argval)
        before = ins
    for const in code.co_consts:
        if isinstance(const, str) and const.isidentifier():
            found.add(const)
        elif isinstance(const, types.CodeType):
            _code_names(const, found, receivers)


def _names_receiver(argval, receivers) -> bool:
    return any(a in receivers for a in argval) if isinstance(argval, tuple) else argval in receivers
