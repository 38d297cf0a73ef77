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

import collections.abc
import dataclasses
import math
import types
import weakref

import numpy as np
import tensorflow as tf

from codegen.assumptions import SCALARS, Kind, Weak, held, lacks
from codegen.graph.signature import Feed, Signature, components
from codegen.operators.trees import flatten as flatten_tree
from codegen.operators.tree_walk import share_nodes
from codegen.operators.trees import alias_pattern, flatten_forest
from codegen.operators.values import EAGER


class _GuardText:
    """Accumulates the guard's lines and the constants it refers to.  Each requirement keeps
    the description of what it checks, so the same lines also make `rejected_by`."""

    def __init__(self):
        self.lines: list[tuple[str, str | None]] = []     # (line, description if it is a test)
        self.consts: dict[str, object] = {}
        self.inputs: list[str] = []                        # what the guard feeds the graph
        self.containers: list[str] = []                    # argument lists and dicts, by access
        self.trees: dict[int, int] = {}                    # tree argument leaves so far -> the first
                                                           # leaf holding the same tree
    def const(self, value, prefix="K") -> str:
        """The name the guard reads `value` by; a `Weak` one is called (a gone object reads as None,
        whose attributes raise, and the guard rejects the call)."""
        call = "()" if type(value) is Weak else ""
        for name, v in self.consts.items():
            if v is value and name.startswith(prefix):
                return name + call
        name = f"{prefix}{len(self.consts)}"
        self.consts[name] = value
        return name + call

    def line(self, text: str):
        self.lines.append((text, None))

    def require(self, condition: str, description: str):
        self.lines.append((f"if not ({condition}):", description))

    def function(self, name: str, inputs: list[str], diagnose: bool) -> str:
        """`entry_guard` returns the inputs or None; `rejected_by` returns None when the call is
        accepted, else the description of the first requirement it fails."""
        body = []
        for text, description in self.lines:
            if description is None:
                body.append(f"        {text}")
            else:
                miss = repr(description) if diagnose else "None"
                body.append(f"        {text} return {miss}" + ("" if diagnose else f"  # {description}"))
        failed = "'an argument or value could not be read'" if diagnose else "None"
        accepted = "None" if diagnose else f"[{', '.join(inputs)}]"
        return (f"def {name}(args, kwargs):\n    try:\n" + "\n".join(body)
                + f"\n    except Exception:\n        return {failed}\n    return {accepted}\n")


def _structure(src: _GuardText, template, access: str):
    tag = template[0]
    if tag == "leaf":
        return [(template[1], access)]
    out = []
    if tag in ("list", "dict"):
        src.containers.append(access)
    if tag in ("list", "tuple"):
        src.require(f"type({access}) is {tag} and len({access}) == {len(template[1])}", f"TYPE_MATCH {access}")
        for i, t in enumerate(template[1]):
            out += _structure(src, t, f"{access}[{i}]")
    elif tag == "dict":
        # The keys in their order and of their types: the graph iterates the dict in the order it
        # was built for, and a key `True` finds the entry of `1`.
        keys = tuple(template[1])
        src.require(f"type({access}) is dict and tuple({access}) == {src.const(keys, 'K')} and "
                    f"tuple(map(type, {access})) == {src.const(tuple(map(type, keys)), 'T')}",
                    f"TYPE_MATCH {access} has the keys {list(keys)} in this order")
        for k, t in zip(template[1], template[2]):
            out += _structure(src, t, f"{access}[{k!r}]")
    return out


def _same_item(a, b) -> bool:
    if type(b) is Weak:              # (gone, it is no item: None is not taken for it)
        return a is b() and a is not None
    return a is b or (type(a) in SCALARS and type(a) is type(b) and a == b)


def _same_items(value, expected) -> bool:
    """Same container type and length, and the same items in order (a dict's keys and values); a
    set holding what the frozenset `expected` holds."""
    if type(expected) is frozenset:
        return type(value) is set and value == expected
    if type(value) is not type(expected) or len(value) != len(expected):
        return False
    if isinstance(value, collections.abc.Mapping):
        return all(_same_item(k, ek) and _same_item(v, ev)
                   for (k, v), (ek, ev) in zip(value.items(), expected.items()))
    return all(_same_item(a, b) for a, b in zip(value, expected))


