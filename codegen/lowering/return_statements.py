"""Lowers early `return` to a flag and a single return at the end.

Runs after break/continue lowering (a return inside a loop becomes one more
loop-exit condition) and before `if`/loop lowering.  The returned value and
the flag are ordinary variables, so `if`/loop lowering carries them like any
other state.
"""
from __future__ import annotations

import ast

from codegen.lowering.base import Lowering
from codegen.lowering.break_continue import guard_rest
from codegen.syntax.annotations import Anno, getanno, setanno
from codegen.syntax.templates import JN, replace, replace_expr


def _returns(node) -> bool:
    if isinstance(node, ast.Return):
        return True
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if _returns(child):
            return True
    return False


class ReturnStatements(Lowering):
    """Early `return`s become a flag, a result variable and one final `return`.

    Example::

        def f(x):
            if x > 0:
                return x
            y = -x
            return y

    lowers to::

        def f(x):
            do_return_1 = False
            retval_1 = jn.NO_RETURN
            if x > 0:
                retval_1 = x
                do_return_1 = True
            if not do_return_1:
                y = -x
                retval_1 = y
                do_return_1 = True
            return jn.returned(retval_1, do_return_1)
    """

    def __init__(self, ctx):
        super().__init__(ctx)
        self.flag = self.value = None

    def lower_function(self, node):
        if not any(_returns(s) for s in node.body[:-1]) and not (
                node.body and not isinstance(node.body[-1], ast.Return) and _returns(node.body[-1])):
            return node                      # no return, or one final return: nothing to lower
        self.flag, self.value = self.namer.new("do_return"), self.namer.new("retval")
        body = self._block(node.body)
        node.body = (replace(f"flag = False\nvalue = {JN}.NO_RETURN\n", node, flag=self.flag, value=self.value)
                     + body + replace(f"return {JN}.returned(value, flag)", node, value=self.value, flag=self.flag))
        return node

    def _block(self, stmts):
        out = []
        for stmt in stmts:
            new = self.visit(stmt)
            out.extend(new if isinstance(new, list) else [new])
        return guard_rest(out, self.flag, _sets_flag(self.flag))

    def visit_Return(self, node):
        value = node.value if node.value is not None else ast.copy_location(ast.Constant(None), node)
        return replace("value = v\nflag = True\n", node, value=self.value, v=value, flag=self.flag)

    def _visit_blocks(self, node):
        for field in ("body", "orelse", "finalbody"):
            if hasattr(node, field) and getattr(node, field):
                setattr(node, field, self._block(getattr(node, field)))
        return node

    visit_If = visit_With = _visit_blocks

    def visit_Try(self, node):
        """A `finally` runs even after the try body returned, and its own `return` wins: it runs
        with the flag cleared, and the flag is set again afterwards if the body had returned."""
        if not any(_returns(s) for s in node.finalbody):
            return self._visit_blocks(node)
        for field in ("body", "orelse"):
            if getattr(node, field):
                setattr(node, field, self._block(getattr(node, field)))
        before = self.namer.new("do_return_before_finally")
        node.finalbody = (replace("before = flag\nflag = False\n", node, before=before, flag=self.flag)
                          + self._block(node.finalbody)
                          + replace("flag = flag or before", node, before=before, flag=self.flag))
        return node

    def _visit_loop(self, node):
        had = any(_returns(s) for s in node.body)
        self._visit_blocks(node)
        if had:
            not_ret = replace_expr("not flag", node, flag=self.flag)
            if isinstance(node, ast.While):
                test = ast.copy_location(ast.BoolOp(op=ast.And(), values=[not_ret, node.test]), node.test)
                node.test = test
            else:
                setanno(node, Anno.EXTRA_TESTS, getanno(node, Anno.EXTRA_TESTS, ()) + (self.flag,))
        return node

    visit_For = visit_While = _visit_loop


def _sets_flag(flag):
    def sets(stmt):
        return any(isinstance(sub, ast.Name) and sub.id == flag and isinstance(sub.ctx, ast.Store)
                   for sub in ast.walk(stmt))
    return sets


transform = ReturnStatements.transform
