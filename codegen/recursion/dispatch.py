"""One function for a method that the tree's node classes each define their own way.

`class Leaf: def encode(self, m): ...` and `class Inner: def encode(self, m): ... self.left.encode(m)
...` recurse through `encode`, but which body runs depends on the node's class.  A machine runs one
function per frame, so `dispatcher` merges the overrides into one:

    def encode(self, m):
        if type(self) is Leaf:
            <Leaf.encode's body>
        else:
            <Inner.encode's body>

The test reads the tables' class column (`node_classes`), a fact of the tree's structure, so the
levels strategy runs it as any other branch on the node's own columns.  The bodies keep their
spans in the file, and each block compiles under the profile of the method it came from
(`origin`).  The merged function is compiled for real (`syntax.source.register_made` gives its
AST back), so converting it for an inlined call works as for any function.

It fits where the methods are plain functions of one module, with the same parameters, no default
values and no closure, and each class is a global of that module under its own name.  Which
function each class resolves the name to is checked on every call (`tree_walk.resolves`).
"""
from __future__ import annotations

import ast
import types

from codegen.errors import ConversionError, Reason
from codegen.operators.tree_walk import DISPATCHED
from codegen.syntax.source import parse_function, register_made

_MADE: dict = {}        # (name, ((class, function), ...)) -> the merged function


def dispatcher(name: str, mapping: dict):
    """The function that runs, for a node of each class of `mapping`, that class's method `name`
    (`mapping`: class -> function).  Raises ConversionError where the methods cannot merge."""
    key = (name, tuple(sorted(mapping.items(), key=lambda kv: kv[0].__qualname__)))
    made = _MADE.get(key)
    if made is None:
        made = _MADE[key] = _merge(name, dict(key[1]))
        DISPATCHED[made] = (name, dict(key[1]))
    return made


def origin(fn, lineno: int):
    """The method of the merged function `fn` whose source holds line `lineno` (else `fn`)."""
    entry = DISPATCHED.get(fn)
    if entry is None:
        return fn
    for method in entry[1].values():
        code = method.__code__
        lines = [ln for _, _, ln in code.co_lines() if ln is not None] + [code.co_firstlineno]
        if min(lines) <= lineno <= max(lines):
            return method
    return next(iter(entry[1].values()))


def _merge(name: str, mapping: dict):
    groups: dict = {}
    for cls, fn in sorted(mapping.items(), key=lambda kv: kv[1] is None):   # (classes without it last)
        groups.setdefault(fn, []).append(cls)
    lacking = groups.pop(None, [])
    fns = list(groups)
    first = fns[0]
    why = _why_not(fns, mapping)
    if why:
        raise ConversionError(Reason("recursion", f"{first.__code__.co_filename}:{first.__code__.co_firstlineno}",
                                     f"the node classes define `{name}` each their own way, and {why}",
                                     "write one function that tests the node's class"))
    nodes = [_own_locals(parse_function(fn).node, k) for k, fn in enumerate(fns)]
    self_name = nodes[0].args.args[0].arg
    # A class without the method raises as Python does: `'Leaf' object has no attribute 'combine'`.
    bodies = [(groups[fn], node.body) for fn, node in zip(fns, nodes)] + [
        ([cls], [_raise_absent(cls, name, nodes[0])]) for cls in lacking]
    body = bodies[-1][1]
    for classes, then in reversed(bodies[:-1]):
        test = _class_test(self_name, classes, nodes[0])
        body = [ast.copy_location(ast.If(test=test, body=then, orelse=body), nodes[0])]
    merged = ast.FunctionDef(name=name, args=nodes[0].args, body=body, decorator_list=[], returns=None,
                             type_params=[])
    ast.copy_location(merged, nodes[0])
    module = ast.fix_missing_locations(ast.Module(body=[merged], type_ignores=[]))
    namespace: dict = {}
    exec(compile(module, first.__code__.co_filename, "exec"), first.__globals__, namespace)   # noqa: S102
    made = types.FunctionType(namespace[name].__code__, first.__globals__, name)
    made.__qualname__ = f"{name} of " + ", ".join(sorted(c.__qualname__ for c in mapping))
    register_made(made.__code__, merged, first.__code__.co_filename)
    return made


def _why_not(fns, mapping) -> str:
    first = fns[0]
    code = first.__code__
    for fn in fns:
        c = fn.__code__
        if fn.__globals__ is not first.__globals__ or c.co_filename != code.co_filename:
            return "they are not defined in one module"
        if c.co_freevars or fn.__defaults__ or fn.__kwdefaults__:
            return f"{fn.__qualname__} has a closure or default values"
        if c.co_varnames[:c.co_argcount] != code.co_varnames[:code.co_argcount] or c.co_flags & 0x0C \
                or c.co_kwonlyargcount or c.co_posonlyargcount:
            return "their parameters differ"
    if "type" in first.__globals__:
        return "their module defines its own `type`"
    for cls in mapping:
        if first.__globals__.get(cls.__name__) is not cls:
            return f"{cls.__qualname__} is not a global of its module under its own name"
    return ""


_SCOPES = (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.ListComp, ast.SetComp,
           ast.DictComp, ast.GeneratorExp)


def _own_locals(node: ast.FunctionDef, k: int) -> ast.FunctionDef:
    """`node` with the locals it assigns (not its parameters) renamed apart from the other
    methods': merged into one function, each body keeps its own variables, whose types may differ
    between the classes.  A body with a scope of its own inside (a lambda, a comprehension) keeps
    its names: one of them may name the same variable; so does one that declares a global."""
    params = {a.arg for a in node.args.args}
    if any(isinstance(sub, _SCOPES + (ast.Global, ast.Nonlocal)) for stmt in node.body for sub in ast.walk(stmt)):
        return node
    names = {sub.id for stmt in node.body for sub in ast.walk(stmt)
             if isinstance(sub, ast.Name) and isinstance(sub.ctx, (ast.Store, ast.Del))} - params
    for stmt in node.body:
        for sub in ast.walk(stmt):
            if isinstance(sub, ast.Name) and sub.id in names:
                sub.id = f"{sub.id}__{k}"
    return node


def _raise_absent(cls, name: str, where) -> ast.stmt:
    message = f"'{cls.__name__}' object has no attribute '{name}'"
    stmt = ast.Raise(exc=ast.Call(func=ast.Name(id="AttributeError", ctx=ast.Load()), args=[ast.Constant(message)],
                                  keywords=[]), cause=None)
    for sub in ast.walk(stmt):
        ast.copy_location(sub, where)
    return stmt


def _class_test(self_name: str, classes: list, where) -> ast.expr:
    tests = [ast.Compare(left=ast.Call(func=ast.Name(id="type", ctx=ast.Load()),
                                       args=[ast.Name(id=self_name, ctx=ast.Load())], keywords=[]),
                         ops=[ast.Is()], comparators=[ast.Name(id=cls.__name__, ctx=ast.Load())])
             for cls in sorted(classes, key=lambda c: c.__qualname__)]
    test = tests[0] if len(tests) == 1 else ast.BoolOp(op=ast.Or(), values=tests)
    for sub in ast.walk(test):
        ast.copy_location(sub, where)
    return test
