"""Python object trees as tables: objects become int32 indices ("pointers"), None is -1.

A tree passed to a function that recurses over it is flattened at call time
into one tensor per attribute of its nodes (children as pointer columns,
numbers and tensors as data columns), so a new tree is new *input data*,
not a new graph.  Inside the graph a node is a `Pointer`: `node.left` is a
gather of the `left` column, `node.word` a gather of the `word` column, and
`node.left is None` compares the index with -1.
"""
from __future__ import annotations

import dataclasses
import types

import numpy as np
import tensorflow as tf

from codegen.errors import ConversionError, Reason
from codegen.operators.arrays import NodeArray
from codegen.operators import node_protocols
from codegen.operators.context import active
from codegen.operators.node_methods import classes_fit, method_columns, method_values, none_test, reads_only
from codegen.operators.overrides import Overridden, bind_method
from codegen.operators.values import EAGER
from codegen.operators.tree_columns import (ABSENT as _ABSENT, EITHER as _EITHER, NUMBER_COLUMNS as _NUMBER_COLUMNS,
                                             NUMPY_TYPES as _NUMPY, PYTHON_TYPES as _PYTHON, acyclic as _acyclic,
                                             LACKS as _LACKS, column_tensor as _column, empty_column as _empty,
                                             pointer_tensor as _pointers, number_dtype as _number_dtype, fed, fed_rows,
                                             fed_zeros, held_exactly)
from codegen.operators.tree_walk import (Walk, class_value, is_node, method_of, methods_by_class, nodes_of,
                                         resolves, shadowed, unplain_reads, walk)
from codegen.operators.weak_numbers import WeakNumber

_DATA = (bool, int, float, np.bool_, np.integer, np.floating)


CLASS = "__class__"       # the column of each node's class
NONE = "?none"            # the suffix of a column saying where a number (or tensor) attribute holds None
DEPTH = "__depth__"       # each node's depth in the walk that numbered it (a root's is 0)
_RESERVED = frozenset({CLASS, DEPTH})       # (an instance attribute of these names is not a column)
_DICT = {dict}


@dataclasses.dataclass(frozen=True)
class Column:
    name: str
    pointer: bool
    dtype: str = "int32"
    shape: tuple = ()
    python: str = ""        # "int" / "float" / "float32" / "int32": every value is that Python or
                            # NumPy scalar type (read back as one); "tensor": every value is a
                            # tensor of the column's dtype; "int|float": Python ints on some
                            # nodes, floats on others; "" for a scalar: the type varies


@dataclasses.dataclass(frozen=True)
class Schema:
    """The columns a tree of this shape flattens to; part of a graph's signature."""

    columns: tuple
    methods: tuple = ()
    classes: tuple = ()     # the nodes' classes; column `CLASS` holds each node's index in it
    unread: tuple = ()      # methods the recursion calls that are not columns: they do more than read
    opaque: tuple = ()      # attributes some node holds that are no column (strings, lists, other objects)

    def specs(self):
        return [tf.TensorSpec((None,) + c.shape, tf.as_dtype(c.dtype)) for c in self.columns]