def _value_check(src: _GuardText, kind: Kind, access: str, expected) -> str:
    if kind is Kind.ITEMS_MATCH:
        src.consts["same_items"] = _same_items
        return f"same_items({access}, {src.const(expected, 'O')})"
    if kind is Kind.CONSTANT:
        text = f"type({access}) is {src.const(type(expected), 'T')} and {access} == {src.const(expected)}"
        if isinstance(expected, (float, np.floating)) and expected == 0.0:    # -0.0 == 0.0; 1 / -0.0 is -inf
            src.consts["copysign"] = math.copysign
            text += f" and copysign(1.0, {access}) == {math.copysign(1.0, expected)}"
        return text
    if kind is Kind.TYPE_MATCH:      # (a float fed for the state read: never a subnormal, see `subnormal`)
        text = f"type({access}) is {src.const(expected, 'T')}"
        if isinstance(expected, type) and issubclass(expected, (float, np.floating)):
            text += _not_subnormal(access, expected)
        return text
    if kind is Kind.LENGTH_MATCH:
        return f"len({access}) == {expected}"
    if kind in (Kind.TENSORS_MATCH, Kind.LIST_TENSORS_MATCH):
        container = "tuple" if kind is Kind.TENSORS_MATCH else "list"
        parts = [f"type({access}) is {container} and len({access}) == {len(expected)}"]
        parts += [_value_check(src, Kind.TENSOR_MATCH, f"{access}[{i}]", e) for i, e in enumerate(expected)]
        if getattr(expected, "others", ()):
            parts.append(f"id({access}) not in {src.const(frozenset(map(id, expected.others)), 'O')}")
        return " and ".join(parts)
    if kind is Kind.ARRAY_MATCH:
        dtype, shape = expected
        src.consts["ndarray"] = np.ndarray
        dims = [f"{access}.ndim == {len(shape)}"] + [f"{access}.shape[{d}] == {n}" for d, n in enumerate(shape)
                                                    if n is not None]
        return f"type({access}) is ndarray and {access}.dtype == {src.const(dtype, 'D')} and " + " and ".join(dims)
    if kind is Kind.TENSOR_MATCH:
        dtype, shape = expected
        text = f"type({access}) is EagerTensor and {access}.dtype == {src.const(dtype, 'D')}"
        if shape is None:
            return text
        dims = [f"len({access}._shape_tuple()) == {len(shape)}"]
        dims += [f"{access}._shape_tuple()[{d}] == {n}" for d, n in enumerate(shape) if n is not None]
        return text + " and " + " and ".join(dims)
    if type(expected) is Weak:       # (gone, it reads as None: the guard rejects the call)
        return f"{access} is {src.const(expected, 'O')} is not None"
    return f"{access} is {src.const(expected, 'O')}"


def check_access(check) -> str:
    """The suffix that reads a checked value from its holder: `['name']`, `.cell_contents`, `.name`."""
    base, _, part = check.access.rpartition("-")
    if base:                 # a method held in an item, a global or a cell: its function or its object
        held = check_access(dataclasses.replace(check, access=base))
        return held + (".__func__" if part == "method" else ".__self__")
    if check.access in ("global", "item"):
        return f"[{check.name!r}]"
    if check.access == "closure":
        return ".cell_contents"
    if check.access == "method":
        return f".{check.name}.__func__"
    if check.access == "bound":
        return f".{check.name}.__self__"
    if check.access == "owns":
        return f".__dict__.__contains__({check.name!r})"
    if check.access == "self":
        return ""
    return f".{check.name}"


