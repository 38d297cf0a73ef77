"""The class of a tree node inside the graph: `isinstance(node, C)` and `type(node) is C` as
boolean tensors read from the tables' class column (`trees.CLASS`)."""
from __future__ import annotations

import tensorflow as tf

from codegen.errors import ConversionError, Reason
from codegen.operators.trees import CLASS, Pointer


def class_test(pointer: Pointer, accepts):
    """Whether the node's class passes `accepts(cls)`, as a boolean tensor read from the class
    column (for a None node, whether `accepts(NoneType)`): `isinstance(node, C)` inside the graph.
    Built from elementwise ops only, so it batches across a machine's frames."""
    classes = pointer.tables.schema.classes
    ids = [i for i, c in enumerate(classes) if accepts(c)]
    present = tf.greater_equal(pointer.index, 0)
    if len(ids) == len(classes):
        hit = present
    elif not ids:
        hit = tf.zeros_like(present)
    else:
        table = pointer.tables.columns[CLASS][1]
        cid = tf.gather(table, tf.maximum(pointer.index, 0))
        hit = tf.equal(cid, ids[0])
        for i in ids[1:]:
            hit = tf.logical_or(hit, tf.equal(cid, i))
        hit = tf.logical_and(present, hit)
    return tf.logical_or(hit, tf.logical_not(present)) if accepts(type(None)) else hit


class NodeClass:
    """`type(node)` of a node inside the graph.  Compared with a class (`is`, `==`, `!=`) it is a
    boolean tensor from the class column; anything else done with it needs the class itself,
    which differs between nodes, and the function runs in Python."""

    __slots__ = ("pointer",)

    def __init__(self, pointer: Pointer):
        self.pointer = pointer

    def same_as(self, cls):
        if isinstance(cls, NodeClass):
            self._needs_class()
        return class_test(self.pointer, lambda c: c is cls)

    def __eq__(self, other):
        if isinstance(other, NodeClass):
            self._needs_class()
        return class_test(self.pointer, lambda c: c == other)

    def __ne__(self, other):
        return tf.logical_not(self == other)

    def _needs_class(self, *_):
        raise ConversionError(Reason("node-class", "", "the class of a tree node is used as a value; inside the "
                                     "graph it is only known per node", "compare it with `is` or use isinstance"))

    __hash__ = __call__ = __getattr__ = _needs_class
