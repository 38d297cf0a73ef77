"""NumPy array arguments: fed to the graph as tensors, kept NumPy's where Python sees them.

A NumPy array argument is a graph input (one graph for every batch).  Inside
the builder it is a `PyArray`: TensorFlow ops convert it as eager converts an
array (to the other tensor's dtype in arithmetic with a tensor); arithmetic
with Python numbers and other arrays follows NumPy's result dtypes (NumPy 2:
a Python number is "weak", so `np.float32(u) < 0.3` compares in float32);
basic indexing (ints, fed or computed Python ints, integer scalar tensors,
constant slices, `None`, `...`) is a strided slice, whose index out of range
fails the run, so the call runs in Python and raises eager's `IndexError`;
`len()` is the first dimension; `tf.constant` of it is its tensor.  A result
NumPy gives as a scalar (`a[1]`, arithmetic on 0-d values) is a 0-d
`PyArray` marked `scalar`, handed back as that NumPy scalar.  Results,
writes and prints come back as NumPy values.  Anything else NumPy would do
with it (fancy indexing, methods, `np.*` functions, text) is NumPy's own
code: the statement runs in Python (`numpy-array`), saying so.
"""
from __future__ import annotations

import operator as _op

import numpy as np
import tensorflow as tf

from codegen.errors import ConversionError, Reason
from codegen.operators.context import current
from codegen.operators.exact_arith import float_divmod
from codegen.operators.numbers import PyNumber, exact_constant
from codegen.operators.shapes import guarded
from codegen.operators.weak_numbers import WeakNumber


def _numpy_code(what: str):
    """Stop the build: `what` needs NumPy to run.  Where a NumPy scalar argument is fed as a tensor,
    the build is redone with such arguments as the constants they are (as for a Python number
    whose value Python needs); otherwise the function runs in Python."""
    ctx = current()
    if ctx.numpy_scalars_fed:
        ctx.fail("python-number", f"{what} of a NumPy number argument that varies between calls, or of an array "
                 "(NumPy's own code)", "janus specialises on the number's value instead")
    raise ConversionError(Reason("numpy-array", ctx.user_line(), f"{what} of a NumPy array argument is NumPy's "
                                 "own code, which a graph cannot run",
                                 "convert the array with tf.convert_to_tensor first, or pass a tensor"))


class PyArray:
    """`scalar`: the value is a NumPy scalar (`np.float32`), not a 0-d array."""

    __slots__ = ("tensor", "scalar")
    numpy_rules = True          # a tree number leaves arithmetic with it to it (NumPy's result types)

    def __init__(self, tensor, scalar: bool = False):
        self.tensor = tensor
        self.scalar = scalar

    def __tf_tensor__(self, dtype=None, name=None):
        if dtype is None or tf.as_dtype(dtype) == self.tensor.dtype:
            return self.tensor
        return tf.cast(self.tensor, dtype)

    def _numpy_value(self, *_):
        _numpy_code("using the value")

    __bool__ = __index__ = __int__ = __float__ = __str__ = __repr__ = __format__ = __hash__ = _numpy_value
    __iter__ = __array__ = _numpy_value

    def _in_place(self, *_):
        _numpy_code("changing the array in place")    # (eager changes the caller's or library's array)

    __setitem__ = __delitem__ = __iand__ = __ior__ = __ixor__ = __ilshift__ = __irshift__ = __imatmul__ = _in_place

    def __len__(self):
        if not self.tensor.shape.rank:
            _numpy_code("`len()` of an array without dimensions")
        return guarded(self.tensor.shape)[0]

    def __getitem__(self, spec):
        return index(self, spec)

    def constant(self, dtype=None, shape=None, name=None):
        """`tf.constant(array)`: a tensor of the array's dtype (a new tensor, never the fed
        argument itself, which janus would hand back as the caller's array)."""
        if shape is not None or (dtype is not None and tf.as_dtype(dtype) != self.tensor.dtype):
            _numpy_code("`tf.constant` with a shape or another dtype")
        return tf.identity(self.tensor, name=name)

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
        if name == "shape":                     # NumPy's tuple of ints, not a `TensorShape` (which
            return tuple(guarded(self.tensor.shape))    # compares equal to a list, where a tuple does not)
        if name in ("ndim", "dtype"):
            return getattr(self, name)
        _numpy_code(f"`.{name}`")

    def __neg__(self):
        return _result(-self.tensor)

    def __abs__(self):
        return _result(tf.abs(self.tensor))



