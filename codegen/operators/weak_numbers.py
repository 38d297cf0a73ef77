"""`WeakNumber`: a number read from a tree node's column inside the graph.

Like the Python (or NumPy) number each node holds, it takes the other
operand's dtype in arithmetic with a tensor, and stays a number of its kind
with other numbers, so what leaves the graph is what eager computes.
"""
from __future__ import annotations

import operator as _op
import sys

import numpy as np
import tensorflow as tf

from codegen.assumptions import NUMPY_SCALARS
from codegen.errors import Reason, StagingError
from codegen.operators.context import current
from codegen.operators.exact_arith import SWAPPED, float_divmod, int_float_compare
from codegen.operators.int_conversion import check_int_constant
from codegen.operators.int_range import guarded, noted
from codegen.operators.numbers import PyNumber, one_at_a_time

_WEAK = (int, float, bool)        # plus WeakNumber itself: operands that keep a result a Python number
_NUMPY_DTYPES = (np.float16, np.float32, np.float64, np.int32, np.int64)


def bool_number(condition):
    """The Python bool a boolean tensor computes (a test on tree nodes or their numbers): held as an
    int, as `True + 1` is 2; a branch on it tests `condition` itself."""
    return WeakNumber(tf.cast(condition, tf.int32), bool, condition=condition)


def numpy_bool(condition):
    """The `np.bool_` a NumPy comparison gives (`node.w < s` of NumPy numbers): held as the boolean
    tensor itself; it computes as NumPy's bool does and comes back as one."""
    return WeakNumber(condition, np.bool_, condition=condition)


