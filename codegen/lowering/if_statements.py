"""Lowers `if` statements to guarded single branches, `tf.cond`, or plain Python.

Which one is decided at build time by `jn.if_stmt`: a Python predicate runs
the taken side as ordinary Python; a tensor predicate whose profile saw one
side only runs that side behind an in-graph guard; otherwise `tf.cond`, with
the variables either side assigns as its outputs.
"""
from __future__ import annotations

import ast

from codegen.syntax.analysis import assigned_names
from codegen.lowering.control_flow import (StatementLowering, body_function, grown_lists, list_modes,
                                           state_functions)
from codegen.syntax.annotations import Anno, getanno
from codegen.syntax.templates import JN, replace


class IfStatements(StatementLowering):
    """An `if` becomes two body functions, state accessors and `jn.if_stmt`.

    Example::

        def f(x):
            if x > 0:
                y = x
            else:
                y = -x
            return y

    lowers to::

        def f(x):

            def if_body_1():
                nonlocal y
                y = x

            def else_body_1():
                nonlocal y
                y = -x

            def get_state_1():
                return (y,)

            def set_state_1(vals):
                nonlocal y
                y, = vals
            jn.if_stmt(x > 0, if_body_1, else_body_1, get_state_1, set_state_1, ('y',), 0)
            return y
    """

    def visit_If(self, node):
        names = assigned_names(node.body + node.orelse)
        lists = grown_lists(self.ctx, node.body + node.orelse, names)
        names += lists
        # Flag tests made by break/return lowering have no profile site of their own.
        site = None if getanno(node, Anno.GENERATED) else self.sites.branch(node.test, "if")
        body_raises, else_raises = _raises(node.body), _raises(node.orelse)
        raises = body_raises if body_raises != else_raises else None      # the side that never completes
        self.generic_visit(node)
        body_name, else_name = self.namer.new("if_body"), self.namer.new("else_body")
        get_name, set_name = self.namer.new("get_state"), self.namer.new("set_state")
        stmts = [body_function(body_name, names, node.body, node),
                 body_function(else_name, names, node.orelse, node)]
        stmts += state_functions(names, get_name, set_name, node)
        stmts += replace(f"{JN}.if_stmt(test, body, orelse, get_state, set_state, names, site"
                         + (", lists" if lists else "") + (", raises=raises)" if raises is not None else ")"), node,
                         test=node.test, body=body_name, orelse=else_name, get_state=get_name, set_state=set_name,
                         names=tuple(names), site=site, lists=list_modes(self.ctx, lists), raises=raises)
        return stmts


def _raises(stmts) -> bool:
    """The statements end in a `raise`: that side of the `if` never completes."""
    return bool(stmts) and isinstance(stmts[-1], ast.Raise)


transform = IfStatements.transform
