"""Python's truth of a graph tensor, and `and`/`or` whose left operand is one.

Eager's `bool(t)` is the Python truth of the one number `t` holds and raises for a
tensor of more numbers; `a and b` returns `a` or `b` themselves (not their truth)
and evaluates `b` only when `a` does not decide.  In a graph that is a `tf.cond`
whose branch alone evaluates `b`, returning `a` or `b`: exact where both are
tensors of one dtype and shape, and where only the truth of the result is tested.
Anything else (a non-scalar tensor, operands of different types, dtypes or
shapes, whose choice eager makes by the values) runs in Python.
"""
from __future__ import annotations

import tensorflow as tf

from codegen.errors import NeedsPythonValue, Reason
from codegen.operators import failing_ops
from codegen.operators.cond_merge import note_argument_choice
from codegen.operators.context import current
from codegen.operators.general import no_writes_inside, state_before
from codegen.operators.numbers import PyNumber, convert_tensor


def needs_value(explanation: str, hint: str):
    """Python picks by the tensor's value here: the statement runs in Python between graph segments."""
    ctx = current()
    raise NeedsPythonValue(Reason("python-value-of-tensor", ctx.user_line() if ctx.frames else "", explanation, hint))


def _described(t) -> str:
    return f"a {t.dtype.name} tensor of shape {t.shape}"


def tensor_bool(t) -> PyNumber:
    """`bool(t)` of a graph tensor as eager gives it: a Python bool the graph computes.  A tensor
    that is not a scalar (eager raises unless it holds exactly one number) or whose dtype janus
    does not convert runs in Python."""
    number = convert_tensor(bool, t)
    if number is None:
        needs_value(f"the truth of {_described(t)} depends on its values (eager raises unless it holds one number)",
                    "test a scalar, or reduce it with tf.reduce_any / tf.reduce_all")
    return number


def _branch_truth(value, truth_of):
    """The truth of the right operand, tested inside a branch: a scalar boolean tensor."""
    if isinstance(value, tf.Tensor):
        return tensor_bool(value).tensor
    return truth_of(value)


def _same_kind(left, right) -> bool:
    return isinstance(right, tf.Tensor) and right.dtype == left.dtype and right.shape == left.shape


def _mixed(left, right, is_and: bool):
    """Eager's result is one operand or the other, of another type, dtype or shape, by the value."""
    kind = _described(right) if isinstance(right, tf.Tensor) else f"a {type(right).__name__}"
    needs_value(f"`{'and' if is_and else 'or'}` gives {_described(left)} or {kind} by the tensor's value",
                "give both operands one dtype and shape, or use tf.where / tf.logical_and")


def short_circuit(left, thunk, is_and: bool, truth_only: bool, truth_of):
    """`left and thunk()` (`is_and`) / `left or thunk()` with `left` a graph tensor: a `tf.cond` on
    the truth of `left` whose branch alone calls `thunk`, so the right operand's ops, variable
    writes and failures happen only where eager evaluates it.  `truth_only`: the result is only
    tested (`if a and b:`), so its truth is enough; otherwise it is `left` or the right operand
    itself, which must then be a tensor of `left`'s dtype and shape.  `truth_of` gives the truth
    of a right operand that is not a tensor (a Python value, a number the graph holds)."""
    ctx = current()
    if ctx.in_machine:
        return _per_frame(left, thunk(), is_and, truth_only, truth_of)
    truth = tensor_bool(left).tensor
    before = state_before(ctx, ())
    operand = []

    def right():
        value = thunk()
        operand.append(value)
        if truth_only:
            out = _branch_truth(value, truth_of)
        elif _same_kind(left, value):
            out = tf.identity(value)
        else:
            _mixed(left, value, is_and)
        graph = tf.compat.v1.get_default_graph()
        return out, failing_ops.witness(failing_ops.unused_failing(graph, [out]))

    def keep():
        return (truth if truth_only else tf.identity(left)), tf.constant(0)

    ctx.general_depth += 1
    try:
        out = tf.cond(truth, right, keep) if is_and else tf.cond(truth, keep, right)
    finally:
        ctx.general_depth -= 1
    no_writes_inside(ctx, before, "tf.cond")
    if not truth_only:      # eager's result is one of the operands itself: an argument comes back as it
        note_argument_choice(ctx, truth, *((operand[0], left) if is_and else (left, operand[0])), out[0])
    return out[0]       # (the witness stays unused: it only keeps the branch's failing ops)


def _per_frame(left, right, is_and, truth_only, truth_of):
    """Inside a recursion machine a block's values may hold one number per frame, where a
    `tf.cond` cannot choose: `tf.where` per frame (the right operand is computed on every frame)."""
    truth = left if left.dtype == tf.bool else tf.cast(left, tf.bool)
    if truth_only:
        other = right if isinstance(right, tf.Tensor) and right.dtype == tf.bool else truth_of(right)
        return tf.logical_and(truth, other) if is_and else tf.logical_or(truth, other)
    if not _same_kind(left, right):
        _mixed(left, right, is_and)
    return tf.where(truth, right, left) if is_and else tf.where(truth, left, right)



_WRITES = ("Assign", "ResourceScatter", "ResourceApply", "ResourceSparseApply", "StatefulPartitionedCall")


def evaluated_anyway(thunk):
    """The right operand of `and`/`or` after a Python bool the graph computed, whose value (not
    only its truth) is used: it is evaluated on every call and chosen by value after the run, so
    it may change nothing eager's short circuit would skip — no Python state, print, variable
    write or call into Python; else the statement runs in Python."""
    ctx = current()
    graph = tf.compat.v1.get_default_graph()
    before, ops, prints = state_before(ctx, ()), len(graph.get_operations()), len(ctx.prints)
    value = thunk()
    construct = "`and`/`or` whose left side is a Python bool computed from a tensor"
    no_writes_inside(ctx, before, construct)
    memo = {}
    if len(ctx.prints) != prints or any(op.type.startswith(_WRITES) or failing_ops.calls_python(op, memo)
                                        for op in graph.get_operations()[ops:]):
        needs_value(f"{construct}: its right side prints, writes a variable or calls Python, which eager does "
                    "only when the left side lets it", "use an if statement")
    return value
