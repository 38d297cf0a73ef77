"""Boolean operators and comparison chains with Python's meaning: short-circuit, and the
operand itself as the result; on a tensor left operand a `tf.cond` (`tensor_truth`), and `not t`
a Python bool the graph computes; on tree node stand-ins, truth, `is`, `==` and `in` come from
`node_tests`."""
from __future__ import annotations

import operator

import numpy as np
import tensorflow as tf

from codegen.operators.aliases import read_deep, read_whole
from codegen.operators.arrays import PyArray
from codegen.operators import dunders, node_tests
from codegen.operators.context import active, current
from codegen.operators.fed_lists import identity_of
from codegen.operators.numbers import PyNumber, is_computed
from codegen.operators.tensor_truth import evaluated_anyway, short_circuit, tensor_bool
from codegen.operators.node_classes import NodeClass
from codegen.operators.trees import Pointer, none_read
from codegen.operators.values import is_symbolic, refuse_undefined
from codegen.operators.weak_numbers import WeakNumber, bool_number, numpy_bool

_NODE_VALUES = (Pointer, NodeClass, WeakNumber)


def as_bool(x):
    return x if x.dtype == tf.bool else tf.cast(x, tf.bool)


def _number_truth(x):
    """The truth of a varying Python number as a boolean tensor."""
    condition = getattr(x, "condition", None)
    return as_bool(x.tensor) if condition is None else condition


_CONTAINERS = (list, tuple, dict, type({}.values()), type({}.items()), type({}.keys()))


def test_value(x):
    """The value an `if`/`while` tests: a varying Python number (or a recursion's Python-number
    result) or a NumPy scalar becomes its truth as a boolean tensor (Python's truth of a number
    is `!= 0`) or a tree node stand-in becomes its truth as a boolean tensor, anything else is itself."""
    if isinstance(x, Pointer):
        return node_tests.truth(x)
    if isinstance(x, PyNumber) or _weak_python(x):
        return _number_truth(x)
    if (found := dunders.truth(x)) is not dunders.NOT_USER:
        return found                # the program's own `__bool__`/`__len__`, run as its code
    if is_symbolic(x):
        current().refuse_plain_truth("an `if` or `while` on a tensor")
    return as_bool(x.tensor) if _numpy_scalar(x) else x


def _truth(x) -> bool:
    """Python's truth of a Python value, through the program's own `__bool__`/`__len__`."""
    found = dunders.truth(x)
    return bool(x) if found is dunders.NOT_USER else found


def _numpy_scalar(x) -> bool:
    return isinstance(x, PyArray) and x.tensor.shape.rank == 0


def _weak_python(x) -> bool:
    return isinstance(x, WeakNumber) and x.ptype is not None


def _varying_bool(v) -> bool:
    """A Python bool, or a NumPy bool, the graph holds."""
    return isinstance(v, (PyNumber, WeakNumber)) and v.ptype in (bool, np.bool_)


def _bool_kind(v):
    return v.ptype if _varying_bool(v) else type(v) if type(v) in (bool, np.bool_) else None


def _both_bools(a, b) -> bool:
    """Two bools of one kind (Python's or NumPy's), one of them held in the graph: `a and b` is
    then a bool of that kind whichever operand it is."""
    return _bool_kind(a) is not None and _bool_kind(a) is _bool_kind(b) and (_varying_bool(a) or _varying_bool(b))


def _bool_number(op, a, b):
    """`a and b` / `a or b` on two bools, one of them varying (or `False or b`): a varying bool
    of its kind (a `WeakNumber` where one of them is, a `PyNumber` otherwise)."""
    weak = isinstance(a, WeakNumber) or isinstance(b, WeakNumber)
    numpy = any(_varying_bool(v) and v.ptype is np.bool_ for v in (a, b))
    computed = is_computed(a, b)
    a, b = (_number_truth(v) if _varying_bool(v) else tf.constant(bool(v)) for v in (a, b))
    if numpy:
        return numpy_bool(op(a, b))
    return bool_number(op(a, b)) if weak else PyNumber(op(a, b), bool, computed)


