"""A list the function makes and grows inside a loop over a tensor, carried as a tensor value.

The lowering (`codegen.lowering.local_lists`) finds the lists that only their own
name holds and that are only appended to, measured, reversed, iterated or handed
to TensorFlow.  When a loop (or a tensor `if`) over a tensor grows one, it
carries it as a `GrowList`: a `TensorArray` for a list only appended to, or a
tensor whose first dimension counts the items for one the function also
inserts into at the front, with the Python type its items stand for (`float`
for Python floats, held as float64 as `PyNumber` holds them).  `append(x)` and
`insert(0, x)` add an item, `len()` is a `PyNumber` int, `reversed()` and `for`
read the items back, and TensorFlow converts it as eager converts the list it
stands for (a list of Python floats to float32).  Anything else Python would do
with the list (indexing, printing) stops the build, and the function runs in
Python there.
"""
from __future__ import annotations

import tensorflow as tf

from codegen.assumptions import Kind
from codegen.operators.context import current
from codegen.operators.guards import emit_guard
from codegen.operators.numbers import PyNumber, python_kind, wide_tensor


class NeedsItemSpec(Exception):
    """A loop appended the first item to an empty list: the loop is traced again with the list
    carried as an empty tensor of that item's dtype and shape."""


class GrowList:
    __slots__ = ("tensor", "kind", "graph", "_start", "owner", "array", "source")

    def __init__(self, tensor, kind, array=False, source=None):
        self.tensor, self.kind, self.owner, self.array = tensor, kind, None, array
        self.source = source            # the list a `reversed()` view reads
        self.graph = tf.compat.v1.get_default_graph()
        self._start = tensor

    @classmethod
    def of(cls, items: list, array: bool):
        """The list's items as one tensor (a `TensorArray` if `array`), or None when they are not
        all of one kind, dtype and shape."""
        if not items:
            return cls(None, None, array)
        kinds = {python_kind(x) for x in items}
        if len(kinds) != 1 or not all(isinstance(x, (tf.Tensor, PyNumber)) or python_kind(x) for x in items):
            return None
        kind = kinds.pop()
        rows = [_row(x, kind) for x in items]
        if len({(r.dtype, tuple(r.shape.as_list()) if r.shape.rank is not None else None) for r in rows}) != 1:
            return None
        rows = tf.stack(rows)
        return cls(_array(rows.dtype, rows.shape[1:]).unstack(rows) if array else rows, kind, array)

    # -- the loop's view ----------------------------------------------------------------------
    def carried(self):
        return self.tensor

    def rebind(self, tensor):
        self.tensor, self.graph = tensor, tf.compat.v1.get_default_graph()
        return self

    def invariant(self):
        if self.array:
            return tf.TensorShape(None)
        return tf.TensorShape([None]).concatenate(self.tensor.shape[1:])

    def reset(self):
        """Back to the value the loop started from (before a retrace)."""
        self.tensor, self.graph = self._start, tf.compat.v1.get_default_graph()

    def rebase(self):
        """Start a retraced loop from the items the list has now (its first iteration, traced
        before the loop, appended to it)."""
        self._start = self.tensor

    def start_empty(self, row):
        """Carry an empty tensor shaped for `row`, the first item a traced iteration appended."""
        self._start = _array(row.dtype, row.shape) if self.array else tf.zeros([0] + row.shape.as_list(), row.dtype)
        self.reset()

    # -- what the user's code does with it ------------------------------------------------------
    def _add(self, item, front: bool):
        ctx = current()
        kind = python_kind(item)
        if not isinstance(item, (tf.Tensor, PyNumber)) and kind is None:
            ctx.fail("list-item", f"a {type(item).__name__} is added to a list that a loop over a tensor grows",
                     "add tensors or numbers only")
        row = _row(item, kind)
        if row.shape.rank is None:
            ctx.fail("list-item", "an item of unknown rank is added to a list that a loop over a tensor grows",
                     "give it a shape (tf.ensure_shape)")
        if self.tensor is None:         # raised to the loop that carries the list
            self.kind = kind
            raise NeedsItemSpec(row, self)
        if tf.compat.v1.get_default_graph() is not self.graph:
            ctx.fail("write-in-tf.cond", "a list is grown inside a tf.cond on a tensor",
                     "append after the branch instead")
        item_shape = self.tensor.element_shape if self.array else self.tensor.shape[1:]
        if kind is not self.kind or row.dtype != self.tensor.dtype or not item_shape.is_compatible_with(row.shape):
            ctx.fail("list-item", "a list that a loop over a tensor grows gets items of another type, dtype or "
                     "shape", "give its items one type")
        if self.array and not front:
            self.tensor = self.tensor.write(self.tensor.size(), row)
            return
        if self.array:
            ctx.fail("list-insert", "janus did not see the `insert` this list gets", "")
        row = row[None]
        self.tensor = tf.concat([row, self.tensor] if front else [self.tensor, row], 0)

    def append(self, item):
        self._add(item, front=False)

    def insert(self, index, item):
        if type(index) is not int or index != 0:
            current().fail("list-insert", "`insert` at a position other than 0 into a list a loop over a tensor "
                           "grows", "append, and reverse once after the loop")
        self._add(item, front=True)

    def length(self):
        if self.array and self.tensor is not None:
            return PyNumber(tf.cast(self.tensor.size(), tf.int64), int, computed=True)
        return PyNumber(tf.shape(self._rows(), out_type=tf.int64)[0], int, computed=True)   # (not fed)

    def reversed(self):
        return GrowList(tf.reverse(self._rows(), [0]), self.kind, source=self)

    def count(self):
        if self.array and self.tensor is not None:
            return self.tensor.size()
        return tf.shape(self._rows())[0]

    def item(self, i):
        value = self.tensor.read(i) if self.array else tf.gather(self._rows(), i)
        return PyNumber(value, self.kind, computed=True) if self.kind is not None else value

    def _rows(self):
        if self.tensor is None:
            current().fail("list-item", "a list a loop over a tensor grows is read before it has items",
                           "give it its first item before the loop")
        return self.tensor.stack() if self.array else self.tensor

    def __tf_tensor__(self, dtype=None, name=None):
        """As eager converts the list: Python floats to float32 (or `dtype`), tensors stacked.  An
        empty list converts to float32 of shape (0,) whatever it would have held: guarded."""
        rows = self._rows()
        if self.kind is None:
            if dtype is not None and tf.as_dtype(dtype) != rows.dtype:
                current().fail("list-conversion", "a list of tensors that a loop grows is converted to another "
                               "dtype", "cast after tf.stack")
        elif self.kind is not float or (dtype is not None and not tf.as_dtype(dtype).is_floating):
            current().fail("list-conversion", f"a list of Python {self.kind.__name__}s that a loop grows is "
                           f"converted to {dtype or 'a tensor'}", "append tensors")
        out = rows if self.kind is None else tf.cast(rows, tf.float32 if dtype is None else dtype)
        if out.dtype != tf.float32 or out.shape.rank != 1:
            _guard_not_empty(rows)
        return out

    def stacked(self, axis=0, name="stack"):
        """`tf.stack(items, axis)` of the list: its rows (stacked on axis 0) with that axis moved
        where `axis` puts it, the same values as stacking the items there."""
        rows = tf.convert_to_tensor(self, name=name)
        rank = rows.shape.rank
        if not isinstance(axis, int) or rank is None or not -rank <= axis < rank:
            current().fail("list-conversion", f"tf.stack of a list a loop grows on axis {axis!r}",
                           "stack on an axis within the items' rank")      # (eager raises as it does)
        if axis != 0:
            _guard_not_empty(rows)              # (eager's tf.stack reads the first item for any other axis)
        axis %= rank
        return rows if axis == 0 else tf.transpose(rows, [*range(1, axis + 1), 0, *range(axis + 1, rank)])

    def _refused(self, *_):
        current().fail("list-use", "a list a loop over a tensor grows is used where Python needs its items",
                       "keep such lists to append, len, reversed, for and TensorFlow calls")

    __bool__ = __len__ = __iter__ = __getitem__ = __str__ = __repr__ = __format__ = __hash__ = _refused


