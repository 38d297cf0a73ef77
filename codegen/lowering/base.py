"""What every lowering shares: the context of one function's lowering, and the base class.

A lowering rewrites one user function's AST in place; `codegen.lowering.pipeline`
runs them in order, each through its module's `transform(node, ctx)`.  The
base class owns the one rule they all follow about scopes: the function being
lowered has its body lowered (`lower_function`); a `def` or `lambda` nested in
it is left as it is (`nested_function`), because a nested user function is
converted on its own when it is called.  A lowering that must also see nested
scopes says so by overriding `nested_function` (boolean operators, in every
nested def and lambda) or `visit_Lambda` (free-name reads, in lambdas only).
"""
from __future__ import annotations

import ast
import dataclasses

from codegen.syntax.sites import SiteTable
from codegen.syntax.analysis import declared_names, local_names
from codegen.syntax.templates import JN, Namer


@dataclasses.dataclass
class LoweringContext:
    """One function's lowering: its file, the namer for fresh names, the table of profile
    sites the generated code refers to, and the names it declares `global` or `nonlocal`.

    The function's local names are not carried: lowerings add locals (temporaries, flags), so
    a lowering that needs them computes `local_names` on the function as it stands then."""

    filename: str
    namer: Namer
    sites: SiteTable
    declared: set[str]
    growable: set[str] = dataclasses.field(default_factory=set)   # see `local_lists`
    front: set[str] = dataclasses.field(default_factory=set)      # growable lists the function inserts into

    @classmethod
    def for_function(cls, node: ast.FunctionDef, filename: str) -> "LoweringContext":
        declared_global, declared_nonlocal = declared_names(node)
        namer = Namer({n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | local_names(node) | {JN})
        return cls(filename, namer, SiteTable(filename), declared_global | declared_nonlocal)


class Lowering(ast.NodeTransformer):
    def __init__(self, ctx: LoweringContext):
        self.ctx = ctx
        self.namer = ctx.namer
        self.sites = ctx.sites
        self.filename = ctx.filename
        self.declared = ctx.declared
        self._top = None

    @classmethod
    def transform(cls, node: ast.FunctionDef, ctx: LoweringContext) -> None:
        """Lower the function `node` in place."""
        cls(ctx).visit(node)

    def visit_FunctionDef(self, node):
        if self._top is None:
            self._top = node
            return self.lower_function(node)
        return self.nested_function(node)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node):
        return self.nested_function(node)

    def lower_function(self, node):
        """The function being lowered: every field of it, by default."""
        return self.generic_visit(node)

    def nested_function(self, node):
        """A `def` or `lambda` inside it: left as written, by default."""
        return node

    def lower_defaults(self, args: ast.arguments) -> None:
        """Lower the defaults of a nested `def` or `lambda`: they are evaluated in this scope."""
        args.defaults = [self.visit(d) for d in args.defaults]
        args.kw_defaults = [d if d is None else self.visit(d) for d in args.kw_defaults]

    def lower_statements(self, stmts: list[ast.stmt]) -> list[ast.stmt]:
        """Lower a statement list, splicing statements that lower to several."""
        out: list[ast.stmt] = []
        for stmt in stmts:
            new = self.visit(stmt)
            out.extend(new if isinstance(new, list) else [new])
        return out
