"""The lowering pipeline: a user function's AST -> a graph builder's AST, in one readable function.

`transform` lists the lowerings in the order they run; each line says why it
stands where it stands.  Nothing here imports TensorFlow: the result is an AST
that `codegen.compiler` compiles against the `jn` operators.
"""
from __future__ import annotations

import ast

from codegen.lowering.break_continue import BreakContinue
from codegen.lowering.calls import CallsAndReads
from codegen.lowering.expressions import Expressions
from codegen.lowering.if_statements import IfStatements
from codegen.lowering.join_calls import JoinCalls
from codegen.lowering.loops import Loops
from codegen.lowering.return_statements import ReturnStatements
from codegen.lowering.state_writes import StateWrites, declared_names
from codegen.lowering.unsupported import UnsupportedConstructs
from codegen.syntax.analysis import local_names, parameter_names
from codegen.syntax.sites import SiteTable
from codegen.syntax.templates import JN, Namer, replace


class ControlFlow(IfStatements, Loops):
    """`if`, `for` and `while` in one pass: each computes the names it assigns
    before its children are lowered, which hides assignments in nested functions."""


def transform(node: ast.FunctionDef, filename: str):
    """Lower `node` in place; returns its site table."""
    declared_global, declared_nonlocal = declared_names(node)
    declared = declared_global | declared_nonlocal
    namer = Namer({n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | local_names(node) | {JN})
    sites = SiteTable(filename)
    # 1. Refuse what stays imperative before touching anything.
    UnsupportedConstructs(filename, local_names(node) - declared).visit(node)
    # 2a. Independent calls in Python loops may join one recursion machine; must see the user's
    #     own writes (before they become operators) and calls (before they become jn.call).
    JoinCalls(namer, filename, declared).generic_visit(node)
    # 2. Writes to the heap become deferred operators; must see `global`/`nonlocal` before
    #    names are classified, and runs before calls so its operands are lowered like any other.
    StateWrites(filename, namer, declared).visit(node)
    # 3. Calls and free-name reads, while the scopes are still the user's own.
    CallsAndReads(local_names(node) - declared).visit(node)
    # 4. break/continue to flags, then early returns to flags: loops gain exit tests,
    #    so both must run before loops are lowered (return after break: it extends them).
    BreakContinue(namer).visit(node)
    ReturnStatements(namer).visit(node)
    # 5. Boolean operators, chains, conditional expressions: they read flags made above.
    Expressions(sites, namer).visit(node)
    # 6. Statements last: bodies become nested functions over nonlocal state.
    assigned = sorted(local_names(node) - set(parameter_names(node)) - declared)
    ControlFlow(sites, namer).visit(node)
    # Every local exists from the start, so `nonlocal` in bodies always has a binding.
    if assigned:
        node.body = replace("\n".join(f"{n} = {JN}.UNDEF" for n in assigned), node) + node.body
    node.decorator_list = []
    node.returns = None
    for arg in node.args.posonlyargs + node.args.args + node.args.kwonlyargs:
        arg.annotation = None
    node.args.defaults = []
    node.args.kw_defaults = [None] * len(node.args.kw_defaults)
    return sites