def schema_of(roots: list, methods=()) -> Schema:
    """The columns of the nodes reachable from `roots`."""
    order, _ = nodes_of(roots)
    memo = method_columns(order, methods)
    columns: dict[str, Column] = {}
    only_none: set[str] = set()
    skipped: set[str] = set()
    for i, node in enumerate(order):
        # (an attribute whose name is no identifier is read only through getattr, which the graph refuses)
        for name, value in [(k, v) for k, v in vars(node).items() if type(k) is str and k.isidentifier()
                            and k not in _RESERVED] + [(k, v[i]) for k, v in memo.items() if v[i] is not _ABSENT]:
            if value is None:
                only_none.add(name)
                continue
            if is_node(value):
                col = Column(name, True)
            elif isinstance(value, _DATA):
                col = Column(name, False, _number_dtype(value), ())
            elif isinstance(value, (tf.Tensor, np.ndarray)) and not isinstance(value, tf.Variable) and (
                    not isinstance(value, np.ndarray) or value.dtype.kind in "biuf"):
                t = tf.convert_to_tensor(value)
                col = Column(name, False, t.dtype.name, tuple(t.shape.as_list()))
            else:
                skipped.add(name)          # strings, lists, other objects: not a column
                continue
            columns[name] = _merged(columns.get(name), col)
    for name in only_none - set(columns) - skipped:
        columns[name] = Column(name, True)          # always None here: a child pointer that is -1
    columns = _refined(columns, order, memo)
    _check_classes(order, frozenset(columns))
    columns[CLASS] = Column(CLASS, False, "int32")
    columns[DEPTH] = Column(DEPTH, False, "int32")
    classes = tuple(sorted({type(n) for n in order}, key=lambda c: (c.__module__, c.__qualname__, id(c))))
    kept = tuple(m for m in methods if m + "()" in memo)
    unread = tuple(m for m in methods if m not in kept and any(getattr(c, m, None) is not None for c in classes))
    return Schema(tuple(sorted(columns.values(), key=lambda c: c.name)), kept, classes, unread,
                  tuple(sorted(skipped - set(columns))))


def _check_classes(order, names: frozenset):
    """Raises where Python would not read the columns `names` of a node from its `__dict__` (or
    a plain class attribute), as the tables do."""
    for cls in set(map(type, order)):
        why = unplain_reads(cls, names)
        if why:
            raise ConversionError(Reason("tree-node-class", "", f"tree nodes' attributes are read through code: {why}",
                                         "read the node's values from plain attributes"))
    if any(type(vars(node)) is not dict for node in order):
        raise ConversionError(Reason("tree-node-class", "", "a tree node's __dict__ is not a dict",
                                     "keep the nodes' __dict__ a plain dict"))


def _merged(prev, col) -> Column:
    """One column for two nodes' values: ints and floats make a float column (as `1.0 * n` is a
    float); any other mix (a number and a node, two shapes) is not a table, and the function runs
    in Python."""
    if prev is None or prev == col:
        return col
    kinds = {prev.dtype[:-2], col.dtype[:-2]}
    if kinds <= {"int", "float"} and not prev.pointer and not col.pointer and prev.shape == col.shape == ():
        wide = "64" if "64" in (prev.dtype[-2:], col.dtype[-2:]) else "32"     # the wider of the two
        return Column(col.name, False, ("float" if "float" in kinds else "int") + wide)
    raise ConversionError(Reason("tree-attribute-types", "", f"tree attribute `{col.name}` holds both {prev} and {col}",
                                 "give the attribute one type on every node"))


def _refined(columns: dict, order, memo) -> dict:
    """The columns with what only all the nodes together show: numbers that are Python ints (or
    floats) on every node are read back as such, scalar tensors of one dtype as tensors; a column
    some node lacks, or where a number is None, gets a presence column (reading it there must
    raise).  Any other scalar column holds numbers whose Python type differs between nodes."""
    rows = [vars(n) for n in order]
    out = dict(columns)
    for name, col in columns.items():
        values = memo.get(name) or (_values(order, rows, name) if not col.pointer else [])
        kinds = {type(v) for v in values} - {type(None), object}
        if col.dtype == "bool" and col.shape == () and kinds == {bool}:
            out[name] = dataclasses.replace(col, python="bool")       # read back as Python bools
        elif not col.pointer and col.shape == () and col.dtype in _NUMBER_COLUMNS and kinds in ({int}, {float}):
            out[name] = dataclasses.replace(col, python=kinds.pop().__name__)
        elif not col.pointer and col.shape == () and col.dtype in _NUMBER_COLUMNS and kinds == {int, float}:
            out[name] = dataclasses.replace(col, python=_EITHER)
        elif not col.pointer and col.shape == () and len(kinds) == 1 and _NUMPY.get(col.dtype) in kinds:
            out[name] = dataclasses.replace(col, python=col.dtype)      # NumPy scalars of the column's dtype
        elif not col.pointer and kinds == {np.ndarray}:
            out[name] = dataclasses.replace(col, python="ndarray")      # read back as NumPy arrays
        elif not col.pointer and kinds == {EAGER} and {v.dtype.name for v in values
                                                       if type(v) is EAGER} == {col.dtype}:
            out[name] = dataclasses.replace(col, python="tensor")
        held_exactly(out[name], values)
        if not col.pointer and EAGER in kinds and out[name].python != "tensor":
            raise ConversionError(Reason("tree-attribute-types", "", f"tree attribute `{name}` holds tensors of "
                                         "another dtype or Python numbers on some nodes",
                                         "give the attribute one type on every node"))
        if (any(v is _ABSENT for v in values) if name in memo else any(_lacks(node, name) for node in order)) or (
                not col.pointer and any(v is None for v in values)):
            out[name + "?"] = Column(name + "?", False, "bool")
        if not col.pointer and any(v is None for v in values):
            out[name + NONE] = Column(name + NONE, False, "bool")      # where the value is None (`is None`)
    return out