class WeakNumber:
    """A number column read from a tree node: an int or float tensor that, like the
    Python number it stands for, takes the other operand's dtype in arithmetic
    (`loss / node.size` divides a float tensor by an int attribute, as eager does)."""

    __slots__ = ("tensor", "ptype", "either", "condition")
    __array_ufunc__ = None      # `np.float32(0.1) * w` comes to `__rmul__` with the NumPy scalar itself

    def __init__(self, tensor, ptype=None, either=False, condition=None):
        self.tensor = tensor
        self.condition = condition      # a bool's truth as the boolean tensor it was computed as
        self.ptype = ptype      # int / float (or np.float32 / np.int32) when every node holds that type
        self.either = either    # (ptype None) a Python int on some nodes and a float on others
        if (tensor.dtype.is_integer and ptype in (int, bool, None)
                or tensor.dtype.is_floating and ptype in (float, None)):
            noted(tensor)       # inside a machine block, its ops with the frame's numbers are checked too

    def __tf_tensor__(self, dtype=None, name=None):
        """The tensor TensorFlow makes of the number each node holds: `dtype` when given, else
        float32 for a Python float, bool for a bool, int32 for a Python int (eager's defaults).  A
        Python float does not convert to an int dtype (`tf.constant([2]) * 7.7` raises in eager)."""
        if dtype is None:
            dtype = self._default_dtype()
        dtype = tf.as_dtype(dtype)
        if (dtype.is_integer or dtype == tf.bool) and (self.ptype is float or self.either):
            current().fail("held-number", f"a Python float meets a tensor of {dtype.name}, which eager refuses",
                           "the call runs in Python, which raises as eager does")
        if dtype != self.tensor.dtype:
            return tf.cast(self.tensor, dtype)
        return self.tensor

    def converted(self, dtype, hint=False):
        """`tf.constant(number, dtype)` as eager computes it: exact for a float to float32 or float64,
        an int to an int dtype that holds its column or to a float, a bool to bool; any other
        pair (eager raises, or rounds in its own way) makes the function run in Python.  `hint`:
        `tf.convert_to_tensor`'s `dtype_hint`, which eager drops for a float with an int dtype and
        an int with bool (the default dtype then)."""
        dtype = tf.as_dtype(dtype)
        held = self.tensor.dtype
        ok = (dtype in (tf.float32, tf.float64) and self.ptype in (float, np.float32, np.float64, int, np.int32)
              or dtype.is_integer and held.is_integer and self.ptype is not bool and dtype.size >= held.size
              or dtype == tf.bool and self.ptype in (bool, np.bool_))
        if not ok and hint and (dtype.is_integer and self.ptype is float or dtype == tf.bool and self.ptype is int):
            return tf.identity(self.__tf_tensor__())
        if not ok:
            current().fail("held-number", f"a tree attribute converted to {dtype.name}, which eager refuses or "
                           "rounds in its own way", "the function runs in Python")
        return tf.identity(self.__tf_tensor__(dtype))

    def _default_dtype(self):
        if self.ptype in (bool, np.bool_):
            return tf.bool
        if self.ptype is float:
            return tf.float32
        if self.ptype is int and self.tensor.dtype == tf.int32 or self.ptype in _NUMPY_DTYPES:
            return self.tensor.dtype
        # Python ints past int32 on some nodes (int64 there, int32 elsewhere), or ints on some
        # nodes and floats on others: eager's tensor has a dtype that differs between nodes.  A
        # TypeError, so that `tensor + number` (whose dtype hint TensorFlow does not pass on)
        # tries the number's `__radd__`, which takes the tensor's dtype as eager's hint does.
        ctx = current()
        raise VaryingDtype(Reason("python-number", ctx.user_line() if ctx.frames else "", "a tree attribute "
                                  "converted to a tensor on its own has a dtype that differs between nodes in eager "
                                  "(its Python type or range varies)", "the function runs in Python"))

    def _other(self, other):
        if isinstance(other, WeakNumber):
            a, b = self.tensor, other.tensor
            if a.dtype != b.dtype:                 # int and float attributes: both as the float;
                # two ints or two floats: both as the wider (an np.int64 and a Python int)
                wide = max(a.dtype, b.dtype, key=lambda d: (d.is_floating, d.size))
                a, b = tf.cast(a, wide), tf.cast(b, wide)
            return a, b
        if isinstance(other, (tf.Tensor, tf.Variable)):
            if other.dtype.is_integer and (self.ptype is float or self.either):
                # eager's Python float does not convert to an int tensor's dtype: the op raises
                current().fail("held-number", "a Python float tree attribute with an int tensor, which eager "
                               "refuses", "the function runs in Python, which raises as eager does")
            return tf.cast(self.tensor, other.dtype), other
        if type(other) is float and not self.tensor.dtype.is_floating:
            return tf.cast(self.tensor, tf.float64), other     # int attribute and a float: Python's float
        if type(other) is int and self.tensor.dtype.is_integer and not (
                self.tensor.dtype.min <= other <= self.tensor.dtype.max):
            # TensorFlow would wrap the literal to the tensor's dtype; Python's int is exact.
            if not tf.int64.min <= other <= tf.int64.max:
                current().fail("held-number", f"the int {other} does not fit 64 bits", "the function runs in Python")
            return tf.cast(self.tensor, tf.int64), tf.constant(other, tf.int64)
        return self.tensor, other

    def _binary(op, result=None, reverse=False):
        def method(self, other):
            if getattr(type(other), "numpy_rules", False):
                return NotImplemented              # a NumPy array's operator computes by NumPy's rules
            if isinstance(other, (list, tuple, str, bytes)):   # `[h] * k` repeats by the int's value
                current().fail("held-number", f"a {type(other).__name__} meets a Python number held in the graph "
                               "(repeated by it, or added to it)", "repeat it by a number Python holds")
            if isinstance(other, PyNumber) and self.ptype in _WEAK:
                # Two Python numbers, one fed: Python's arithmetic with its guards (`PyNumber`).
                mine = PyNumber(self.tensor, self.ptype)
                return op(other, mine) if reverse else op(mine, other)
            if (_numpy_type(self) or _numpy_type(other)) and (
                    isinstance(other, (WeakNumber, PyNumber, np.generic)) or type(other) in _WEAK):
                return _numpy_binary(op, result, self, other, reverse)
            if result is None:
                exact = _int_float_compare(op, self, other)
                if exact is not None:
                    return exact
            a, b = self._other(other)
            if op is _op.pow and (isinstance(other, WeakNumber) or type(other) in _WEAK) and (
                    a.dtype.is_floating or type(b) is float):
                one_at_a_time()                    # (a vectorised pow is not Python's)
            out = op(b, a) if reverse else op(a, b)
            if isinstance(other, (tf.Tensor, tf.Variable)) or not (
                    isinstance(other, WeakNumber) or type(other) in _WEAK):
                return out                         # a tensor's dtype won
            if result is None:                     # a comparison: of two Python numbers, a Python
                python = None not in (self.ptype, _type(other))        # bool (held as an int)
                return bool_number(out) if python else out
            out, divisor = _pythons(op, a, b, reverse, out)
            if self.ptype is None or isinstance(other, WeakNumber) and other.ptype is None:
                return _varying(guarded(out, divisor), result, self, other)     # (a type that varies by node)
            return WeakNumber(guarded(out, divisor), result({self.ptype, _type(other)}))
        return method

    _arith = lambda kinds: float if float in kinds else int     # noqa: E731
    __add__, __radd__ = _binary(_op.add, _arith), _binary(_op.add, _arith, True)
    __sub__, __rsub__ = _binary(_op.sub, _arith), _binary(_op.sub, _arith, True)
    __mul__, __rmul__ = _binary(_op.mul, _arith), _binary(_op.mul, _arith, True)
    __truediv__, __rtruediv__ = _binary(_op.truediv, lambda _: float), _binary(_op.truediv, lambda _: float, True)
    __floordiv__, __rfloordiv__ = _binary(_op.floordiv, _arith), _binary(_op.floordiv, _arith, True)
    __mod__, __rmod__ = _binary(_op.mod, _arith), _binary(_op.mod, _arith, True)
    # An int to a negative int power is a float in Python and an error for TensorFlow's ints: that
    # run fails, and the call runs in Python.
    __pow__, __rpow__ = _binary(_op.pow, _arith), _binary(_op.pow, _arith, True)
    __lt__, __le__, __gt__, __ge__ = _binary(_op.lt), _binary(_op.le), _binary(_op.gt), _binary(_op.ge)
    __eq__, __ne__ = _binary(_op.eq), _binary(_op.ne)
    del _binary, _arith

    def __neg__(self):
        return self._unary(_op.neg)

    def __abs__(self):
        return self._unary(tf.abs)

    def __invert__(self):
        """`~n` of a Python int or bool is `-n - 1`, an int (the bits of an int32 are exact there);
        `~` of an `np.bool_` is its negation; Python raises for a float, and so does the call, run
        in Python."""
        if self.ptype is np.bool_:
            return numpy_bool(tf.logical_not(self.condition))
        if self.ptype not in (int, bool) or not self.tensor.dtype.is_integer:
            current().fail("held-number", "`~` of a Python float raises in eager", "the function runs in Python")
        return WeakNumber(tf.bitwise.invert(self.tensor), int)

    def __divmod__(self, other):
        return self // other, self % other         # Python's divmod of ints and floats is exactly these

    def __rdivmod__(self, other):
        return other // self, other % self

    def __round__(self, ndigits=None):
        """`round(n)`: an int, halves to even (as `tf.round`); a float past int64, nan or inf makes
        Python raise, and the call then runs in Python."""
        if ndigits is not None or self.ptype not in (int, bool, float):
            current().fail("held-number", "`round` with digits, or of a number whose Python type varies by node",
                           "round a tensor with tf.round")
        if self.ptype is not float:
            return WeakNumber(tf.cast(self.tensor, tf.int32) if self.ptype is bool else self.tensor, int)
        return WeakNumber(guarded(tf.cast(tf.round(self.tensor), tf.int64)), int)

    def _logical(op):
        """`a & b`, `a | b`, `a ^ b` of an `np.bool_` with another (or a Python bool): an `np.bool_`;
        with a boolean tensor: the tensor's op; of other numbers: the call runs in Python."""
        def method(self, other):
            if isinstance(other, (tf.Tensor, tf.Variable)) and other.dtype == tf.bool and self.ptype is np.bool_:
                return op(self.condition, other)
            kinds = {_type(v) for v in (self, other)}
            if self.ptype is not np.bool_ or not kinds <= {np.bool_, bool}:
                current().fail("held-number", "a bitwise operator on a number held in the graph (other than "
                               "two NumPy bools)", "the function runs in Python")
            truth = other.condition if isinstance(other, WeakNumber) and other.condition is not None else (
                tf.constant(bool(other)) if isinstance(other, (bool, np.bool_)) else tf.cast(other.tensor, tf.bool))
            return numpy_bool(op(self.condition, truth))
        return method

    __and__ = __rand__ = _logical(tf.logical_and)
    __or__ = __ror__ = _logical(tf.logical_or)
    __xor__ = __rxor__ = _logical(tf.math.logical_xor)
    del _logical

    def _unary(self, fn):
        if self.ptype is np.bool_:          # NumPy refuses `-` of a bool; `abs` keeps it (both rare)
            current().fail("held-number", "`-` or `abs` of a NumPy bool", "the function runs in Python")
        out = fn(self.tensor)
        python_int = self.ptype in (int, bool, None)       # -(2**31) leaves int32; Python's does not
        ptype = int if self.ptype is bool else self.ptype   # (-True and abs(True) are ints)
        return WeakNumber(guarded(out) if python_int else out, ptype, self.either)

    def __bool__(self):
        return bool(self.tensor)

    def _text(self, *_):
        if _in_constant():
            current().fail("held-number", "a Python number computed inside the graph is used where TensorFlow "
                           "needs a constant while the graph is built: an index or slice bound of a tensor "
                           "(`x[i]`), or an item of a list TensorFlow converts (`tf.constant([n])`)",
                           "the function runs in Python")
        current().fail("held-number", "the text of a Python number computed inside the graph (`str`, "
                       "`repr`, an f-string) is needed while the graph is built", "the function runs in Python")

    __str__ = __repr__ = __format__ = _text

    __hash__ = None

    @property
    def dtype(self):
        return self.tensor.dtype

    @property
    def shape(self):
        return self.tensor.shape


