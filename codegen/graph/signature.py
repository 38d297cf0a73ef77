"""A call's arguments as a graph sees them: flattened leaves and the structure around them.

`analyze` walks the arguments of one call: lists, tuples and small dicts are
structure; tensors (and NumPy arrays) are graph inputs with a dtype and a
shape (dimensions relaxed to `None` where calls differed); Python scalars are
constants, or tensor inputs once relaxed; trees walked by a recursion are
flattened to tables; other objects are guarded by identity.  `rebuild` is its
inverse, used inside the trace to hand the builder its arguments back.
"""
from __future__ import annotations

import contextlib
import dataclasses
import enum
import types

import numpy as np
import tensorflow as tf

from codegen.assumptions import NUMPY_SCALARS, Kind, Source, check_kind, held, scalar_dtype, subnormal
from codegen.errors import ConversionError, Reason, StagingError
from codegen.operators.dunders import user_method_of
from codegen.operators.tree_walk import share_nodes
from codegen.operators.trees import Forest, alias_pattern, schema_of
from codegen.operators.values import DICT_VIEWS, is_composite, is_iterator


class Feed(str, enum.Enum):
    """How one argument leaf reaches the graph, and so what the entry guard checks about it."""

    TENSOR = "tensor"                 # a graph input; dtype and the unrelaxed dims checked
    SCALAR = "scalar"                 # a constant in the graph; its value checked
    SCALAR_TENSOR = "scalar-tensor"   # a Python number fed as a tensor; its type checked
    OBJECT = "object"                 # read by the builder; its identity checked
    TREE = "tree"                     # a tree walked by recursion, fed as tables
    FOREST = "forest"                 # a list or tuple of such trees, fed as one set of tables
    COMPOSITE = "composite"           # a composite tensor (ragged, sparse, per-replica), fed by components
    LIST = "list"                     # a list whose length varies, only appended to: by identity

    @property
    def check(self) -> Kind:
        return {Feed.TENSOR: Kind.TENSOR_MATCH, Feed.SCALAR: Kind.CONSTANT, Feed.SCALAR_TENSOR: Kind.TENSOR_MATCH,
                Feed.OBJECT: Kind.ID_MATCH, Feed.TREE: Kind.TYPE_MATCH,
                Feed.FOREST: Kind.TYPE_MATCH, Feed.COMPOSITE: Kind.TENSOR_MATCH,
                Feed.LIST: Kind.ID_MATCH}[self]


@dataclasses.dataclass
class Leaf:
    path: Source              # "args[0]", "kwargs['h'][1]"
    kind: Feed
    value: object = None
    dtype: object = None
    shape: tuple | None = None   # for tensors, with None for relaxed dims
    same_as: int | None = None   # for a tree: the earlier tree leaf that is the same object
    input_index: int | None = None


@dataclasses.dataclass
class Signature:
    """The flattened arguments of one call, as a graph sees them."""

    leaves: list[Leaf]
    template: object          # nested ("list"/"tuple"/"dict", ...) structure with ("leaf", i)
    n_args: int
    kw_names: tuple
    lengths: dict = dataclasses.field(default_factory=dict)   # path of each argument list -> its length

    @property
    def inputs(self) -> list[Leaf]:
        return [leaf for leaf in self.leaves if leaf.input_index is not None]

    def specs(self):
        out = []
        for leaf in self.inputs:
            if leaf.kind in (Feed.TREE, Feed.FOREST):
                out += leaf.value.specs()          # one input per column of the flattened trees (and the roots)
            elif leaf.kind is Feed.COMPOSITE:
                out += components(leaf.value)
            else:
                out.append(tf.TensorSpec(leaf.shape, leaf.dtype, name=_spec_name(leaf.path)))
        return out

    def key(self):
        """What identifies this signature for relaxation: paths with kinds, dtypes, shapes, values."""
        return tuple((leaf.path, leaf.kind, str(leaf.dtype), leaf.shape,
                      leaf.value if leaf.kind is Feed.SCALAR else
                      _identity(held(leaf.value)) if leaf.kind in (Feed.OBJECT, Feed.LIST) else None)
                     for leaf in self.leaves)

    def outside(self) -> dict:
        """id -> source of the objects the call passes as they are: the build reads and writes
        them as outside state.  A bound method's object is among them (`args[0].__self__`)."""
        found = {}
        for leaf in self.leaves:
            if leaf.kind is Feed.OBJECT:
                value = held(leaf.value)
                found[id(value)] = leaf.path
                if type(value) is types.MethodType:
                    found.setdefault(id(value.__self__), leaf.path.attr("__self__"))
        return found


