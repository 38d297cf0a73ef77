"""Lowers `and`/`or`, `not`, comparison chains, conditional expressions and f-string values.

On Python values the operators keep Python's meaning (short-circuit, truth of
objects); on tensors they emit `tf.logical_and`, `tf.logical_not`, `tf.cond`
or a guarded single side, chosen at build time.
"""
from __future__ import annotations

import ast

from codegen.lowering.base import Lowering
from codegen.syntax.annotations import Anno, getanno, only_tested
from codegen.syntax.templates import JN, replace_expr


_OPS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=",
        ast.Is: "is", ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in"}
_THROUGH_JANUS = {ast.Eq: "eq", ast.NotEq: "ne", ast.In: "in_", ast.NotIn: "not_in"}
_BINARY = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "truediv", ast.FloorDiv: "floordiv",
           ast.Mod: "mod", ast.Pow: "pow", ast.MatMult: "matmul", ast.BitAnd: "and", ast.BitOr: "or",
           ast.BitXor: "xor", ast.LShift: "lshift", ast.RShift: "rshift"}


def _thunk(expr: ast.expr) -> ast.Lambda:
    lam = replace_expr("lambda: None", expr)
    lam.body = expr
    return ast.copy_location(lam, expr)


def _binds(expr: ast.expr) -> bool:
    """Whether `expr` binds a name of the function with `:=` (in a comprehension too): inside a
    thunk's lambda it would bind the lambda's own name instead."""
    stack = [expr]
    while stack:
        n = stack.pop()
        if isinstance(n, ast.NamedExpr):
            return True
        if not isinstance(n, (ast.Lambda, ast.FunctionDef, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(n))
    return False


def _thunks(operands: list, always: int):
    """The operands as thunks; None where one Python may not evaluate (past the first `always`)
    binds a name with `:=`, which no thunk can bind in the function: the expression stays Python's.
    Operands up to the last one that binds are evaluated in place, in order (`jn.ready`)."""
    binding = [k for k, e in enumerate(operands) if _binds(e)]
    if binding and binding[-1] >= always:
        return None
    now = binding[-1] + 1 if binding else 0
    return [replace_expr(f"{JN}.ready(v)", e, v=e) for e in operands[:now]] + [_thunk(e) for e in operands[now:]]


class Expressions(Lowering):
    """Boolean operators, comparisons, `in`, binary and unary operators, augmented assignments to
    locals and conditional expressions become operators.

    Example::

        def f(a, b, c, x, y):
            p = a and b
            if a or b:
                pass
            q = not a
            r = a < b < c
            s = a == b
            t = a in c
            u = f"{x}"
            v = a * b
            v += x
            o = a < -b
            return x if c else y

    lowers to::

        def f(a, b, c, x, y):
            p = jn.and_(lambda: a, lambda: b)
            if jn.or_(lambda: a, lambda: b, truth_only=True):
                pass
            q = jn.not_(a)
            r = jn.compare_chain(('<', '<'), lambda: a, lambda: b, lambda: c)
            s = jn.eq(a, b)
            t = jn.in_(a, c)
            u = f"{jn.formatted(x)}"
            v = jn.binop('mul', a, b)
            v = jn.inplace('add', v, x)
            o = jn.ordered('<', a, jn.unary('neg', b))
            return jn.if_exp(c, lambda: x, lambda: y, 0)
    """

    def nested_function(self, node):
        # A lambda or nested def built by the builder runs as it is: lower its operators too.
        return self.generic_visit(node)

    def visit_If(self, node):
        # `if a or b:` tests only the truth of `a or b`: where `a` is a Python bool computed in
        # the graph and `b` a tensor, that truth is a tensor although the value is not one.
        only_tested(node.test)
        return self.generic_visit(node)

    visit_While = visit_If

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        op = "and_" if isinstance(node.op, ast.And) else "or_"
        thunks = _thunks(node.values, 1)
        if thunks is None:
            return node
        new = replace_expr(f"{JN}.{op}()", node)
        new.args = thunks
        if getanno(node, Anno.TRUTH_ONLY):
            new.keywords = [ast.keyword("truth_only", ast.Constant(True))]
        return ast.copy_location(new, node)

    def visit_BinOp(self, node):
        # `a * b` runs the operand class's `__mul__`/`__rmul__`: where that is the program's own,
        # janus runs it as converted code (`codegen.operators.dunders`).
        self.generic_visit(node)
        new = replace_expr(f"{JN}.binop(op, a, b)", node, op=ast.Constant(_BINARY[type(node.op)]),
                           a=node.left, b=node.right)
        return ast.copy_location(new, node)

    def visit_AugAssign(self, node):
        # `s += x` on a local runs `__iadd__` (or `__add__`): through janus as `a * b` is.  (Other
        # targets were lowered to `jn.inplace` with their deferred writes.)
        self.generic_visit(node)
        if not isinstance(node.target, ast.Name):
            return node
        current = ast.copy_location(ast.Name(id=node.target.id, ctx=ast.Load()), node)
        new = replace_expr(f"{JN}.inplace(op, current, value)", node, op=ast.Constant(type(node.op).__name__.lower()),
                           current=current, value=node.value)
        return ast.copy_location(ast.Assign(targets=[node.target], value=new), node)

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.Not):
            return ast.copy_location(replace_expr(f"{JN}.not_(x)", node, x=node.operand), node)
        if isinstance(node.operand, ast.Constant):
            return node                 # (`-1` stays a constant)
        op = {ast.USub: "neg", ast.UAdd: "pos", ast.Invert: "invert"}[type(node.op)]
        return ast.copy_location(replace_expr(f"{JN}.unary(op, x)", node, op=ast.Constant(op), x=node.operand), node)

    def visit_Compare(self, node):
        self.generic_visit(node)
        if len(node.ops) == 1 and type(node.ops[0]) in _THROUGH_JANUS:
            # `==` and `in` go through janus: tree nodes are rows in graphs, and Python's operators
            # would compare the objects that stand in for them
            op = _THROUGH_JANUS[type(node.ops[0])]
            return ast.copy_location(replace_expr(f"{JN}.{op}(a, b)", node, a=node.left, b=node.comparators[0]), node)
        if len(node.ops) == 1 and type(node.ops[0]) in (ast.Lt, ast.LtE, ast.Gt, ast.GtE):
            # `<` runs the operand class's `__lt__`: the program's own runs as converted code
            return ast.copy_location(replace_expr(f"{JN}.ordered(op, a, b)", node, op=ast.Constant(_OPS[type(node.ops[0])]),
                                                  a=node.left, b=node.comparators[0]), node)
        if len(node.ops) == 1 and not isinstance(node.ops[0], (ast.Is, ast.IsNot)):
            return node                 # `is` goes through janus too
        # a < b < c: operands are thunks so each is evaluated once and lazily, as in Python.
        thunks = _thunks([node.left] + node.comparators, 2)
        if thunks is None:
            return node
        new = replace_expr(f"{JN}.compare_chain(ops)", node, ops=tuple(_OPS[type(op)] for op in node.ops))
        new.args = [new.args[0]] + thunks
        if getanno(node, Anno.TRUTH_ONLY):
            new.keywords = [ast.keyword("truth_only", ast.Constant(True))]
        return ast.copy_location(new, node)

    def visit_Starred(self, node):
        # `[*xs]`, `f(*xs)`: Python iterates `xs` in C code, which would read the build's copy of
        # an outside list unchecked; `jn.py_iter` notes the read (and runs a program's `__iter__`)
        self.generic_visit(node)
        if isinstance(node.ctx, ast.Load):
            node.value = replace_expr(f"{JN}.py_iter(v)", node.value, v=node.value)
        return node

    def visit_Dict(self, node):
        self.generic_visit(node)            # `{**d}`: the same for the mapping C code reads
        node.values = [replace_expr(f"{JN}.whole(v)", v, v=v) if k is None else v
                       for k, v in zip(node.keys, node.values)]
        return node

    def visit_Call(self, node):
        self.generic_visit(node)            # `f(**d)`
        for kw in node.keywords:
            if kw.arg is None:
                kw.value = replace_expr(f"{JN}.whole(v)", kw.value, v=kw.value)
        return node

    def visit_Assign(self, node):
        # `a, *b = xs`: Python unpacks `xs` in C code (a display on the right is not read whole)
        self.generic_visit(node)
        if any(isinstance(t, (ast.Tuple, ast.List)) for t in node.targets) \
                and not isinstance(node.value, (ast.Tuple, ast.List)):
            node.value = replace_expr(f"{JN}.py_iter(v)", node.value, v=node.value)
        return node

    def visit_FormattedValue(self, node):
        # `f"{obj}"` runs `obj.__format__` where Python evaluates it, at build time: the value goes
        # through janus first, which refuses one whose text the graph cannot give.
        self.generic_visit(node)
        node.value = ast.copy_location(replace_expr(f"{JN}.formatted(v)", node.value, v=node.value), node.value)
        return node

    def visit_IfExp(self, node):
        only_tested(node.test)
        self.generic_visit(node)
        if _binds(node.body) or _binds(node.orelse):
            return node
        site = self.sites.branch(node.test)
        new = replace_expr(f"{JN}.if_exp(test, body, orelse, site)", node,
                           test=node.test, body=_thunk(node.body), orelse=_thunk(node.orelse), site=site)
        return ast.copy_location(new, node)


transform = Expressions.transform