def _int_float_compare(op, a, b):
    """`a <op> b` of an int and a float, one held in the graph, as Python compares them: exactly
    (the int cast to float64 is not exact past 2**53); None for any other pair."""
    def kind(v):
        if isinstance(v, WeakNumber):
            return "i" if v.ptype in (int, bool) and v.tensor.dtype.is_integer else "f" if v.ptype is float else None
        return "i" if type(v) in (int, bool) and -2 ** 63 <= v < 2 ** 63 else "f" if type(v) is float else None
    kinds = kind(a) + kind(b) if kind(a) and kind(b) else ""
    if kinds not in ("if", "fi"):
        return None
    i, f = (a, b) if kinds == "if" else (b, a)
    i = tf.cast(i.tensor, tf.int64) if isinstance(i, WeakNumber) else tf.constant(i, tf.int64)
    f = tf.cast(f.tensor, tf.float64) if isinstance(f, WeakNumber) else tf.constant(f, tf.float64)
    return bool_number(int_float_compare(op.__name__ if kinds == "if" else SWAPPED[op.__name__], i, f))


def held_minmax(py, a, b):
    """`max(a, b)` / `min(a, b)` of Python numbers held in the graph (a recursion's frame ints,
    a node's numbers): the first unless the second is greater (less), of their one Python type."""
    if not isinstance(a, WeakNumber) and not isinstance(b, WeakNumber):
        return py(a, b)
    kinds = {x.ptype if isinstance(x, WeakNumber) else type(x) for x in (a, b)}
    if len(kinds) != 1 or not kinds <= {int, float}:
        if not all(isinstance(x, WeakNumber) or type(x) in (int, float, bool) for x in (a, b)):
            return py(a, b)
        current().fail("held-number", f"`{py.__name__}` of Python numbers held in the graph that are not all ints "
                       "or all floats (an int and a float, bools): the result's type depends on which one wins",
                       "convert them to one type first")
    kind = kinds.pop()
    dtypes = [x.tensor.dtype for x in (a, b) if isinstance(x, WeakNumber)]
    wide = max(dtypes, key=lambda d: d.size)
    if any(type(x) is int and not wide.min <= x <= wide.max for x in (a, b)):
        wide = tf.int64
    x, y = (tf.cast(v.tensor, wide) if isinstance(v, WeakNumber) else tf.constant(v, wide) for v in (a, b))
    return WeakNumber(tf.where(y > x if py is max else y < x, y, x), kind)


