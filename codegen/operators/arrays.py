"""NumPy array arguments: fed to the graph as tensors, kept NumPy's where Python sees them.

A NumPy array argument is a graph input (one graph for every batch).  Inside
the builder it is a `PyArray`: TensorFlow ops convert it as eager converts an
array (to the other tensor's dtype in arithmetic with a tensor); arithmetic
with Python numbers and other arrays follows NumPy's result dtypes; results,
writes and prints come back as `numpy.ndarray`s.  Anything else NumPy would
do with it (indexing, methods, `np.*` functions, text) is NumPy's own code:
the function runs in Python (`numpy-array`), saying so.
"""
from __future__ import annotations

import operator as _op

import numpy as np
import tensorflow as tf

from codegen.errors import ConversionError, Reason
from codegen.operators.context import current
from codegen.operators.numbers import PyNumber, exact_constant
from codegen.operators.shapes import guarded


def _numpy_code(what: str):
    ctx = current()
    raise ConversionError(Reason("numpy-array", ctx.user_line(), f"{what} of a NumPy array argument is NumPy's "
                                 "own code, which a graph cannot run",
                                 "convert the array with tf.convert_to_tensor first, or pass a tensor"))


class PyArray:
    __slots__ = ("tensor",)

    def __init__(self, tensor):
        self.tensor = tensor

    def __tf_tensor__(self, dtype=None, name=None):
        if dtype is None or tf.as_dtype(dtype) == self.tensor.dtype:
            return self.tensor
        return tf.cast(self.tensor, dtype)

    def _numpy_value(self, *_):
        _numpy_code("using the value")

    __bool__ = __index__ = __int__ = __float__ = __str__ = __repr__ = __format__ = __hash__ = _numpy_value
    __iter__ = __len__ = __getitem__ = __array__ = _numpy_value

    def __getattr__(self, name):
        shape = self.tensor.shape
        if name == "shape":
            return guarded(shape)               # reads as the tuple of ints NumPy gives
        if name == "ndim" and shape.rank is not None:
            return shape.rank
        if name == "dtype":
            return np.dtype(self.tensor.dtype.as_numpy_dtype)
        raise AttributeError(name)              # probes by NumPy or TensorFlow find nothing

    def user_attribute(self, name):
        """`array.name` in the user's code: shape, ndim and dtype; the rest is NumPy's code."""
        if name in ("shape", "ndim", "dtype"):
            return getattr(self, name)
        _numpy_code(f"`.{name}`")

    def __neg__(self):
        return PyArray(-self.tensor)

    def __abs__(self):
        return PyArray(tf.abs(self.tensor))


def _dtype_of(value):
    """What NumPy's promotion sees: an array's dtype, or a Python number as itself (weak)."""
    if isinstance(value, PyArray):
        return np.dtype(value.tensor.dtype.as_numpy_dtype)
    if isinstance(value, PyNumber):
        return value.ptype(0)
    if type(value) in (int, float, bool):
        return value
    return None


def _as(value, dtype):
    if not isinstance(value, (PyArray, PyNumber)):
        return exact_constant(value, dtype)
    return value.tensor if value.tensor.dtype == dtype else tf.cast(value.tensor, dtype)


_ARITH = {"add": _op.add, "sub": _op.sub, "mul": _op.mul, "truediv": _op.truediv, "pow": _op.pow,
          "floordiv": tf.math.floordiv, "mod": tf.math.floormod}
_COMPARE = {"lt": _op.lt, "le": _op.le, "gt": _op.gt, "ge": _op.ge, "eq": tf.equal, "ne": tf.not_equal}


def _binary(name, op, reverse=False):
    def method(self, other):
        if isinstance(other, (tf.Tensor, tf.Variable)):
            mine = tf.cast(self.tensor, other.dtype)       # eager converts the array to the tensor's dtype
            return op(other, mine) if reverse else op(mine, other)
        theirs = _dtype_of(other)
        if theirs is None:
            return NotImplemented
        a, b = (other, self) if reverse else (self, other)
        result = np.result_type(_dtype_of(a), _dtype_of(b))
        if name == "truediv" and result.kind in "iub":
            result = np.result_type(result, np.float64)
        if name in ("floordiv", "mod") and result.kind in "iub":
            _numpy_code(f"integer `{name}`")          # NumPy gives 0 for a zero divisor, TensorFlow fails
        dtype = tf.as_dtype(result)
        x, y = _as(a, dtype), _as(b, dtype)
        if name == "truediv" and not isinstance(b, PyArray) and _dtype_of(b) != 0 and result.kind in "fc":
            # A constant divisor: the graph optimiser would multiply by its reciprocal instead of
            # dividing as NumPy does; it is not zero, so divide_no_nan divides exactly.
            return PyArray(tf.math.divide_no_nan(x, y))
        return PyArray(op(x, y))
    return method


for _name, _fn in _ARITH.items():
    setattr(PyArray, f"__{_name}__", _binary(_name, _fn))
    setattr(PyArray, f"__r{_name}__", _binary(_name, _fn, reverse=True))
for _name, _fn in _COMPARE.items():
    setattr(PyArray, f"__{_name}__", _binary(_name, _fn))
del _name, _fn
