"""Truth, identity, `==` and `in` of tree node stand-ins (`trees.Pointer`), as eager Python answers them.

Inside a graph a node is its row in the tables, None is -1.  Python's default truth of an object
is True and its default `==` is `is`, so on nodes whose classes keep the defaults, `if node:` is
`row >= 0` and `a == b` compares rows.  A node class's own `__bool__`, `__len__`, `__eq__` or
`__ne__` is code the graph would have to run on each node: the build stops, and the function
runs in Python.  So does `is` with a node object the graph holds no row for, unless that object is
an argument: it is then fed as tables of its own, and the entry guard checks that the trees share
no node, so that a node of one is never the root of the other.

`in` with a node and a tuple or list (or a set's or dict's keys, where the node classes keep
`object.__hash__`) is one `==` per item, so rows again.  Python's own protocols on the stand-in
object (`hash`, `len`, iteration, text, `==` outside the lowered operators, `id`, a truth test
the lowering does not see) would answer for the wrapper, not the node it stands for: they stop
the build (`node_protocols`).
"""
from __future__ import annotations

import functools

import tensorflow as tf

from codegen.errors import ConversionError, NeedsTree, Reason
from codegen.operators import node_protocols
from codegen.operators.context import current
from codegen.operators.general import no_writes_inside, state_before
from codegen.operators.trees import CLASS, Pointer

TRUTH = ("__bool__", "__len__")
EQUALITY = ("__eq__", "__ne__")
HASH = ("__hash__",)
_SEQUENCES = (tuple, list)
_HASHED = (set, frozenset, dict)
# Types whose `==` with an object of another type gives NotImplemented, so eager falls back to `is`.
_PLAIN = (type(None), bool, int, float, complex, str, bytes, tuple, list, dict, set, frozenset, type)


def _own_method(pointer: Pointer, names) -> str:
    """`Class.name` of the first node class of the tables that does not take `name` from `object`
    (its own, or a base class's), or ""."""
    for cls in pointer.tables.schema.classes:
        for name in names:
            if getattr(cls, name, None) is not getattr(object, name, None):
                return f"{cls.__qualname__}.{name}"
    return ""


def _refuse(kind: str, explanation: str, hint: str):
    raise ConversionError(Reason(kind, current().user_line(), explanation, hint))


def truth(pointer: Pointer):
    """`bool(node)` as a boolean tensor: whether the node is not None."""
    method = _own_method(pointer, TRUTH)
    if method:
        _refuse("node-truth", f"the truth of a tree node calls `{method}`, which the graph does not run on "
                "each node", "test `node is not None`, or call the method by name")
    return tf.greater_equal(pointer.index, 0)


def receiver(node, method: str):
    """The node a recursive method call is made on (`self.left.encode(m)`).  Python looks the
    method up there, and raises AttributeError on None before the call: a row of -1 fails the
    run (a gather), and the call runs in Python, which raises as eager does."""
    if not isinstance(node, Pointer):
        _refuse("recursion", f"`.{method}(...)` is called on a {type(node).__name__}, not on a tree node",
                "call the method on the nodes of the tree the recursion walks")
    rows = tf.range(tf.shape(node.tables.columns[CLASS][1])[0])
    return Pointer(tf.gather(rows, node.index), node.tables)


def _same_tables(a: Pointer, b: Pointer) -> bool:
    return (a.tables.real or a.tables) is (b.tables.real or b.tables)


def identical(pointer: Pointer, other):
    """`node is other`: a boolean tensor, or False where `other` cannot be a node of the tables."""
    if other is None:
        return tf.less(pointer.index, 0)
    if isinstance(other, Pointer):
        if not _same_tables(pointer, other):
            return False            # nodes of trees flattened apart: different objects
        return tf.equal(pointer.index, other.index)
    if type(other) in pointer.tables.schema.classes:
        ctx = current()
        path = ctx.outside.get(id(other))
        if path is not None and path.startswith(("args", "kwargs")) and "." not in path:
            raise NeedsTree(path, ctx.user_line())
        _refuse("node-identity", f"`is` between a tree node and a {type(other).__qualname__} object from outside "
                "the arguments: that object may be a node of the tree, and the graph does not know its row",
                "mark such nodes with an attribute and test it")
    return False