def _walk(roots, schema: Schema) -> Walk:
    """The nodes `roots` reach through the schema's child columns (`tree_walk.walk`)."""
    return walk(roots, tuple(c.name for c in schema.columns if c.pointer and not c.name.endswith("()")))


def flatten(root, schema: Schema, used=None, followed=None):
    """The schema's columns for this tree (node 0 is the root), or None if it does not fit.
    `used`: the names of the columns the graph reads; the others are fed empty (None: all).  A
    name of `used` that is no column is one the graph read as absent on every node (`hasattr`,
    `getattr` with a default): a tree where a node or its class has it does not fit; and a
    `(name, function)` pair a method the graph calls on the nodes (`bind_method`).
    `followed`: the child columns recursive calls go through, which must form no cycle (None:
    all of them; a parent pointer that no call follows may point back)."""
    return _columns(_walk([root], schema), schema, used, followed)


def flatten_forest(roots, schema: Schema, used=None, followed=None):
    """The schema's columns for all the trees of `roots` in one set of tables (a node they share
    is one row), then the row of each root; None if they do not fit (`used`, `followed`: `flatten`)."""
    found = _walk(roots, schema)
    columns = _columns(found, schema, used, followed)
    return None if columns is None else columns + [fed_rows(tuple(found.index[id(r)] for r in roots))]


def _columns(found: Walk, schema: Schema, used=None, followed=None):
    """The tensor of each column, or None when the nodes do not fit the schema.  A column the
    graph does not read (not in `used`) is fed empty; the node classes and the child columns are
    still checked, as the graph's code depends on them."""
    order, rows, index = found.order, found.rows, found.index
    names = {c.name: c for c in schema.columns}
    classes = set(map(type, order))
    if not set(map(type, rows)) <= _DICT:
        return None                             # a node's __dict__ of another class: `_check_classes`
    if used is not None and _has_any(found, classes, {u for u in used if type(u) is str} - names.keys()):
        return None                             # a node has an attribute the graph found on none
    if used is not None and any(type(u) is tuple and (not resolves(classes, u[0], u[1]) or shadowed(rows, u[0]))
                                for u in used):
        return None                             # a method the graph calls is another function now
    out, pointers, child_rows, memo = [], [], [], {}
    for col in schema.columns:
        skip = used is not None and col.name not in used
        if col.name == CLASS:
            if not classes <= set(schema.classes):
                return None                     # a node of a class the graph was not built for
            out.append(_empty(col) if skip else _class_column(order, schema.classes))
        elif skip and not col.pointer:
            out.append(_empty(col))
        elif col.name == DEPTH:
            out.append(fed(np.array(found.depth, np.int32)))
        elif (column := _none_test_column(col, found, classes, schema, names)) is not None:
            out.append(column)          # `self.left is None` from the child rows
        elif col.name in found.links:
            column = _pointers(found.links[col.name], child_rows if followed is None or col.name in followed
                               else [], col.name + "?" in names)
            if column is None:
                return None
            out.append(_empty(col) if skip else column)
        elif col.name.endswith(NONE):           # where the attribute holds None
            base = memo.get(col.name[:-len(NONE)]) or _values(order, rows, col.name[:-len(NONE)], schema.methods)
            if base is None:
                return None
            out.append(fed(np.array([v is None for v in base], np.bool_)))
        elif col.name.endswith("?") and col.name[:-1] in found.links:     # where the node has the child attribute
            out.append(fed(np.array(found.links[col.name[:-1]], np.int32) != _LACKS))
        elif col.name.endswith("?") and col.name[:-1] in names:     # where the attribute holds a value
            base = memo.get(col.name[:-1]) or _values(order, rows, col.name[:-1], schema.methods)
            if base is None:
                return None                                        # (a method a node's attribute shadows)
            child = names[col.name[:-1]].pointer                   # a None child is a value (-1)
            out.append(fed(np.array([v is not _ABSENT and (child or v is not None) for v in base], np.bool_)))
        else:
            values = memo[col.name] = _values(order, rows, col.name, schema.methods)
            column = None if values is None else _column(col, values, index, pointers, col.name + "?" in names)
            if column is None:
                return None
            out.append(_empty(col) if skip else column)
    if (found.back or pointers) and not _acyclic(len(order), pointers + child_rows):
        return None                             # (the walk numbers every child after its node otherwise)
    return out


