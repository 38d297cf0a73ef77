"""Shared shape of lowered control flow: bodies as functions over named state.

Each lowered statement becomes nested functions that read and write the
enclosing builder's variables through `nonlocal`, plus `get_state`/`set_state`
so an operator can snapshot, restore and replace those variables (what
`tf.cond` and `tf.while_loop` need).  Names are computed on the user's
statement before its children are lowered, since lowering hides assignments
inside nested functions.
"""
from __future__ import annotations

import ast

from codegen.lowering.base import Lowering
from codegen.syntax.templates import replace


def state_functions(names: list[str], get_name: str, set_name: str, anchor) -> list[ast.stmt]:
    if names:
        vals = "vals"
        while vals in names:            # the parameter must not be one of the user's names
            vals += "_"
        text = (f"def {get_name}():\n    return ({', '.join(names)},)\n"
                f"def {set_name}({vals}):\n    nonlocal {', '.join(names)}\n    ({', '.join(names)},) = {vals}\n")
    else:
        text = f"def {get_name}():\n    return ()\ndef {set_name}(vals):\n    pass\n"
    return replace(text, anchor)


def body_function(name: str, names: list[str], body: list[ast.stmt], anchor, params: str = "") -> ast.FunctionDef:
    header = f"def {name}({params}):\n"
    header += f"    nonlocal {', '.join(names)}\n" if names else ""
    header += "    pass\n"
    (fn,) = replace(header, anchor)
    fn.body = fn.body[:-1] + (body or fn.body[-1:])
    return fn


class StatementLowering(Lowering):
    """Base of statement lowerings: lowers the function's body only, splicing statements that
    expand into several."""

    def lower_function(self, node):
        node.body = self.lower_statements(node.body)
        return node


def _grown_name(node):
    """`name` in `name.append` / `name.insert`, as the user wrote it or as the calls lowering
    left it (`jn.ld_attr(name, 'append')`); else None."""
    if isinstance(node, ast.Attribute) and node.attr in ("append", "insert") and isinstance(node.value, ast.Name):
        return node.value.id
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "ld_attr" \
            and len(node.args) == 2 and isinstance(node.args[0], ast.Name) \
            and isinstance(node.args[1], ast.Constant) and node.args[1].value in ("append", "insert"):
        return node.args[0].id
    return None


def list_modes(ctx, lists) -> tuple:
    """`(name, inserted at the front)` for each grown list: the operators carry a list only
    appended to as a `TensorArray`, one also inserted into as a tensor of rows."""
    return tuple((name, name in ctx.front) for name in lists)


def grown_lists(ctx, body, names) -> tuple:
    """The function's own growable lists (`local_lists`) that `body` appends to: state of the
    loop or `if` around it too (a loop carries them as tensors, a `tf.cond` passes them on)."""
    grown = {name for stmt in body for n in ast.walk(stmt) for name in [_grown_name(n)] if name in ctx.growable}
    return tuple(sorted(grown - set(names)))
