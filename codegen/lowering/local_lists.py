"""Finds the lists a function makes for itself and only grows, reads and hands to TensorFlow.

A list appended to inside a loop over a tensor cannot stay a Python list: the
graph runs the body once per iteration, but traces it once.  Such a list can
instead be loop state (a tensor that grows by one row per `append`), provided
nothing else holds the list object: every binding of the name is a plain
assignment to it alone of a new list (`[]`, `[...]`, a comprehension) or
another new value (`tf.*(...)`, an operator's result, a constant), and every
read of it while it holds a list is one that cannot keep the object:
`name.append(x)` and `name.insert(0, x)` as statements, `len(name)`,
`for x in name` or `for x in reversed(name)`, or the first argument of a
`tf.*` call that converts it to one tensor (`tf.stack`, `tf.constant`,
`tf.reduce_sum`, ...).  This step only looks; it leaves the names on the
lowering context, for the loop lowering to carry, and changes nothing.
"""
from __future__ import annotations

import ast

from codegen.syntax.analysis import parameter_names

_GROWING = ("append", "insert")
# TensorFlow functions that convert a list argument to one tensor (as its first argument).  Others
# read a list as a structure of separate values (`tf.concat`, `tf.print`, `tf.nest.*`,
# `tf.map_fn`), which a stacked tensor is not.
_CONVERTING = ("stack", "constant", "convert_to_tensor", "cast", "reduce_sum", "reduce_mean", "reduce_max",
               "reduce_min", "reduce_prod", "reduce_std", "reduce_variance", "reduce_logsumexp")


# Keywords that keep a converting call converting the list as eager converts it (`dtype_hint`
# would change what the list's Python floats become).
_KEYWORDS = {"stack": {"name", "axis"}, "constant": {"dtype", "name"}, "convert_to_tensor": {"dtype", "name"}}


