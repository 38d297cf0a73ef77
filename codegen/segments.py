"""Compiling a split function (`codegen.syntax.split`): the driver and its segments as Python
functions of the user's globals and closure cells, with the user's file name and lines.

Each segment's AST is registered, so `convert` reads it as it reads a function from its file;
the driver reaches the segments through closure cells that hold whatever runs them (janus puts
a speculated function there).
"""
from __future__ import annotations

import ast
import builtins
import types

from codegen.syntax.source import parse_function, register_made
from codegen.syntax.split import CannotSplit, Split, split

__all__ = ["CannotSplit", "Split", "split_function"]


def split_function(fn: types.FunctionType, break_lines: set[int], run_segment) -> tuple[types.FunctionType, list]:
    """The driver of `fn` split at `break_lines`, and its segments as `(Segment, runner)`: the
    driver calls `runner = run_segment(function)` for each.  Raises `CannotSplit`."""
    src = parse_function(fn)
    plan = split(src.node, break_lines)
    freevars = list(fn.__code__.co_freevars)
    names = [seg.name for seg in plan.segments]
    factory = ast.FunctionDef(
        name="__janus_split__", args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[],
                                                   defaults=[]),
        body=[ast.Assign(targets=[ast.Name(id=n, ctx=ast.Store())], value=ast.Constant(None))
              for n in freevars + names] + [plan.driver] + [seg.node for seg in plan.segments]
        + [ast.Return(value=ast.Tuple(elts=[ast.Name(id=n, ctx=ast.Load()) for n in freevars + names],
                                      ctx=ast.Load()))],
        decorator_list=[], returns=None, type_params=[])
    ast.copy_location(factory, src.node)
    module = ast.fix_missing_locations(ast.Module(body=[factory], type_ignores=[]))
    namespace = {"__builtins__": builtins}
    exec(compile(module, src.filename, "exec"), namespace)
    codes = {c.co_name: c for c in namespace["__janus_split__"].__code__.co_consts if isinstance(c, types.CodeType)}
    cells = dict(zip(freevars, fn.__closure__ or ()))
    segments = []
    for seg in plan.segments:
        code = codes[seg.name].replace(co_qualname=f"{fn.__qualname__}.<lines {seg.lines[0]}-{seg.lines[1]}>")
        register_made(code, seg.node, src.filename)
        made = types.FunctionType(code, fn.__globals__, seg.name, None, tuple(cells[n] for n in code.co_freevars))
        runner = run_segment(made)
        cells[seg.name] = types.CellType(runner)
        segments.append((seg, runner))
    code = codes[plan.driver.name].replace(co_qualname=fn.__qualname__)
    driver = types.FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__,
                                tuple(cells[n] for n in code.co_freevars))
    driver.__kwdefaults__ = fn.__kwdefaults__
    return driver, segments
