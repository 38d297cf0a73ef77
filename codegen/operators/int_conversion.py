"""Python ints past 64 bits given to an integer tensor: eager raises, a graph wraps them.

Eager converts a Python int for an integer dtype through a C path that refuses any value
outside int64 (`ValueError: Can't convert Python sequence with out-of-range integer to
Tensor.`, also for int32, where values inside int64 wrap); a graph's constant goes through
NumPy and keeps the low bits of an int in [2**63, 2**64) (`3 * 2**62 - n` is `-n` there).
A conversion function registered ahead of TensorFlow's own for `int` raises eager's error
while a janus build runs on this thread, for a value outside int64 converted to an integer
dtype other than uint64 (which eager takes up to 2**64 - 1) or with no dtype (`tf.cast(n, ...)`,
an int tensor plus it); everywhere else it steps aside.  `tf.constant(n, ...)` makes its constant
without the registry: its call is checked the same way (`weak_numbers.conversion`).
The build then fails where eager raised, and the call runs in Python.
"""
from __future__ import annotations

import tensorflow as tf
from tensorflow.python.framework import tensor_conversion_registry as _registry

from codegen.operators.context import active

_INT64 = (-2 ** 63, 2 ** 63)


def _convert(value, dtype=None, name=None, as_ref=False):
    if type(value) is int and active() is not None and not tf.executing_eagerly():
        check_int_constant(value, dtype)
    return NotImplemented


def check_int_constant(value: int, dtype):
    """Raises eager's error for a Python int outside int64 made a tensor of `dtype` (None: the
    default) in a graph; `tf.constant` makes its constant without the registry, so its call
    checks here too."""
    if not _INT64[0] <= value < _INT64[1]:
        dtype = None if dtype is None else tf.as_dtype(dtype)
        if dtype is None or dtype.is_integer and dtype != tf.uint64:
            raise ValueError("Can't convert Python sequence with out-of-range integer to Tensor.")


_registry.register_tensor_conversion_function_internal(int, _convert, priority=-1)   # (constants: 0)
