"""`tf.constant` and `tf.convert_to_tensor` of a list or tuple holding NumPy numbers: the dtype eager
gives it.

Eager converts a nested sequence by its own C path, whose dtype follows the items in order
(`[np.float64(1), 2.0]` is float64, `[1.0, np.float64(2)]` float32, `[np.int64(1), 2]` int32);
a graph makes the same constant through NumPy and TensorFlow's defaults (float32 for the first).
When no dtype is given and the sequence holds a NumPy number, or a stand-in for one the graph
is fed, janus asks eager for the dtype of the same sequence with each graph value replaced by a
value of its kind (a fed NumPy or Python float by a zero of its type, a tensor by zeros of its
dtype and shape), and converts with that dtype.  Where eager's integer dtype would depend on a
fed int's value (int32, or int64 past 32 bits), the call runs in Python.  A sequence of numbers
Python holds gets eager's dtype too, and where eager's conversion raises (`[True, 2.5]` mixes
types, `[1e300]` is past float32 as eager reads it) the build raises eager's error, and the call
runs in Python, which raises it.  (A fed float past float32 in such a list is still made inf.)

Other ops convert a list argument through TensorFlow's conversion registry (`tf.stack([a, b])`,
`tf.reduce_sum([a, b])`): a conversion function registered ahead of TensorFlow's own for lists
and tuples gives a sequence of Python and NumPy numbers eager's dtype while a janus build runs
on this thread (by then a fed number is a plain tensor: such lists keep the graph's rules).
"""
from __future__ import annotations

import numpy as np
import tensorflow as tf
from tensorflow.python.framework import tensor_conversion_registry as _registry

from codegen.operators.arrays import PyArray
from codegen.operators.context import active, current
from codegen.operators.numbers import PyNumber
from codegen.operators.values import is_symbolic
from codegen.operators.weak_numbers import WeakNumber

_NAMES = {tf.constant: ("value", "dtype", "shape", "name"),
          tf.convert_to_tensor: ("value", "dtype", "dtype_hint", "name")}


class _Unknown(Exception):
    """A value whose eager conversion the proxy cannot stand for."""


def with_eager_dtype(f, args: tuple, kwargs: dict) -> dict:
    """`kwargs`, with eager's dtype added when `f(*args, **kwargs)` converts, without one, a sequence
    of numbers Python holds or one holding NumPy numbers; raises eager's error where eager's
    conversion of it raises (mixed bools and numbers, a float past float64, an int past int64)."""
    names = _NAMES[f]
    if not args or len(args) > 1 or set(kwargs) - set(names[1:]) or kwargs.get("dtype") is not None \
            or kwargs.get("dtype_hint") is not None:
        return kwargs
    value = args[0]
    if type(value) not in (list, tuple) or not (_holds_numpy(value, 0) or _constants(value, 0)):
        return kwargs
    fed_ints: list = []
    try:
        proxy = _proxy(value, fed_ints, 0)
    except _Unknown:
        return kwargs
    dtype = _eager_dtype(proxy)
    if dtype.is_integer and fed_ints:
        current().fail("held-number", f"{f.__name__} of a sequence holding NumPy numbers and a fed int: eager's "
                       "dtype (int32 or int64) depends on the int's value", "give the dtype")
    return {**kwargs, "dtype": dtype}


def _eager_dtype(value):
    """The dtype eager gives `value`; eager's error where it raises (the build then fails, and the
    call runs in Python, which raises it)."""
    with tf.init_scope():
        return tf.constant(value).dtype


def _holds_numpy(value, depth) -> bool:
    if depth > 32:
        return False
    if type(value) in (list, tuple):
        return any(_holds_numpy(v, depth + 1) for v in value)
    return isinstance(value, (np.generic, np.ndarray)) or (isinstance(value, PyArray) and value.scalar) or (
        isinstance(value, WeakNumber) and isinstance(value.ptype, type) and issubclass(value.ptype, np.generic))


def _proxy(value, fed_ints: list, depth):
    """`value` with each graph value replaced by an eager value eager converts alike."""
    if depth > 32:
        raise _Unknown
    if type(value) in (list, tuple):
        return type(value)(_proxy(v, fed_ints, depth + 1) for v in value)
    if type(value) in (bool, int, float) or isinstance(value, (np.generic, np.ndarray)):
        return value
    if isinstance(value, PyArray) and value.scalar:
        return _zero(value.tensor.dtype.as_numpy_dtype, fed_ints)
    if isinstance(value, (PyNumber, WeakNumber)) and value.ptype is not None:
        return _zero(value.ptype, fed_ints)
    if isinstance(value, tf.Tensor) and is_symbolic(value) and value.shape.is_fully_defined():
        with tf.init_scope():
            return tf.zeros(value.shape, value.dtype)
    raise _Unknown


def _zero(kind, fed_ints: list):
    if kind is bool or kind is np.bool_:
        return kind(False)
    if issubclass(kind, (int, np.integer)):
        fed_ints.append(kind)
    return kind(0)


def _convert(value, dtype=None, name=None, as_ref=False):
    """A list or tuple of Python and NumPy numbers, holding a NumPy one, converted with no dtype
    during a janus build: with eager's dtype (TensorFlow's own conversion then makes it)."""
    if active() is None or tf.executing_eagerly() or not _holds_numpy(value, 0) or not _constants(value, 0):
        return NotImplemented
    if dtype is not None:
        with tf.init_scope():
            tf.constant(value, dtype)       # (eager's error, where it raises: mixed bools and numbers)
        return NotImplemented
    return tf.constant(value, _eager_dtype(value), name=name)


def _constants(value, depth) -> bool:
    if depth > 32:
        return False
    if type(value) in (list, tuple):
        return all(_constants(v, depth + 1) for v in value)
    return type(value) in (bool, int, float) or isinstance(value, (np.generic, np.ndarray))


_registry.register_tensor_conversion_function_internal((list, tuple), _convert, priority=-1)
