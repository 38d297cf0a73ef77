"""A tensor `if` lowered generally: `tf.cond` over the variables the sides assign.

The variables a lowered `if` assigns become `tf.cond` outputs: Python numbers become tensors
(and Python numbers again after it), other Python objects must stay the very same object, and a
variable only one side defines is left undefined, so a later read fails the build and the
function runs imperatively.  Attributes of outside objects the sides write are carried too
(`cond_writes`).
"""
from __future__ import annotations

import tensorflow as tf

from codegen.operators import failing_ops
from codegen.operators.cond_merge import note_argument_choice, packed, python_number
from codegen.operators.cond_writes import CondWrites, WritesInSide
from codegen.operators.context import current
from codegen.operators.general import as_tensor, carriable, leaves_of, no_writes_inside, state_before
from codegen.operators.lists import (GrowList, NeedsItemSpec, empty_lists_back, grow_lists, learn_item,
                                     reset_lists)
from codegen.operators.numbers import PyNumber, python_kind, wide_tensor_dtype
from codegen.operators.unconverted import unwatched, watched
from codegen.operators.values import NO_RETURN, UNDEF

_NUMBERS = (bool, int, float)


def run_cond(test, body, orelse, get_state, set_state, names, lists=()):
    """`tf.cond` over the named variables; returns nothing (state is set).  The function's own
    lists a side appends to (`lists`) are passed through as `GrowList`s."""
    owner = object()
    init = grow_lists(current(), get_state(), names, lists, owner)
    set_state(init)
    writes = CondWrites(current())      # attributes of outside objects the sides write, carried
    learned = 0
    while True:
        try:
            _cond(test, body, orelse, *writes.wrap(get_state, set_state, names), writes)
            break
        except NeedsItemSpec as exc:
            learned += 1
            learn_item(exc, owner)
        except WritesInSide as exc:
            learned += 1
            writes.learn(exc)
        if learned > len(lists) + 2:
            current().fail("list-item", "a list a tensor `if` grows does not settle on one item", "")
        reset_lists(init)
        set_state(init)
    writes.settle(test)
    empty_lists_back(get_state, set_state)


@unwatched
def _cond(test, body, orelse, get_state, set_state, names, writes):
    ctx = current()
    init = get_state()
    seen: dict = {}
    # Carry tensors, numbers, lists of them, and not-yet-defined names (a branch usually defines them).
    carry = [i for i, v in enumerate(init) if carriable(v) or v is UNDEF or v is NO_RETURN]
    dtypes: dict = {}
    fills: dict = {}

    grown = {i: v.tensor for i, v in enumerate(init) if isinstance(v, GrowList) and v.tensor is not None}

    def branch(fn, which):
        def run():
            set_state(init)
            for i, rows in grown.items():       # each side grows the list from the rows before the `if`
                init[i].rebind(rows)
            before = state_before(ctx, init)
            watched(fn)
            no_writes_inside(ctx, before, "tf.cond", writes)
            writes.after_side(which)
            vals = get_state()
            seen[which] = vals
            out = []
            for i in carry:
                if i in grown:
                    if vals[i] is not init[i]:
                        ctx.fail("loop-state", f"a tensor `if` replaces the list in `{names[i]}` that a loop grows",
                                 "keep one list and append to it")
                    out.append([vals[i].tensor])
                elif carriable(vals[i]):
                    leaves = leaves_of(vals[i])
                    out.append([as_tensor(x, dtypes.get((i, j))) for j, x in enumerate(leaves)])
                elif i in fills:
                    # The side that has not returned yet: zeros shaped like the other side's result.
                    out.append([tf.zeros([d or 0 for d in shape], dtype) for shape, dtype in fills[i]])
                else:
                    # A side that leaves a carried name undefined outputs a placeholder; the name
                    # ends up undefined after the cond (a later read fails the build).
                    out.append([tf.constant(0, tf.int32)])
            graph = tf.compat.v1.get_default_graph()
            return out + [[failing_ops.witness(failing_ops.unused_failing(graph, tf.nest.flatten(out)))]]
        return run

    ctx.general_depth += 1
    try:
        for attempt in range(2):
            try:
                outs = tf.cond(tf.cast(test, tf.bool) if test.dtype != tf.bool else test,
                               branch(body, True), branch(orelse, False))[:-1]   # the witness stays unused
            except (TypeError, ValueError, AssertionError):     # cond_v2 asserts equal output counts
                if attempt or True not in seen or False not in seen:
                    raise
            else:
                if attempt or not _one_side_returned(seen, carry):
                    break
            # Carry what both sides define with the same structure, in the dtype the tensor side has.
            carry, fills = _common_carry(seen, names, dtypes)
    finally:
        ctx.general_depth -= 1
    final = _merge(names, init, seen, carry, fills, outs)
    for i in carry:
        note_argument_choice(ctx, test, seen[True][i], seen[False][i], final[i])
    set_state(tuple(final))