# -- boolean operators -------------------------------------------------------------------
def truth(x):
    """A per-frame branch predicate as a boolean tensor."""
    if isinstance(x, (PyNumber, WeakNumber)):
        return _number_truth(x)
    if isinstance(x, Pointer):
        return node_tests.truth(x)
    return as_bool(x) if isinstance(x, tf.Tensor) else tf.constant(bool(x))


def _operand_truth(x):
    """The truth of a right operand of `and`/`or` that is not a graph tensor, as a boolean tensor."""
    return truth(test_value(x))


def _truth_of_both(op, value, right, truth_only):
    """`value and right` / `value or right` where `value` is a Python bool computed in the graph and
    only the truth of the result is tested (`if flag or t > 0:`): the truth as a boolean tensor;
    None where the result itself is used (its type then depends on the bool's value)."""
    if truth_only and is_symbolic(right) and not isinstance(right, (PyNumber, WeakNumber, Pointer)):
        return op(_number_truth(value), as_bool(tf.convert_to_tensor(right)))
    return None


def and_(*thunks, truth_only=False):
    value = thunks[0]()
    for thunk in thunks[1:]:
        if isinstance(value, Pointer):
            value = node_tests.pick(value, thunk, tf.logical_not(node_tests.truth(value)))
        elif _varying_bool(value):
            right = thunk() if current().in_machine else evaluated_anyway(thunk)
            both = _truth_of_both(tf.logical_and, value, right, truth_only)
            value = both if both is not None else _bool_number(tf.logical_and, value, right) \
                if _both_bools(value, right) else (right if value else value)
        elif is_symbolic(value):
            value = short_circuit(value, thunk, True, truth_only, _operand_truth)
        elif not _truth(value):
            return value
        else:
            value = thunk()
    return value


def or_(*thunks, truth_only=False):
    value = thunks[0]()
    for thunk in thunks[1:]:
        if isinstance(value, Pointer):
            value = node_tests.pick(value, thunk, node_tests.truth(value))
        elif _varying_bool(value):
            right = thunk() if current().in_machine else evaluated_anyway(thunk)
            both = _truth_of_both(tf.logical_or, value, right, truth_only)
            value = both if both is not None else _bool_number(tf.logical_or, value, right) \
                if _both_bools(value, right) else (value if value else right)
        elif type(value) is bool and not value:
            right = thunk()
            value = right if not _varying_bool(right) else _bool_number(tf.logical_or, value, right)
        elif is_symbolic(value):
            value = short_circuit(value, thunk, False, truth_only, _operand_truth)
        elif _truth(value):
            return value
        else:
            value = thunk()
    return value


def not_(x):
    if isinstance(x, Pointer):
        return bool_number(tf.logical_not(node_tests.truth(x)))
    if _weak_python(x):
        return bool_number(tf.logical_not(test_value(x)))
    if isinstance(x, PyNumber) or _numpy_scalar(x):
        return PyNumber(tf.logical_not(test_value(x)), bool, not isinstance(x, PyNumber) or x.computed)
    if not is_symbolic(x):
        return not _truth(x)
    if active() is not None and current().in_machine:
        return tf.logical_not(as_bool(x))       # (per frame: a block's values may hold one per frame)
    return not_(tensor_bool(x))                 # eager's `not t` is a Python bool (a non-scalar raises)


def _negated(found):
    """The negation of a test's result, of the same kind (a boolean tensor stays one)."""
    return tf.logical_not(found) if is_symbolic(found) else not_(found)


def not_any(*flags):
    flags = [test_value(f) for f in flags]
    if not any(is_symbolic(f) for f in flags):
        return not any(flags)
    out = tf.constant(True)
    for f in flags:
        out = tf.logical_and(out, tf.logical_not(as_bool(f)) if is_symbolic(f) else tf.constant(not f))
    return out


