"""Entry guards: one generated Python function per graph.

The guard checks, before a graph runs, everything the graph was specialised
on that Python can see: the structure of the arguments, each tensor's dtype
and the dimensions not relaxed to `None`, Python scalars' values, the
identity of objects, globals, closure cells and attributes read at build
time.  It returns the graph's flat tensor inputs, or `None` for a cache miss.
It is generated as source so `show_guard()` prints exactly what runs, and so
a call costs a few attribute reads and comparisons.
"""
from __future__ import annotations

import dataclasses
import types

from codegen.assumptions import Kind

_SCALARS = (bool, int, float, str, bytes, type(None), complex)


def check_kind(value) -> Kind | None:
    """How a build-time read of `value` is re-checked at entry (None: nothing to check)."""
    if type(value) in _SCALARS:
        return Kind.CONSTANT
    if type(value) is tuple and all(type(v) in _SCALARS for v in value):
        return Kind.CONSTANT
    if isinstance(value, types.MethodType):
        return None                  # a bound method is a fresh object per lookup; its owner is checked
    if type(value) in (list, tuple) and len(value) <= 64:
        return Kind.TYPE_MATCH       # same container type and length, elements the very same objects
    return Kind.ID_MATCH


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
        import tensorflow as tf
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
    import tensorflow as tf
    return isinstance(value, tf.Tensor) and not isinstance(value, tf.Variable)


def analyze(args: tuple, kwargs: dict, relaxed_dims: dict, relaxed_scalars: dict, tree_paths=()) -> Signature:
    """`relaxed_scalars` maps the paths of Python scalars fed as tensors to their dtype name."""
    import numpy as np
    import tensorflow as tf

    leaves: list[Leaf] = []
    n_inputs = [0]

    def visit(value, path):
        t = type(value)
        if path in tree_paths and hasattr(value, "__dict__"):
            from codegen.trees import schema_of
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


class _Source:
    """Accumulates the guard's source text and the constants it refers to."""

    def __init__(self):
        self.lines: list[str] = []
        self.consts: dict[str, object] = {}

    def const(self, value, prefix="K") -> str:
        for name, v in self.consts.items():
            if v is value and name.startswith(prefix):
                return name
        name = f"{prefix}{len(self.consts)}"
        self.consts[name] = value
        return name

    def require(self, condition: str, comment: str = ""):
        self.lines.append(f"    if not ({condition}): return None" + (f"  # {comment}" if comment else ""))


def _structure(src: _Source, template, access: str):
    tag = template[0]
    if tag == "leaf":
        return [(template[1], access)]
    out = []
    if tag in ("list", "tuple"):
        src.require(f"type({access}) is {tag} and len({access}) == {len(template[1])}")
        for i, t in enumerate(template[1]):
            out += _structure(src, t, f"{access}[{i}]")
    elif tag == "dict":
        src.require(f"type({access}) is dict and len({access}) == {len(template[1])}")
        for k, t in zip(template[1], template[2]):
            out += _structure(src, t, f"{access}[{k!r}]")
    return out


def _same_items(value, expected) -> bool:
    return type(value) is type(expected) and len(value) == len(expected) and all(
        a is b or (type(a) in _SCALARS and type(a) is type(b) and a == b) for a, b in zip(value, expected))


def _value_check(src: _Source, mode: str, access: str, expected) -> str:
    if mode == "items":
        src.consts["same_items"] = _same_items
        return f"same_items({access}, {src.const(expected, 'O')})"
    if mode == "const":
        return f"type({access}) is {src.const(type(expected), 'T')} and {access} == {src.const(expected)}"
    if mode == "type":
        return f"type({access}) is {src.const(expected, 'T')}"
    if mode == "tensors":
        parts = [f"type({access}) is tuple and len({access}) == {len(expected)}"]
        parts += [_value_check(src, "tensor", f"{access}[{i}]", e) for i, e in enumerate(expected)]
        return " and ".join(parts)
    if mode == "tensor":
        dtype, shape = expected
        text = f"type({access}) is EagerTensor and {access}.dtype == {src.const(dtype, 'D')}"
        if shape is None:
            return text
        dims = [f"len({access}._shape_tuple()) == {len(shape)}"]
        dims += [f"{access}._shape_tuple()[{d}] == {n}" for d, n in enumerate(shape) if n is not None]
        return text + " and " + " and ".join(dims)
    return f"{access} is {src.const(expected, 'O')}"


