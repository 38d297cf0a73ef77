"""Finds constructs janus does not lower, before any lowering runs.

A function using one of them runs imperatively; the report names the line
and the reason.  Checked first so that no later lowering has to cope with
them.  State writes (attributes, globals, subscripts of objects that may be
reachable from outside) are listed here until deferred state lands.
"""
from __future__ import annotations

import ast

from codegen.errors import unsupported


class UnsupportedConstructs(ast.NodeVisitor):
    """Raises `ConversionError` at the first construct that must stay imperative.

        def f(x):
            yield x          ->  ConversionError [generator] file.py:2
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
        self.generic_visit(node)

    visit_TryStar = visit_Try

    def visit_ClassDef(self, node):
        self._fail("class-def", node, "in-line class definitions are not converted", "define the class at module level")

    def visit_Import(self, node):
        self._fail("import", node, "in-line imports are not converted", "import at module level")

    visit_ImportFrom = visit_Import

    def visit_Global(self, node):
        self._fail("state-write", node, f"writes to global {', '.join(node.names)} are not converted yet")

    def visit_Nonlocal(self, node):
        self._fail("state-write", node, f"writes to nonlocal {', '.join(node.names)} are not converted yet")

    def visit_Match(self, node):
        self._fail("match", node, "match statements are not converted yet")

    def _check_target(self, target, stmt):
        if isinstance(target, ast.Attribute):
            self._fail("state-write", stmt, f"attribute write `{ast.unparse(target)}` is not converted yet",
                       "return the new value instead of storing it on an object")
        if isinstance(target, ast.Subscript):
            root = target.value
            while isinstance(root, (ast.Subscript, ast.Attribute)):
                root = root.value
            if not (isinstance(root, ast.Name) and root.id in self.local):
                self._fail("state-write", stmt, f"subscript write `{ast.unparse(target)}` is not converted yet")
        if isinstance(target, (ast.Tuple, ast.List)):
            for elt in target.elts:
                self._check_target(elt, stmt)
        if isinstance(target, ast.Starred):
            self._check_target(target.value, stmt)

    def visit_Assign(self, node):
        for target in node.targets:
            self._check_target(target, node)
        self.generic_visit(node)

    def visit_AugAssign(self, node):
        self._check_target(node.target, node)
        self.generic_visit(node)

    def visit_AnnAssign(self, node):
        self._check_target(node.target, node)
        self.generic_visit(node)

    def visit_Delete(self, node):
        for target in node.targets:
            self._check_target(target, node)

    def visit_For(self, node):
        self._check_target(node.target, node)
        if node.orelse:
            self._fail("for-else", node, "for/else is not converted yet")
        self.generic_visit(node)

    def visit_While(self, node):
        if node.orelse:
            self._fail("while-else", node, "while/else is not converted yet")
        self.generic_visit(node)

    def visit_With(self, node):
        for item in node.items:
            if item.optional_vars is not None:
                self._check_target(item.optional_vars, node)
        self.generic_visit(node)
