"""Side-effect-free descriptions of runtime values, by duck typing.

The profiler must describe tensors, arrays and Python scalars without
importing TensorFlow or NumPy and without running user code: a probe that
called a user ``__len__``, ``__bool__`` or property could change what the
program does.  So every helper here looks only at ``type(value)`` and, for
types that come from ``tensorflow``/``numpy``/``keras`` modules, at their
``dtype``/``shape`` attributes, which those libraries compute without side
effects.
"""

from __future__ import annotations

from profiler import static

#: Python scalar types whose values a ValueFact keeps (exact types only).
SCALAR_TYPES = (bool, int, float, str, type(None))

#: Builtin containers whose ``len()`` is recorded (exact types only).
SIZED_TYPES = (range, list, tuple, dict, str, set, frozenset)

_ARRAY_MODULES = ("tensorflow", "numpy", "keras", "tf_keras")


def type_name(value) -> str:
    """Canonical type name: ``qualname`` for builtins, else ``module.qualname``.

    Examples: ``'int'``, ``'NoneType'``,
    ``'tensorflow.python.framework.ops.EagerTensor'``, ``'numpy.ndarray'``.
    """
    cls = type(value)
    module = static.module_of(cls)             # (through `type`: a metaclass's hooks do not run)
    qualname = static.qualname_of(cls)
    if module in (None, "builtins"):
        return qualname
    return f"{module}.{qualname}"


_ARRAY_LIKE_CACHE: dict = {}


def _from_array_library(value) -> bool:
    """Tensor, variable or NumPy value: a type whose ``dtype``/``shape`` are
    plain reads.  Decided from the type's module and name, cached per type."""
    cls = type(value)
    known = _ARRAY_LIKE_CACHE.get(cls)
    if known is None:
        module = (static.module_of(cls) or "").split(".", 1)[0]
        name = static.name_of(cls)
        known = module == "numpy" or (
            module in _ARRAY_MODULES and ("Tensor" in name or "Variable" in name))
        _ARRAY_LIKE_CACHE[cls] = known
    return known


def is_tensor(value) -> bool:
    """True for eager tensors and resource variables (no TF import)."""
    cls = type(value)
    return static.name_of(cls) in ("EagerTensor", "ResourceVariable") and (
        static.module_of(cls) or "").startswith("tensorflow")


def array_info(value):
    """``(dtype_name, shape)`` for tensors/arrays/variables, else None.

    ``shape`` is a tuple whose unknown dimensions are None, or None when the
    rank is unknown.
    """
    if not _from_array_library(value):
        return None
    dtype = getattr(value, "dtype", None)
    shape = getattr(value, "shape", None)
    if dtype is None or shape is None:
        return None
    dtype_name = dtype if isinstance(dtype, str) else getattr(dtype, "name", None)
    if not isinstance(dtype_name, str):
        dtype_name = str(dtype)
    return dtype_name, _shape_tuple(shape)


def _shape_tuple(shape):
    as_list = getattr(shape, "as_list", None)
    if as_list is not None:
        try:
            return tuple(as_list())
        except Exception:  # unknown rank
            return None
    if isinstance(shape, tuple):
        return tuple(d if isinstance(d, int) or d is None else None for d in shape)
    return None


def length(value):
    """``len(value)`` for exact builtin containers, else None."""
    if type(value) in SIZED_TYPES:
        return len(value)
    return None


def safe_truth(value):
    """``bool(value)`` when computing it cannot run user code, else None.

    Known-safe: Python scalars, NumPy scalars and arrays of one element, and
    eager tensors of one element (their ``__bool__`` reads the buffer).
    """
    cls = type(value)
    if cls in SCALAR_TYPES:
        return bool(value)
    if not _from_array_library(value):
        return None
    info = array_info(value)
    if info is None:
        return None
    shape = info[1]
    if shape is None or any(d is None for d in shape):
        return None
    size = 1
    for dim in shape:
        size *= dim
    if size != 1:
        return None
    if cls.__name__ == "ResourceVariable":
        return None  # reading a variable is a TF op on a mutable resource
    return bool(value)


#: How deep and how wide ``structure`` looks into tuples and lists.
MAX_STRUCTURE_DEPTH, MAX_STRUCTURE_ITEMS = 3, 16


def structure(value, depth: int = 0):
    """A hashable description of a value's shape as a tree: what a graph needs to stand in for
    the result of a Python call.  Leaves are ``("array", dtype, shape)`` for NumPy arrays,
    ``("scalar", dtype)`` for NumPy scalars, ``("bool",)``, ``("int",)``, ``("float",)``,
    ``("none",)``, and ``("other", type name)`` for anything else; tuples and lists are
    ``("tuple" | "list", children)``.  None when a container is deeper or wider than the limits."""
    cls = type(value)
    if cls is bool:
        return ("bool",)
    if cls is int:
        return ("int",)
    if cls is float:
        return ("float",)
    if value is None:
        return ("none",)
    if cls in (tuple, list):
        if depth >= MAX_STRUCTURE_DEPTH or len(value) > MAX_STRUCTURE_ITEMS:
            return None
        children = tuple(structure(v, depth + 1) for v in value)
        return None if None in children else (cls.__name__, children)
    if static.module_of(cls) == "numpy":     # (not a subclass such as numpy.ma's MaskedArray)
        info = array_info(value)
        if info is not None and info[1] is not None and info[0] in _NUMERIC_DTYPES:
            if cls.__name__ == "ndarray":
                return ("array", info[0], info[1])
            if info[1] == ():                           # a NumPy scalar (np.float32, np.bool_)
                return ("scalar", info[0])
    return ("other", type_name(value))


#: NumPy dtypes a graph holds as they are (strings, objects, dates and the like are "other").
_NUMERIC_DTYPES = frozenset({"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                             "float16", "float32", "float64", "complex64", "complex128"})


def arrays_in(value) -> list:
    """The NumPy arrays `value` is, or its tuple or list holds (one level deep)."""
    cls = type(value)
    if cls in (tuple, list):
        return [v for v in value[:MAX_STRUCTURE_ITEMS] if _is_ndarray(v)]
    return [value] if _is_ndarray(value) else []


def _is_ndarray(value) -> bool:
    cls = type(value)
    return static.name_of(cls) == "ndarray" and static.module_of(cls) == "numpy"