def _is(a, b):
    refuse_undefined(a, b)
    ctx = active()
    if ctx is not None:
        identity_of(ctx.heap, a, b)
    if a is not b and is_symbolic(a) and is_symbolic(b) and _fed_input(ctx.heap, a) and _fed_input(ctx.heap, b):
        current().fail("identity-of-fed-tensors", "`is` between two tensors the call is given (arguments, or "
                       "read from outside): the same tensor may come in twice, where the graph has two inputs",
                       "compare values, or keep the tensor once")
    if a is not b and any(is_symbolic(v) and v.ref() in current().heap.arg_choices for v in (a, b)):
        current().fail("identity-of-branch-value", "`is` on a tensor a tensor `if` chose: eager's answer depends "
                       "on the side taken", "compare values, or test the branch's condition")
    if (a is None) != (b is None) and (test := none_read(b if a is None else a)) is not None:
        return bool_number(test())          # a tree attribute that is None on some nodes
    if a is not b:
        for v in (a, b):
            if isinstance(v, PyNumber):     # eager's `flag is True` asks which Python object it is
                v._python_value()
    if isinstance(a, WeakNumber) or isinstance(b, WeakNumber):
        return _number_is(a, b) if isinstance(a, WeakNumber) else _number_is(b, a)
    if isinstance(a, NodeClass) or isinstance(b, NodeClass):
        return a.same_as(b) if isinstance(a, NodeClass) else b.same_as(a)
    if isinstance(a, Pointer) or isinstance(b, Pointer):
        return node_tests.identical(a, b) if isinstance(a, Pointer) else node_tests.identical(b, a)
    return a is b


def _fed_input(heap, t) -> bool:
    return t.ref() in heap.fed_keys or t.ref() in heap.arg_tensors


def eq(a, b):
    """`a == b`: Python's, except on a tree node stand-in (`node_tests.equal`)."""
    return _answer(_eq(a, b), a, b)


def ne(a, b):
    return _answer(_ne(a, b), a, b)


def in_(item, container):
    """`item in container`: Python's, except with a tree node stand-in (`node_tests.member`)."""
    return _answer(_in(item, container), item, container)


def not_in(item, container):
    return _answer(_not_in(item, container), item, container)


def _answer(found, *operands):
    """A test on tree node stand-ins (their classes, their numbers) where eager has a Python
    bool: a bool `WeakNumber`, which prints, counts and answers `is True` as that bool does (a
    branch tests its truth)."""
    ctx = active()
    if is_symbolic(found) and found.dtype == tf.bool and ctx is not None and _holds_node_values(operands):
        return bool_number(found)
    return found


def _none_equal(a, b):
    """`a == None` (either way round) on a tree attribute that is None on some nodes: where it
    is None (a number or tensor is never equal to None); None for any other operands."""
    value = b if a is None else a
    test = none_read(value) if (a is None) != (b is None) else None
    if test is not None and isinstance(value, PyArray):
        current().fail("tree-attribute-kind", "`==` between None and a NumPy array tree attribute that is None on "
                       "some nodes", "test it with `is None`")
    return bool_number(test()) if test is not None else None


def _eq(a, b):
    refuse_undefined(a, b)
    if (found := _none_equal(a, b)) is not None:
        return found
    if isinstance(a, Pointer) or isinstance(b, Pointer):
        return node_tests.equal(a, b) if isinstance(a, Pointer) else node_tests.equal(b, a)
    found = dunders.compare("__eq__", a, b)
    if found is dunders.NOT_USER:
        _compared(a, b)
        return a == b
    return found