class NodeArray(PyArray):
    """A NumPy array attribute read from a tree node.  Computing with it is as with any array;
    handed back (returned or stored) it would be a copy where eager hands back the node's own
    array object, so that makes the function run in Python."""

    __slots__ = ()


def as_numpy(array):
    """How a graph output that stood for `array` becomes eager's value after the run."""
    return _numpy_scalar if array.scalar else np.asarray


def _numpy_scalar(value):
    return np.asarray(value)[()]


def _result(tensor):
    """A NumPy operation's result: NumPy gives a scalar where the result has no dimensions."""
    return PyArray(tensor, scalar=tensor.shape.rank == 0)


def index(array, spec):
    """`array[spec]` by NumPy's basic indexing, as a strided slice of the array's tensor."""
    parts = spec if type(spec) is tuple else (spec,)
    if array.tensor.shape.rank is None:
        _numpy_code("indexing an array of unknown rank")
    parts = tuple(_index_part(p) for p in parts)
    consumed = [p for p in parts if p is not None and p is not Ellipsis]
    ellipses = sum(p is Ellipsis for p in parts)           # (by identity: `in` would compare tensors)
    if len(consumed) > array.tensor.shape.rank or ellipses > 1:
        _numpy_code("indexing with more indices than dimensions")       # NumPy raises IndexError
    if not ellipses:
        parts = _out_of_range_at_run_time(array.tensor.shape, parts)
    result = array.tensor[parts if type(spec) is tuple else parts[0]]
    return PyArray(result, scalar=result.shape.rank == 0 and not ellipses)


def _index_part(part):
    """One item of a basic index as TensorFlow's slicing takes it; anything NumPy would read
    otherwise (bools, lists, arrays, floats) stops the build."""
    if part is None or part is Ellipsis:
        return part
    if isinstance(part, (int, np.integer)) and not isinstance(part, (bool, np.bool_)):
        return int(part)
    if isinstance(part, PyNumber) and part.ptype is int:
        return part.tensor
    if isinstance(part, PyArray) and part.tensor.shape.rank == 0 and part.tensor.dtype.is_integer:
        return part.tensor
    if isinstance(part, tf.Tensor) and part.shape.rank == 0 and part.dtype.is_integer:
        return part
    if type(part) is slice and all(b is None or (isinstance(b, (int, np.integer)) and not isinstance(b, (bool, np.bool_)))
                                   for b in (part.start, part.stop, part.step)) and part.step != 0:
        return slice(*(None if b is None else int(b) for b in (part.start, part.stop, part.step)))
    _numpy_code(f"indexing with {type(part).__name__}")


def _out_of_range_at_run_time(shape, parts):
    """A constant index out of range of a known dimension (NumPy raises `IndexError`) is fed as
    a tensor, so that the slice fails when the graph runs, not when it is built: janus then
    runs the call in Python, which raises eager's error."""
    axis, out = 0, []
    for p in parts:
        if p is not None:
            n = shape[axis]
            if type(p) is int and n is not None and not -n <= p < n:
                p = tf.raw_ops.PlaceholderWithDefault(input=tf.constant(p, tf.int64), shape=[])
            axis += 1
        out.append(p)
    return tuple(out)


def _dtype_of(value):
    """What NumPy's promotion sees: an array's dtype, or a Python number as itself (weak)."""
    if isinstance(value, PyArray):
        return np.dtype(value.tensor.dtype.as_numpy_dtype)
    if isinstance(value, PyNumber):
        return value.ptype(0)
    if isinstance(value, WeakNumber):            # a tree node's number: Python's (weak) or NumPy's
        if value.ptype is None:
            _numpy_code("arithmetic with a tree attribute whose Python type varies by node")
        return value.ptype(0) if value.ptype in (int, float, bool) else np.dtype(value.ptype)
    if type(value) in (int, float, bool):
        return value
    if isinstance(value, np.generic) and value.dtype.kind in "biuf":
        return value.dtype                       # a NumPy scalar constant: its own type (not weak)
    return None