def _none_test_column(col, found: Walk, classes: set, schema: Schema, names):
    """A method column computed from the child rows, without calling the method, where it only
    returns `self.child is None` (or `is not None`) on every node's class, the column has no
    presence column, and every node has the child attribute; else None."""
    m = col.name[:-2]
    if not col.name.endswith("()") or m not in schema.methods or col.name + "?" in names or \
            col.dtype != "bool" or col.shape != ():
        return None
    fns = {getattr(cls, m, None) for cls in classes}
    test = none_test(next(iter(classes)), m) if len(fns) == 1 and classes else None
    if test is None or test[0] not in found.links or not all(reads_only(cls, m) for cls in classes) or \
            not classes_fit(classes, m, classes) or shadowed(found.rows, m):
        return None
    rows = np.array(found.links[test[0]], np.int32)
    if len(rows) and rows.min() < -1:
        return None                     # a node lacks the child, or holds no node there
    return fed(rows == -1 if test[1] else rows != -1)


def _has_any(found: Walk, classes: set, names) -> bool:
    """Whether a node of the walk, or one of their `classes`, has one of the attributes `names`."""
    return any(shadowed(found.rows, name) or any(class_value(cls, name) is not _ABSENT for cls in classes)
               for name in names)


def _class_column(order, classes):
    """Each node's index in the schema's classes."""
    if len(classes) == 1:
        return fed_zeros(len(order))
    ids = {c: i for i, c in enumerate(classes)}
    return fed(np.array([ids[type(node)] for node in order], np.int32))


def _lacks(node, name) -> bool:
    return name not in vars(node) and class_value(type(node), name) is _ABSENT


def _values(order, rows, name, methods=()) -> list:
    """Column `name` of every node: an instance attribute, the value of a zero-argument method
    (`name` is "m()"), a class attribute, or `_ABSENT`; None for a method some node's own
    attribute shadows."""
    if name.endswith("()") and name[:-2] in methods:
        m = name[:-2]
        return method_values(order, rows, m, {cls: reads_only(cls, m) for cls in set(map(type, order))})
    try:                # (dict's own read, as Python's attribute read: not a subclass's __getitem__)
        return [dict.__getitem__(row, name) for row in rows]
    except KeyError:
        on_class = {cls: class_value(cls, name) for cls in set(map(type, order))}
        return [dict.__getitem__(row, name) if name in row else on_class[type(node)] for node, row in zip(order, rows)]


