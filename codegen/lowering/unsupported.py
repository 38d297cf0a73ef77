"""Finds constructs janus does not lower, before any lowering runs.

A function using one of them runs imperatively; the report names the line
and the reason.  Checked first so that no later lowering has to cope with
them.  (State writes are lowered by `state_writes`; objects that cannot take
deferred writes are refused at build time, where their class is known.)
"""
from __future__ import annotations

import ast

from codegen.errors import unsupported
from codegen.syntax.analysis import local_names


class UnsupportedConstructs(ast.NodeVisitor):
    """Raises `ConversionError` at the first construct that must stay imperative; changes nothing.
    Nested functions and lambdas are not checked: they stay Python values.

    Example::

        def f(x):
            yield x

    raises::

        ConversionError: [generator] <example>:2: generators are not converted (hint: return a list instead of yielding)

    Example::

        def f(xs):
            def items():
                yield from xs
            return list(items())

    lowers to::

        def f(xs):
            def items():
                yield from xs
            return list(items())
    """

    def __init__(self, filename: str, local: set[str]):
        self.filename = filename
        self.local = local
        self.depth = 0          # nested def/lambda depth: their bodies stay Python

    def _fail(self, kind, node, explanation, hint=""):
        raise unsupported(kind, self.filename, node, explanation, hint)

    def visit_FunctionDef(self, node):
        self.depth += 1
        if self.depth > 1:
            # Nested functions are Python values; their bodies are not converted.
            self.depth -= 1
            return
        self.generic_visit(node)
        self.depth -= 1

    def visit_AsyncFunctionDef(self, node):
        self._fail("coroutine", node, "async functions are not converted")

    def visit_Lambda(self, node):
        pass

    def visit_Yield(self, node):
        self._fail("generator", node, "generators are not converted", "return a list instead of yielding")

    visit_YieldFrom = visit_Yield

    def visit_Await(self, node):
        self._fail("coroutine", node, "await is not converted")

    def visit_Try(self, node):
        if node.handlers:
            self._fail("try-except", node, "try/except whose handler could run is not converted",
                       "move the try/except out of the speculated function")
        for stmt in node.finalbody:
            exits = [sub for sub in _loop_exits(stmt)]
            if exits:
                self._fail("finally-exit", exits[0], "break/continue inside finally is not converted")
        self.generic_visit(node)

    visit_TryStar = visit_Try

    def visit_ClassDef(self, node):
        self._fail("class-def", node, "in-line class definitions are not converted", "define the class at module level")

    def visit_Import(self, node):
        self._fail("import", node, "in-line imports are not converted", "import at module level")

    visit_ImportFrom = visit_Import

    def visit_Match(self, node):
        self._fail("match", node, "match statements are not converted yet")



def _loop_exits(node):
    """`break`/`continue` statements of `node` that leave a loop around it (not one inside it)."""
    if isinstance(node, (ast.Break, ast.Continue)):
        yield node
        return
    for child in ast.iter_child_nodes(node):
        if not isinstance(child, (ast.For, ast.While, ast.AsyncFor, ast.FunctionDef, ast.AsyncFunctionDef,
                                  ast.Lambda, ast.ClassDef)):
            yield from _loop_exits(child)


def transform(node, ctx) -> None:
    """Raise `ConversionError` at the first construct of `node` that must stay imperative."""
    UnsupportedConstructs(ctx.filename, local_names(node) - ctx.declared).visit(node)
