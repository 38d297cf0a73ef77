"""Which zero-argument methods of tree nodes may become computed tree columns.

A recursion that calls `node.is_leaf()` reads, inside the graph, a column holding every node's
value of the method, computed when the trees are flattened.  That evaluates the method on every
node at every call, where eager calls it on the nodes the recursion reaches, as often as it does.
The two agree only for a method that reads its node and does nothing else: no write, no print, no
call of other code, and the same value each time.  So a method is a column only when

- its bytecode only loads, computes and returns (`profiler.versions` lists the opcodes per
  CPython version), calls nothing but a few builtins that run no user code on plain values,
  and reads no global holding data (the function may set it before it recurses, after the
  tables were made);
- the node classes run none of their own code when it reads them: no `__getattr__`, no
  property among the names it reads, no operator dunder where it compares or computes;
- the values it reads are plain data or nodes, on every call (`values_fit`): a user object's
  `__len__`, or a `defaultdict` inserting the key it is asked for, would act on every node;
- evaluated on the nodes of the profiled trees, it runs no other Python function; a profile
  hook watches for one.  While another profiler (cProfile) holds the hook, a method cannot
  be watched and is not a column.

A method that raises on a node (`self.left.w` on a leaf) is absent there: the graph reads its
column only on the nodes where the recursion calls it, and a read where it is absent makes the
call run in Python, which raises as eager does.  Any other method is not converted, and the
recursion runs in Python with that reason.
"""
from __future__ import annotations

import builtins
import dis
import inspect
import sys
import types

import numpy as np

from profiler import versions

from codegen.operators.tree_columns import ABSENT
from codegen.operators.tree_walk import shadowed
from codegen.operators.values import EAGER

# Builtins that, on numbers, strings, tuples, lists and tensors, compute a value and run no user code.
_PURE_BUILTINS = frozenset({"len", "isinstance", "abs", "bool", "int", "float", "min", "max", "round"})
_CODE: dict = {}             # code object -> (whether its bytecode only reads, attribute names, value ops)
_CLASS: dict = {}            # (class, method name) -> whether the method may be a column on that class
_FIT: dict = {}              # (method's classes, name, node classes) -> whether every node class fits
_FAILED = object()           # the value of a method that raised on a node
# The dunders of their operands that opcodes and pure builtins may call (`==`, `[k]`, a truth test).
_TRUTH = frozenset({"__bool__", "__len__"})
_ORDER = frozenset({"__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"})
_ARITH = frozenset(f"__{p}{op}__" for p in ("", "r", "i") for op in (
    "add", "sub", "mul", "matmul", "truediv", "floordiv", "mod", "divmod", "pow", "lshift", "rshift", "and", "xor",
    "or")) | {"__index__"}
_TRIGGERS = {"UNARY_NOT": _TRUTH, "POP_JUMP_FORWARD_IF_TRUE": _TRUTH, "POP_JUMP_FORWARD_IF_FALSE": _TRUTH,
             "JUMP_IF_TRUE_OR_POP": _TRUTH, "JUMP_IF_FALSE_OR_POP": _TRUTH, "COMPARE_OP": _ORDER,
             "CONTAINS_OP": _ORDER | {"__contains__", "__iter__", "__getitem__", "__hash__"},
             "BINARY_SUBSCR": {"__getitem__", "__hash__", "__eq__", "__index__"}, "BINARY_OP": _ARITH,
             "UNARY_NEGATIVE": {"__neg__"}, "UNARY_POSITIVE": {"__pos__"}, "UNARY_INVERT": {"__invert__"},
             "len": {"__len__"}, "abs": {"__abs__"}, "bool": _TRUTH, "int": {"__int__", "__index__", "__trunc__"},
             "float": {"__float__", "__index__"}, "round": {"__round__"}, "isinstance": {"__class__"},
             "min": _ORDER | {"__iter__"}, "max": _ORDER | {"__iter__"}}
_PLAIN = frozenset({type(None), bool, int, float, complex, str, bytes, EAGER})
_CONTAINERS = frozenset({tuple, frozenset})      # (a list, dict or array the function may change first)
_KEEPS = (types.FunctionType, staticmethod, classmethod, types.MemberDescriptorType, types.GetSetDescriptorType)


def reads_only(cls, name: str) -> bool:
    """Whether `cls.name` is a plain function of one parameter whose bytecode only reads, and whose
    reads of `cls`'s instances run no code of the class (a property, `__getattr__`, `__eq__`)."""
    key = (cls, name)
    known = _CLASS.get(key)
    if known is None:
        fn = getattr(cls, name, None)
        code = getattr(fn, "__code__", None)
        if code is None or code.co_argcount != 1 or code.co_kwonlyargcount or code.co_flags & 0x0C:
            known = False              # not a function of `self` alone (or takes *args / **kwargs)
        else:
            ok, names, dunders = _analysis(code, getattr(fn, "__globals__", {}))
            known = ok and _class_fits(cls, names, dunders)
        if len(_CLASS) < 4096:
            _CLASS[key] = known
    return known