def _identity(value):
    """What an object argument is checked as: itself, or for a bound method (a new object on
    every `m.pick`) its function and its object."""
    if type(value) is types.MethodType:
        return (id(value.__func__), id(value.__self__))
    return id(value)


def _spec_name(path: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in path).strip("_")


def _is_tensor(value) -> bool:
    return isinstance(value, tf.Tensor) and not isinstance(value, tf.Variable)


def components(value_or_spec) -> list:
    return tf.nest.flatten(value_or_spec, expand_composites=True)


def analyze(args: tuple, kwargs: dict, relaxed_dims: dict, relaxed_scalars: dict, tree_paths=(),
            relaxed_specs=None, identity_lists=()) -> Signature:
    """`relaxed_scalars` maps the paths of Python scalars fed as tensors to their dtype name;
    `relaxed_specs` the paths of composite tensors to the widened type spec they are fed as;
    `identity_lists` the paths of argument lists fed by identity (`Feed.LIST`)."""

    leaves: list[Leaf] = []
    lengths: dict = {}
    n_inputs = [0]
    trees: dict = {}          # id of a tree argument -> its leaf (a tree passed twice is one object)
    tree_objects: list = []   # the distinct tree arguments

    open_containers: list = []      # the lists, tuples and dicts `visit` is inside

    def visit(value, path):
        _no_user_getattribute(type(value), path)
        if type(value) not in (list, tuple, dict):
            return visit_leaf(value, path)
        with _inside(open_containers, value, path):
            return visit_leaf(value, path)

    def visit_leaf(value, path):
        t = type(value)
        if path in tree_paths and hasattr(value, "__dict__"):
            schema = schema_of([value], _methods(tree_paths, [path]))
            leaf = Leaf(path, Feed.TREE, value=schema, input_index=n_inputs[0], same_as=trees.get(id(value)))
            n_inputs[0] += len(schema.columns)
            if id(value) not in trees:
                trees[id(value)] = len(leaves)
                tree_objects.append(value)
            leaves.append(leaf)
            return ("leaf", len(leaves) - 1)
        if t in (list, tuple) and 0 < len(value) <= 1024 and _is_forest(value, path, tree_paths):
            paths = [path.item(i) for i in range(len(value))]
            forest = Forest(schema_of(value, _methods(tree_paths, paths)), t, len(value), alias_pattern(value))
            leaves.append(Leaf(path, Feed.FOREST, value=forest, input_index=n_inputs[0]))
            n_inputs[0] += len(forest.schema.columns) + 1
            return ("leaf", len(leaves) - 1)
        if t is list:
            lengths[path] = len(value)
            if path in identity_lists:
                leaves.append(Leaf(path, Feed.LIST, value=value))
                return ("leaf", len(leaves) - 1)
        if t in (list, tuple) and len(value) <= 1024:
            return (t.__name__, [visit(v, path.item(i)) for i, v in enumerate(value)])
        if t is dict and len(value) <= 64 and all(type(k) in (str, int) for k in value):
            keys = tuple(value)
            return ("dict", keys, [visit(value[k], path.item(k)) for k in keys])
        if _is_tensor(value) or _numbers_array(value, path):
            leaf = _tensor_leaf(value, path, relaxed_dims.get(path, ()), n_inputs[0])
            n_inputs[0] += 1
        elif is_composite(value):
            spec = tf.type_spec_from_value(value)
            wider = (relaxed_specs or {}).get(path)
            if wider is not None and wider.is_compatible_with(spec):
                spec = wider
            leaf = Leaf(path, Feed.COMPOSITE, value=spec, input_index=n_inputs[0])
            n_inputs[0] += len(components(spec))
        elif (t in (int, float) or t in NUMPY_SCALARS) and relaxed_scalars.get(path) == scalar_dtype(t) \
                and not subnormal(value):
            # (a number of the other type than the one relaxed stays a constant: its graph differs)
            leaf = Leaf(path, Feed.SCALAR_TENSOR, value=t, dtype=tf.as_dtype(relaxed_scalars[path]), shape=(),
                        input_index=n_inputs[0])
            n_inputs[0] += 1
        elif check_kind(value) is Kind.CONSTANT:
            leaf = Leaf(path, Feed.SCALAR, value=value)
        else:
            leaf = _object_leaf(value, path)
        leaves.append(leaf)
        return ("leaf", len(leaves) - 1)

    items = [visit(a, Source.arg(i)) for i, a in enumerate(args)]
    kw = {k: visit(v, Source.kwarg(k)) for k, v in kwargs.items()}
    if len(trees) > 1 and share_nodes(tree_objects):
        raise StagingError(Reason("trees-share-nodes", "", "two tree arguments share nodes (`f(t, t.left)`): "
                                  "fed as separate tables, one node would be two objects in the graph",
                                  "pass the trees in one list, or pass one tree"))
    return Signature(leaves, (items, kw), len(args), tuple(kwargs), lengths)