def _array(dtype, item_shape):
    """An empty `TensorArray` that grows by one item per write (what a loop appending carries: its
    gradient keeps each item once, where a concatenated tensor would be kept whole per step)."""
    return tf.TensorArray(dtype, size=0, dynamic_size=True, element_shape=item_shape)


def _row(item, kind):
    if kind is not None:
        return wide_tensor(item)
    return item


def _guard_not_empty(rows):
    ctx = current()
    where = ctx.user_line()
    key = (ctx.frame.converted.key if ctx.frames else "", Kind.EXACT.name, where, "list-not-empty")
    if ctx.dry_run or not ctx.may_speculate(key):
        ctx.fail("list-conversion", "an empty list converts to float32 of shape (0,), not to its items' dtype "
                 "and shape", "stack a list that has items")
    emit_guard(tf.shape(rows)[0] > 0, ctx.assume(Kind.EXACT, key, "the list converted to a tensor has items",
                                                True, where))


def growable(ctx, value) -> bool:
    """Whether `value` (held by a name the lowering found growable) may become a `GrowList`: a
    list the function made while it runs, not one janus read from outside."""
    return type(value) is list and id(value) not in ctx.outside and id(value) not in ctx.heap.by_copy


def grow_lists(ctx, init, names, lists, owner):
    """`init` with the growable lists among the construct's variables as `GrowList`s (a list whose
    items differ in type or shape stays a list; growing it inside then stops the build).  The
    construct that made them (`owner`) learns an empty one's item from its first append
    (`NeedsItemSpec`): its empty start must live in that construct's graph."""
    out, front = list(init), dict(lists)           # name -> whether the function inserts at its front
    for i, name in enumerate(names):
        if name in front and growable(ctx, init[i]):
            grown = GrowList.of(init[i], array=not front[name])
            if grown is not None:
                grown.owner = owner
            out[i] = grown if grown is not None else init[i]
    return tuple(out)


def learn_item(exc: NeedsItemSpec, owner) -> None:
    """Give the empty list its item's dtype and shape, if `owner` made it; else pass it on."""
    row, grown = exc.args
    if grown.owner is not owner:
        raise exc
    grown.start_empty(row)


def empty_lists_back(get_state, set_state):
    """A list the loop never appended to (the append is under a Python test that was false) is
    a Python list again."""
    vals = get_state()
    if any(isinstance(v, GrowList) and v.tensor is None for v in vals):
        set_state(tuple([] if isinstance(v, GrowList) and v.tensor is None else v for v in vals))


def reset_lists(values):
    """The `GrowList`s among `values` back to the value their loop started from."""
    for v in values:
        if isinstance(v, GrowList):
            v.reset()