def _one_side_returned(seen, carry) -> bool:
    return any((seen[True][i] is NO_RETURN) != (seen[False][i] is NO_RETURN) for i in carry)


def _leaf_spec(x):
    if python_kind(x) is not None:
        return tf.TensorShape([]), wide_tensor_dtype(x)
    return x.shape, x.dtype


def _common_carry(seen, names, dtypes):
    """The names both sides define alike (and the result one side returned), with the dtypes
    their tensors have, and the placeholder specs of the side that has not returned."""
    carry, fills = [], {}
    for i in range(len(names)):
        a, b = seen[True][i], seen[False][i]
        if (a is NO_RETURN) != (b is NO_RETURN):
            other = b if a is NO_RETURN else a
            specs = [_leaf_spec(x) for x in leaves_of(other)] if carriable(other) else None
            if specs is not None and all(shape.rank is not None for shape, _ in specs):
                carry.append(i)
                fills[i] = specs
            continue
        if not (carriable(a) and carriable(b)):
            continue
        try:
            tf.nest.assert_same_structure(a, b, expand_composites=True)
        except (TypeError, ValueError):
            continue
        left, right = leaves_of(a), leaves_of(b)
        if any(isinstance(x, (tf.Tensor, tf.Variable)) and isinstance(y, (tf.Tensor, tf.Variable))
               and x.dtype != y.dtype for x, y in zip(left, right)):
            # Eager's dtype after the `if` is the taken side's; one tf.cond output cannot be both.
            current().fail("cond-dtype", f"`{names[i]}` has a different dtype on each side of a tensor `if`",
                           "cast it to one dtype on both sides")
        carry.append(i)
        for side in (a, b):
            for j, x in enumerate(leaves_of(side)):
                if isinstance(x, (tf.Tensor, tf.Variable)):
                    dtypes[(i, j)] = x.dtype
    return carry, fills


def _merge(names, init, seen, carry, fills, outs):
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    final = list(init)
    for i in range(len(names)):
        a, b = seen[True][i], seen[False][i]
        leaves = outs[carry.index(i)] if i in carry else None
        leaves = list(leaves) if isinstance(leaves, (list, tuple)) else [leaves]
        if isinstance(init[i], GrowList) and i in carry:
            final[i] = init[i].rebind(leaves[0])
        elif i in fills:
            other = b if a is NO_RETURN else a
            kind = python_kind(other)
            final[i] = PyNumber(leaves[0], kind) if kind is not None else packed(names[i], other, other, leaves)
        elif i in carry and carriable(a) and carriable(b):
            same_python = type(a) in _NUMBERS and type(a) is type(b) and a == b
            kind = None if same_python else python_number(names[i], a, b)
            if same_python:
                final[i] = a
            elif kind is not None:
                final[i] = PyNumber(leaves[0], kind)
            else:
                final[i] = packed(names[i], a, b, leaves)
        elif a is b:
            final[i] = a
        else:
            final[i] = UNDEF
    return final
