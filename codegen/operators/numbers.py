"""Python numbers that vary between calls, fed to the graph as tensors but kept Python's.

A Python `int` or `float` argument (or state value) that differs between calls
becomes a graph input so one graph serves every value.  Inside the builder it
is a `PyNumber`: an int64 / float64 / bool scalar tensor plus the Python type
it stands for.  Arithmetic with Python numbers and other `PyNumber`s follows
Python (int stays int, `/` gives float, `//` and `%` floor, 64-bit floats);
the two places where a tensor cannot follow Python — a zero divisor (Python
raises `ZeroDivisionError`) and an int leaving int64 (Python ints do not
overflow) — are in-graph guards of kind `EXACT`, so such a call falls back to
Python and raises or computes exactly as eager does.  With a tensor, a
`PyNumber` converts as eager converts a Python number: to the tensor's dtype,
or int32 / float32 alone.  Whatever Python needs as a concrete value
(`str(n)`, `lst[n]`) fails the trace, and janus specialises on the value
instead.  Results, writes and prints come back as Python numbers.

`float(t)`, `int(t)` and `bool(t)` of a scalar graph tensor are `PyNumber`s
too, marked `computed`: no fed value stands behind them, so where Python
needs the value the statement runs in Python between graph segments
(`python-value-of-tensor`) instead of specialising.
"""
from __future__ import annotations

import operator as _op

import numpy as np
import tensorflow as tf

from codegen.assumptions import Kind
from codegen.errors import NeedsPythonValue, Reason
from codegen.operators.context import current
from codegen.operators.exact_arith import SWAPPED, float_divmod, float_pow_is_pythons, int_float_compare
from codegen.operators.guards import emit_guard

_WIDE = {int: tf.int64, float: tf.float64, bool: tf.bool}
_DEFAULT = {int: tf.int32, float: tf.float32, bool: tf.bool}     # eager's conversion of a Python number
_INT64_SAFE = 2.0 ** 62          # float64 estimates below this cannot have overflowed int64


class PyNumber:
    """`computed`: the number was computed from a graph tensor (or from such a number) rather
    than fed, so specialising on a fed value cannot give Python its value.  `bounded`: an int
    known to fit int32 (an argument, which the entry guard keeps there, or one `narrowed` guarded)."""

    __slots__ = ("tensor", "ptype", "computed", "bounded")
    __array_ufunc__ = None      # `np.float32(0.1) * n` comes to `__rmul__` with the NumPy scalar itself
    # `n <op> np.float32(...)` by NumPy's rules: `codegen.operators.weak_numbers` sets it (a
    # Python number takes the NumPy one's type first); None: such arithmetic needs the value.
    numpy_arithmetic = None

    def __init__(self, tensor, ptype: type, computed: bool = False, bounded: bool = False):
        self.ptype = ptype
        self.computed = computed
        self.bounded = bounded
        self.tensor = tensor if tensor.dtype == _WIDE[ptype] else tf.cast(tensor, _WIDE[ptype])

    def __tf_tensor__(self, dtype=None, name=None):
        dtype = _DEFAULT[self.ptype] if dtype is None else tf.as_dtype(dtype)
        return self.tensor if self.tensor.dtype == dtype else tf.cast(self.tensor, dtype)

    def _python_value(self, *_):
        needs_value(self.computed, f"a Python {self.ptype.__name__} that varies between calls is used where "
                    "Python needs its value")

    __bool__ = __index__ = __int__ = __float__ = __str__ = __repr__ = __format__ = __hash__ = _python_value
    __iter__ = __len__ = __getitem__ = _python_value
    __round__ = __floor__ = __ceil__ = __trunc__ = __complex__ = _python_value     # (`round(loss, 5)`)

    def __neg__(self):
        _no_int64_min(self)
        return PyNumber(-self.tensor, int if self.ptype is bool else self.ptype, self.computed)

    def __pos__(self):
        return PyNumber(self.tensor, int if self.ptype is bool else self.ptype, self.computed)

    def __abs__(self):
        _no_int64_min(self)
        return PyNumber(tf.abs(self.tensor), int if self.ptype is bool else self.ptype, self.computed)


