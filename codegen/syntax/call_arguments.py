"""A recursive call's arguments in the callee's parameter order.

A machine frame holds every parameter of its function, filled from the call's positional
arguments.  A call that names its arguments (`f(node.left, scale=s)`) or leaves a parameter to its
default (`f(node.left)` for `def f(node, depth=0)`) is rewritten into that form where the result
is the same Python: a default is a constant of an immutable type, written into the call, and
keyword arguments move to their parameters' places only where that keeps the order in which
Python evaluates them, or where evaluating them has no effect (no call inside).
"""
from __future__ import annotations

import ast

_LITERALS = (int, float, complex, bool, str, bytes, type(None))
_EFFECTS = (ast.Call, ast.NamedExpr, ast.Await, ast.Yield, ast.YieldFrom)


def positional(call: ast.Call, fn):
    """`call` with only positional arguments, one per parameter of `fn` (a method call's receiver
    is its first), or None where that cannot keep what Python does (`*args`, `**kwargs`, an unknown
    or repeated keyword, a default that is not an immutable constant)."""
    code = getattr(fn, "__code__", None)
    if code is None or any(isinstance(a, ast.Starred) for a in call.args) or \
            any(k.arg is None for k in call.keywords):
        return None
    params = code.co_varnames[:code.co_argcount]
    start = len(call.args) + (1 if isinstance(call.func, ast.Attribute) else 0)
    given = {k.arg: k.value for k in call.keywords}
    if start > len(params) or any(name in given for name in params[:max(start, code.co_posonlyargcount)]):
        return None                          # too many, given twice, or positional-only: a TypeError
    defaults = fn.__defaults__ or ()
    first_default = len(params) - len(defaults)
    args = list(call.args)
    for i in range(start, len(params)):
        if params[i] in given:
            args.append(given.pop(params[i]))
        elif i >= first_default and type(defaults[i - first_default]) in _LITERALS:
            args.append(ast.copy_location(ast.Constant(value=defaults[i - first_default]), call))
        else:
            return None                      # a missing argument, or a default of another type
    if given or not _same_order(call.keywords, params):
        return None
    return ast.copy_location(ast.Call(func=call.func, args=args, keywords=[]), call)


def _same_order(keywords, params) -> bool:
    """Evaluating the keyword arguments in parameter order does what Python's source order does."""
    order = [params.index(k.arg) for k in keywords]
    return order == sorted(order) or not any(isinstance(sub, _EFFECTS) for k in keywords for sub in ast.walk(k.value))
