"""The program's own special methods (`__mul__`, `__len__`, `__bool__`, `__getitem__`, ...) run as its code.

Python runs `s * x`, `len(s)`, `if s:`, `s[i]`, `a == b`, `v in s` and
`for t in s:` through methods of the operand's class.  Where that class is
the program's own, the method is user code: called at build time as plain
Python it would run once, its result baked into the graph with no guard and
its writes lost.  Here it runs through `calls.call` (converted and inlined,
so its reads are guarded and its writes deferred, as any user method's are),
with Python's protocol around it: reflected operands, `__bool__` falling back
to `__len__`, `!=` from `__eq__`.  What the protocol would hand to library
code mixed with the program's own methods runs in Python (a refusal).

Attribute lookup that runs the program's code (a descriptor's `__get__`
other than a property's, `__getattribute__`, `__getattr__`) is refused the
same way: `user_lookup` names it before anything reads the attribute.
"""
from __future__ import annotations

import operator
import types

from profiler.library import is_user_function

from codegen.errors import ConversionError, Reason
from codegen.operators.aliases import read_deep
from codegen.operators.context import active, current
from codegen.operators.text import formatted
from codegen.operators.values import is_symbolic

NOT_USER = object()      # the operation runs no method of the program's own: Python's operator applies
_CALL = []               # `calls.call`, installed by that module (it sits above this one)
_PLAIN = (int, float, bool, str, type(None))     # their operator methods run no user code
_SYMBOLS = {"add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%", "pow": "**",
            "matmul": "@", "and": "&", "or": "|", "xor": "^", "lshift": "<<", "rshift": ">>"}
_COMPARE_REFLECTED = {"__eq__": "__eq__", "__ne__": "__ne__", "__lt__": "__gt__", "__gt__": "__lt__",
                      "__le__": "__ge__", "__ge__": "__le__"}


def install(call) -> None:
    """Called by `codegen.operators.calls`, once, with its `call`: this module sits below
    `calls` (which uses it for every attribute read and item access), and a special method of
    the program's own is called through that same `call` (converted and inlined)."""
    _CALL[:] = [call]


def class_attribute(cls, name):
    """`name` as the class's MRO holds it (not the metaclass's), or None."""
    for klass in cls.__mro__:
        if name in klass.__dict__:
            return klass.__dict__[name]
    return None


def user_method(obj, name):
    """The program's own function `type(obj).name`, or None (a library's, or none at all)."""
    return None if isinstance(obj, type) else user_method_of(type(obj), name)


def user_method_of(cls, name):
    """The program's own function `cls.name` (found on the class's MRO), or None."""
    found = class_attribute(cls, name)
    return found if isinstance(found, types.FunctionType) and is_user_function(found) else None


def refuse(construct: str, why: str):
    ctx = current()
    raise ConversionError(Reason("user-special-method", ctx.user_line(), f"{construct}: {why}",
                                 "it runs in Python"))


def _run(fn, obj, *args):
    return _CALL[0](fn, obj, *args)


def construct(cls, args, kwargs):
    """`Cls(...)` of the program's own class whose `__init__` is its code: the instance made as
    `type.__call__` makes it, its `__init__` run as converted code, inlined (run by Python at
    build time, it would read outside state once, unchecked, and its prints and writes to outside
    state would happen once, when the graph is built); NOT_USER for any other class (a metaclass
    with a `__call__` of its own, a `__new__` other than `object`'s).  A class whose metaclass
    makes instances as `type` does (`abc.ABCMeta`) is made so too: `object.__new__` refuses an
    abstract class as Python does."""
    if isinstance(cls, type) and user_method_of(cls, "__del__") is not None:
        refuse(f"`{cls.__qualname__}(...)`", "its class has a `__del__` of the program's, which eager runs when the "
               "object is collected and a graph, which never makes the object, would not")
    if not isinstance(cls, type) or type(cls).__call__ is not type.__call__ or cls.__new__ is not object.__new__:
        return NOT_USER
    init = user_method_of(cls, "__init__")
    if init is None:
        return NOT_USER
    obj = object.__new__(cls)
    result = _CALL[0](init, obj, *args, **kwargs)
    if result is not None:
        raise TypeError(f"__init__() should return None, not '{type(result).__name__}'")
    return obj


def binary(op: str, a, b):
    """`a <op> b` (op as `operator` names it: "mul") where either class defines the method as the
    program's own; NOT_USER otherwise.  The right operand's reflected method goes first where its
    class is a subclass overriding it, as in Python."""
    name, rname = f"__{op}__", f"__r{op}__"
    if user_method(a, name) is None and user_method(b, rname) is None:
        return NOT_USER
    order = [(a, name, b)]
    if type(a) is not type(b):
        order.append((b, rname, a))
        if issubclass(type(b), type(a)) and class_attribute(type(b), rname) is not class_attribute(type(a), rname):
            order.reverse()
    for obj, method, other in order:
        result = _one_side(obj, method, other, f"`{_SYMBOLS.get(op, op)}`")
        if result is not NotImplemented:
            return result
    raise TypeError(f"unsupported operand type(s) for {_SYMBOLS.get(op, op)}: "
                    f"'{type(a).__name__}' and '{type(b).__name__}'")


