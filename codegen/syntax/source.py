"""Reads a function's source as an AST whose spans are the file's own.

Profile sites are named by `(lineno, col, end_lineno, end_col)` in the
original file, so the AST must use the same coordinates: line numbers are
shifted by the function's first line and, for indented functions (methods,
nested functions), columns by the indentation `textwrap.dedent` removed.
"""
from __future__ import annotations

import ast
import dataclasses
import inspect
import textwrap
import types

from codegen.errors import ConversionError, Reason


@dataclasses.dataclass
class FunctionSource:
    fn: types.FunctionType
    node: ast.FunctionDef
    filename: str
    text: str


def _indent_of(text: str) -> int:
    for line in text.splitlines():
        if line.strip():
            return len(line) - len(line.lstrip())
    return 0


def parse_function(fn) -> FunctionSource:
    code = fn.__code__
    filename = code.co_filename
    try:
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError) as exc:
        raise ConversionError(Reason("no-source", filename, f"cannot read the source of {fn.__qualname__}: {exc}",
                                     "define the function in a file, not in an interactive prompt or exec()")) from None
    text = "".join(lines)
    indent = _indent_of(text)
    try:
        module = None if fn.__name__ == "<lambda>" else ast.parse(textwrap.dedent(text))
    except SyntaxError:          # the lines of a lambda inside a longer expression
        module = None
    node = module.body[0] if module is not None else None
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        raise ConversionError(Reason("no-source", f"{filename}:{first}", f"{fn.__qualname__} is not defined by a def statement",
                                     "lambdas are called as they are"))
    ast.increment_lineno(module, first - 1)
    if indent:
        for sub in ast.walk(module):
            if hasattr(sub, "col_offset"):
                sub.col_offset += indent
                if getattr(sub, "end_col_offset", None) is not None:
                    sub.end_col_offset += indent
    return FunctionSource(fn, node, filename, text)


def span(node) -> tuple[int, int, int, int]:
    return (node.lineno, node.col_offset, node.end_lineno, node.end_col_offset)