def loaded(cls, name: str) -> frozenset:
    """The attribute names the method `cls.name` reads (`self.left`, `self.left.w`: left, w)."""
    fn = getattr(cls, name)
    return _analysis(fn.__code__, fn.__globals__)[1]


def none_test(cls, name: str):
    """(attribute, whether the method returns `is None`) when the method `cls.name` is only
    `return self.attribute is None` (or `is not None`), which the child rows the walk found
    already answer; None otherwise.  The caller checks `reads_only` and `classes_fit`."""
    code = getattr(getattr(cls, name, None), "__code__", None)
    if code is None:
        return None
    found = _NONE_TESTS.get(code, False)
    if found is False:
        found = _NONE_TESTS[code] = _none_test(code)
    return found


def _none_test(code):
    try:
        table = versions.current()
    except versions.UnsupportedPythonVersion:
        return None
    ops = [(i.opname, i.argval) for i in dis.get_instructions(code)]
    if len(ops) != 6 or code.co_argcount != 1 or [op for op, _ in ops] != [
            table.resume, "LOAD_FAST", table.load_attr, "LOAD_CONST", "IS_OP", table.return_value]:
        return None
    if ops[1][1] != code.co_varnames[0] or ops[3][1] is not None:
        return None
    return ops[2][1], ops[4][1] == 0


_NONE_TESTS: dict = {}        # code object -> none_test's answer


def _analysis(code, globals_: dict):
    found = _CODE.get(code)
    if found is None:
        found = _CODE[code] = _bytecode(code, globals_)
    return found


def _bytecode(code, globals_: dict):
    try:
        table = versions.current()
    except versions.UnsupportedPythonVersion:
        return False, frozenset(), True
    names, dunders, after_global = set(), set(), False
    for instr in dis.get_instructions(code):
        if instr.opname not in table.read_only:
            return False, frozenset(), frozenset()
        if instr.opname == table.load_attr:
            if after_global:
                return False, frozenset(), frozenset()     # `Cfg.limit`: data the function may set first
            names.add(instr.argval)
        after_global = instr.opname == table.global_load
        dunders |= _TRIGGERS.get(instr.opname, frozenset())
        if instr.opname == table.global_load:
            name = instr.argval
            if instr.arg & table.global_call_bit:
                if name not in _PURE_BUILTINS or name in globals_ or getattr(builtins, name, None) is None:
                    return False, frozenset(), frozenset()     # a call of something other than a pure builtin
                dunders |= _TRIGGERS[name]
            elif not _code_like(globals_[name] if name in globals_ else getattr(builtins, name, None)):
                return False, frozenset(), frozenset()     # a global holding data, which the function may set first
    return True, frozenset(names), frozenset(dunders)


def _code_like(value) -> bool:
    """A class, function or module: what a global a method reads may hold (not data).  A class's
    metaclass must be `type`: `isinstance(x, C)` runs another one's `__instancecheck__`."""
    if isinstance(value, type):
        return type(value) is type
    return isinstance(value, (types.ModuleType, types.FunctionType, types.BuiltinFunctionType))


def _class_fits(cls, names, dunders) -> bool:
    """Reading `names` on an instance runs no code of the class: no `__getattr__` or
    `__getattribute__` of its own, no property or other descriptor among `names`, and none of the
    `dunders` the method's operators and builtins may call (a dataclass's `__eq__` for `==`)."""
    for klass in cls.__mro__[:-1]:
        for attr, value in vars(klass).items():
            if attr in dunders or attr in ("__getattr__", "__getattribute__"):
                if isinstance(value, (types.FunctionType, property)) or (attr == "__class__" and value is not None):
                    return False
    for name in names:
        attr = inspect.getattr_static(cls, name, None)
        if attr is not None and hasattr(type(attr), "__get__") and not isinstance(attr, _KEEPS):
            return False
    return True