def _ne(a, b):
    refuse_undefined(a, b)
    if (found := _none_equal(a, b)) is not None:
        return not_(found)
    if isinstance(a, Pointer) or isinstance(b, Pointer):
        return node_tests.not_equal(a, b) if isinstance(a, Pointer) else node_tests.not_equal(b, a)
    found = dunders.compare("__ne__", a, b)
    if found is dunders.NOT_USER:
        _compared(a, b)
        return a != b
    return found


def _compared(a, b):
    """`==` of lists or dicts compares the lists and dicts in them: copies of outside ones count
    as read (checked at entry)."""
    ctx = active()
    if ctx is not None and (type(a) in _CONTAINERS or type(b) in _CONTAINERS):
        read_deep(ctx, a)
        read_deep(ctx, b)


def _in(item, container):
    if isinstance(item, Pointer) or isinstance(container, Pointer) or node_tests.holds_node(container):
        return node_tests.member(item, container)
    if (found := dunders.contains(item, container)) is not dunders.NOT_USER:
        return found
    ctx = active()
    if ctx is not None:             # the answer depends on the contents: checked at entry
        read_deep(ctx, container)
        read_whole(ctx, container)
    return item in container


def _not_in(item, container):
    found = _in(item, container)
    return tf.logical_not(found) if isinstance(found, tf.Tensor) else not found


def _number_is(number, other):
    """`node.flag is True`: a bool attribute is the object True exactly where it is true; a number of
    another Python type is never a bool or None.  Other identities of numbers (`n is 5`, where
    CPython caches small ints) need the object, and the function runs in Python."""
    if other is True or other is False:
        if number.ptype is bool:
            truth = _number_truth(number)
            return truth if other else tf.logical_not(truth)
        if number.ptype is not None or number.either:
            return False
    elif other is None:
        return False
    current().fail("held-number", "`is` between a tree attribute's number and another object depends on which "
                   "Python object it is", "compare with `==`")


_COMPARE = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
            "==": _eq, "!=": _ne, "is": _is, "is not": lambda a, b: _negated(_is(a, b)),
            "in": _in, "not in": _not_in}


def ready(value):
    """An operand evaluated where Python evaluates it (it binds a name with `:=`), as a thunk."""
    return lambda: value


def compare_chain(ops, *thunks, truth_only=False):
    """`a < b < c`: Python's `a < b and b < c`, each operand evaluated once and only when reached.
    `truth_only`: the chain is only tested (`if a < b < c:`)."""
    return _chain(ops, thunks[1:], [thunks[0]()], truth_only)


def _chain(ops, thunks, operands, truth_only):
    """The comparisons of a chain from its operand `operands[-1]` on.  Once the comparisons so
    far give a graph tensor, the rest of the chain is the right operand of a short-circuit
    `and` (`tensor_truth`), as Python evaluates it only when the tensor is true."""
    result = None
    for k, (op, thunk) in enumerate(zip(ops, thunks)):
        left, right = operands[-1], thunk()
        operands.append(right)
        value = dunders.ordered(op, left, right) if op in ("<", "<=", ">", ">=") else _COMPARE[op](left, right)
        if result is None:
            result = value
        elif is_symbolic(result) or is_symbolic(value):
            result = tf.logical_and(as_bool(tf.convert_to_tensor(result)), as_bool(tf.convert_to_tensor(value)))
        elif _both_bools(result, value):        # `0 < a < 10` on a Python number the graph holds
            result = _bool_number(tf.logical_and, result, value)
        else:
            result = value
        if not is_symbolic(result) and not _varying_bool(result) and not result:
            return result
        if is_symbolic(result) and k + 1 < len(ops) and not _holds_node_values(operands):
            rest = ops[k + 1:], thunks[k + 1:]
            return short_circuit(result, lambda: _chain(*rest, operands, truth_only), True, truth_only,
                                 _operand_truth)
    return _answer(result, *operands)


def _holds_node_values(operands) -> bool:
    return any(isinstance(v, _NODE_VALUES) or node_tests.holds_node(v) for v in operands)
