"""The tensors of tree columns: converting one column's values for the tables (`column_tensor`),
the empty tensor fed for a column no op reads, the dtype a Python number is held in, and the
check that child pointers form no cycle.  `codegen.operators.trees` walks the nodes and reads
the values; this module only turns them into tensors."""
from __future__ import annotations

import numpy as np
import tensorflow as tf

from codegen.errors import ConversionError, Reason
from codegen.operators.values import EAGER

try:                                    # (TensorFlow's own constructor of eager tensors)
    from tensorflow.python.eager import context as _context
    from tensorflow.python.framework.ops import EagerTensor as _EagerTensor
except ImportError:                     # pragma: no cover - another TensorFlow: tf.constant does it
    _EagerTensor = None


def fed(array: np.ndarray):
    """The tensor of a NumPy array, of the array's dtype, as `tf.constant(array)` makes it.  The
    tables are made on every call, so eagerly the tensor is made the way `tf.constant` makes it in
    the end, without the layers of dispatch before (a third of a small column's cost)."""
    if _EagerTensor is None or not tf.executing_eagerly():
        return tf.constant(array)
    ctx = _context.context()
    return _EagerTensor(array, ctx.device_name, None)


def fed_shared(key, make):
    """The tensor `fed(make())` for a column that repeats between calls (the class column of a
    one-class tree of n nodes, the root row of a one-tree forest), made once per `key` and
    device: tensors are immutable, so calls can share one."""
    if _EagerTensor is None or not tf.executing_eagerly():
        return fed(make())
    key = (key, _context.context().device_name)
    tensor = _SHARED.get(key)
    if tensor is None:
        if len(_SHARED) >= 1024:
            _SHARED.clear()
        tensor = _SHARED[key] = fed(make())
    return tensor


_SHARED: dict = {}


def fed_rows(rows: tuple):
    """The root rows of a forest; a one-tree forest's (its root is row 0) is made once."""
    make = lambda: np.array(rows, np.int32)      # noqa: E731
    return fed_shared(("rows", rows), make) if len(rows) == 1 else fed(make())


def fed_zeros(n: int):
    """The class column of a one-class tree of `n` nodes (`tf.zeros` costs four times as much)."""
    return fed_shared(("zeros", n), lambda: np.zeros(n, np.int32))


def column_tensor(col, values, index, pointers, has_presence):
    """The tensor of one attribute column from its `values`, or None if they do not fit it (a
    child column's values are appended to `pointers`)."""
    kinds = set(map(type, values))          # `ABSENT` is the only value of type `object`
    if has_presence:
        if object in kinds:
            values = [None if v is ABSENT else v for v in values]
            kinds = (kinds - {object}) | {type(None)}
    elif object in kinds or (type(None) in kinds and not col.pointer):
        return None                         # a node lacks a value the schema has everywhere
    if col.pointer:
        values = [-1 if child is None else index.get(id(child), -2) for child in values]
        if -2 in values:
            return None                     # a child that is not a node of these trees
        pointers.append(values)
        return fed(np.array(values, np.int32))
    if EAGER in kinds and col.python != "tensor":
        return None                         # a tensor among Python or NumPy numbers: it would act as one
    dtype = tf.as_dtype(col.dtype).as_numpy_dtype
    if col.python and not kinds - {type(None)} <= ({int, float} if col.python == EITHER else {PYTHON_TYPES[col.python]}):
        return None                         # read back as Python numbers (or tensors): they must still be
    if col.python == "tensor" and any(v is not None and v is not ABSENT and v.dtype.name != col.dtype
                                      for v in values):
        return None                         # a tensor of another dtype
    if col.python == "ndarray" and any(v is not None and v is not ABSENT and v.dtype != dtype for v in values):
        return None                         # an array of another dtype: read back, it would change
    if any(issubclass(k, _NUMBERS) and not issubclass(k, _FITS.get(col.dtype, ())) for k in kinds):
        return None                         # a float in an int column, a number in a bool one
    if kinds == {int} and dtype in (np.int32, np.int64) and col.shape == ():
        return _int_tensor(values, dtype)
    if int in kinds and dtype in (np.int32, np.int64):
        ints = [v for v in values if type(v) is int]
        if min(ints) < _RANGES[dtype].min or max(ints) > _RANGES[dtype].max:
            return None                     # a Python int the column's dtype would wrap
    try:
        if col.shape == () and kinds - {type(None)} <= {int, float, bool}:
            # (a node without the value holds 0: its presence column says it has none)
            array = np.array([0 if v is None else v for v in values] if type(None) in kinds else values, dtype)
            return fed(array) if (not needs_exact(col) or exact(values, array)) and normal(array) else None
        default = np.zeros(col.shape, dtype)
        arrays = [default if v is None else np.asarray(v) for v in values]
        if any(a.dtype.kind != default.dtype.kind and not (default.dtype.kind == "f" and a.dtype.kind in "iub"
                                                            and not col.shape) for a in arrays):
            return None                     # converting would change the values (2.5 to 2)
        array = np.asarray(arrays, dtype)
        return fed(array) if (col.shape or not needs_exact(col) or exact(values, array)) and normal(
            array) else None
    except (TypeError, ValueError):
        return None


def normal(array) -> bool:
    """Whether a column holds no subnormal float: TensorFlow's CPU kernels flush those to zero
    where Python and NumPy keep them, so such a tree does not fit (its call runs in Python)."""
    if array.dtype.kind != "f" or not array.size:
        return True
    magnitude = np.abs(array)
    return not np.any((magnitude > 0) & (magnitude < np.finfo(array.dtype).tiny))


