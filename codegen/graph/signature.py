"""A call's arguments as a graph sees them: flattened leaves and the structure around them.

`analyze` walks the arguments of one call: lists, tuples and small dicts are
structure; tensors (and NumPy arrays) are graph inputs with a dtype and a
shape (dimensions relaxed to `None` where calls differed); Python scalars are
constants, or tensor inputs once relaxed; trees walked by a recursion are
flattened to tables; other objects are guarded by identity.  `rebuild` is its
inverse, used inside the trace to hand the builder its arguments back.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import tensorflow as tf

from codegen.assumptions import Kind, check_kind
from codegen.operators.trees import schema_of


@dataclasses.dataclass
class Leaf:
    path: str                 # "args[0]", "kwargs['h'][1]"
    kind: str                 # "tensor" | "scalar" | "scalar-tensor" | "object" | "tree"
    value: object = None
    dtype: object = None
    shape: tuple | None = None   # for tensors, with None for relaxed dims
    input_index: int | None = None


@dataclasses.dataclass
class Signature:
    """The flattened arguments of one call, as a graph sees them."""

    leaves: list[Leaf]
    template: object          # nested ("list"/"tuple"/"dict", ...) structure with ("leaf", i)
    n_args: int
    kw_names: tuple

    @property
    def inputs(self) -> list[Leaf]:
        return [leaf for leaf in self.leaves if leaf.input_index is not None]

    def specs(self):
        out = []
        for leaf in self.inputs:
            if leaf.kind == "tree":
                out += leaf.value.specs()          # one input per column of the flattened tree
            else:
                out.append(tf.TensorSpec(leaf.shape, leaf.dtype, name=_spec_name(leaf.path)))
        return out

    def key(self):
        """What identifies this signature for relaxation: paths with kinds, dtypes, shapes, values."""
        return tuple((leaf.path, leaf.kind, str(leaf.dtype), leaf.shape,
                      leaf.value if leaf.kind == "scalar" else id(leaf.value) if leaf.kind == "object" else None)
                     for leaf in self.leaves)


def _spec_name(path: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in path).strip("_")


def _is_tensor(value) -> bool:
    return isinstance(value, tf.Tensor) and not isinstance(value, tf.Variable)


def analyze(args: tuple, kwargs: dict, relaxed_dims: dict, relaxed_scalars: dict, tree_paths=()) -> Signature:
    """`relaxed_scalars` maps the paths of Python scalars fed as tensors to their dtype name."""

    leaves: list[Leaf] = []
    n_inputs = [0]

    def visit(value, path):
        t = type(value)
        if path in tree_paths and hasattr(value, "__dict__"):
            schema = schema_of(value, tree_paths[path] if isinstance(tree_paths, dict) else ())
            leaf = Leaf(path, "tree", value=schema, input_index=n_inputs[0])
            n_inputs[0] += len(schema.columns)
            leaves.append(leaf)
            return ("leaf", len(leaves) - 1)
        if t in (list, tuple) and len(value) <= 1024:
            return (t.__name__, [visit(v, f"{path}[{i}]") for i, v in enumerate(value)])
        if t is dict and len(value) <= 64 and all(type(k) in (str, int) for k in value):
            keys = tuple(value)
            return ("dict", keys, [visit(value[k], f"{path}[{k!r}]") for k in keys])
        if _is_tensor(value) or isinstance(value, np.ndarray):
            tensor = tf.convert_to_tensor(value) if isinstance(value, np.ndarray) else value
            shape = list(tensor.shape.as_list()) if tensor.shape.rank is not None else None
            for dim in relaxed_dims.get(path, ()):
                if shape is not None and dim < len(shape):
                    shape[dim] = None
            leaf = Leaf(path, "tensor", dtype=tensor.dtype, shape=tuple(shape) if shape is not None else None,
                        input_index=n_inputs[0])
            leaf.value = type(value)
            n_inputs[0] += 1
        elif t in (int, float) and path in relaxed_scalars:
            leaf = Leaf(path, "scalar-tensor", value=t, dtype=tf.as_dtype(relaxed_scalars[path]), shape=(),
                        input_index=n_inputs[0])
            n_inputs[0] += 1
        elif check_kind(value) is Kind.CONSTANT:
            leaf = Leaf(path, "scalar", value=value)
        else:
            leaf = Leaf(path, "object", value=value)
        leaves.append(leaf)
        return ("leaf", len(leaves) - 1)

    items = [visit(a, f"args[{i}]") for i, a in enumerate(args)]
    kw = {k: visit(v, f"kwargs[{k!r}]") for k, v in kwargs.items()}
    return Signature(leaves, (items, kw), len(args), tuple(kwargs))


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
