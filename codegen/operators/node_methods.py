"""Which zero-argument methods of tree nodes may become computed tree columns.

A recursion that calls `node.is_leaf()` reads, inside the graph, a column holding every node's
value of the method, computed when the trees are flattened.  That evaluates the method on every
node at every call, where eager calls it on the nodes the recursion reaches, as often as it does.
The two agree only for a method that reads its node and does nothing else: no write, no print, no
call of other code, and the same value each time.  So a method is a column only when

- its bytecode only loads, computes and returns (`profiler.versions` lists the opcodes per
  CPython version) and calls nothing but a few builtins that run no user code on plain values;
- evaluated on the nodes of the profiled trees, it runs no other Python function (a property,
  an `__eq__`, a `__len__` of a user class); a profile hook watches for one.  While another
  profiler (cProfile) holds the hook, a method cannot be watched and is not a column.

A method that raises on a node (`self.left.w` on a leaf) is absent there: the graph reads its
column only on the nodes where the recursion calls it, and a read where it is absent makes the
call run in Python, which raises as eager does.  Any other method is not converted, and the
recursion runs in Python with that reason.
"""
from __future__ import annotations

import builtins
import dis
import sys

from profiler import versions

# Builtins that, on numbers, strings, tuples, lists and tensors, compute a value and run no user code.
_PURE_BUILTINS = frozenset({"len", "isinstance", "abs", "bool", "int", "float", "min", "max", "round"})
_CHECKED: dict = {}          # code object -> whether its bytecode only reads
_FAILED = object()           # the value of a method that raised on a node


def reads_only(cls, name: str) -> bool:
    """Whether `cls.name` is a plain function of one parameter whose bytecode only reads."""
    fn = getattr(cls, name, None)
    code = getattr(fn, "__code__", None)
    if code is None or code.co_argcount != 1 or code.co_kwonlyargcount or code.co_flags & 0x0C:
        return False                   # not a function of `self` alone (or takes *args / **kwargs)
    known = _CHECKED.get(code)
    if known is None:
        known = _CHECKED[code] = _bytecode_reads_only(code, getattr(fn, "__globals__", {}))
    return known


def _bytecode_reads_only(code, globals_: dict) -> bool:
    try:
        table = versions.current()
    except versions.UnsupportedPythonVersion:
        return False
    for instr in dis.get_instructions(code):
        if instr.opname not in table.read_only:
            return False
        if instr.opname == table.global_load and instr.arg & table.global_call_bit:
            name = instr.argval
            if name not in _PURE_BUILTINS or name in globals_ or getattr(builtins, name, None) is None:
                return False           # a call of something other than a pure builtin
    return True


def evaluate(nodes, name: str, watch: bool):
    """The method's value on each node (`FAILED` where it raised), or None when `watch` is set and
    evaluating it was about to run another Python function (a property, a user `__eq__`): the hook
    stops it before its first line, so that code's effects do not happen here."""
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
        return values
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
            return [fn(node) for node in nodes]
        except Exception:              # noqa: BLE001 - some node lacks a value: one by one
            pass
    return [_call(node, name) for node in nodes]


def _call(node, name):
    try:
        return getattr(node, name)()
    except Exception:                  # noqa: BLE001 - absent on this node, as documented above
        return _FAILED


FAILED = _FAILED
