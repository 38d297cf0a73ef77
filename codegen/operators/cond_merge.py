"""What a variable holds after a tensor `if`: the one `tf.cond` output both sides feed, packed
back into the structure both sides share, with Python numbers kept where both sides hold one of
a type (eager's value is that type whichever side runs)."""
from __future__ import annotations

import tensorflow as tf

from codegen.operators.context import current
from codegen.operators.numbers import PyNumber, python_kind
from codegen.operators.values import is_composite, is_symbolic

_NUMBERS = (bool, int, float)


def packed(name, a, b, leaves):
    """`leaves` in the structure both sides share; a composite tensor gets the type spec that
    fits both sides (a ragged tensor of 2 rows on one side and 3 on the other: of None rows),
    and a Python number on both sides stays one (`[x, n]` or `[x, 0]`: an int either way)."""
    def common(x, y):
        if is_composite(x):
            sx, sy = tf.type_spec_from_value(x), tf.type_spec_from_value(y)
            return sx.most_specific_common_supertype([sy]) or sx
        return x
    left, right = (tf.nest.flatten(v, expand_composites=True) for v in (a, b))
    if len(left) == len(right) == len(leaves):
        leaves = [_number_leaf(name, x, y, t) for x, y, t in zip(left, right, leaves)]
    return tf.nest.pack_sequence_as(tf.nest.map_structure(common, a, b), leaves, expand_composites=True)


def _number_leaf(name, a, b, leaf):
    """A leaf after a tensor `if`: the constant both sides hold, a Python number where both
    sides hold one of a type, else the tensor."""
    if type(a) in _NUMBERS and type(a) is type(b) and repr(a) == repr(b):
        return a
    kind = python_number(name, a, b)
    return PyNumber(leaf, kind) if kind is not None else leaf


def python_number(name, a, b) -> type | None:
    """When a variable is a Python number after both sides, it stays one (of that type) after
    the cond; a Python number on one side and a tensor, or another type, on the other cannot:
    its type would depend on the branch, which only eager can follow."""
    ka, kb = python_kind(a), python_kind(b)
    if ka is None and kb is None:
        return None
    if ka is not kb:
        current().fail("cond-python-number", f"`{name}` is a {(ka or type(a)).__name__} on one side of a "
                       f"tensor `if` and a {(kb or type(b)).__name__} on the other",
                       "give it the same type on both sides (tf.constant for a tensor)")
    return ka


def _fed(heap, value):
    """("fed", key) for the placeholder of an outside tensor fed at the call, else None."""
    key = heap.fed_keys.get(value.ref())
    return None if key is None else ("fed", key)


def note_argument_choice(ctx, test, a, b, out):
    """Record that `out`, a `tf.cond` output of the outermost graph, is the tensor argument (or
    outside tensor fed at the call) `a` (where `test` holds) or `b` (where not): eager's
    `x if x > y else y` is the caller's own object, which write-back gives back by the
    predicate's value after the run.  Inside another branch or loop body the predicate is no
    output of the graph, so nothing is recorded there."""
    if ctx.general_depth or ctx.in_machine or ctx.dry_run or not is_symbolic(out):
        return
    paths = [(ctx.heap.arg_tensors.get(v.ref()) or _fed(ctx.heap, v)) if is_symbolic(v) else None for v in (a, b)]
    if paths != [None, None]:
        ctx.heap.arg_choices[out.ref()] = (tf.cast(test, tf.bool), *paths)
