"""The lowering pipeline: a user function's AST -> a graph builder's AST, as one list.

`STEPS` lists the lowerings in the order they run, each with why it stands
where it stands; `transform` runs them over one function.  Nothing here
imports TensorFlow: the result is an AST that `codegen.compiler` compiles
against the `jn` operators.
"""
from __future__ import annotations

import ast

from codegen.lowering import (asserts, break_continue, calls, expressions, join_calls, local_lists,
                              return_statements, state_writes, unsupported)
from codegen.lowering.base import LoweringContext
from codegen.lowering.if_statements import IfStatements
from codegen.lowering.loops import Loops
from codegen.syntax.analysis import local_names, parameter_names
from codegen.syntax.sites import SiteTable
from codegen.syntax.templates import JN, replace


class ControlFlow(IfStatements, Loops):
    """`if`, `for` and `while` in one pass: each computes the names it assigns
    before its children are lowered, which hides assignments in nested functions."""


def declare_locals(node: ast.FunctionDef, ctx: LoweringContext) -> None:
    """`y = jn.UNDEF` for every local but the parameters, first in the body."""
    assigned = sorted(local_names(node) - set(parameter_names(node)) - ctx.declared)
    if assigned:
        node.body = replace("\n".join(f"{n} = {JN}.UNDEF" for n in assigned), node) + node.body


def plain_signature(node: ast.FunctionDef, ctx: LoweringContext) -> None:
    """No decorators, annotations or default values: janus passes the arguments itself."""
    node.decorator_list = []
    node.returns = None
    for arg in node.args.posonlyargs + node.args.args + node.args.kwonlyargs:
        arg.annotation = None
    node.args.defaults = []
    node.args.kw_defaults = [None] * len(node.args.kw_defaults)


STEPS = [
    (unsupported.transform,
     "refuse what stays imperative before touching anything"),
    (asserts.transform,
     "`assert` to the `if` it means, before anything reads the statements: each later step sees an `if`"),
    (local_lists.transform,
     "which lists only the function holds: reads the user's own uses, before any is rewritten"),
    (join_calls.transform,
     "independent calls in Python loops may join one recursion machine: sees the user's own "
     "writes (before they become operators) and calls (before they become jn.call)"),
    (state_writes.transform,
     "writes to the heap become deferred operators: must see `global`/`nonlocal` before names "
     "are classified, and runs before calls so its operands are lowered like any other"),
    (calls.transform,
     "calls and free-name reads, while the scopes are still the user's own"),
    (break_continue.transform,
     "break/continue to flags: loops gain exit tests, so before loops are lowered"),
    (return_statements.transform,
     "early returns to flags, after break (it extends the same exit tests)"),
    (expressions.transform,
     "boolean operators, chains, conditional expressions: they read the flags made above"),
    (declare_locals,
     "every local exists from the start, so `nonlocal` in lowered bodies always has a binding; "
     "computed before statements are lowered, which hides assignments in nested functions"),
    (ControlFlow.transform,
     "statements last: bodies become nested functions over nonlocal state"),
    (plain_signature,
     "the builder is called with the arguments janus passes"),
]


def transform(node: ast.FunctionDef, filename: str) -> SiteTable:
    """Lower `node` in place; returns its site table."""
    ctx = LoweringContext.for_function(node, filename)
    for step, _why in STEPS:
        step(node, ctx)
    return ctx.sites