def _as(value, dtype):
    if not isinstance(value, (PyArray, PyNumber, WeakNumber)):
        return exact_constant(value, dtype)
    return value.tensor if value.tensor.dtype == dtype else tf.cast(value.tensor, dtype)


_ARITH = {"add": _op.add, "sub": _op.sub, "mul": _op.mul, "truediv": _op.truediv, "pow": _op.pow,
          "floordiv": tf.math.floordiv, "mod": tf.math.floormod}
_COMPARE = {"lt": _op.lt, "le": _op.le, "gt": _op.gt, "ge": _op.ge, "eq": tf.equal, "ne": tf.not_equal}


def _python_int(value) -> bool:
    return type(value) in (int, bool) or (isinstance(value, (PyNumber, WeakNumber)) and value.ptype in (int, bool))


def _may_not_fit(value, dtype) -> bool:
    """A Python int that lies, or if it varies may lie, outside `dtype` (fed ints are below
    2**31; a computed one may be any int64)."""
    if type(value) is int:
        return not np.iinfo(dtype).min <= value <= np.iinfo(dtype).max
    if isinstance(value, WeakNumber) and value.ptype is int:
        return dtype.kind == "u" or dtype.itemsize < value.tensor.dtype.size
    if not (isinstance(value, PyNumber) and value.ptype is int):
        return False
    return dtype.kind == "u" or dtype.itemsize < 4 or (value.computed and dtype.itemsize < 8)


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
        if name in ("floordiv", "mod") and (result.kind in "iub" or result == np.float16):
            # NumPy gives 0 for a zero divisor, TensorFlow fails; TensorFlow has no float16 fmod
            _numpy_code(f"integer or float16 `{name}`")
        if name in _COMPARE and result.kind in "iu" and result != np.uint64 and (_python_int(a) or _python_int(b)):
            result = np.dtype(np.int64)     # NumPy 2 compares with a Python int exactly, even outside the dtype
        elif result.kind in "iu" and any(_may_not_fit(v, result) for v in (a, b)):
            _numpy_code("integer arithmetic with a Python int outside the array's dtype")   # NumPy raises
        dtype = tf.as_dtype(result)
        x, y = _as(a, dtype), _as(b, dtype)
        if name == "truediv" and not isinstance(b, PyArray) and _dtype_of(b) != 0 and result.kind in "fc":
            # A constant divisor: the graph optimiser would multiply by its reciprocal instead of
            # dividing as NumPy does; it is not zero, so divide_no_nan divides exactly.
            return _result(tf.math.divide_no_nan(x, y))
        if name in ("floordiv", "mod") and result.kind == "f":
            # NumPy's divmod is Python's (from fmod); a zero divisor gives x / y and fmod's NaN
            quotient, remainder = float_divmod(x, y)
            if name == "mod":
                return _result(remainder)
            return _result(tf.where(tf.equal(y, tf.zeros_like(y)), x / y, quotient))
        return _result(op(x, y))
    return method


def _augmented(name):
    """`a += b`: a NumPy scalar is immutable, so Python rebinds `a` to `a + b`; an array changes
    in place, which the caller or the library that holds it would see."""
    def method(self, other):
        if not self.scalar:
            self._in_place()
        return getattr(self, f"__{name}__")(other)
    return method


for _name, _fn in _ARITH.items():
    setattr(PyArray, f"__{_name}__", _binary(_name, _fn))
    setattr(PyArray, f"__r{_name}__", _binary(_name, _fn, reverse=True))
    setattr(PyArray, f"__i{_name}__", _augmented(_name))
for _name, _fn in _COMPARE.items():
    setattr(PyArray, f"__{_name}__", _binary(_name, _fn))
del _name, _fn
