"""Python's float `//`, `%` and `**`, and its comparisons of an int with a float, in graph ops.

TensorFlow's `floordiv` is `floor(x / y)` and its `floormod` keeps the dividend's sign on a zero
remainder; Python (and NumPy, whose `divmod` is Python's) computes both from `fmod`: `1.0 // 0.1`
is 9.0 there (10.0 in TensorFlow) and `-3.0 % 3.0` is 0.0 (-0.0).  Comparing an int with a float,
Python is exact where a cast of the int to float64 is not (past 2**53).  These functions follow
CPython's `float_divmod` and `float_richcompare`; a zero divisor is the caller's guard.  Where a
float `**` gives what Python's does is a check (`float_pow_is_pythons`) the caller guards on.
"""
from __future__ import annotations

import tensorflow as tf

_BITS = {tf.float64: tf.int64, tf.float32: tf.int32, tf.float16: tf.int16, tf.bfloat16: tf.int16}


def _signbit(v):
    return tf.bitcast(v, _BITS[v.dtype]) < 0


def _zero_signed_as(v):
    """copysign(0.0, v)."""
    zero = tf.zeros_like(v)
    return tf.where(_signbit(v), -zero, zero)


def float_divmod(x, y):
    """(x // y, x % y) of float tensors as Python computes them (y is not zero)."""
    zero = tf.zeros_like(x)
    mod = tf.truncatemod(x, y)                         # (C fmod)
    div = tf.math.divide_no_nan(x - mod, y)             # (y is not zero: an exact `/`)
    adjust = tf.logical_and(tf.not_equal(mod, zero), tf.not_equal(y < zero, mod < zero))
    mod = tf.where(adjust, mod + y, mod)
    div = tf.where(adjust, div - 1.0, div)
    mod = tf.where(tf.equal(mod, zero), _zero_signed_as(y), mod)
    floor = tf.floor(div)
    floor = tf.where(div - floor > 0.5, floor + 1.0, floor)
    quotient_sign = tf.where(tf.not_equal(_signbit(x), _signbit(y)), -tf.ones_like(x), tf.ones_like(x))
    return tf.where(tf.equal(div, zero), _zero_signed_as(quotient_sign), floor), mod


def float_floordiv(x, y):
    return float_divmod(x, y)[0]


def float_mod(x, y):
    return float_divmod(x, y)[1]


SWAPPED = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "eq": "eq", "ne": "ne"}    # `a op b` is `b op' a`


def int_float_compare(name: str, i, f):
    """`i <op> f` for an int64 tensor `i` and a float64 tensor `f`, exactly (as Python compares
    an int with a float); `name` is lt, le, gt, ge, eq or ne."""
    big = tf.constant(2.0 ** 63, tf.float64)
    inside = tf.logical_and(f < big, f >= -big)         # (False for NaN and the infinities)
    floor = tf.floor(tf.where(inside, f, tf.zeros_like(f)))
    whole = tf.cast(floor, tf.int64)
    has_fraction = tf.logical_and(inside, floor < f)
    below = tf.where(inside, tf.logical_or(i < whole, tf.logical_and(tf.equal(i, whole), has_fraction)), f > 0)
    at_most = tf.where(inside, i <= whole, f > 0)
    equal = tf.logical_and(inside, tf.logical_and(tf.equal(i, whole), tf.logical_not(has_fraction)))
    nan = tf.math.is_nan(f)
    results = {"lt": below, "le": at_most, "eq": equal,
               "gt": tf.logical_and(tf.logical_not(at_most), tf.logical_not(nan)),
               "ge": tf.logical_and(tf.logical_not(below), tf.logical_not(nan)),
               "ne": tf.logical_not(equal)}
    return results[name]


def float_pow_is_pythons(x, y):
    """Where Python's float `x ** y` is a float: not a negative base to a fractional power (a
    complex number), not zero to a negative power (ZeroDivisionError), no overflow (OverflowError)."""
    finite = tf.logical_and(tf.math.is_finite(x), tf.math.is_finite(y))
    fractional = tf.logical_and(tf.math.is_finite(y), tf.not_equal(y, tf.floor(y)))
    complex_result = tf.logical_and(x < 0.0, fractional)
    zero_to_negative = tf.logical_and(tf.equal(x, 0.0), y < 0.0)
    overflow = tf.logical_and(finite, tf.logical_not(tf.math.is_finite(tf.pow(x, y))))
    return tf.logical_not(tf.logical_or(tf.logical_or(complex_result, zero_to_negative),
                                        tf.logical_and(overflow, tf.logical_not(complex_result))))