def _leaf_requirements(src: _GuardText, index: int, leaf, access: str) -> str | None:
    """The guard lines for one argument leaf; returns the expression it feeds the graph, if any."""
    var = f"v{index}"
    what = f"{leaf.kind.check.name} {leaf.path}"
    src.line(f"{var} = {access}")
    if leaf.kind is Feed.TENSOR:
        if leaf.value is np.ndarray:
            src.require(f"type({var}) is ndarray and {var}.dtype == {src.const(leaf.dtype.as_numpy_dtype, 'D')}"
                        f" and {var}.ndim == {len(leaf.shape)}", f"{what} is a {leaf.dtype.name} array")
            src.line(f"{var} = convert({var})")
        else:
            src.require(f"type({var}) is EagerTensor and {var}.dtype == {src.const(leaf.dtype, 'D')}",
                        f"{what} is a {leaf.dtype.name} tensor")
        if leaf.shape is not None:
            src.line(f"s{index} = {var}._shape_tuple()")
            dims = [f"len(s{index}) == {len(leaf.shape)}"]
            dims += [f"s{index}[{d}] == {n}" for d, n in enumerate(leaf.shape) if n is not None]
            src.require(" and ".join(dims), f"{what} has shape {leaf.shape}")
        return var
    if leaf.kind is Feed.TREE:
        first = index if leaf.same_as is None else leaf.same_as
        for other, other_first in src.trees.items():   # the same object where it was, others elsewhere
            same = first == other_first
            src.require(f"{var} {'is' if same else 'is not'} v{other}",
                        f"{what} {'is' if same else 'is not'} the tree at leaf {other}")
        if leaf.same_as is None and src.trees:
            src.consts["share_nodes"] = share_nodes
            distinct = [f"v{i}" for i, f in src.trees.items() if i == f] + [var]
            src.require(f"not share_nodes([{', '.join(distinct)}])", f"{what} shares no node with the other trees")
        src.trees[index] = first
        src.consts["flatten_tree"] = flatten_tree
        src.line(f"c{index} = flatten_tree({var}, {src.const(leaf.value, 'S')}, {src.const(src.used.get(index), 'U')}, "
                 f"{src.const(src.followed.get(index), 'F')})")
        src.require(f"c{index} is not None", f"{what} flattens to the tree tables")
        return f"*c{index}"
    if leaf.kind is Feed.FOREST:
        forest = leaf.value
        if forest.container is list:
            src.containers.append(var)
        src.require(f"type({var}) is {forest.container.__name__} and len({var}) == {forest.size}",
                    f"TYPE_MATCH {access}")
        src.consts["alias_pattern"] = alias_pattern
        src.require(f"alias_pattern({var}) == {src.const(forest.aliases, 'A')}",
                    f"{what} holds the same tree objects at the same places")
        src.consts["flatten_forest"] = flatten_forest
        src.line(f"c{index} = flatten_forest({var}, {src.const(forest.schema, 'S')}, "
                 f"{src.const(src.used.get(index), 'U')}, {src.const(src.followed.get(index), 'F')})")
        src.require(f"c{index} is not None", f"{what} flattens to the tree tables")
        return f"*c{index}"
    if leaf.kind is Feed.COMPOSITE:
        spec = src.const(leaf.value, "S")
        src.require(f"type({var}) is {src.const(leaf.value.value_type, 'T')} and {spec}.is_compatible_with({var})",
                    f"{what} fits {leaf.value}")
        return f"*components({var})"
    if leaf.kind is Feed.SCALAR_TENSOR:
        test = f"type({var}) is {src.const(leaf.value, 'T')}"
        if leaf.value is int:          # converts to int32 alone, as eager converts a Python int of this size
            test += f" and {-2 ** 31} <= {var} < {2 ** 31}"
        if leaf.dtype.is_floating:     # a subnormal is a constant (TensorFlow's kernels flush it to zero)
            test += _not_subnormal(var, leaf.dtype.as_numpy_dtype)
        src.require(test, f"{what} is a {leaf.value.__name__} fed as a tensor")
        return f"fed({var}, {src.const(leaf.dtype, 'D')})"
    if leaf.kind is Feed.SCALAR:
        src.require(_value_check(src, Kind.CONSTANT, var, leaf.value), f"{what} == {leaf.value!r}")
    elif type(leaf.value) in (types.MethodType, weakref.WeakMethod):    # a new object per lookup: the
        src.consts["MethodType"] = types.MethodType                     # same function and object
        method = held(leaf.value)
        obj = Weak(method.__self__) if type(leaf.value) is weakref.WeakMethod else method.__self__
        src.require(f"type({var}) is MethodType and {var}.__func__ is {src.const(method.__func__, 'O')} "
                    f"and {_value_check(src, Kind.ID_MATCH, var + '.__self__', obj)}",
                    f"{what} is the same method of the same object")
    else:
        if leaf.kind is Feed.LIST:
            src.containers.append(var)
        src.require(_value_check(src, Kind.ID_MATCH, var, leaf.value), f"{what} is the same object")
    return None


def _not_subnormal(access: str, kind) -> str:
    """The guard text: the float at `access` is not subnormal in `kind` (see `assumptions.subnormal`)."""
    return f" and not 0 < abs({access}) < {float(np.finfo(kind).tiny)!r}"


def _fed_number(value, dtype):
    """A Python number as the tensor fed for it.  TensorFlow caches the tensors of Python scalars
    by value, and -0.0 == 0.0: after -0.0 was converted once, 0.0 would come back as -0.0 (and
    `s * -1.0` with it); a zero goes through an array, which the cache does not hold."""
    if value == 0 and isinstance(value, (float, np.floating)):
        return tf.convert_to_tensor(np.array(value, dtype.as_numpy_dtype))
    return tf.convert_to_tensor(value, dtype)