def _no_int64_min(number):
    """`-n` and `abs(n)` of an int computed from a tensor: Python's leave int64 at its minimum."""
    if number.ptype is int and number.computed:
        _require(tf.not_equal(number.tensor, tf.int64.min), "`-n` of an int stays inside int64", True)


def needs_value(computed: bool, what: str):
    """Stop the build where Python needs a varying number's value: a fed number is specialised
    on (`python-number`); one computed from a tensor has no value to specialise on, so its
    statement runs in Python between graph segments."""
    if computed:
        ctx = current()
        raise NeedsPythonValue(Reason("python-value-of-tensor", ctx.user_line(),
                                      what.replace("that varies between calls", "computed from a tensor"),
                                      "it runs in Python between graph segments"))
    current().fail("python-number", what, "janus specialises on the number's value instead")


def is_computed(*values) -> bool:
    """Whether any of `values` is a number computed from a tensor (see `PyNumber.computed`)."""
    return any(isinstance(v, PyNumber) and v.computed for v in values)


def _ptype(value):
    if isinstance(value, PyNumber):
        return value.ptype
    t = type(value)
    return t if t in (int, float, bool) else None


def _tensor(value, ptype):
    if isinstance(value, PyNumber):
        return tf.cast(value.tensor, _WIDE[ptype]) if value.tensor.dtype != _WIDE[ptype] else value.tensor
    return exact_constant(value, _WIDE[ptype])


def exact_constant(value, dtype):
    """A Python constant in float arithmetic, hidden from the graph optimiser's constant folding,
    which would reassociate `(s * 0.1) * 0.1` into `s * 0.01` (not what Python computes)."""
    constant = tf.constant(value, dtype)
    if not dtype.is_floating:
        return constant
    return tf.raw_ops.PlaceholderWithDefault(input=constant, shape=[])


def _require(ok, what: str, computed: bool = False):
    """Guard that Python arithmetic stayed exact; where no guard may be emitted, specialise instead
    (or, for a number computed from a tensor, run the statement in Python)."""
    ctx = current()
    where = ctx.user_line()
    key = (ctx.frame.converted.key if ctx.frames else "", Kind.EXACT.name, where, len(ctx.assumptions))
    if ctx.in_machine or ctx.dry_run or not ctx.may_speculate(key):
        needs_value(computed, f"{what} cannot be guarded here (after a variable write or inside tf.cond / "
                    "tf.while_loop)")
    emit_guard(ok, ctx.assume(Kind.EXACT, key, what, True, where))


def narrowed(number: PyNumber, dtype) -> PyNumber:
    """`number`, about to be held in the int `dtype` (a recursion's frame tables hold Python ints
    in 32 bits), guarded to fit it: an int computed in int64 (`k * 2 ** 20`) would wrap there.
    Where no guard may be emitted (inside a machine) the number is specialised on instead.  An
    argument the entry guard keeps inside int32 needs no guard."""
    wide = number.tensor
    if number.ptype is int and not number.bounded and dtype.is_integer and dtype.size < wide.dtype.size:
        ok = tf.logical_and(wide >= tf.cast(dtype.min, wide.dtype), wide <= tf.cast(dtype.max, wide.dtype))
        _require(ok, f"a Python int a recursion holds in {dtype.name} fits it", number.computed)
        number.bounded = dtype == tf.int32          # (the guard holds for the rest of the run)
    return number