@dataclasses.dataclass(frozen=True)
class Forest:
    """A list or tuple of trees fed as one set of tables, and the row of each tree's root.
    `aliases`: for each item, the first position holding the same object (empty when all the
    items are different objects), so that the same tree twice is one stand-in, as in Python."""

    schema: Schema
    container: type
    size: int
    aliases: tuple = ()

    def specs(self):
        return self.schema.specs() + [tf.TensorSpec((self.size,), tf.int32)]


def alias_pattern(items) -> tuple:
    """For each item, the first position holding the same object; () when every item differs."""
    first: dict = {}
    out = tuple(first.setdefault(id(v), i) for i, v in enumerate(items))
    return () if len(first) == len(out) else out


class Tables:
    real = None           # for stand-in tables used while typing a machine: the real ones
    followed = None       # the child columns a recursion machine calls through (None: none ran)

    def __init__(self, schema: Schema, columns):
        self.schema = schema
        self.columns = {c.name: (c, t) for c, t in zip(schema.columns, columns)}


class Pointer:
    """A node of a flattened tree inside the graph: an int32 index into its tables."""

    __slots__ = ("index", "tables")

    def __init__(self, index, tables: Tables):
        self.index = index
        self.tables = tables

    def __getattr__(self, name):
        if name in _RESERVED or not name.isidentifier():
            raise ConversionError(Reason("tree-attribute-name", "", f"`{name}` is read from a tree node by name: "
                                         "it is not one of the node's columns", "read it as a plain attribute"))
        entry = self.tables.columns.get(name)
        if entry is None and name + "()" in self.tables.columns:
            col, table = self.tables.columns[name + "()"]
            value = tf.gather(table, self._row(name + "()"))
            return lambda: self._value(col, value, name + "()")
        if entry is None:
            return self._missing(name)
        col, table = entry
        return self._value(col, tf.gather(table, self._row(name)), name)

    def _missing(self, name):
        """A method every node class shares, bound to the node (its code then runs on the node's
        columns); else raises for an attribute no column holds: AttributeError where no node and no
        node class has it (the guard then refuses a tree where one has it: `flatten`),
        ConversionError where Python would find a value the tables do not hold."""
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(f"tree node stand-in has no attribute '{name}'")    # (Python's own probes)
        ctx, schema = active(), self.tables.schema
        line = ctx.user_line() if ctx is not None else ""
        if name in schema.unread:
            raise ConversionError(Reason(
                "node-method", line, f"tree node method `{name}()` does more "
                "than read its node (it writes, prints or calls other code; or a profiler was active, and janus "
                "could not check it): the graph would call it on every node at every call",
                "make it return an expression of the node's attributes, or read the attributes directly"))
        method = None if name in schema.opaque else method_of(schema.classes, name)
        if method is not None:
            bind_method(schema, name, method)
            return types.MethodType(method, self)
        by_class = None if name in schema.opaque else methods_by_class(schema.classes, name)
        if by_class is not None:
            return Overridden(self, name, by_class, schema)
        if name in schema.opaque or any(class_value(cls, name) is not _ABSENT for cls in schema.classes):
            raise ConversionError(Reason(
                "tree-attribute-kind", line, f"tree node attribute `{name}` is a string, container or other object, "
                "a class attribute, method or property: the tables hold numbers, tensors and child nodes only",
                "read it outside the recursion, or hold it as a number"))
        if ctx is not None:
            ctx.absent_reads.setdefault(schema, set()).add(name)
        raise AttributeError(f"tree node has no attribute '{name}'")

    def _value(self, col, value, name):
        """What a read of column `col` stands for: a node, a Python number (or bool), a tensor.  A
        number or tensor that is None on some nodes answers `is None` from its `NONE` column."""
        if col.pointer:
            return Pointer(value, self.tables)
        if col.python == "ndarray":
            out = NodeArray(value)
        elif col.shape == () and col.dtype in _NUMBER_COLUMNS and col.python != "tensor":
            out = WeakNumber(value, _PYTHON.get(col.python), either=col.python == _EITHER)
        else:
            out = _python_bool(col, value)
        ctx = active()
        if ctx is not None and name + "?" in self.tables.columns:
            ctx.none_reads[id(out)] = (out, lambda: self._none(name))
        return out

    def _none(self, name):
        """Where the node's `name` is None, as a boolean tensor; the read fails (and the call runs
        in Python, which raises) where the node lacks the attribute or is None itself."""
        present, i = self.tables.columns[name + "?"][1], tf.maximum(self.index, 0)
        none = self.tables.columns.get(name + NONE)
        if none is None:                # absent on some nodes, never None
            return tf.logical_not(tf.gather(present, self._row(name)))
        held = tf.logical_or(tf.gather(present, i), tf.gather(none[1], i))
        return tf.gather(none[1], tf.where(held, self.index, -1))

    def has(self, name):
        """`hasattr(node, name)` where `name` is a column: where the node is not None and has the
        attribute (None held counts), as a boolean tensor; None for any other name."""
        columns = self.tables.columns
        if name not in columns or name in _RESERVED or not name.isidentifier():
            return None
        found = tf.greater_equal(self.index, 0)
        if name + "?" not in columns:
            return found
        i = tf.maximum(self.index, 0)
        held = tf.gather(columns[name + "?"][1], i)
        if name + NONE in columns:
            held = tf.logical_or(held, tf.gather(columns[name + NONE][1], i))
        return tf.logical_and(found, held)

    def read_or(self, name, default):
        """`getattr(node, name, default)` where some nodes lack the column `name`: the node's value
        where it has one, `default` elsewhere, for a child column with a None default and a number
        column with a default of its numbers' Python type; None for any other read (a plain read
        then fails where the node lacks it, and the call runs in Python)."""
        entry, has = self.tables.columns.get(name), self.has(name)
        if has is None or name + NONE in self.tables.columns:
            return None
        col, table = entry
        value = tf.gather(table, tf.where(has, self.index, 0))      # (an empty table: the read fails)
        if col.pointer and default is None:
            return Pointer(tf.where(has, value, -1), self.tables)
        if not col.pointer and col.shape == () and col.python in ("int", "float") and type(default) is _PYTHON[
                col.python] and (col.dtype.startswith("float") or -2 ** 31 <= default < 2 ** 31):
            return WeakNumber(tf.where(has, value, tf.constant(default, tf.as_dtype(col.dtype))), _PYTHON[col.python])
        return None

    def _row(self, column):
        """The node's row for reading `column`; -1, which makes the read fail and so the graph
        run (the call then runs in Python and raises as eager does), when the node is None or
        lacks the attribute."""
        present = self.tables.columns.get(column + "?")
        if present is None:
            return self.index
        return tf.where(tf.gather(present[1], tf.maximum(self.index, 0)), self.index, -1)

    def __repr__(self):
        if node_protocols.asked_by_user():
            node_protocols.refuse("repr")
        return f"Pointer({self.index!r})"

    # `==`, `in` and truth written by the user go to `node_tests`; Python's own protocols on this
    # object would answer for the stand-in, not the node (`node_protocols`).
    __hash__ = node_protocols.protocol("hash", object.__hash__)
    __eq__ = node_protocols.protocol("==", object.__eq__)
    __ne__ = node_protocols.protocol("!=", object.__ne__)
    __bool__ = node_protocols.protocol("bool", lambda self: True)
    __str__ = node_protocols.protocol("str", repr)
    __format__ = node_protocols.protocol("format", object.__format__)
    __len__ = __iter__ = __contains__ = node_protocols.protocol("len, iter or in", node_protocols.no_protocol)


def _python_bool(col, value):
    """A column of Python bools reads as one (held as an int, as a comparison's bool is), which
    takes the other operand's dtype in arithmetic (`h * node.flag`) as eager's bool does."""
    return WeakNumber(tf.cast(value, tf.int32), bool) if col.python == "bool" else value


def none_read(value):
    """For a value read from a tree column that is None (or absent) on some nodes: a function
    giving where the node's value is None, as a boolean tensor; None for any other value."""
    ctx = active()
    found = ctx.none_reads.get(id(value)) if ctx is not None else None
    return found[1] if found is not None and found[0] is value else None