def _type(v):
    return v.ptype if isinstance(v, (WeakNumber, PyNumber)) else type(v)


def numpy_scalar_type(kind) -> bool:
    """Whether `kind` is a NumPy scalar type the graph computes as NumPy does (a table's, or bool)."""
    return kind in NUMPY_SCALARS


def _numpy_type(v):
    """The NumPy scalar type `v` is (a NumPy scalar, or a node's NumPy attribute), else None."""
    kind = _type(v)
    return kind if isinstance(kind, type) and issubclass(kind, np.generic) else None


def _numpy_binary(op, result, a, b, reverse):
    """`a op b` where one is a NumPy scalar (a node's attribute, or a constant) and the other a
    number: NumPy computes in the type its rules give, a Python number taking the NumPy one's
    type first (`np.float32(w) * 0.1` rounds 0.1 to float32, then multiplies in float32).  A number
    whose type varies by node, a float `//` or `%` (NumPy's, not TensorFlow's floor of the
    quotient), an int NumPy refuses and a float64 held in the graph rounded to float16 (TensorFlow
    rounds it through float32, twice) run in Python."""
    operands = (b, a) if reverse else (a, b)
    dtype, kind = _numpy_dtypes(op, result, operands)
    held = (WeakNumber, PyNumber)
    if dtype not in _TABLE_NUMPY or op in (_op.floordiv, _op.mod) and np.dtype(dtype).kind == "f" or any(
            isinstance(v, held) and not _numpy_type(v) and v.tensor.dtype.is_integer
            and v.tensor.dtype.size > tf.as_dtype(dtype).size
            or isinstance(v, held) and dtype is np.float16 and v.tensor.dtype == tf.float64 for v in operands):
        current().fail("held-number", "arithmetic of a NumPy number that the graph does not compute as NumPy "
                       "does (with a number whose type varies by node, a float `//` or `%`, a type the graph does "
                       "not hold, a Python int that may be past the NumPy type's range, a float64 rounded to "
                       "float16)", "the function runs in Python")
    if op is _op.pow and np.dtype(dtype).kind == "f":
        one_at_a_time()
    with np.errstate(all="ignore"):        # (a float past float16's range is inf there too)
        x, y = [tf.cast(v.tensor, dtype) if isinstance(v, held) else tf.constant(np.asarray(v, dtype))
                for v in operands]
    return numpy_bool(op(x, y)) if result is None else WeakNumber(op(x, y), kind)