def _arith(name, op, a, b):
    pa, pb = _ptype(a), _ptype(b)
    computed = is_computed(a, b)
    both_int = pa in (int, bool) and pb in (int, bool)
    result = float if name == "truediv" or not both_int else int
    if name == "pow":
        if both_int and not (type(b) in (int, bool) and b >= 0):
            needs_value(computed, "an int power whose exponent varies between calls")
    wide = int if both_int and name != "truediv" else float
    x, y = _tensor(a, wide), _tensor(b, wide)
    if name in ("truediv", "floordiv", "mod"):
        ok = tf.not_equal(y, tf.zeros_like(y))
        if name == "truediv" and both_int and (_past_53_bits(a) or _past_53_bits(b)):
            # Python divides ints exactly, then rounds once: float64 operands are exact to 2**53.
            exact, xi, yi = tf.constant(2 ** 53, tf.int64), _tensor(a, int), _tensor(b, int)
            _require(tf.logical_and(tf.abs(xi) <= exact, tf.abs(yi) <= exact), "int `/` operands are exact in "
                     "float64", computed)
        if name == "truediv" and both_int:
            x, y = tf.cast(x, tf.float64), tf.cast(y, tf.float64)
        if isinstance(b, PyNumber) or not b:        # (a constant divisor that is not 0 needs no guard)
            _require(ok, f"divisor of `{name}` is not zero", computed)
        if name != "truediv" and not both_int:         # Python's from fmod, not floor(x / y)
            return PyNumber(float_divmod(x, y)[name == "mod"], float, computed)
        if name != "truediv" and both_int and computed and (isinstance(b, PyNumber) or b == -1):   # (-2**63 // -1)
            _require(tf.logical_or(tf.not_equal(x, x.dtype.min), tf.not_equal(y, -1)), "int `//` and `%` stay "
                     "inside int64", computed)
        if name == "truediv":
            # Not `x / y`: with a constant divisor, TensorFlow's graph optimiser multiplies by its
            # reciprocal, which is not Python's correctly rounded quotient (the divisor is not 0).
            return PyNumber(tf.math.divide_no_nan(x, y), float, computed)
    if both_int and name in ("add", "sub") and _small_constant(a, b) and not computed:
        pass        # fed ints are below 2**31: a constant step needs 2**32 iterations to leave int64
    elif both_int and name in ("add", "sub", "mul", "pow"):
        estimate = op(tf.cast(x, tf.float64), tf.cast(y, tf.float64))
        _require(tf.abs(estimate) < _INT64_SAFE, f"int `{name}` stays inside int64", computed)
    elif name == "pow":
        _require(float_pow_is_pythons(x, y), "a float `**` gives Python's float (no complex result, no zero "
                 "to a negative power, no overflow)", computed)
        one_at_a_time()
    return PyNumber(op(x, y), result, computed)


def _past_53_bits(value) -> bool:
    """Whether an int operand may be past 2**53, where float64 does not hold it exactly: a
    constant that is, or a fed or computed int the entry guard does not keep inside int32."""
    if isinstance(value, PyNumber):
        return not value.bounded
    return abs(value) > 2 ** 53


def one_at_a_time():
    """Fails the build where a float `**` of Python (or NumPy) numbers would run on many values at
    once (a machine's frames, a batched element): TensorFlow's Pow kernel calls libm's `pow`, as
    Python does, on a single element, but over several it runs its own vectorised pow, which
    differs in the last bit for about a fifth of inputs (`x ** 2` included)."""
    ctx = current()
    if ctx.in_machine or ctx.vectorized:
        ctx.fail("held-number", "a float `**` of Python numbers computed for many frames or items at once: "
                 "TensorFlow's vectorised pow rounds differently from Python's", "the call runs in Python")


def _small_constant(a, b) -> bool:
    return any(type(v) in (int, bool) and abs(v) < 2 ** 31 for v in (a, b))


def python_kind(value):
    """int / float / bool for a Python number or a `PyNumber`, else None."""
    return _ptype(value)


def wide_tensor(value):
    """A Python number or `PyNumber` as the 64-bit tensor janus carries it in."""
    return _tensor(value, _ptype(value))


def wide_tensor_dtype(value):
    """The dtype `wide_tensor(value)` has."""
    return _WIDE[_ptype(value)]