def _generate(sig: Signature, checks, used, followed, ordered_kwargs) -> _GuardText:
    src = _GuardText()
    src.used, src.followed = used, followed
    src.consts["EagerTensor"] = EAGER
    src.consts["ndarray"] = np.ndarray
    src.consts["convert"] = tf.convert_to_tensor
    src.consts["fed"] = _fed_number
    src.consts["components"] = components
    items, kw = sig.template
    src.require(f"len(args) == {sig.n_args} and len(kwargs) == {len(sig.kw_names)}",
                f"the call passes {sig.n_args} positional and {len(sig.kw_names)} keyword arguments")
    if ordered_kwargs and len(sig.kw_names) > 1:      # `**kwargs` iterates in the order they were passed
        src.require(f"tuple(kwargs) == {src.const(tuple(sig.kw_names), 'K')}",
                    f"the keyword arguments come in the order {list(sig.kw_names)}")
    located = []
    for i, t in enumerate(items):
        located += _structure(src, t, f"args[{i}]")
    for k, t in kw.items():
        located += _structure(src, t, f"kwargs[{k!r}]")
    src.inputs = [fed for index, access in located
                  if (fed := _leaf_requirements(src, index, sig.leaves[index], access)) is not None]
    if len(src.containers) > 1:
        # Each argument list or dict is copied into the graph on its own: the very same list
        # passed twice (`f(log, log)`, `f([log], log)`) would be two lists there.
        src.consts["distinct"] = _distinct
        src.require(f"distinct(({', '.join(src.containers)},))",
                    "ALIASING no list or dict is passed twice among the arguments")
    outside, fed_lists = [], []
    for check in checks:
        access = src.const(check.holder, "H") + check_access(check)
        if check.access == "absent":
            src.consts["lacks"] = lacks
            src.consts["alive"] = _alive
            access = f"lacks(alive({src.const(check.holder, 'H')}), {check.name!r})"
        src.require(_value_check(src, check.kind, access, check.expected), check.describe())
        if type(check.expected) in (list, dict) and check.kind in (Kind.ID_MATCH, Kind.ITEMS_MATCH,
                                                                    Kind.LENGTH_MATCH):
            outside.append(access)
        if check.kind is Kind.LIST_TENSORS_MATCH:
            fed_lists.append(access)
    fed_lists = [a for a in fed_lists if a not in outside]      # (one whose identity is checked is as any other)
    if fed_lists:
        # A list of tensors read without its identity checked stands for itself alone in the graph:
        # no other such list, no argument container (the outside containers the graph copies are
        # in its own check, `fed_lists.FedSpecs.others`).
        src.consts["distinct"], src.consts["disjoint"] = _distinct, _disjoint
        src.require(f"distinct(({', '.join(fed_lists)},))" + (
            f" and disjoint(({', '.join(fed_lists)},), ({', '.join(src.containers)},))" if src.containers else ""),
                    "ALIASING a list of tensors read item by item is no other list or dict the graph reads")
    if src.containers and outside:
        # The graph copies an argument container and an outside one separately: the very same
        # list passed as an argument and read as a global would be two lists in the graph.
        src.consts["disjoint"] = _disjoint
        src.require(f"disjoint(({', '.join(src.containers)},), ({', '.join(outside)},))",
                    "ALIASING no argument list or dict is also a list or dict the graph reads from outside")
    return src


def _alive(holder):
    """`holder`; a freed one (a `Weak` reads as None) raises, and the guard rejects the call: it
    would lack every name."""
    if holder is None:
        raise ReferenceError("the object the graph was specialised on is gone")
    return holder


def _distinct(containers) -> bool:
    return len({id(x) for x in containers}) == len(containers)


def _disjoint(mine, theirs) -> bool:
    ids = {id(x) for x in theirs}
    return not any(id(x) in ids for x in mine)


def generate_entry_guard(sig: Signature, checks, used=None, followed=None,
                         ordered_kwargs=False) -> tuple[str, str, dict]:
    """Source of `entry_guard(args, kwargs) -> list | None` and of `rejected_by(args, kwargs) ->
    str | None` (the same tests, naming the first that fails), and their namespace.  `used`: for
    the index of a tree argument leaf, the names of the table columns the graph reads (the others
    are fed empty); `followed`: the child columns its recursions call through (`trees.flatten`);
    `ordered_kwargs`: the function takes `**kwargs`, so the order of the keywords is checked."""
    src = _generate(sig, checks, used or {}, followed or {}, ordered_kwargs)
    return src.function("entry_guard", src.inputs, False), src.function("rejected_by", [], True), src.consts


def compile_entry_guard(sig: Signature, checks, used=None, followed=None, ordered_kwargs=False):
    """The entry guard (`fn.source` is its text) and its diagnosing twin."""
    text, why, consts = generate_entry_guard(sig, checks, used, followed, ordered_kwargs)
    namespace = dict(consts)
    exec(compile(text + "\n" + why, "<janus entry guard>", "exec"), namespace)
    fn = namespace["entry_guard"]
    fn.source = text
    return fn, namespace["rejected_by"]