def _one_side(obj, method, other, construct):
    """`type(obj).method(obj, other)`: the program's own inlined, a plain Python value's called,
    NotImplemented where the class has none; library code mixed in is refused."""
    found = class_attribute(type(obj), method)
    if found is None:
        return NotImplemented
    if isinstance(found, types.FunctionType) and is_user_function(found):
        return _run(found, obj, other)
    if type(obj) in _PLAIN or (type(obj) is object or found is getattr(object, method, None)):
        return found(obj, other)
    refuse(construct, f"`{type(obj).__name__}.{method}` is library code and the other operand's class "
           "defines the operator as the program's own")


def compare(name: str, a, b):
    """`a == b` / `a != b` / `a < b` ... through the program's own methods (the reflected one of
    the right operand next, `!=` as the negation of `__eq__` where no `__ne__` is the program's
    own, identity last for `==`/`!=`); NOT_USER where neither class defines one."""
    rname = _COMPARE_REFLECTED[name]
    if name == "__ne__" and user_method(a, "__ne__") is None and user_method(b, "__ne__") is None:
        equal = compare("__eq__", a, b)
        return equal if equal is NOT_USER else not _truth_of(equal, "`!=`")
    if user_method(a, name) is None and user_method(b, rname) is None:
        return NOT_USER
    order = [(a, name, b), (b, rname, a)]
    if type(a) is not type(b) and issubclass(type(b), type(a)):
        order.reverse()
    for obj, method, other in order:
        result = _one_side(obj, method, other, "a comparison")
        if result is not NotImplemented:
            return result
    if name in ("__eq__", "__ne__"):
        return (a is b) if name == "__eq__" else (a is not b)
    symbol = next(k for k, (dunder, _) in _ORDER.items() if dunder == name)
    raise TypeError(f"'{symbol}' not supported between instances of '{type(a).__name__}' and '{type(b).__name__}'")


def _truth_of(value, construct):
    """Python's truth of a result the program's method gave, where it is a Python value (a
    tensor's truth only the run knows: refused)."""
    if type(value) in _PLAIN or type(value) in (list, tuple, dict, set):
        return bool(value)
    found = truth(value)
    if found is NOT_USER:
        refuse(construct, f"the program's method gives a {type(value).__name__}, whose truth the graph would "
               "fix when it is built")
    return found


def truth(x):
    """`bool(x)` through the class's own `__bool__`, or `__len__` where it has no `__bool__`;
    NOT_USER where neither is the program's own."""
    if isinstance(x, type):
        return NOT_USER
    if class_attribute(type(x), "__bool__") is None:
        size = length(x)
        return size if size is NOT_USER else size != 0
    fn = user_method(x, "__bool__")
    if fn is None:
        return NOT_USER
    result = _run(fn, x)
    if type(result) is bool:
        return result
    if is_symbolic(result) or hasattr(result, "dtype"):
        refuse("a truth test", f"`{type(x).__name__}.__bool__` gives a tensor, whose truth only the run knows")
    raise TypeError(f"__bool__ should return bool, returned {type(result).__name__}")


def length(x):
    """`len(x)` through the program's own `__len__`, with Python's checks; NOT_USER otherwise."""
    fn = user_method(x, "__len__")
    if fn is None:
        return NOT_USER
    result = _run(fn, x)
    if is_symbolic(result) or hasattr(result, "dtype"):
        refuse("`len()`", f"`{type(x).__name__}.__len__` gives a tensor; eager's len needs a Python int")
    if not isinstance(result, int):
        raise TypeError(f"'{type(result).__name__}' object cannot be interpreted as an integer")
    if result < 0:
        raise ValueError("__len__() should return >= 0")
    return int(result)


def contains(item, container):
    """`item in container` through the program's own `__contains__` (its result's truth);
    NOT_USER where the class's membership runs none of the program's code."""
    refuse_user_key(container, item)
    refuse_user_equality(container, item)
    fn = user_method(container, "__contains__")
    if fn is not None:
        return _truth_of(_run(fn, container, item), "`in`")
    if class_attribute(type(container), "__contains__") is None and not isinstance(container, type) and (
            user_method(container, "__iter__") is not None or user_method(container, "__getitem__") is not None):
        refuse("`in`", f"`{type(container).__name__}` answers membership by iterating with the program's own methods")
    return NOT_USER