def _numpy_dtypes(op, result, operands):
    """(the NumPy type `op` computes in, the result's type) by NumPy's rules, from a sample of each
    operand's type (None where NumPy would raise, or a type varies by node).  NumPy compares an
    int with a Python int past the int's type exactly: in int64 here."""
    kinds = [_type(v) for v in operands]
    if None in kinds:
        return None, None
    samples = [k(1) if isinstance(v, (WeakNumber, PyNumber)) else v for v, k in zip(operands, kinds)]
    try:
        with np.errstate(all="ignore"):
            kind = type(op(*samples))
            common = type(samples[0] + samples[1])
    except (ArithmeticError, ValueError, TypeError):
        big = [v for v in samples if type(v) is int]
        if result is None and big and -2 ** 63 <= big[0] < 2 ** 63 and all(
                issubclass(k, (int, np.integer)) for k in kinds):
            return np.int64, np.bool_
        return None, None
    return (common if result is None else kind), kind


_TABLE_NUMPY = (np.float16, np.float32, np.float64, np.int32, np.int64)
_PYTHON_OPS = {"add": _op.add, "sub": _op.sub, "mul": _op.mul, "truediv": _op.truediv, "floordiv": _op.floordiv,
               "mod": _op.mod, "pow": _op.pow}


def _fed_number_with_numpy(op, name, number, other, reverse):
    """A fed Python number (`PyNumber`) with a NumPy scalar: NumPy's arithmetic (`name` None: the
    comparison `op`)."""
    if name is None:
        return _numpy_binary(op, None, number, other, reverse)
    return _numpy_binary(_PYTHON_OPS[name], lambda _: None, number, other, reverse)


