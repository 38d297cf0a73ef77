"""Whether an op on Python numbers held in tensors computed what Python computes.

A Python int the graph holds in a tensor (a `WeakNumber`, a recursion
machine's table) is computed with TensorFlow's integer ops, which wrap at their
dtype's bounds where Python's ints grow.  `fits(op)` recomputes one such op
where it cannot wrap — int64 for 32-bit operands, a float64 estimate for
64-bit ones (conservative: an estimate above 2**62 counts as leaving int64) —
and says whether the result fits the op's dtype; `divisor_ok(op)` whether a
division's divisor is not zero (Python raises there), `pow_ok(op)` whether a float
power is a float in Python too.  Outside a recursion machine
a `WeakNumber`'s int arithmetic is guarded right there (`guarded`, an `EXACT`
assumption: a failing run runs the call in Python, which computes the big
int); inside one, the block's checks go to the machine
(`BuildContext.int_checks`, `codegen.recursion.exact_ints`).
"""
from __future__ import annotations

import functools

import numpy as np
import tensorflow as tf

from codegen import faults
from codegen.assumptions import Kind
from codegen.operators.context import current
from codegen.operators.exact_arith import float_pow_is_pythons
from codegen.operators.guards import check

_EXACT_OPS = {"AddV2": tf.add, "Add": tf.add, "Sub": tf.subtract, "Mul": tf.multiply,
              "FloorDiv": tf.math.floordiv}
_INT64_SAFE = 2.0 ** 62         # a float64 estimate below this cannot have wrapped int64
# Integer ops whose result may leave their dtype (`fits` checks them).
COMPUTES = frozenset(_EXACT_OPS) | {"Neg", "Abs", "Pow", "Square", "AddN", "Cast", "Sum", "Prod"}


def fits(op):
    """Whether the int `op` computes fits its dtype, as a bool tensor; None for an op that cannot
    leave it (a comparison, a maximum, a remainder, a widening cast, a float op)."""
    if not op.outputs or op.type not in COMPUTES:
        return None
    dtype = op.outputs[0].dtype
    if not dtype.is_integer:
        return None
    x = op.inputs[0]
    narrow = dtype.size < 8
    if op.type == "Cast":
        if x.dtype == tf.bool or (x.dtype.is_integer and x.dtype.size <= dtype.size):
            return None
        if x.dtype.is_floating:         # (float64(2**63 - 1) is 2**63, which int64 does not hold)
            wide = tf.cast(x, tf.float64)
            return tf.logical_and(wide >= float(dtype.min), wide < -float(dtype.min))
        return _within(tf.cast(x, tf.int64), dtype)
    if op.type in ("Neg", "Abs"):
        return tf.not_equal(x, tf.constant(dtype.min, dtype))
    if op.type == "FloorDiv" and not narrow:      # only the lowest int64 divided by -1 leaves int64
        return tf.logical_or(tf.not_equal(x, dtype.min), tf.not_equal(op.inputs[1], -1))
    if op.type in ("Pow", "Prod"):
        value = _recompute(op, tf.float64)
        return tf.less_equal(tf.abs(value), float(dtype.max) if narrow else _INT64_SAFE)
    if narrow:
        return _within(_recompute(op, tf.int64), dtype)
    return tf.less(tf.abs(_recompute(op, tf.float64)), _INT64_SAFE)


def _recompute(op, wide):
    """`op` again on its inputs cast to `wide` (a Sum's or Prod's axes as they were)."""
    args = [tf.cast(a, wide) for a in op.inputs]
    if op.type == "Square":
        return args[0] * args[0]
    if op.type == "AddN":
        return tf.add_n(args)
    if op.type == "Pow":
        return tf.pow(args[0], args[1])
    if op.type in ("Sum", "Prod"):
        reduce = tf.reduce_sum if op.type == "Sum" else tf.reduce_prod
        return reduce(args[0], axis=op.inputs[1], keepdims=op.get_attr("keep_dims"))
    return _EXACT_OPS[op.type](*args)


def _within(wide, dtype):
    return tf.logical_and(tf.greater_equal(wide, tf.cast(dtype.min, wide.dtype)),
                          tf.less_equal(wide, tf.cast(dtype.max, wide.dtype)))