def getitem(obj, key):
    """`obj[key]` through the program's own `__getitem__`; NOT_USER otherwise."""
    fn = user_method(obj, "__getitem__")
    return NOT_USER if fn is None else _run(fn, obj, key)


def iterate(obj):
    """`iter(obj)` through the program's own `__iter__`: the iterator it gives, which must be one
    whose stepping runs no code of the program's (a generator or an iterator class of its own is
    refused); NOT_USER where the class's `__iter__` is not the program's own."""
    fn = user_method(obj, "__iter__")
    if fn is None:
        if class_attribute(type(obj), "__iter__") is None and user_method(obj, "__getitem__") is not None:
            refuse("iteration", f"`{type(obj).__name__}` is iterated through the program's own `__getitem__`")
        return NOT_USER
    result = _run(fn, obj)
    if isinstance(result, types.GeneratorType) or user_method(result, "__next__") is not None:
        refuse("iteration", f"`{type(obj).__name__}.__iter__` gives an iterator that runs the program's code "
               "at each step")
    return result


def user_lookup(obj, name: str):
    """What of the program's own code reading `obj.name` would run (a descriptor's `__get__`
    that is not a property's, `__getattribute__`, a `__getattr__` the lookup reaches), or None."""
    cls = obj if isinstance(obj, type) else type(obj)
    if isinstance(obj, type):
        return None
    getattribute = class_attribute(cls, "__getattribute__")
    if isinstance(getattribute, types.FunctionType) and is_user_function(getattribute):
        return f"`{cls.__name__}.__getattribute__`"
    found = class_attribute(cls, name)
    getter = class_attribute(type(found), "__get__") if found is not None else None
    if isinstance(getter, types.FunctionType) and is_user_function(getter):
        return f"the descriptor `{cls.__name__}.{name}` (its `__get__`)"
    getattr_ = class_attribute(cls, "__getattr__")
    if isinstance(getattr_, types.FunctionType) and is_user_function(getattr_) and found is None \
            and name not in _instance_dict(obj):
        return f"`{cls.__name__}.__getattr__` (for `{name}`)"
    return None


def _instance_dict(obj) -> dict:
    """The instance's `__dict__`, read past its class's lookup (which may be the program's code)."""
    try:
        return object.__getattribute__(obj, "__dict__")
    except AttributeError:
        return {}


def refuse_lookup(obj, name: str):
    """Stop the build where reading `obj.name` would run the program's code: Python runs it."""
    found = user_lookup(obj, name)
    if found is not None:
        refuse(f"reading `.{name}`", f"{found} runs the program's code on each read; a graph would run it once, "
               "when it is built")


_OPERATOR = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "truediv": operator.truediv,
             "floordiv": operator.floordiv, "mod": operator.mod, "pow": operator.pow, "matmul": operator.matmul,
             "and": operator.and_, "or": operator.or_, "xor": operator.xor, "lshift": operator.lshift,
             "rshift": operator.rshift}
_INPLACE_NAMES = {"mult": "mul", "div": "truediv", "matmult": "matmul", "bitand": "and", "bitor": "or",
                  "bitxor": "xor"}


def read_operands(*operands):
    """Lists, tuples and dicts Python's operators read through (`+`, `|`, `<`): the copies of
    outside ones they reach count as read.  (Converted code TensorFlow calls back at run time
    has no build: nothing to note.)"""
    ctx = active()
    for operand in operands:
        if ctx is not None and type(operand) in (list, tuple, dict):
            read_deep(ctx, operand)


def binop(op: str, a, b):
    """`a <op> b` in the builder: the program's own operator methods inlined, Python's operator
    otherwise."""
    if op == "mod" and isinstance(a, (str, bytes)):
        formatted(b, "`%` formatting")      # (C code asks the operands for their text)
    read_operands(a, b)                     # (`lst + [x]`, `d | e`: C code reads the copies through)
    found = binary(op, a, b)
    return _OPERATOR[op](a, b) if found is NOT_USER else found


def inplace(op: str, a, b):
    """`a <op>= b` (op as the lowering names it: "mult") through the program's own `__i<op>__`,
    then its binary methods; NOT_USER where none is the program's own."""
    op = _INPLACE_NAMES.get(op, op)
    fn = user_method(a, f"__i{op}__")
    if fn is not None:
        result = _run(fn, a, b)
        if result is not NotImplemented:
            return result
    elif class_attribute(type(a), f"__i{op}__") is not None and user_method(b, f"__r{op}__") is not None:
        refuse(f"`{_SYMBOLS.get(op, op)}=`", f"`{type(a).__name__}.__i{op}__` is library code and the other "
               "operand's class defines the operator as the program's own")
    return binary(op, a, b)