PyNumber.numpy_arithmetic = staticmethod(_fed_number_with_numpy)


def _pythons(op, a, b, reverse, out):
    """(Python's float `//` or `%` of `a` and `b` where TensorFlow's `out` is not it, the divisor
    to check), else (`out`, None): Python computes both from fmod (`1.0 // 0.1` is 9.0 there,
    TensorFlow's floor(x / y) 10.0)."""
    if op not in (_op.floordiv, _op.mod) or not out.dtype.is_floating:
        return out, None
    x, y = (tf.convert_to_tensor(v, out.dtype) for v in ((b, a) if reverse else (a, b)))
    return float_divmod(x, y)[op is _op.mod], y


def _in_constant() -> bool:
    """Whether TensorFlow is making a constant of the number: it asks for the number's text only
    to report a value it cannot hold (a tensor's index, a list with a number in it)."""
    frame = sys._getframe(2)
    for _ in range(12):
        if frame is None:
            return False
        if frame.f_code.co_name == "make_tensor_proto":
            return True
        frame = frame.f_back
    return False


def _varying(out, result, a, b) -> WeakNumber:
    """The result of arithmetic on a number whose Python type varies by node: of one Python type
    when every int-or-float combination the operands may be gives that type (`w / 2` is a float
    whether `w` is an int or a float), else of a type known only per node (ptype None)."""
    options = [_options(a), _options(b)]
    if None in options:     # NumPy numbers on some nodes: their rounding would vary by node too
        current().fail("held-number", "arithmetic on a tree attribute that holds NumPy numbers of several types, "
                       "or NumPy numbers on some nodes and Python numbers on others: its type and rounding vary "
                       "by node", "give the attribute one type on every node")
    kinds = {result({x, y}) for x in options[0] for y in options[1]}
    if len(kinds) == 1:
        return WeakNumber(out, kinds.pop())
    return WeakNumber(out, None, either=kinds == {int, float})


def _options(v):
    """The Python types `v` may be at run time, or None when one is not a Python number."""
    if isinstance(v, WeakNumber):
        return (int, float) if v.either else ((v.ptype,) if v.ptype in _WEAK else None)
    return (type(v),) if type(v) in _WEAK else None


class VaryingDtype(StagingError, TypeError):
    """A number whose eager tensor's dtype differs between nodes, converted without a dtype."""


_CONVERSIONS = {tf.constant: ("value", "dtype", "shape", "name"),
                tf.convert_to_tensor: ("value", "dtype", "dtype_hint", "name")}


def conversion(f, args, kwargs):
    """`tf.constant` or `tf.convert_to_tensor` of a tree number, as eager converts the Python number
    (a graph tensor would keep the dtype it is held in); None for any other call."""
    names = _CONVERSIONS[f]
    if len(args) > len(names) or set(kwargs) - set(names):
        return None
    bound = dict(zip(names, args))
    if set(bound) & set(kwargs):
        return None
    value = bound.get("value", kwargs.get("value"))
    if type(value) is int and f is tf.constant:     # (tf.convert_to_tensor's goes through `int_conversion`)
        check_int_constant(value, kwargs.get("dtype", bound.get("dtype")))
    if not isinstance(value, WeakNumber):
        return None
    bound.update(kwargs)
    value = bound["value"]
    if bound.get("shape") is not None:
        current().fail("held-number", "tf.constant of a tree attribute with a shape", "the function runs in Python")
    if bound.get("dtype") is not None:
        return value.converted(bound["dtype"])
    if bound.get("dtype_hint") is not None:
        return value.converted(bound["dtype_hint"], hint=True)
    return tf.identity(value.__tf_tensor__())          # (tf.constant refuses a graph tensor)
