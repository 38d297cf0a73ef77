"""Frame tables of the recursion machine: their layout, the loop state, and the table operations.

Every non-static frame variable is stored as one table per leaf (`table_layout`), each with a
leading frame axis.  `MachineState` names the `tf.while_loop` variables: the frame bookkeeping
(pc, parent, slot, pending, active), the roots' results and the variable tables.  `grow` pads
every per-frame tensor when calls need more frames than the tables hold.  The rest moves values
between the tables and the blocks: select frames (`positions`, `take`), write rows (`scatter`),
make a leaf's values for zero frames (`empty`), cast block values to their table type (`cast`,
`cast_all`), rebuild a block's view of a row (`wrap`), and share a float tensor every frame
reads in float64 (`Widened`).
"""
from __future__ import annotations

import weakref
from typing import NamedTuple

import numpy as np
import tensorflow as tf

from codegen.assumptions import subnormal
from codegen.errors import ConversionError, Reason
from codegen.operators.context import current
from codegen.operators.numbers import PyNumber, narrowed
from codegen.operators.trees import Pointer
from codegen.operators.weak_numbers import WeakNumber
from codegen.recursion.frame_specs import MixedSpec, Spec, flatten, held_int, leaves, python_number_of
from codegen.recursion.sequences import sequence


class MachineState(NamedTuple):
    """The variables of the machine's `tf.while_loop`, a nest of tensors in this field order.

    Per-frame vectors have one entry per frame slot (frames 0 .. n-1 are allocated)."""
    steps: tf.Tensor        # loop steps taken
    n: tf.Tensor            # frames allocated so far: the next child frame's id
    pc: tf.Tensor           # per frame: the global block id it waits at, -1 when it has returned
    parent: tf.Tensor       # per frame: the frame that called it, -1 for a root call
    depth: tf.Tensor        # per frame: the calls between it and its root call (0 for a root)
    deepest: tf.Tensor      # the largest depth so far (the machine stops past the recursion limit)
    slot: tf.Tensor         # per frame: the call site it returns to
    pending: tf.Tensor      # per frame: the calls it still waits for
    active: tf.Tensor       # per frame: runs its block at the next step (callers wait inactive)
    ran: tf.Tensor          # per block: the frames it has run (see `Cycle.observe`)
    results: list           # per leaf of the entry's return value: one row per root call
    tables: list            # per leaf of every non-static frame variable: one row per frame

    @staticmethod
    def shapes(n_blocks: int, roots: int, result_specs: list, table_specs: list) -> MachineState:
        """The loop's shape invariants: the per-frame tensors grow along the frame axis."""
        frames = tf.TensorShape([None])
        return MachineState(tf.TensorShape([]), tf.TensorShape([]), frames, frames, frames, tf.TensorShape([]),
                            frames, frames, frames,
                            tf.TensorShape([n_blocks]),
                            [tf.TensorShape((roots,) + s.shape) for s in result_specs],
                            [tf.TensorShape([None] + list(s.shape)) for s in table_specs])


def table_layout(cycle, specs: dict) -> tuple[dict, list]:
    """One table per leaf of every non-static variable: (function, variable) -> its table positions,
    and the spec of each table in position order."""
    index: dict = {}
    leaf_specs: list = []
    for f, cf in cycle.functions.items():
        for v in cf.vars:
            spec = specs[(f, v)]
            if isinstance(spec, Spec) and spec.is_static:
                continue
            index[(f, v)] = list(range(len(leaf_specs), len(leaf_specs) + len(leaves(spec))))
            leaf_specs += leaves(spec)
    return index, leaf_specs


# The memory the wavefront's frame tables may take.  It allocates a frame per call and keeps it
# (the reverse pass reads them), so a recursion that never ends (`f(n + 1) + f(n + 1)`) would fill
# the machine's memory long before its depth passed the recursion limit, where eager, depth-first,
# raises RecursionError after a thousand calls.  Past this the run fails and the call runs in Python.
TABLE_BYTES = 512 << 20
_BOOKKEEPING_BYTES = 21         # pc, parent, depth, slot, pending (int32) and active (bool)


