"""Generated code written as Python text with placeholders, plus one namer.

`replace("jn.if_stmt(test, body, orelse)", test=node, body="if_body_1")`
parses the template and substitutes each placeholder name by an AST node or a
fresh name.  Every call from generated code into janus goes through the one
reserved name `JN`, so the builder reads like ordinary Python.
"""
from __future__ import annotations

import ast
import copy

JN = "jn"


class Namer:
    """Fresh names that never collide with the user's."""

    def __init__(self, taken: set[str]):
        self.taken = set(taken)
        self.counts: dict[str, int] = {}

    def new(self, base: str) -> str:
        n = self.counts.get(base, 0)
        while True:
            n += 1
            name = f"{base}_{n}"
            if name not in self.taken:
                break
        self.counts[base] = n
        self.taken.add(name)
        return name


class _Substitute(ast.NodeTransformer):
    def __init__(self, subs):
        self.subs = subs

    def _replacement(self, name, ctx):
        value = self.subs[name]
        if isinstance(value, str):
            return ast.Name(id=value, ctx=ctx)
        if isinstance(value, ast.AST):
            value = copy.copy(value)
            if hasattr(value, "ctx"):
                value.ctx = ctx
            return value
        return ast.Constant(value=value)

    def visit_Name(self, node):
        if node.id in self.subs:
            return self._replacement(node.id, node.ctx)
        return node

    def visit_arg(self, node):
        if node.arg in self.subs and isinstance(self.subs[node.arg], str):
            node.arg = self.subs[node.arg]
        return node

    def visit_FunctionDef(self, node):
        if node.name in self.subs and isinstance(self.subs[node.name], str):
            node.name = self.subs[node.name]
        self.generic_visit(node)
        return node

    def visit_Nonlocal(self, node):
        node.names = [self.subs.get(n, n) if isinstance(self.subs.get(n, n), str) else n for n in node.names]
        return node

    def visit_Expr(self, node):
        # A placeholder standing alone as a statement may expand to statements.
        if isinstance(node.value, ast.Name) and node.value.id in self.subs:
            value = self.subs[node.value.id]
            if isinstance(value, list):
                return value
        self.generic_visit(node)
        return node


def replace(template: str, anchor: ast.AST | None = None, **subs) -> list[ast.stmt]:
    """Statements of `template` with placeholders substituted, located at `anchor`."""
    tree = ast.parse(template)
    if anchor is not None:
        # Locate the template's own nodes first; substituted user nodes keep theirs.
        for sub in ast.walk(tree):
            if "lineno" in sub._attributes:
                ast.copy_location(sub, anchor)
    tree = _Substitute(subs).visit(tree)
    return tree.body


def replace_expr(template: str, anchor: ast.AST | None = None, **subs) -> ast.expr:
    (stmt,) = replace(template, anchor, **subs)
    assert isinstance(stmt, ast.Expr)
    return stmt.value
