"""Methods the graph calls on tree nodes: which function a node class resolves a name to, and the
methods the node classes define each their own way, which run as one function merged from them
(`codegen.recursion.dispatch`, reached through the build's compiler)."""
from __future__ import annotations

import types

from codegen.errors import ConversionError
from codegen.operators.context import active
from codegen.operators.tree_walk import DISPATCHED, is_node, methods_by_class, nodes_of


def bind_method(schema, name: str, fn):
    """Records that the graph calls `fn` as the method `name` of the nodes of `schema`'s trees:
    a tree where a node class resolves `name` to another function, or a node holds `name` of its
    own, does not fit (`trees.flatten`)."""
    ctx = active()
    if ctx is not None:
        ctx.absent_reads.setdefault(schema, set()).add((name, fn))


class Overridden:
    """`node.name`, a method the node classes define each their own way ({class: function}): its
    call runs the function merged from them on the node (a tree stand-in, whose tables' `schema`
    is given, or the node itself)."""

    __slots__ = ("node", "name", "by_class", "schema")

    def __init__(self, node, name: str, by_class: dict, schema=None):
        self.node, self.name, self.by_class, self.schema = node, name, by_class, schema

    def merged(self, ctx):
        """The merged function, recorded as what the stand-in's tables must resolve `name` to on
        each class; None where the methods do not merge and the node is itself (its own class's
        method is then called as it is, on this tree).  So is a node's call inside one of the methods
        or the merged function inlined: the call on the tree's root did not run as a machine, and
        one for a subtree, an attribute of the root, would stop the build."""
        if self.schema is None and any(
                (fn := frame.converted.fn) in DISPATCHED or fn in self.by_class.values() for frame in ctx.frames):
            return None
        try:
            merged = ctx.compiler.dispatcher(self.name, self.by_class)
        except ConversionError:
            if self.schema is not None:
                raise
            return None
        if self.schema is not None:
            bind_method(self.schema, self.name, merged)
        return merged


def overridden(f):
    """`f`, or an `Overridden` where `f` is a method bound to a tree node whose tree holds classes
    that define the method each their own way."""
    if type(f) is not types.MethodType or not is_node(f.__self__) or not isinstance(f.__func__, types.FunctionType):
        return f
    by_class = methods_by_class({type(n) for n in nodes_of([f.__self__])[0]}, f.__func__.__name__)
    return Overridden(f.__self__, f.__func__.__name__, by_class) if by_class and \
        by_class.get(type(f.__self__)) is f.__func__ else f