def equal(pointer: Pointer, other):
    """`node == other` (or `other == node`): identity, as Python's default `__eq__` makes it, where
    neither operand's class has an `__eq__` of its own."""
    method = _own_method(pointer, EQUALITY) or (_own_method(other, EQUALITY) if isinstance(other, Pointer) else "")
    if method:
        _refuse("node-equality", f"`==` on tree nodes calls `{method}`, which the graph does not run on each node",
                "compare the attributes, or use `is`")
    if other is None or isinstance(other, Pointer) or type(other) in pointer.tables.schema.classes:
        return identical(pointer, other)
    if type(other) in _PLAIN or all(getattr(type(other), m) is getattr(object, m) for m in EQUALITY):
        return False
    _refuse("node-equality", f"`==` between a tree node and a {type(other).__qualname__} calls that class's "
            "`__eq__` with the node, which the graph does not have as an object", "compare with `is`")


def not_equal(pointer: Pointer, other):
    same = equal(pointer, other)
    return tf.logical_not(same) if isinstance(same, tf.Tensor) else not same


def pick(pointer: Pointer, rest, keep_first):
    """`node and rest` / `node or rest` where the node's truth decides: a node either way, the
    first where `keep_first` (a boolean tensor) holds, else `rest()`.  The graph computes `rest`
    on every node, so it must be a node (or None) of the same tables and write or print nothing."""
    ctx = current()
    before, printed = state_before(ctx, ()), len(ctx.prints)
    other = rest()
    no_writes_inside(ctx, before, "short-circuit and/or")
    fits = other is None or (isinstance(other, Pointer) and _same_tables(pointer, other))
    if len(ctx.prints) != printed or not fits:
        _refuse("node-truth", "`and`/`or` on a tree node: the graph computes the other operand on every node, "
                "so it must be a node (or None) of the same trees and print nothing",
                "test `node is not None` in an `if`")
    rows = tf.constant(-1, pointer.index.dtype) if other is None else other.index
    return Pointer(tf.where(keep_first, pointer.index, rows), pointer.tables)


def member(item, container):
    """`item in container` where the item or an item of the container is a node stand-in: one
    `==` per item, in order, as Python's `in` on a tuple or list does (and on a set's or dict's
    keys, where hashing the item runs no node code and a hash match ends in `==` too); a boolean
    tensor, or a Python bool where no item can be the node."""
    if isinstance(container, Pointer) or type(container) not in _SEQUENCES + _HASHED:
        kind = "a tree node" if isinstance(container, Pointer) else f"a {type(container).__qualname__}"
        _refuse("node-in", f"`in` with a tree node and {kind}: the graph holds a stand-in for the node, not the "
                "object Python's `in` would test", "compare with `is` per item")
    if type(container) in _HASHED and isinstance(item, Pointer):
        method = _own_method(item, HASH)
        if method:
            _refuse("node-in", f"`in` on a {type(container).__name__} hashes the tree node with `{method}`, which "
                    "the graph does not run on each node", "test membership in a tuple or list")
    hits = []
    for other in container:
        if isinstance(item, Pointer):
            hit = equal(item, other)
        elif isinstance(other, Pointer):
            hit = equal(other, item)
        else:
            hit = other is item or other == item
            if not isinstance(hit, bool):
                _refuse("node-in", "`in` with tree nodes and an item whose `==` is not a Python bool",
                        "compare the items one by one")
        if hit is True:
            return True
        if isinstance(hit, tf.Tensor):
            hits.append(hit)
    return functools.reduce(tf.logical_or, hits) if hits else False


def holds_node(container) -> bool:
    """Whether a tuple or list holds a node stand-in (other containers cannot: hashing one refuses)."""
    return type(container) in _SEQUENCES and any(isinstance(x, Pointer) for x in container)


def contains_node(value) -> bool:
    """Whether `value` is a node stand-in or a tuple, list or dict that holds one at any depth."""
    if isinstance(value, Pointer):
        return True
    if type(value) in _SEQUENCES:
        return any(contains_node(x) for x in value)
    return type(value) is dict and any(contains_node(x) for x in value.values())


def refuse_protocol(what: str):
    """A Python protocol used on a node stand-in while a graph is built: the build stops (eager
    would run it on the node object, which the graph has only as a row)."""
    node_protocols.refuse(what)