def needs_exact(col) -> bool:
    """Whether the column's values are of several types (`col.python` "" or `EITHER`): a float
    column must then be checked to hold each one exactly (see `exact`)."""
    return col.python in ("", EITHER)


def held_exactly(col, values):
    """Raises where a scalar float column of several value types would not hold one of the
    nodes' `values` exactly: no one table holds them all.  Values no table holds at all (a str,
    a complex) make the tree not fit when it is flattened, and the call runs in Python."""
    if not needs_exact(col) or not col.dtype.startswith("float") or col.shape != ():
        return
    try:
        if exact(values, np.array([0 if v is None or v is ABSENT else v for v in values], col.dtype)):
            return
    except (TypeError, ValueError, OverflowError):
        return
    raise ConversionError(Reason("tree-attribute-types", "", f"tree attribute `{col.name}` holds numbers of several "
                                 "types that no one table holds exactly (an int past 2**53 beside floats, or past "
                                 "2**24 beside NumPy float32s)", "give the attribute one type on every node"))


def exact(values, array) -> bool:
    """Whether a column whose values' types vary holds each value exactly: a float64 in a float32
    column, or an int past 2**53 in a float64 one, would be read back rounded (where the types are
    one, the column's dtype is theirs and the check is not needed)."""
    if array.dtype.kind != "f":
        return True
    for v, held in zip(values, array.tolist()):
        if v is None or v is ABSENT:
            continue
        if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
            if held != held or held in (float("inf"), float("-inf")) or int(held) != int(v):
                return False
        elif not (float(v) == held or (v != v and held != held)):
            return False
    return True


def pointer_tensor(link, pointers, has_presence):
    """The tensor of a child column from the walk's child rows (-1 for None, `NOT_A_NODE` for a
    value that is no node, `LACKS` where the node has no such attribute), or None if they do not
    fit it; the rows are appended to `pointers`.  Where the column has a presence column, a node
    lacking the attribute holds -1 there."""
    rows = np.array(link, np.int32)
    if len(link) and rows.min() < -1:
        if not has_presence or NOT_A_NODE in link:
            return None                     # a child that is no node of these trees, or a node lacks one
        rows[rows == LACKS] = -1
    pointers.append(rows)
    return fed(rows)


NOT_A_NODE, LACKS = -2, -3


def _int_tensor(ints: list, dtype):
    """The column of Python ints `ints`, or None when one is outside `dtype`'s range (it would wrap)."""
    try:
        wide = np.array(ints, np.int64)
    except OverflowError:
        return None
    if len(wide) and (wide.min() < _RANGES[dtype].min or wide.max() > _RANGES[dtype].max):
        return None
    return fed(wide if dtype is np.int64 else wide.astype(dtype))


_RANGES = {np.int32: np.iinfo(np.int32), np.int64: np.iinfo(np.int64)}


_EMPTY: dict = {}


def empty_column(col):
    """The tensor fed for a column the graph does not read: no rows, the column's dtype and shape."""
    key = (col.dtype, col.shape)
    if key not in _EMPTY or not tf.executing_eagerly():
        empty = tf.constant(np.zeros((0,) + col.shape, tf.as_dtype(col.dtype).as_numpy_dtype))
        if not tf.executing_eagerly():
            return empty
        _EMPTY[key] = empty
    return _EMPTY[key]


ABSENT = object()        # a node without the attribute (or method)
NUMBER_COLUMNS = ("int32", "float32", "int64", "float64", "float16")


def number_dtype(value) -> str:
    """A Python float is held in float64, as Python holds it (a float32 column rounded 0.1, and
    sums of such attributes drifted from eager's); a Python int in int32, a NumPy scalar in the
    dtype TensorFlow converts it to (np.float64 in float64); a bool is bool."""
    if type(value) is float:
        return "float64"
    if isinstance(value, np.generic) and np.dtype(type(value)).name in NUMPY_TYPES:
        return np.dtype(type(value)).name
    kind = np.asarray(value).dtype.kind
    if type(value) is int and not -2**31 <= value < 2**31:
        return "int64"                  # (past int64, the column refuses the tree: `_column`)
    return "float32" if kind == "f" else ("bool" if kind == "b" else "int32")


NUMPY_TYPES = {"float32": np.float32, "int32": np.int32, "float64": np.float64, "int64": np.int64,
               "float16": np.float16}
EITHER = "int|float"      # a column of Python ints on some nodes and floats on others
PYTHON_TYPES = {"int": int, "float": float, "bool": bool, "tensor": EAGER, "ndarray": np.ndarray, **NUMPY_TYPES}
_NUMBERS = (int, float, np.number, np.bool_)
_FITS = {"float32": (int, float, np.integer, np.floating, bool, np.bool_), "int32": (int, np.integer),
         "float64": (int, float, np.integer, np.floating, bool, np.bool_), "int64": (int, np.integer),
         "float16": (int, float, np.integer, np.floating, bool, np.bool_), "bool": (bool, np.bool_)}


def acyclic(n: int, pointers: list) -> bool:
    """Whether the child pointers form no cycle (a node reachable from itself): a recursion
    over a cyclic structure never ends, and eager raises RecursionError there."""
    later = np.arange(n)
    if all(bool(np.all((c < 0) | (c > later))) for c in map(np.asarray, pointers)):
        return True                   # every child numbered after its parent (a tree in visit order)
    indegree = [0] * n
    for column in pointers:
        for child in column:
            if child >= 0:
                indegree[child] += 1
    ready = [i for i in range(n) if indegree[i] == 0]
    seen = 0
    while ready:
        node = ready.pop()
        seen += 1
        for column in pointers:
            child = column[node]
            if child >= 0:
                indegree[child] -= 1
                if indegree[child] == 0:
                    ready.append(child)
    return seen == n