def _compare(op, a, b):
    """A comparison of Python numbers, one of them fed: a Python bool that varies (eager's `n > 2`
    is a bool, whose `or` with a tensor gives the bool itself or the tensor)."""
    ints = (_ptype(a) in (int, bool), _ptype(b) in (int, bool))
    if ints[0] != ints[1]:              # an int and a float: compared exactly, as Python compares them
        i, f = (a, b) if ints[0] else (b, a)
        name = op.__name__ if ints[0] else SWAPPED[op.__name__]
        return PyNumber(int_float_compare(name, _tensor(i, int), _tensor(f, float)), bool, is_computed(a, b))
    wide = int if all(ints) else float
    return PyNumber(op(_tensor(a, wide), _tensor(b, wide)), bool, is_computed(a, b))


_ARITH = {"add": _op.add, "sub": _op.sub, "mul": _op.mul, "truediv": _op.truediv,
          "floordiv": tf.math.floordiv, "mod": tf.math.floormod, "pow": _op.pow}


def _with_tensor(number, tensor):
    """`number` as eager converts a Python number meeting `tensor`: to the tensor's dtype (a
    float meeting an integer tensor does not convert: eager raises, so the trace fails)."""
    if number.ptype is float and not (tensor.dtype.is_floating or tensor.dtype.is_complex):
        needs_value(number.computed, f"a Python float that varies between calls meets a {tensor.dtype.name} tensor")
    return tf.cast(number.tensor, tensor.dtype)


def _numpy(number, op, name, other, reverse):
    """`number <op> other` with a NumPy scalar: NumPy's result type and rounding."""
    if PyNumber.numpy_arithmetic is None:
        number._python_value()
    return PyNumber.numpy_arithmetic(op, name, number, other, reverse)


def _binary(name, reverse=False):
    op = _ARITH[name]

    def method(self, other):
        if isinstance(other, (tf.Tensor, tf.Variable)):
            mine = _with_tensor(self, other)
            return op(other, mine) if reverse else op(mine, other)
        if isinstance(other, np.generic):
            return _numpy(self, op, name, other, reverse)
        if _ptype(other) is None:
            return NotImplemented
        return _arith(name, op, other, self) if reverse else _arith(name, op, self, other)
    return method


def _comparison(op):
    def method(self, other):
        if isinstance(other, (tf.Tensor, tf.Variable)):
            return op(_with_tensor(self, other), other)
        if isinstance(other, np.generic):
            return _numpy(self, op, None, other, False)
        if _ptype(other) is None:
            return NotImplemented
        return _compare(op, self, other)
    return method


_BITWISE = {"and": tf.bitwise.bitwise_and, "or": tf.bitwise.bitwise_or, "xor": tf.bitwise.bitwise_xor,
            "lshift": tf.bitwise.left_shift, "rshift": tf.bitwise.right_shift}


def _bitwise(name, reverse=False):
    """`&`, `|`, `^`, `<<`, `>>` of Python ints (or bools), one of them fed or computed: exact in
    int64, where Python's two's-complement semantics and TensorFlow's agree; a shift count that is
    negative (Python raises) or a left shift that leaves int64 fails the run's guard."""
    op = _BITWISE[name]

    def method(self, other):
        a, b = (other, self) if reverse else (self, other)
        if _ptype(a) not in (int, bool) or _ptype(b) not in (int, bool):
            return NotImplemented           # (a float or a tensor: Python's own rules, or its TypeError)
        computed = is_computed(a, b)
        x, y = _tensor(a, int), _tensor(b, int)
        if name in ("lshift", "rshift") and isinstance(b, PyNumber):
            _require(y >= 0, "a shift count is not negative", computed)
        elif name in ("lshift", "rshift") and b < 0:
            needs_value(computed, "a negative shift count")           # (Python raises ValueError)
        if name in ("lshift", "rshift"):
            y = tf.minimum(y, 63)           # (Python's `>>` past 63 bits gives 0 or -1, as 63 does)
        out = op(x, y)
        if name == "lshift":
            _require(tf.logical_and(y < 63, tf.equal(tf.bitwise.right_shift(out, y), x)),
                     "int `<<` stays inside int64", computed)
        if _ptype(a) is bool and _ptype(b) is bool and name in ("and", "or", "xor"):
            return PyNumber(tf.not_equal(out, 0), bool, computed)      # `True & False` is a bool
        return PyNumber(out, int, computed)
    return method