def noted(tensor) -> None:
    """Inside a machine block, `tensor` holds a Python int (a tree node's int attribute): the
    block's ops on it and the frame's ints are checked like theirs (`BuildContext.int_sources`)."""
    ctx = current()
    if ctx.int_checks is not None and isinstance(tensor, tf.Tensor):
        ctx.int_sources.append(tensor)


DIVISIONS = frozenset({"RealDiv", "Div", "DivNoNan", "FloorDiv", "FloorMod", "TruncateMod"})


def divisor_ok(op):
    """For a division of Python numbers (`/`, `//`, `%`, and the fmod Python's float `//` and `%`
    come from), whether its divisor is not zero (Python raises ZeroDivisionError where TensorFlow
    gives inf or nan, or, compiled by XLA, an int), as a bool tensor; None for another op or a
    divisor that is a constant other than zero."""
    if op.type not in DIVISIONS:
        return None
    divisor = op.inputs[1]
    static = tf.get_static_value(divisor)
    if static is not None and np.all(static != 0):
        return None
    return tf.not_equal(divisor, tf.zeros_like(divisor))


def pow_ok(op):
    """For a float `**` of Python numbers, whether Python's gives a float there (no complex result,
    no zero to a negative power, no overflow), as a bool tensor; else None."""
    if op.type == "Pow" and op.outputs[0].dtype.is_floating:
        return float_pow_is_pythons(op.inputs[0], op.inputs[1])
    return None


def quotient_exact(op):
    """For `/` of Python ints (TensorFlow casts 64-bit ints to float64, then divides), whether each
    is at most 2**53, where the cast is exact: Python divides the ints exactly and rounds once,
    so past it the two differ in the last bit.  None for another op."""
    if op.type not in ("RealDiv", "Div", "DivNoNan") or not op.outputs[0].dtype.is_floating:
        return None
    oks = [tf.less_equal(tf.abs(t.op.inputs[0]), tf.constant(2 ** 53, t.op.inputs[0].dtype)) for t in op.inputs
           if t.op.type == "Cast" and t.op.inputs[0].dtype.is_integer and t.op.inputs[0].dtype.size == 8]
    return functools.reduce(tf.logical_and, oks) if oks else None


def checks(op) -> list:
    """The bool tensors that say the Python number `op` computes is Python's (`fits`, `divisor_ok`,
    `pow_ok`, `quotient_exact`)."""
    return [c for c in (fits(op), divisor_ok(op), pow_ok(op), quotient_exact(op)) if c is not None]


def guarded(out, divisor=None):
    """`out`, a Python number a `WeakNumber` computed, checked to be what Python computes: an int
    that fits its dtype, a quotient whose divisor (`out`'s op's, or `divisor`) is not zero, a
    float power Python computes as a float.  Inside a machine block the
    machine's walk checks it; elsewhere an in-graph `EXACT` guard fails the run (the call then runs in
    Python, which computes the int or raises), and where that guard failed too often the build
    fails."""
    if not isinstance(out, tf.Tensor):
        return out
    ctx = current()
    if ctx.int_checks is not None:
        # Inside a machine block the machine walks the block's ops from every int the block
        # holds (`noted`) and checks each (`codegen.recursion.exact_ints`); checks made here too
        # would add ops the walk then checks again, in float64, which keeps a chain from XLA.
        return out
    oks = checks(out.op) + ([tf.not_equal(divisor, tf.zeros_like(divisor))] if divisor is not None else [])
    if not oks:
        return out
    ok = functools.reduce(tf.logical_and, oks)
    if ctx.in_machine or ctx.dry_run:
        return out                      # a scratch trace of a machine's block: not run
    where = ctx.user_line()
    key = ("int-range", where)
    what = f"a Python int stays inside {out.dtype.name}" if out.dtype.is_integer else \
        "a float power is Python's" if out.op.type == "Pow" else "a divisor is not zero"
    if key in ctx.relaxed:
        ctx.fail("python-number", f"Python arithmetic in the graph ({what}) failed on earlier calls",
                 "the function runs in Python")
    assumption = ctx.assume(Kind.EXACT, key, what, True, where, fallback="python-int")
    if faults.matches(assumption):
        ok = tf.constant(False)
    with tf.control_dependencies([check(ok, [assumption.message()])]):
        return tf.identity(out)
