"""Division by a constant rounds as eager's does.

Eager `x / 7.0` runs `RealDiv`, which rounds the quotient once.  In a graph, TensorFlow's
constant folding rewrites a division by a constant into a multiplication by its reciprocal
(`ReduceDivToReciprocalMul`), which rounds twice and can land one ulp away: `9 / 7` is
1.2857142857142858 in Python and eager, 1.2857142857142856 in a `tf.function`, and a float32
`10.0 / 3.0` differs in its last bit too.  While a janus build runs on this thread, a float
divisor that is a constant (or a constant cast) is handed to `RealDiv` through `PlaceholderWithDefault` (the value
itself, which constant folding does not look through), so the graph divides as eager does.
TensorFlow's `RealDiv` wrapper is wrapped once; outside janus's builds it behaves as before.
"""
from __future__ import annotations

from tensorflow.python.eager import context
from tensorflow.python.framework import constant_op, tensor_util
from tensorflow.python.ops import array_ops, gen_math_ops

from codegen.operators.context import active

_real_div = gen_math_ops.real_div


def _opaque_divisor(y):
    if getattr(y, "op", None) is None or not (y.dtype.is_floating or y.dtype.is_complex):
        return y
    value = tensor_util.constant_value(y)          # a constant, or one cast (`n / 7` on an int tensor)
    if value is None:
        return y
    return array_ops.placeholder_with_default(constant_op.constant(value, y.dtype), y.shape)


def real_div(x, y, name=None):
    if active() is not None and not context.executing_eagerly():
        y = _opaque_divisor(y)
    return _real_div(x, y, name=name)


real_div.__janus_guarded__ = True


def install():
    """Wrap TensorFlow's `RealDiv` wrapper, which `/`, `tf.math.truediv` and `tf.divide` reach
    (once per process)."""
    if not getattr(gen_math_ops.real_div, "__janus_guarded__", False):
        gen_math_ops.real_div = real_div


install()
