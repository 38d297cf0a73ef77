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