def _invert(self):
    return PyNumber(tf.bitwise.invert(_tensor(self, int)), int, self.computed) if self.ptype in (int, bool) \
        else NotImplemented


PyNumber.__invert__ = _invert
for _name in _BITWISE:
    setattr(PyNumber, f"__{_name}__", _bitwise(_name))
    setattr(PyNumber, f"__r{_name}__", _bitwise(_name, reverse=True))
for _name in _ARITH:
    setattr(PyNumber, f"__{_name}__", _binary(_name))
    setattr(PyNumber, f"__r{_name}__", _binary(_name, reverse=True))
for _name, _fn in (("lt", _op.lt), ("le", _op.le), ("gt", _op.gt), ("ge", _op.ge), ("eq", _op.eq), ("ne", _op.ne)):
    setattr(PyNumber, f"__{_name}__", _comparison(_fn))
del _name, _fn


def convert(kind: type, value):
    """`int(n)`, `float(n)`, `bool(n)` of a fed number, as Python computes them."""
    return _converted(kind, value.tensor, value.computed)


def _converted(kind: type, tensor, computed: bool):
    """`kind` of a scalar tensor's value, as Python converts the number it holds: `int` of a
    float truncates toward zero, and is guarded to be finite and inside int64 (Python raises on
    NaN and infinity, and gives an int past 64 bits); `bool` is `!= 0` (NaN is true)."""
    if kind is int:
        if tensor.dtype.is_floating:
            limit = tf.constant(2.0 ** 63, tensor.dtype)
            _require(tf.abs(tensor) < limit, "`int()` of a float is finite and inside int64", computed)
        return PyNumber(tf.cast(tensor, tf.int64), int, computed)
    if kind is float:
        return PyNumber(tf.cast(tensor, tf.float64), float, computed)
    zero = tf.zeros_like(tensor)
    return PyNumber(tensor if tensor.dtype == tf.bool else tf.not_equal(tensor, zero), bool, computed)


_CONVERTIBLE = (tf.bool, tf.int8, tf.int16, tf.int32, tf.int64, tf.uint8, tf.uint16, tf.uint32,
                tf.float16, tf.bfloat16, tf.float32, tf.float64)


def convert_tensor(kind: type, tensor):
    """`int(t)`, `float(t)`, `bool(t)` of a scalar graph tensor as a computed `PyNumber` (a
    float32 value widened exactly to float64, as eager's `float()` gives it); None where janus
    does not follow eager (not a scalar, a dtype such as string, complex or uint64)."""
    current().refuse_plain_truth(f"`{kind.__name__}()` of a tensor")
    if tensor.shape.rank != 0 or tensor.dtype not in _CONVERTIBLE:
        return None
    return _converted(kind, tf.stop_gradient(tensor), True)     # (eager's Python number has no gradient)


_tensor_getitem = tf.Tensor.__getitem__


def _as_index(spec):
    """A fed Python int used as an index or slice bound, as the int64 scalar tensor it is fed as
    (TensorFlow indexes by scalar tensors; it would ask the stand-in for its Python value)."""
    if isinstance(spec, PyNumber) and spec.ptype is int:
        return spec.tensor
    if type(spec) is tuple:
        return tuple(_as_index(s) for s in spec)
    if type(spec) is slice:
        return slice(_as_index(spec.start), _as_index(spec.stop), _as_index(spec.step))
    return spec


def _getitem(self, spec):
    return _tensor_getitem(self, _as_index(spec))


def install():
    """Index tensors by fed Python ints (once; TensorFlow's own indexing does the rest)."""
    if tf.Tensor.__getitem__ is _tensor_getitem:
        tf.Tensor.__getitem__ = _getitem


install()
