"""Reads a function's source as an AST whose spans are the file's own.

Profile sites are named by `(lineno, col, end_lineno, end_col)` in the
original file, so the AST must use the same coordinates: line numbers are
shifted by the function's first line and, for indented functions (methods,
nested functions), columns by the indentation `textwrap.dedent` removed.
"""
from __future__ import annotations

import ast
import copy
import dataclasses
import inspect
import linecache
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


# Functions janus made from a user's AST (graph segments): code object -> (node, filename).
_MADE: dict = {}


def register_made(code, node: ast.FunctionDef, filename: str) -> None:
    """Give `parse_function` the AST of a function compiled from a user's nodes (no file holds it)."""
    _MADE[code] = (node, filename)


def parse_function(fn) -> FunctionSource:
    code = fn.__code__
    filename = code.co_filename
    if code in _MADE:
        node, filename = _MADE[code]
        return FunctionSource(fn, copy.deepcopy(node), filename, ast.unparse(node))
    if fn.__name__ == "<lambda>":
        return _parse_lambda(fn)
    try:
        lines, first = inspect.getsourcelines(code)     # (of this code: not what `__wrapped__` names)
    except (OSError, TypeError) as exc:
        raise ConversionError(Reason("no-source", filename, f"cannot read the source of {fn.__qualname__}: {exc}",
                                     "define the function in a file, not in an interactive prompt or exec()")) from None
    text = "".join(lines)
    indent = _indent_of(text)
    module = ast.parse(textwrap.dedent(text))
    node = module.body[0]
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        raise ConversionError(Reason("no-source", f"{filename}:{first}",
                                     f"{fn.__qualname__} is not defined by a def statement", ""))
    ast.increment_lineno(module, first - 1)
    if indent:
        for sub in ast.walk(module):
            if hasattr(sub, "col_offset"):
                sub.col_offset += indent
                if getattr(sub, "end_col_offset", None) is not None:
                    sub.end_col_offset += indent
    _explicit_super(node, fn)
    mangle_private_names(node, code.co_qualname)
    return FunctionSource(fn, node, filename, text)


class _ZeroArgumentSuper(ast.NodeTransformer):
    """`super()` in the function's own body (not in a nested function, lambda or comprehension,
    whose `super()` means their own first argument) becomes `super(__class__, first)`."""

    def __init__(self, first: str):
        self.first = first

    def visit_Call(self, node):
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id == "super" and not node.args and not node.keywords:
            node.args = [ast.copy_location(ast.Name(id="__class__", ctx=ast.Load()), node),
                         ast.copy_location(ast.Name(id=self.first, ctx=ast.Load()), node)]
        return node

    def _own_scope(self, node):
        return node

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = visit_ClassDef = _own_scope
    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _own_scope


def _explicit_super(node: ast.FunctionDef, fn) -> None:
    """Python gives a method that calls `super()` a `__class__` cell and finds the instance in
    its first argument; the function janus compiles from the AST has no class around it, so the
    call names both, as `super(__class__, self)` would.  Only where the user's function has that
    cell and a first positional parameter (elsewhere eager raises, and so does the rewritten
    code's build, which then runs the function in Python)."""
    params = node.args.posonlyargs + node.args.args
    if "__class__" not in fn.__code__.co_freevars or not params:
        return
    rewrite = _ZeroArgumentSuper(params[0].arg)
    node.body = [rewrite.visit(stmt) for stmt in node.body]


def private_class(qualname: str) -> str | None:
    """The class whose body holds the function named `qualname` (the innermost one): the class
    Python mangles its private names with; None outside a class."""
    parts = qualname.split(".")
    for i in range(len(parts) - 2, -1, -1):
        if parts[i] != "<locals>" and parts[i + 1] != "<locals>":
            return parts[i]
    return None


class _Mangle(ast.NodeVisitor):
    """Python's private-name mangling (`__w` -> `_A__w`) of every identifier in a function of the
    body of class `A`: janus compiles the function's AST outside the class, where the compiler
    would not mangle.  A class defined inside mangles its own body by its own name, when it is
    compiled."""

    def __init__(self, prefix: str):
        self.prefix = prefix

    def m(self, name):
        if name and name.startswith("__") and not name.endswith("__") and "." not in name:
            return self.prefix + name
        return name

    def generic_visit(self, node):
        for field in ("id", "attr", "name", "rest"):        # (a call's keyword and a class pattern's
            value = getattr(node, field, None)               # attribute names are not mangled)
            if isinstance(value, str):
                setattr(node, field, self.m(value))
        if isinstance(node, ast.arg):
            node.arg = self.m(node.arg)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            node.names = [self.m(n) for n in node.names]
        if isinstance(node, ast.ClassDef):
            for child in node.bases + node.keywords + node.decorator_list:
                self.visit(child)
            return
        super().generic_visit(node)

    def visit_alias(self, node):
        node.asname = self.m(node.asname)      # (the module or attribute imported keeps its name)


def mangle_private_names(node: ast.FunctionDef, qualname: str) -> None:
    """Mangle, in place, the private names of `node` (the function `qualname`), as the compiler
    does in a class body; the function's own name stays."""
    cls = private_class(qualname)
    if cls is None or not cls.lstrip("_"):
        return
    visitor = _Mangle("_" + cls.lstrip("_"))
    for child in ast.iter_child_nodes(node):
        visitor.visit(child)


def span(node) -> tuple[int, int, int, int]:
    return (node.lineno, node.col_offset, node.end_lineno, node.end_col_offset)


def _parse_lambda(fn) -> FunctionSource:
    """A lambda as `def <lambda>(args): return body`, its nodes at their places in the file.

    The whole file is parsed, so the lambda may sit anywhere in a longer expression; the lambda is
    the one on the code's first line with the code's parameter names and, when several match,
    whose body holds the code's instructions."""
    code = fn.__code__
    filename, line = code.co_filename, code.co_firstlineno
    text = "".join(linecache.getlines(filename, fn.__globals__))
    if not text:
        raise ConversionError(Reason("no-source", f"{filename}:{line}", f"cannot read the source of {fn.__qualname__}",
                                     "define the function in a file, not in an interactive prompt or exec()"))
    names = list(code.co_varnames[:code.co_argcount + code.co_kwonlyargcount])
    found = [n for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Lambda) and n.lineno == line
             and [a.arg for a in n.args.posonlyargs + n.args.args + n.args.kwonlyargs] == names]
    if len(found) > 1:
        places = [(ln, col) for ln, _, col, _ in code.co_positions() if col is not None]
        found = [n for n in found if any((n.body.lineno, n.body.col_offset) <= p
                                         <= (n.body.end_lineno, n.body.end_col_offset) for p in places)]
    if len(found) != 1:
        raise ConversionError(Reason("no-source", f"{filename}:{line}",
                                     f"cannot tell which lambda of line {line} is {fn.__qualname__}",
                                     "define it with def, or give each lambda of the line its own line"))
    lam = found[0]
    node = ast.FunctionDef(name="__janus_lambda__", args=lam.args, body=[ast.copy_location(ast.Return(lam.body), lam.body)],
                           decorator_list=[], returns=None, type_params=[])
    ast.copy_location(node, lam)
    node.end_lineno, node.end_col_offset = lam.end_lineno, lam.end_col_offset
    mangle_private_names(node, code.co_qualname)
    return FunctionSource(fn, node, filename, ast.get_source_segment(text, lam) or "")
