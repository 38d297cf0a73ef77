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

import numpy as np
import tensorflow as tf

from codegen.assumptions import SCALARS
from codegen.graph.signature import Signature
from codegen.operators.trees import flatten as flatten_tree
from codegen.operators.values import EAGER


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
        a is b or (type(a) in SCALARS and type(a) is type(b) and a == b) for a, b in zip(value, expected))


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
    src = _Source()
    src.consts["EagerTensor"] = EAGER
    src.consts["ndarray"] = np.ndarray
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
            if leaf.value is np.ndarray:
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
            src.consts["flatten_tree"] = flatten_tree
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