def _converting_call(node) -> bool:
    """`tf.name(...)` or `tf.math.name(...)` of a function that makes one tensor of a list
    (`tf.ragged.stack` makes a ragged tensor of it: another function of the same name)."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _CONVERTING):
        return False
    owner = node.func.value
    if isinstance(owner, ast.Attribute) and owner.attr == "math":
        owner = owner.value
    return isinstance(owner, ast.Name) and owner.id == "tf"


def _is_tf_call(node) -> bool:
    """`tf.name(...)` or `tf.a.b(...)`."""
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    while isinstance(f, ast.Attribute):
        f = f.value
    return isinstance(f, ast.Name) and f.id == "tf" and isinstance(node.func, ast.Attribute)


def _makes_list(value) -> bool:
    return isinstance(value, (ast.List, ast.ListComp))


def _fresh(value) -> bool:
    """A value that is a new object, never one something else holds: a new list, a TensorFlow
    value, the result of an operator, a constant."""
    return _makes_list(value) or _is_tf_call(value) or isinstance(
        value, (ast.BinOp, ast.UnaryOp, ast.Compare, ast.Constant))


class _Uses(ast.NodeVisitor):
    """Every occurrence of a name, sorted into safe ones and the rest."""

    def __init__(self):
        self.unsafe: set[str] = set()
        self.bound: set[str] = set()
        self.nested: set[str] = set()
        self._safe_ids: set[int] = set()

    def _mark_safe(self, node):
        if isinstance(node, ast.Name):
            self._safe_ids.add(id(node))

    def visit_Expr(self, node):
        call = node.value
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr in _GROWING \
                and not call.keywords:
            self._mark_safe(call.func.value)
        self.generic_visit(node)

    def visit_Call(self, node):
        if isinstance(node.func, ast.Name) and node.func.id == "len" and len(node.args) == 1:
            self._mark_safe(node.args[0])
        if _converting_call(node) and node.args and {k.arg for k in node.keywords} <= _KEYWORDS.get(
                node.func.attr, {"dtype", "name", "axis", "keepdims"}):
            self._mark_safe(node.args[0])
        self.generic_visit(node)

    def visit_For(self, node):
        it = node.iter      # `for x in name` or `for x in reversed(name)`: a `reversed` object kept
        if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "reversed" \
                and len(it.args) == 1 and not it.keywords:      # elsewhere could be iterated twice
            it = it.args[0]
        self._mark_safe(it)
        self.generic_visit(node)

    def visit_Assign(self, node):
        for target in node.targets:
            for name in target.elts if isinstance(target, ast.Tuple) else [target]:
                if isinstance(name, ast.Name):
                    self.bound.add(name.id)
                    self._safe_ids.add(id(name))
        self.generic_visit(node)

    def visit_Name(self, node):
        if id(node) not in self._safe_ids:
            self.unsafe.add(node.id)

    def _nested(self, node):
        self.nested |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}

    visit_Lambda = visit_ClassDef = visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _nested

    def visit_FunctionDef(self, node):
        self._nested(node)

    visit_AsyncFunctionDef = visit_FunctionDef


def _straight_line(stmts) -> list:
    """The statements that run once each, in order: the body, through `with` blocks."""
    out = []
    for stmt in stmts:
        if isinstance(stmt, ast.With):
            out.append(ast.Expr(value=ast.Tuple(elts=[item.context_expr for item in stmt.items], ctx=ast.Load())))
            out.extend(_straight_line(stmt.body))
        else:
            out.append(stmt)
    return out


def _binding(stmt) -> dict:
    """name -> True (a new list) / False (another new value) for what a plain assignment binds."""
    if not isinstance(stmt, ast.Assign):
        return {}
    out = {}
    if len(stmt.targets) > 1:           # `a = b = []`: one list under two names
        return out
    for target in stmt.targets:
        pairs = [(target, stmt.value)]
        if isinstance(target, ast.Tuple) and isinstance(stmt.value, ast.Tuple) \
                and len(target.elts) == len(stmt.value.elts):
            pairs = list(zip(target.elts, stmt.value.elts))
        for name, value in pairs:
            if isinstance(name, ast.Name) and _fresh(value):
                out[name.id] = _makes_list(value)
    return out


def growable_lists(node: ast.FunctionDef) -> set[str]:
    """The names of `node` that only ever hold lists it made, used in ways that keep no alias
    while they hold one.  Every binding is a plain assignment run once (in the body, or a `with`
    block of it) of a new list or a TensorFlow value; while a list is bound, only safe uses."""
    stmts = _straight_line(node.body)
    holds_list: dict[str, bool] = {}
    candidates: set[str] = set()
    ruled_out: set[str] = set()
    for stmt in stmts:
        uses = _Uses()
        uses.visit(stmt)
        binds = _binding(stmt)
        ruled_out |= uses.nested | (uses.bound - set(binds))
        ruled_out |= {n for n in uses.unsafe if holds_list.get(n, True) and n not in binds}
        ruled_out |= {n for n in uses.unsafe & set(binds) if holds_list.get(n, True) and _reads(stmt, n)}
        for name, is_list in binds.items():
            holds_list[name] = is_list
            candidates |= {name} if is_list else set()
    declared = {n for s in ast.walk(node) if isinstance(s, (ast.Global, ast.Nonlocal)) for n in s.names}
    return candidates - ruled_out - declared - set(parameter_names(node))


def _reads(stmt, name) -> bool:
    """Whether the right side of an assignment reads `name` unsafely."""
    uses = _Uses()
    uses.visit(stmt.value)
    return name in uses.unsafe


class LocalLists:
    """Leaves the growable list names on the lowering context and changes nothing: below,
    `ctx.growable == {"out"}` (`alias` is held by another name).

    Example::

        def f(x):
            out, alias = [], []
            held = alias
            for t in range(3):
                out.append(x[t])
                alias.append(x[t])
            return tf.stack(out), len(held)

    lowers to::

        def f(x):
            out, alias = [], []
            held = alias
            for t in range(3):
                out.append(x[t])
                alias.append(x[t])
            return tf.stack(out), len(held)
    """

    @staticmethod
    def transform(node: ast.FunctionDef, ctx) -> None:
        ctx.growable = growable_lists(node)
        ctx.front = {n.func.value.id for n in ast.walk(node) if isinstance(n, ast.Call)
                     and isinstance(n.func, ast.Attribute) and n.func.attr == "insert"
                     and isinstance(n.func.value, ast.Name)} & ctx.growable


transform = LocalLists.transform