def _tensor_leaf(value, path, relaxed: tuple, index: int) -> Leaf:
    """The leaf of a tensor (or NumPy array) argument, fed as input `index`, its dims `relaxed`
    fed as None."""
    tensor = tf.convert_to_tensor(value) if isinstance(value, np.ndarray) else value
    shape = list(tensor.shape.as_list()) if tensor.shape.rank is not None else None
    for dim in relaxed:
        if shape is not None and dim < len(shape):
            shape[dim] = None
    leaf = Leaf(path, Feed.TENSOR, dtype=tensor.dtype, shape=tuple(shape) if shape is not None else None,
                input_index=index)
    leaf.value = type(value)
    return leaf


_MAX_NESTING = 100


@contextlib.contextmanager
def _inside(open_containers: list, value, path):
    """While `analyze` walks the list, tuple or dict `value`: one that holds itself, or nests
    deeper than `_MAX_NESTING`, cannot be a graph's inputs (the call runs in Python)."""
    if any(value is c for c in open_containers) or len(open_containers) >= _MAX_NESTING:
        raise ConversionError(Reason(
            "argument-structure", "", f"{path} " + ("holds itself" if len(open_containers) < _MAX_NESTING else
                                                    f"nests lists, tuples or dicts deeper than {_MAX_NESTING}")
            + ": a graph's inputs are a finite structure", "the call runs in Python"))
    open_containers.append(value)
    try:
        yield
    finally:
        open_containers.pop()


def _object_leaf(value, path) -> Leaf:
    """The leaf of an argument passed as the object it is; raises for one whose contents a build
    would read once: an iterator (walked, the call would get it exhausted) or a dict's view."""
    t = type(value)
    if is_iterator(value):
        raise ConversionError(Reason(
            "iterator-argument", "", f"{path} is a {t.__name__} iterator: building a graph walks it, "
            "and the call would then get it exhausted", "pass a list or a tensor instead"))
    if isinstance(value, DICT_VIEWS):
        raise ConversionError(Reason(
            "iterator-argument", "", f"{path} is a {t.__name__}: a graph would hold the dict's items as "
            "they were when it was built", "pass the dict, or a list of its items"))
    return Leaf(path, Feed.OBJECT, value=value)


def _no_user_getattribute(t, path) -> None:
    """Raises for an argument whose class runs the program's `__getattribute__` on every read: the
    signature's own type tests (`isinstance` reads `__class__`) would run it, and a graph would run
    it once where eager runs it per read."""
    if user_method_of(t, "__getattribute__") is not None:
        raise ConversionError(Reason(
            "user-special-method", "", f"{path} is a {t.__name__}, whose `__getattribute__` is the program's own "
            "code, run on every attribute read", "it runs in Python"))


def _numbers_array(value, path) -> bool:
    """Whether `value` is a NumPy array fed as a tensor; raises for one no tensor holds as NumPy
    does (objects, strings, dates): the call runs in Python."""
    if not isinstance(value, np.ndarray):
        return False
    if value.dtype.kind not in "biufc":
        raise ConversionError(Reason(
            "numpy-dtype", "", f"{path} is a NumPy array of dtype {value.dtype}, which no tensor holds as NumPy "
            "does (objects, strings, dates)", "pass an array of numbers, or a tensor"))
    return True


def _methods(tree_paths, paths) -> tuple:
    """The node methods the recursion calls on the trees at `paths`, in a stable order."""
    if not isinstance(tree_paths, dict):
        return ()
    return tuple(dict.fromkeys(m for p in paths for m in tree_paths.get(p, ())))


def _is_forest(items, path, tree_paths) -> bool:
    """Whether every item is a tree the recursion walks: the list is fed as one set of tables."""
    return all(path.item(i) in tree_paths and hasattr(v, "__dict__") and not isinstance(v, type)
               for i, v in enumerate(items))


def rebuild(template, leaf_values):
    """Inverse of `analyze`: nested structure from per-leaf values."""
    tag = template[0]
    if tag == "leaf":
        return leaf_values[template[1]]
    if tag == "list":
        return [rebuild(t, leaf_values) for t in template[1]]
    if tag == "tuple":
        return tuple(rebuild(t, leaf_values) for t in template[1])
    if tag == "dict":
        return {k: rebuild(t, leaf_values) for k, t in zip(template[1], template[2])}
    raise AssertionError(tag)
