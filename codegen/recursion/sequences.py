"""Lists and tuples among a recursion machine's frame values.

The frames hold a sequence's items in their tables; `ListSpec` marks the specs of a list, so the
value read back is a list where eager's is (a plain tuple of specs is a tuple's).  A value that
is a list on one path and a tuple on another, or code that may change a list the frames hold in
place (each frame reads its lists back as new objects), makes the recursion run in Python."""
from __future__ import annotations

import ast

from codegen.errors import unsupported


class ListSpec(tuple):
    """The specs of a list's items (a plain tuple of specs is a tuple's): the frames hold the
    items, and the value read back is a list again, as eager's is."""


def sequence(spec, items):
    """`items` as the container `spec` stands for: a list for a `ListSpec`, else a tuple."""
    return list(items) if isinstance(spec, ListSpec) else tuple(items)


def respec(spec, items):
    """`items` (specs) as a spec of the same container kind as `spec`."""
    return ListSpec(items) if isinstance(spec, ListSpec) else tuple(items)


def _sequence_kinds(spec) -> list:
    """Whether each list or tuple of `spec`, outermost first, is a list."""
    if type(spec) in (tuple, ListSpec):
        return [isinstance(spec, ListSpec)] + [k for s in spec for k in _sequence_kinds(s)]
    return []


def refuse_sequences(cycle, key, old, new):
    """Refuse a variable, parameter or result (`key`, as `_refuse_conflict`) that is a list in some
    frames and a tuple in others: the frames read back one kind."""
    kinds, other = _sequence_kinds(old), _sequence_kinds(new)
    if old is not None and len(kinds) == len(other) and kinds != other:
        cf = cycle.functions[key[0] if type(key) is tuple else key]
        what = f"`{key[1]}`" if type(key) is tuple else "its result"
        raise unsupported("recursion", cf.filename, cf.node, f"{what} of {cf.fn.__qualname__} is a list in some "
                          "frames and a tuple in others", "return (and pass) the same kind of sequence on every path")


_LIST_WRITES = frozenset({"append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse", "update",
                          "setdefault", "popitem", "add", "discard"})


def refuse_list_writes(cycle, specs, returns, shared=()):
    """Refuse a cycle whose frames hold lists (or share one list every call passes along,
    `shared`) where its code may change a list in place: each frame reads its lists back as new
    objects, so a change would not reach another frame's (or another name's, or the caller's)
    view of the same list, as it does in eager."""
    if not shared and not any(any(_sequence_kinds(s)) for s in [*specs.values(), *returns.values()]):
        return
    for f, cf in cycle.functions.items():
        held = {v for (g, v), s in specs.items() if g is f and any(_sequence_kinds(s))} | {
            p for (g, p) in shared if g is f}
        node = _list_write(cf.node, held)
        if node is not None:
            raise unsupported("recursion", cf.filename, node, "a recursive function whose frames hold lists "
                              "changes a list (or another container) in place",
                              "build a new list (`r + [x]`), or hold tuples")


def _list_write(tree, held):
    """The first node of `tree` (as written, or as lowered to janus's operators) that may change
    a container in place (`held`: names of lists)."""
    return next((node for node in ast.walk(tree) if _writes(node, held)), None)


def _writes(node, held) -> bool:
    if isinstance(node, ast.Subscript) and isinstance(node.ctx, (ast.Store, ast.Del)):
        return True
    if isinstance(node, ast.AugAssign):
        return not (isinstance(node.target, ast.Name) and node.target.id not in held)
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return False
    name, args = node.func.attr, node.args
    if name in _LIST_WRITES or name in ("st_item", "del_item"):      # (`lst.append(x)`, `jn.st_item(d, k, v)`)
        return True
    if name == "ld_attr" and len(args) == 2 and isinstance(args[1], ast.Constant):
        return args[1].value in _LIST_WRITES                     # (`jn.call(jn.ld_attr(lst, 'append'), x)`)
    return name == "inplace" and len(args) >= 2 and isinstance(args[1], ast.Name) and args[1].id in held