def max_frames(specs: list) -> int:
    """How many frames the tables of `specs` may hold within `TABLE_BYTES`."""
    per_frame = _BOOKKEEPING_BYTES + sum(s.dtype.size * int(np.prod(s.shape, dtype=np.int64)) for s in specs)
    return max(1 << 16, TABLE_BYTES // per_frame)


def grow(state: MachineState, need) -> MachineState:
    """Double the per-frame tensors when `need` frames do not fit.  A pad, not a `tf.cond`: the gradient
    of a pad only keeps shapes, where a cond's gradient would keep every table of every step."""
    size = tf.shape(state.pc)[0]
    extra = tf.where(need > size, tf.maximum(size, need - size), 0)
    paddings: dict = {}                  # rank -> `extra` rows after the frame axis, one tensor per rank

    def pad(t, fill):
        rank = t.shape.rank
        if rank not in paddings:
            paddings[rank] = tf.scatter_nd([[0, 1]], tf.reshape(extra, [1]), [rank, 2])
        out = tf.pad(t, paddings[rank], constant_values=fill)
        out.set_shape([None] + t.shape[1:])       # static row shape, which a computed padding hides
        return out
    return state._replace(pc=pad(state.pc, -1), parent=pad(state.parent, -1), depth=pad(state.depth, 0),
                          slot=pad(state.slot, -1), pending=pad(state.pending, 0), active=pad(state.active, False),
                          tables=[pad(t, 0) for t in state.tables])


def empty(spec: Spec):
    """A table leaf's values for zero frames."""
    return tf.zeros((0,) + spec.shape, spec.dtype)


def positions(mask):
    """Positions of the true entries of a vector mask (cheaper than `tf.boolean_mask` per value)."""
    return tf.reshape(tf.where(mask), [-1])


def take(values, at):
    """`tf.gather` whose gradient is dense (see `dense`)."""
    return tf.gather(dense(values), at)


def dense(values):
    """`values` as they are, through a reshape whose gradient densifies the IndexedSlices of a
    gather from it: those reaching a `tf.concat` in a vectorised block fail (its axis is not
    static there).  One view serves every gather a step makes from the same table."""
    return tf.reshape(values, tf.shape(values))


def scatter(table, idx, values):
    """`table` with the rows of frames `idx` replaced by `values`."""
    return tf.tensor_scatter_nd_update(table, rows(idx), values)


_ROWS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()    # graph -> {index vector: its rows}


def rows(idx):
    """The frame ids `idx` as scatter indices, made once per index vector and graph: a step writes
    the same frames into many tables, and each op of the loop body runs on every step."""
    memo = _ROWS.setdefault(tf.compat.v1.get_default_graph(), {})
    key = idx.ref()
    if key not in memo:
        memo[key] = tf.expand_dims(idx, 1)
    return memo[key]


def cast(value, spec: Spec):
    """A block value (tensor, number, Pointer, WeakNumber) as a tensor of the table's dtype.  A
    Python number yields to the table's dtype as it yields to a tensor's in eager arithmetic,
    except a float to an int table (eager's `x * 1.5` of an int tensor raises, and a frame that
    returns 1.5 returns it); a tensor goes into a table of its dtype, or widened into a Python
    number's table (a float32 sum where other frames hold the float 0.0), not into a tensor
    table of another dtype (the root called with float64, the frames below with float32), where
    eager keeps its dtype: those make the build fail, and the call runs in Python."""
    if spec.is_static:
        return value                               # the same in every frame: no table holds it
    if subnormal(value):                           # (a constant the root got: a table would flush it)
        raise ConversionError(Reason("held-number", current().user_line(), "a subnormal float held in a "
                                     "recursion's tables, where TensorFlow's kernels flush it to zero",
                                     "this call runs in Python"))
    held_int(value, spec.dtype)
    if isinstance(value, Pointer):
        value = value.index
    weak = isinstance(value, (WeakNumber, PyNumber)) or type(value) in (bool, int, float)
    if isinstance(value, PyNumber):                # (its 64 bits: the default conversion rounds a float)
        value = narrowed(value, spec.dtype).tensor
    if isinstance(value, WeakNumber):
        value = value.tensor if value.condition is None or spec.dtype != tf.bool else value.condition
    if type(value) is float and spec.dtype.is_floating:
        return tf.constant(value, spec.dtype)      # not through float32, which would round 0.1
    t = tf.convert_to_tensor(value)
    if t.dtype == spec.dtype:
        return t
    if (t.dtype.is_floating and not spec.dtype.is_floating) or not (weak or spec.weak and _widens(t.dtype, spec.dtype)):
        current().fail("recursion-dtype", f"a frame's {t.dtype.name} value goes where other frames hold "
                       f"{spec.dtype.name}; converting it would change its value or dtype",
                       "give the recursion's arguments and results one dtype")
    return tf.cast(t, spec.dtype)


def _widens(a, b) -> bool:
    """Whether every value of dtype `a` is one of dtype `b` (float32 in float64, int32 in int64)."""
    return (a.is_floating and b.is_floating or a.is_integer and b.is_integer) and a.size <= b.size


def cast_all(value, spec) -> list:
    """The leaves of `value`, cast to the leaves of `spec`."""
    return [cast(v, s) for v, s in zip(flatten(value, spec), leaves(spec))]


def wrap(value, spec):
    """Table values as the builder sees them: tree nodes become Pointers, tuples tuples, Python
    numbers WeakNumbers (`frame_specs.python_number_of`).  A number that is Python in some frames
    and a tensor in others (`MixedSpec`) is its value: the block computes on tensors, its kinds
    come from `codegen.recursion.mixed`."""
    if isinstance(spec, MixedSpec):
        return wrap(value[0], spec[0])
    if isinstance(spec, tuple):
        return sequence(spec, (wrap(v, s) for v, s in zip(value, spec)))
    if spec.tables is not None:
        return Pointer(value, spec.tables)
    return python_number_of(value, spec)


def is_tensors(value) -> bool:
    """A tensor, or a non-empty tuple or list of them (not a tree node's Pointer)."""
    if type(value) in (tuple, list):
        return bool(value) and all(is_tensors(v) for v in value)
    return isinstance(value, (tf.Tensor, tf.Variable)) and not isinstance(value, Pointer)


class Widened:
    """A float tensor shared by every frame, captured by the loop in float64 and narrowed inside it.

    Its gradient is the sum of one contribution per frame; TensorFlow sums the contributions of a
    loop's captured tensor step after step in the captured dtype.  A sequential float32 sum of a
    thousand similar terms (x^1000) drifts by 1e-5, where eager's AddN stays near 1e-7; summing in
    float64 and rounding once keeps the machine's gradients as exact as eager's."""

    def __init__(self, wide, dtype):
        self.wide, self.dtype = wide, dtype

    @staticmethod
    def of(value):
        if isinstance(value, (tf.Tensor, tf.Variable)) and value.dtype in (tf.float16, tf.bfloat16, tf.float32):
            return Widened(tf.cast(value, tf.float64), value.dtype)
        return value

    @staticmethod
    def narrow(value):
        return tf.cast(value.wide, value.dtype) if isinstance(value, Widened) else value