def values_fit(nodes, rows, names, node_classes) -> bool:
    """Whether the values the method may read on `nodes` (its attribute names, on each node or
    its class; `rows` are the nodes' `vars`) are plain data or nodes: a value of another class
    could run that class's code (a `__len__`, a `defaultdict` inserting a key) where the method
    reads it."""
    for name in names:
        try:
            kinds = {type(row[name]) for row in rows}
        except KeyError:
            kinds = None                       # on some node's class, or nowhere: one by one
        if kinds is not None and all(k in _PLAIN or k in node_classes for k in kinds):
            continue
        for node in nodes:
            row = vars(node)
            if name not in row:
                found = inspect.getattr_static(type(node), name, None)
                if found is None or isinstance(found, types.FunctionType):
                    continue                   # absent, or a method (not called: calls are refused)
                return False                   # a class attribute: the function may set it first
            value = row[name]
            kind = type(value)
            if kind in _PLAIN or kind in node_classes or isinstance(value, np.generic):
                continue
            if kind not in _CONTAINERS or not all(type(v) in _PLAIN or type(v) in node_classes
                                                  or isinstance(v, np.generic) for v in value):
                return False
    return True


def classes_fit(method_classes, name: str, node_classes) -> bool:
    """Whether reading the names the method reads runs no code of any node's class (the method
    reads `self.left.kind`: a property `kind` on the left child's class), as `reads_only` checks
    for the classes that define the method."""
    key = (frozenset(method_classes), name, frozenset(node_classes))
    known = _FIT.get(key)
    if known is None:
        analyses = [_analysis(getattr(c, name).__code__, getattr(c, name).__globals__) for c in method_classes]
        known = all(_class_fits(c, a[1], a[2]) for c in node_classes for a in analyses)
        if len(_FIT) < 4096:
            _FIT[key] = known
    return known


def evaluate(nodes, name: str, watch: bool):
    """(The method's value on each node, whether it raised on some: `FAILED` there), or None when
    `watch` is set and evaluating it was about to run another Python function (a property, a user
    `__eq__`): the hook stops it before its first line, so that code's effects do not happen here."""
    if not watch:
        return _unwatched(nodes, name)
    if sys.getprofile() is not None:
        return None          # a profiler (cProfile) holds the hook: the method cannot be watched
    own = {_call.__code__} | {getattr(getattr(cls, name, None), "__code__", None) for cls in set(map(type, nodes))}

    def hook(frame, event, _arg):
        if event == "call" and frame.f_code not in own:
            raise _RanOther()

    previous = sys.getprofile()
    values = []
    sys.setprofile(hook)
    try:
        for node in nodes:                 # (a comprehension would be a call of its own)
            values.append(_call(node, name))
        return values, True
    except _RanOther:
        return None
    finally:
        sys.setprofile(previous)


class _RanOther(BaseException):
    """Raised by the profile hook: not an `Exception`, so no `except Exception` in between stops it."""


def _unwatched(nodes, name):
    """The values without the hook (the method passed `reads_only`, so calling it again where it
    raised repeats no effect): one function for all the nodes when they share a class."""
    if nodes and len(set(map(type, nodes))) == 1:
        fn = getattr(type(nodes[0]), name)
        try:
            return [fn(node) for node in nodes], False
        except Exception:              # noqa: BLE001 - some node lacks a value: one by one
            pass
    return [_call(node, name) for node in nodes], True


def _call(node, name):
    try:
        return getattr(node, name)()
    except Exception:                  # noqa: BLE001 - absent on this node, as documented above
        return _FAILED


FAILED = _FAILED


def method_columns(order, methods) -> dict:
    """"m()" -> the value on each node of each zero-argument method the recursion calls that may be a
    column (`node_methods`), `ABSENT` on nodes whose class lacks it or where it raised."""
    out, rows = {}, [vars(node) for node in order]
    for m in methods:
        classes = {cls: getattr(cls, m, None) is not None for cls in set(map(type, order))}
        if any(classes.values()) and all(not has or reads_only(cls, m) for cls, has in classes.items()):
            values = method_values(order, rows, m, classes, watch=True)
            if values is not None:
                out[m + "()"] = values
    return out


def method_values(order, rows, m, classes, watch=False):
    """The method's value on each node; all `ABSENT` when a value it reads is of a class whose
    code it could run (`node_methods.values_fit`); None when the watch saw such code run, or a
    node has an attribute of the method's name."""
    if shadowed(rows, m):
        return None                     # a node's own attribute of the method's name: Python calls that
    having = [cls for cls, has in classes.items() if has]
    names = frozenset().union(*(loaded(cls, m) for cls in having))
    if not (classes_fit(having, m, classes) and values_fit(order, rows, names, classes)):
        return None if watch else [ABSENT] * len(order)
    every = all(classes.values())
    evaluated = evaluate(order if every else [node for node in order if classes[type(node)]], m, watch)
    if evaluated is None:
        return None
    values, maybe_failed = evaluated
    if every:
        return [ABSENT if v is FAILED else v for v in values] if maybe_failed else values
    found = iter(values)
    return [(ABSENT if (v := next(found)) is FAILED else v) if classes[type(node)] else ABSENT for node in order]
