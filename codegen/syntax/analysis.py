"""Small static analyses over the user's AST: which names a block assigns."""
from __future__ import annotations

import ast

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef,
           ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _target_names(target, out: list[str]):
    if isinstance(target, ast.Name):
        out.append(target.id)
    elif isinstance(target, (ast.Tuple, ast.List)):
        for elt in target.elts:
            _target_names(elt, out)
    elif isinstance(target, ast.Starred):
        _target_names(target.value, out)


class _Assigned(ast.NodeVisitor):
    def __init__(self):
        self.names: list[str] = []

    def visit_Name(self, node):
        if isinstance(node.ctx, (ast.Store, ast.Del)):
            self.names.append(node.id)

    def visit_FunctionDef(self, node):
        self.names.append(node.name)      # the def binds its name; its body is another scope

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node):
        self.names.append(node.name)

    def visit_Lambda(self, node):
        pass

    def _comprehension(self, node):
        for gen in node.generators:       # only the first iterable is evaluated in this scope
            self.visit(gen.iter)
            break
        # a `:=` anywhere in a comprehension binds the enclosing function's name (PEP 572)
        stack = list(ast.iter_child_nodes(node))
        while stack:
            n = stack.pop()
            if isinstance(n, ast.NamedExpr):
                _target_names(n.target, self.names)
            if not isinstance(n, (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                stack.extend(ast.iter_child_nodes(n))

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _comprehension

    def visit_NamedExpr(self, node):
        _target_names(node.target, self.names)
        self.visit(node.value)


def assigned_names(nodes) -> list[str]:
    """Names bound in `nodes` (statements or expressions), in first-seen order, this scope only."""
    visitor = _Assigned()
    for node in nodes if isinstance(nodes, list) else [nodes]:
        visitor.visit(node)
    seen: dict[str, None] = {}
    for name in visitor.names:
        seen.setdefault(name, None)
    return list(seen)


def parameter_names(fn_node: ast.FunctionDef) -> list[str]:
    args = fn_node.args
    params = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
    if args.vararg:
        params.append(args.vararg.arg)
    if args.kwarg:
        params.append(args.kwarg.arg)
    return params


def local_names(fn_node: ast.FunctionDef) -> set[str]:
    return set(parameter_names(fn_node)) | set(assigned_names(fn_node.body))


def declared_names(fn_node) -> tuple[set[str], set[str]]:
    """Names the function declares `global` and `nonlocal` (its own scope only)."""
    glob, nonloc = set(), set()
    stack = list(fn_node.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Global):
            glob.update(node.names)
        elif isinstance(node, ast.Nonlocal):
            nonloc.update(node.names)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        stack.extend(ast.iter_child_nodes(node))
    return glob, nonloc