def check_access(check) -> str:
    """The suffix that reads a checked value from its holder: `['name']`, `.cell_contents`, `.name`."""
    if check.access == "global":
        return f"[{check.name!r}]"
    if check.access == "closure":
        return ".cell_contents"
    return f".{check.name}"


def current_value(check):
    """The value a check tests, read now (for diagnosing which check missed)."""
    if check.access == "global":
        return check.holder[check.name]
    if check.access == "closure":
        return check.holder.cell_contents
    return getattr(check.holder, check.name)


def generate_entry_guard(sig: Signature, checks) -> tuple[str, dict]:
    """Source and namespace of `entry_guard(args, kwargs) -> list | None`."""
    import tensorflow as tf

    src = _Source()
    src.consts["EagerTensor"] = type(tf.constant(0))
    src.consts["ndarray"] = __import__("numpy").ndarray
    src.consts["convert"] = tf.convert_to_tensor
    items, kw = sig.template
    src.require(f"len(args) == {sig.n_args} and len(kwargs) == {len(sig.kw_names)}", "call structure")
    located = []
    for i, t in enumerate(items):
        located += _structure(src, t, f"args[{i}]")
    for k, t in kw.items():
        located += _structure(src, t, f"kwargs[{k!r}]")
    inputs = []
    for index, access in located:
        leaf = sig.leaves[index]
        var = f"v{index}"
        src.lines.append(f"    {var} = {access}")
        if leaf.kind == "tensor":
            if leaf.value is __import__("numpy").ndarray:
                src.require(f"type({var}) is ndarray and {var}.dtype == {src.const(leaf.dtype.as_numpy_dtype, 'D')}"
                            f" and {var}.ndim == {len(leaf.shape)}", leaf.path)
                src.lines.append(f"    {var} = convert({var})")
            else:
                src.require(f"type({var}) is EagerTensor and {var}.dtype == {src.const(leaf.dtype, 'D')}", leaf.path)
            if leaf.shape is None:
                inputs.append(var)
                continue
            src.lines.append(f"    s{index} = {var}._shape_tuple()")
            dims = [f"len(s{index}) == {len(leaf.shape)}"]
            dims += [f"s{index}[{d}] == {n}" for d, n in enumerate(leaf.shape) if n is not None]
            src.require(" and ".join(dims), f"{leaf.path} shape {leaf.shape}")
            inputs.append(var)
        elif leaf.kind == "tree":
            src.consts["flatten_tree"] = __import__("codegen.trees", fromlist=["flatten"]).flatten
            src.lines.append(f"    c{index} = flatten_tree({var}, {src.const(leaf.value, 'S')})")
            src.require(f"c{index} is not None", f"{leaf.path} flattens to the tree tables")
            inputs.append(f"*c{index}")
        elif leaf.kind == "scalar-tensor":
            src.require(f"type({var}) is {src.const(leaf.value, 'T')}", f"{leaf.path} fed as a tensor")
            inputs.append(f"convert({var}, {src.const(leaf.dtype, 'D')})")
        elif leaf.kind == "scalar":
            src.require(_value_check(src, "const", var, leaf.value), leaf.path)
        else:
            src.require(_value_check(src, "id", var, leaf.value), leaf.path)
    for check in checks:
        access = src.const(check.holder, "H") + check_access(check)
        src.require(_value_check(src, check.mode, access, check.expected), check.source)
    body = "\n".join(src.lines)
    text = ("def entry_guard(args, kwargs):\n    try:\n"
            + "\n".join("    " + line for line in body.splitlines())
            + f"\n    except Exception:\n        return None\n    return [{', '.join(inputs)}]\n")
    # The try body is indented one level deeper than the return.
    return text, src.consts


def compile_entry_guard(sig: Signature, checks):
    text, consts = generate_entry_guard(sig, checks)
    namespace = dict(consts)
    exec(compile(text, "<janus entry guard>", "exec"), namespace)
    fn = namespace["entry_guard"]
    fn.source = text
    return fn
