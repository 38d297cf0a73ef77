"""The conversion pipeline: user function -> graph builder, in one readable function.

`transform` lists the lowerings in the order they run; each line says why it
stands where it stands.  `convert` caches the result per function object and
compiles the builder with the user's file name and line numbers, so a
traceback from inside a builder points at the user's own source.
"""
from __future__ import annotations

import ast
import builtins
import dataclasses
import types
import weakref

from profiler import code_key

from codegen import operators
from codegen.analysis import local_names, parameter_names
from codegen.lowering.break_continue import BreakContinue
from codegen.lowering.calls import CallsAndReads
from codegen.lowering.expressions import Expressions
from codegen.lowering.if_statements import IfStatements
from codegen.lowering.join_calls import JoinCalls
from codegen.lowering.loops import Loops
from codegen.lowering.return_statements import ReturnStatements
from codegen.lowering.state_writes import StateWrites, declared_names
from codegen.lowering.unsupported import UnsupportedConstructs
from codegen.sites import SiteTable
from codegen.source import parse_function
from codegen.templates import JN, Namer, replace


class ControlFlow(IfStatements, Loops):
    """`if`, `for` and `while` in one pass: each computes the names it assigns
    before its children are lowered, which hides assignments in nested functions."""


@dataclasses.dataclass
class ConvertedFunction:
    fn: types.FunctionType
    key: str                  # the profiler's code key: facts for this function
    code: types.CodeType      # the user's code object
    filename: str
    builder: types.FunctionType
    sites: SiteTable
    source: str               # the builder, as Python text (show_code)


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


_CACHE: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def convert(fn) -> ConvertedFunction:
    cached = _CACHE.get(fn)
    if cached is not None:
        return cached
    src = parse_function(fn)
    node = src.node
    sites = transform(node, src.filename)
    builder = _compile_builder(node, src.filename)
    builder.__defaults__ = fn.__defaults__
    builder.__kwdefaults__ = fn.__kwdefaults__
    converted = ConvertedFunction(fn, code_key(fn), fn.__code__, src.filename, builder, sites, ast.unparse(node))
    _CACHE[fn] = converted
    return converted


def compile_block(cycle_function, block) -> ConvertedFunction:
    """A machine block (see `codegen.lowering.recursion`) lowered and compiled like a function."""
    fn = cycle_function.fn
    node = cycle_function.block_source(block)
    sites = transform(node, cycle_function.filename)
    builder = _compile_builder(node, cycle_function.filename)
    return ConvertedFunction(fn, code_key(fn), fn.__code__, cycle_function.filename, builder, sites,
                             ast.unparse(node))


def _compile_builder(node: ast.FunctionDef, filename: str):
    """Compile a lowered function inside `def __janus_factory__(jn)`, with the user's file name and
    line numbers (tracebacks point at their source); `jn` is bound to the operators module."""
    factory = ast.FunctionDef(name="__janus_factory__", args=ast.arguments(
        posonlyargs=[], args=[ast.arg(arg=JN)], kwonlyargs=[], kw_defaults=[], defaults=[]),
        body=[node, ast.Return(value=ast.Name(id=node.name, ctx=ast.Load()))], decorator_list=[], returns=None,
        type_params=[])
    ast.copy_location(factory, node)
    module = ast.Module(body=[factory], type_ignores=[])
    ast.fix_missing_locations(module)
    namespace = {"__builtins__": builtins}
    exec(compile(module, filename, "exec"), namespace)
    return namespace["__janus_factory__"](operators)
