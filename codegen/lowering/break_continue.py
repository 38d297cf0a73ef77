"""Lowers `break` and `continue` to flag variables, as AutoGraph does.

Runs before `if`/loop lowering so that those only ever see structured control
flow.  A flag set by Python-valued or speculated code stays a Python bool at
build time, so the guarding `if not flag:` costs nothing in the graph.
"""
from __future__ import annotations

import ast

from codegen.lowering.base import Lowering
from codegen.syntax.annotations import Anno, getanno, setanno
from codegen.syntax.templates import JN, replace, replace_expr


def _contains(node, kinds, stop=(ast.For, ast.While, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
    """Whether `node` holds one of `kinds` that belongs to the enclosing loop (a nested loop's
    `else` belongs to it too)."""
    if isinstance(node, kinds):
        return True
    for child in ast.iter_child_nodes(node):
        if isinstance(child, stop):
            if isinstance(child, (ast.For, ast.While)) and any(_contains(s, kinds, stop) for s in child.orelse):
                return True
            continue
        if _contains(child, kinds, stop):
            return True
    return False


def guard_rest(stmts: list[ast.stmt], flag: str, sets_flag) -> list[ast.stmt]:
    """After a statement that may set `flag`, run the rest of the block only if it did not."""
    out: list[ast.stmt] = []
    for i, stmt in enumerate(stmts):
        if isinstance(stmt, (ast.If, ast.With, ast.Try)) and sets_flag(stmt):
            for field in ("body", "orelse", "finalbody"):
                if getattr(stmt, field, None):
                    setattr(stmt, field, guard_rest(getattr(stmt, field), flag, sets_flag))
        out.append(stmt)
        if sets_flag(stmt) and i < len(stmts) - 1:
            (guard,) = replace("if not flag:\n    pass\n", stmt, flag=flag)
            setanno(guard, Anno.GENERATED, True)
            guard.body = guard_rest(stmts[i + 1:], flag, sets_flag)
            out.append(guard)
            break
    return out


class BreakContinue(Lowering):
    """`break` and `continue` become flags that guard the rest of the loop body; a loop's `else`
    follows the loop, under `if not <break flag>:` when the loop can break.

    Example::

        def f(x):
            while x > 0:
                if x == 3:
                    break
                x = x - 1
            return x

    lowers to::

        def f(x):
            brk_1 = False
            while jn.not_any(brk_1) and x > 0:
                if x == 3:
                    brk_1 = True
                if not brk_1:
                    x = x - 1
            return x
    """

    def __init__(self, ctx):
        super().__init__(ctx)
        self.stack: list[tuple[str | None, str | None]] = []

    def visit_Break(self, node):
        brk, _ = self.stack[-1]
        return replace("flag = True", node, flag=brk)

    def visit_Continue(self, node):
        _, cont = self.stack[-1]
        return replace("flag = True", node, flag=cont)

    def _lower_loop(self, node):
        has_break = any(_contains(s, ast.Break) for s in node.body)
        has_continue = any(_contains(s, ast.Continue) for s in node.body)
        brk = self.namer.new("brk") if has_break else None
        cont = self.namer.new("cont") if has_continue else None
        self.stack.append((brk, cont))
        node.body = self._visit_block(node.body)
        self.stack.pop()
        # `else`: runs when the loop ended without a `break` (its own break/continue are the
        # enclosing loop's); a `return` in the loop skips it through the return lowering.
        orelse, node.orelse = self._visit_block(node.orelse), []
        after = orelse
        if orelse and brk:
            (after,) = replace("if not flag:\n    pass\n", node, flag=brk)
            after.body = orelse
            after = [after]
        before: list[ast.stmt] = []
        if cont:
            node.body = guard_rest(node.body, cont, lambda s: _contains(s, ast.Assign) and _sets(s, cont))
            node.body = replace("flag = False", node, flag=cont) + node.body
        if brk:
            node.body = guard_rest(node.body, brk, lambda s: _sets(s, brk))
            before = replace("flag = False", node, flag=brk)
            # `jn.not_any`, not `not`: inside a tensor loop the flag is a varying Python bool, whose
            # `and` with a tensor test would need its value; a loop test only needs its truth
            not_brk = replace_expr(f"{JN}.not_any(flag)", node, flag=brk)
            if isinstance(node, ast.While):
                node.test = ast.copy_location(ast.BoolOp(op=ast.And(), values=[not_brk, node.test]), node.test)
            else:
                setanno(node, Anno.EXTRA_TESTS, getanno(node, Anno.EXTRA_TESTS, ()) + (brk,))
        return before + [node] + after

    def _visit_block(self, stmts):
        return [s for stmt in stmts for s in (lambda r: r if isinstance(r, list) else [r])(self.visit(stmt))]

    visit_For = visit_While = _lower_loop


def _sets(stmt, flag: str) -> bool:
    for sub in ast.walk(stmt):
        if isinstance(sub, ast.Name) and sub.id == flag and isinstance(sub.ctx, ast.Store):
            return True
    return False


transform = BreakContinue.transform