def refuse_user_equality(container, item):
    """Stop the build where a list or tuple would compare `item` with its items by the program's
    own `__eq__` (`in`, `.index`, `.count`, `.remove`): a graph would fix the answer when it is built."""
    if type(container) in (list, tuple) and (user_method(item, "__eq__") is not None or any(
            user_method(v, "__eq__") is not None for v in container)):
        refuse("a list search", "an item's class compares by the program's own `__eq__`, which a graph would run "
               "once, when it is built")


def refuse_user_key(container, key):
    """Stop the build where a dict or set would hash `key` by the program's own `__hash__` (and
    compare it by its `__eq__`): a graph would fix where the key lands when it is built, while
    eager hashes the key's state of each call."""
    if isinstance(container, (dict, set, frozenset)) and user_method(key, "__hash__") is not None:
        refuse("a dict or set lookup", f"the key's class `{type(key).__name__}` hashes by the program's own "
               "`__hash__`, which a graph would run once, when it is built")


_ORDER = {"<": ("__lt__", operator.lt), "<=": ("__le__", operator.le), ">": ("__gt__", operator.gt),
          ">=": ("__ge__", operator.ge)}
_UNARY = {"neg": operator.neg, "pos": operator.pos, "invert": operator.invert}
_CONVERSIONS = {abs: ("__abs__",), float: ("__float__", "__index__"), int: ("__int__", "__index__")}


def ordered(op: str, a, b):
    """`a < b` (and `<=`, `>`, `>=`) in the builder: the program's own methods inlined, Python's
    operator otherwise."""
    name, fallback = _ORDER[op]
    read_operands(a, b)                     # (`lst < other` compares the items)
    found = compare(name, a, b)
    return fallback(a, b) if found is NOT_USER else found


def unary(op: str, x):
    """`-x`, `+x`, `~x` in the builder: the program's own `__neg__`/`__pos__`/`__invert__` inlined."""
    fn = user_method(x, f"__{op}__")
    return _UNARY[op](x) if fn is None else _run(fn, x)


def converted(kind, x):
    """`abs(x)`, `float(x)`, `int(x)` through the program's own `__abs__`, `__float__`, `__int__` (or
    `__index__`), with Python's check of the result's type; NOT_USER where the class's is not
    the program's own."""
    for name in _CONVERSIONS.get(kind, ()):
        if isinstance(x, type) or class_attribute(type(x), name) is None:
            continue
        fn = user_method(x, name)
        if fn is None:
            return NOT_USER
        result = _run(fn, x)
        if kind is abs:
            return result
        if is_symbolic(result) or hasattr(result, "dtype"):
            refuse(f"`{kind.__name__}()`", f"`{type(x).__name__}.{name}` gives a tensor; eager needs a Python number")
        wanted = int if name == "__index__" else kind
        if not isinstance(result, wanted):
            raise TypeError(f"{type(x).__name__}.{name} returned non-{wanted.__name__} (type {type(result).__name__})")
        return kind(result)
    return NOT_USER


def setitem(obj, key, value, name="__setitem__"):
    """`obj[key] = value` (`__delitem__`: `del obj[key]`) through the program's own method; NOT_USER
    otherwise."""
    fn = user_method(obj, name)
    if fn is None:
        return NOT_USER
    _run(fn, obj, key, value) if name == "__setitem__" else _run(fn, obj, key)
    return None


_PROTOCOL = ("__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__", "__hash__", "__index__", "__int__",
             "__float__", "__round__", "__iter__", "__next__", "__len__", "__bool__", "__add__", "__radd__",
             "__mul__", "__rmul__", "__pow__", "__rpow__", "__divmod__", "__rdivmod__", "__getitem__",
             "__contains__", "__reversed__", "__abs__", "__trunc__", "__floor__", "__ceil__", "__complex__")
_OWN_HANDLING = {len, bool, abs, float, int, isinstance, issubclass, type, id, callable, super, getattr, hasattr,
                 setattr, delattr, vars, print, str, repr, format}     # (janus gives these their meaning)
_ITEMWISE = {max, min, sorted, sum, set, frozenset, any, all, dict}


def refuse_builtin(f, args):
    """Stop the build where a Python builtin would call the program's own special methods of an
    argument (or, for `max`, `sorted`, `sum`, `set`, ..., of a list's items): run at build time,
    their answer would be fixed in the graph."""
    if not isinstance(f, (types.BuiltinFunctionType, type)) or getattr(f, "__module__", None) != "builtins" \
            or f in _OWN_HANDLING:
        return
    values = list(args)
    if f in _ITEMWISE:
        values += [v for a in args if type(a) in (list, tuple) for v in a]
    for v in values:
        name = next((n for n in _PROTOCOL if user_method(v, n) is not None), None)
        if name is not None:
            refuse(f"`{f.__name__}()`", f"it calls `{type(v).__name__}.{name}`, the program's own code, which a "
                   "graph would run once, when it is built")
