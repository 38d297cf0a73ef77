"""Prepares independent calls in a Python loop to run as one Call/Return machine
(`JoinCalls` shows the code it makes).

At build time `jn.join` looks at what the loop will call: when the iterable is a
Python list or tuple and the callee is a recursion the machine runs (a tree per
call), all calls become root frames of one machine, which advances every tree
level by level together; `jn.joined` then hands out their results in order.
Otherwise it returns None and `jn.joined` simply makes the call.

A loop over `enumerate(trees)` or `zip(trees, labels)` (over names or attributes, into as
many names) joins too: `jn.listed` makes the list of its pairs where the iterables are lists or
tuples of tree nodes or tensors (else the iterable is made as the loop would make it), and
`jn.join` hands each pair's names to the call.  The same holds for a list
comprehension `[model.encode(t) for t in trees]` whose iterable is a name or attribute, and for
a generator expression (`sum(model.loss(t) for t in trees)`): its results are handed out as it
is consumed, and one consumed only in part (`any`), or not within its statement, leaves results
that `jn.join_end` finds, so the build is redone without the join.  Only
calls that cannot depend on what the loop body did before them qualify: the call is evaluated unconditionally
in a body statement (or the comprehension's element), its
callee and arguments read only the loop variable and names the body never
assigns, and the body has no break/continue/return, no attribute, subscript,
global or nonlocal writes and no `with`/`try`.  `jn.join_end` checks what
the build saw: if the loop wrote a `tf.Variable` or deferred state after the
join, the joined calls may have read stale values, so the build is redone
without this join (`codegen.errors.JoinBroken`).
"""
from __future__ import annotations

import ast
import copy

from codegen.lowering.base import Lowering
from codegen.syntax.analysis import assigned_names, parameter_names
from codegen.syntax.templates import JN, replace, replace_expr

_LOOP_EXITS = (ast.Break, ast.Continue, ast.Return, ast.Yield, ast.YieldFrom, ast.Await)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_SIMPLE = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr)
_DEFERRED = (ast.IfExp, ast.BoolOp, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _walk_same_scope(node):
    """`ast.walk` that does not enter nested functions, classes or lambdas."""
    stack = [node]
    while stack:
        sub = stack.pop()
        yield sub
        stack.extend(c for c in ast.iter_child_nodes(sub) if not isinstance(c, _SCOPES))


def _names(node) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _rooted_name(expr) -> bool:
    while isinstance(expr, ast.Attribute):
        expr = expr.value
    return isinstance(expr, ast.Name)


def _unconditional(expr, kind) -> list:
    """Nodes of `kind` in `expr` that always run when it is evaluated (not under if/and/or/lambda or
    inside a comprehension; a comprehension itself counts)."""
    out, stack = [], [expr]
    while stack:
        sub = stack.pop()
        if isinstance(sub, kind):
            out.append(sub)
        if isinstance(sub, _DEFERRED):
            continue
        stack.extend(ast.iter_child_nodes(sub))
    return out


class JoinCalls(Lowering):
    """Calls in a loop over a Python list get a join before the loop and take their results
    from it; `jn.join` decides at build time whether they really run together.

    Example::

        def f(model, trees):
            total = 0
            for t in trees:
                _, loss = model.losses(t)
                total += loss
            return total

    lowers to::

        def f(model, trees):
            total = 0
            join_items_1 = trees
            joined_1 = jn.join(join_items_1, lambda t: (model.losses, (t,)), '<example>:4')
            for t in join_items_1:
                _, loss = jn.joined(joined_1, lambda: model.losses(t))
                total += loss
            jn.join_end(joined_1)
            return total
    """

    # -- comprehensions: `[model.encode(t) for t in trees]` in a statement ----------------------------
    def _statement(self, stmt):
        value = getattr(stmt, "value", None)
        # (a name the statement binds with `:=` may be bound before the comprehension runs: the
        # join, made before the statement, would read it too early)
        comps = [c for c in _unconditional(value, (ast.ListComp, ast.GeneratorExp)) if self._simple_comprehension(c)] \
            if value is not None and not any(isinstance(n, ast.NamedExpr) for n in _walk_same_scope(value)) else []
        before, after = [], []
        for comp in comps:
            gen = comp.generators[0]
            calls = [c for c in _unconditional(comp.elt, ast.Call) if self._joinable(c, [gen.target.id], {gen.target.id})
                     and not self._reads_local_state(c, [gen.target.id])]
            if not calls:
                continue
            it = self.namer.new("join_items")
            before += replace("it = items", stmt, it=it, items=gen.iter)
            gen.iter = ast.copy_location(ast.Name(id=it, ctx=ast.Load()), gen.iter)
            batchable = isinstance(comp, ast.ListComp) and len(calls) == 1 and \
                self._pure_element(comp.elt, calls[0], gen.target.id)
            for call in calls:
                b, a, joined = self._join(stmt, call, [gen.target.id], it)
                before += b
                after += a
            if batchable:
                self._each(stmt, comp, joined, it)
        if not before:
            return stmt
        if isinstance(stmt, ast.Return):          # the joins end before the function returns
            value = self.namer.new("join_result")
            before += replace("v = e", stmt, v=value, e=stmt.value)
            stmt.value = ast.copy_location(ast.Name(id=value, ctx=ast.Load()), stmt)
            out = before + after + [stmt]
        else:
            out = before + [stmt] + after
        for new in out:
            ast.fix_missing_locations(ast.copy_location(new, stmt))
        return out

    visit_Assign = visit_AugAssign = visit_AnnAssign = visit_Expr = visit_Return = _statement

    def _pure_element(self, elt, call, target) -> bool:
        """Whether the element may run once for all items (`jn.each`): it reads the item only as
        `item.attr` (or in the joined call), and no local variable of the function, which a
        callee could change without the build seeing it (parameters never rebound are watched
        as arguments); what else it does is checked when it is built."""
        local = set(assigned_names(self._top.body))       # (parameters never rebound are not)
        inside_call = {id(n) for n in ast.walk(call)}
        parents = {id(c): p for p in ast.walk(elt) for c in ast.iter_child_nodes(p)}
        for node in ast.walk(elt):
            if id(node) in inside_call or not isinstance(node, ast.Name):
                continue
            if node.id == target:
                parent = parents.get(id(node))
                if not (isinstance(parent, ast.Attribute) and parent.value is node):
                    return False
            elif node.id in local or isinstance(node.ctx, ast.Store):
                return False
        return not any(isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await, ast.NamedExpr, ast.Lambda))
                       for n in ast.walk(elt))

    def _each(self, stmt, comp, joined, it):
        """Replace `comp` in `stmt` by `jn.each(joined, it, lambda item: element, lambda: comp)`."""
        target = comp.generators[0].target.id
        args = ast.arguments(posonlyargs=[], args=[ast.arg(arg=target)], vararg=None, kwonlyargs=[],
                             kw_defaults=[], kwarg=None, defaults=[])
        none = ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None,
                             defaults=[])
        element = _inline(ast.Lambda(args=args, body=copy.deepcopy(comp.elt)))
        plain = _inline(ast.Lambda(args=none, body=comp))
        new = replace_expr(f"{JN}.each(j, it, element, plain)", comp, j=joined, it=it, element=element,
                           plain=plain)
        _replace_node(stmt, comp, new)
        ast.fix_missing_locations(new)

    @staticmethod
    def _simple_comprehension(comp) -> bool:
        if len(comp.generators) != 1:
            return False
        gen = comp.generators[0]
        return (isinstance(gen.target, ast.Name) and not gen.ifs and not gen.is_async
                and _rooted_name(gen.iter) and not any(isinstance(n, ast.Call) for n in ast.walk(gen.iter))
                and not any(isinstance(n, ast.NamedExpr) for n in ast.walk(comp.elt)))

    def _join(self, stmt, call, targets, it, pairs=False):
        """(statements before, after, the joined name) that join `call` over `it`; replaces the call
        in `stmt`.  `targets`: the loop's names; `pairs`: each item is a tuple of them."""
        j = self.namer.new("joined")
        spec = _inline(ast.Lambda(args=_params(targets),
                                  body=ast.Tuple(elts=[copy.deepcopy(call.func),
                                                       ast.Tuple(elts=copy.deepcopy(call.args), ctx=ast.Load())],
                                                 ctx=ast.Load())))
        where = ast.Constant(f"{self.filename}:{call.lineno}")
        pairs_arg = ", True" if pairs else ""
        before = replace(f"j = {JN}.join(it, spec, where{pairs_arg})", stmt, j=j, it=it, spec=spec, where=where)
        after = replace(f"{JN}.join_end(j)", stmt, j=j)
        thunk = _inline(ast.Lambda(args=_params([]), body=ast.Call(func=call.func, args=call.args, keywords=[])))
        _replace_node(stmt, call, replace_expr(f"{JN}.joined(j, thunk)", call, j=j, thunk=thunk))
        return before, after, j

    def visit_For(self, node):
        self.generic_visit(node)
        targets = _target_names(node.target)
        pairs = isinstance(node.target, ast.Tuple)
        if targets is None or node.orelse or not self._plain_body(node.body) or (
                pairs and not _paired_iterable(node.iter, len(targets))):
            return node
        varying = set(assigned_names(node.body)) | set(targets)
        joins = []
        for stmt in node.body:
            if not isinstance(stmt, _SIMPLE) or stmt.value is None:
                continue
            for call in _unconditional(stmt.value, ast.Call):
                if self._joinable(call, targets, varying) and not self._reads_local_state(call, targets):
                    joins.append((stmt, call))
        if not joins:
            return node
        it = self.namer.new("join_items")
        if pairs:       # `enumerate(trees)`, `zip(trees, labels)`: a list of the pairs, where they are lists
            iterable = node.iter
            plain = _inline(ast.Lambda(args=_params([]), body=copy.deepcopy(iterable)))
            before = replace(f"it = {JN}.listed(plain, fn)", node, it=it, plain=plain, fn=iterable.func)
            before[0].value.args += iterable.args
            before[0].value.keywords = iterable.keywords
        else:
            before = replace("it = items", node, it=it, items=node.iter)
        after = []
        node.iter = ast.copy_location(ast.Name(id=it, ctx=ast.Load()), node.iter)
        for stmt, call in joins:
            b, a, _ = self._join(stmt, call, targets, it, pairs)
            before += b
            after += a
        for new in before + after:
            ast.fix_missing_locations(ast.copy_location(new, node))
        return before + [node] + after

    def _plain_body(self, body) -> bool:
        for stmt in body:
            for sub in _walk_same_scope(stmt):
                if isinstance(sub, _LOOP_EXITS + (ast.With, ast.AsyncWith, ast.Try, ast.Global, ast.Nonlocal,
                                                  ast.Delete)):
                    return False
                if isinstance(sub, (ast.Attribute, ast.Subscript)) and isinstance(sub.ctx, ast.Store):
                    return False
                if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store) and sub.id in self.declared:
                    return False
        return True

    def _reads_local_state(self, call: ast.Call, targets) -> bool:
        """Whether the call's callee or arguments read state only the function's own code holds: the
        contents of a container a local variable holds (`box[0]`, `b.v`), or a variable a nested
        function or lambda may rebind (`nonlocal`).  Code between the join and the call (an earlier
        call in the statement, the consumer of a generator, the loop body) may change those without
        the build seeing a write, and the joined call would read the old value."""
        params = set(parameter_names(self._top)) if isinstance(self._top, (ast.FunctionDef, ast.AsyncFunctionDef)) \
            else set()
        local = set(assigned_names(self._top.body)) - params
        nested = [n for n in ast.walk(self._top) if isinstance(n, _SCOPES) and n is not self._top
                  and not getattr(n, "janus_inline", False)]         # (not the joins' own lambdas)
        cells = {n.id for scope in nested for n in ast.walk(scope) if isinstance(n, ast.Name)} & (local | params)
        for sub in [n for part in [call.func] + call.args for n in ast.walk(part)]:
            if isinstance(sub, ast.Name) and sub.id in cells:
                return True
            root = sub
            while isinstance(root, (ast.Attribute, ast.Subscript)):
                root = root.value
            if root is not sub and isinstance(root, ast.Name) and root.id in local and root.id not in targets:
                return True
        return False

    @staticmethod
    def _joinable(call: ast.Call, targets, varying: set[str]) -> bool:
        """A call whose callee is fixed and whose arguments (a method's receiver among them:
        `t.encode(m)` for a loop over trees `t`) read the loop's names."""
        args = list(call.args)
        callee = call.func
        if isinstance(callee, ast.Attribute) and _rooted_name(callee.value) and _names(callee.value) & set(targets):
            args, callee = [callee.value] + args, None          # the method looked up on each item
        if call.keywords or any(isinstance(a, ast.Starred) for a in args) or not args:
            return False
        if callee is not None and (not _rooted_name(callee) or _names(callee) & varying):
            return False
        if any(isinstance(sub, ast.Call) for a in args for sub in ast.walk(a)):
            return False
        used = set().union(*(_names(a) for a in args))
        return bool(used & set(targets)) and not (used - set(targets)) & varying


def _target_names(target):
    """The names a for loop binds: one name, or a flat tuple of names (`for i, t in ...`); else None."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, ast.Tuple) and target.elts and all(isinstance(e, ast.Name) for e in target.elts):
        names = [e.id for e in target.elts]
        return names if len(set(names)) == len(names) else None
    return None


def _paired_iterable(it, n: int) -> bool:
    """`enumerate(x)` for two names, `zip(x, y, ...)` for as many names as lists, over names and
    attributes (and `enumerate`'s `start`) that call nothing: `jn.listed` lists its pairs."""
    if not isinstance(it, ast.Call) or not isinstance(it.func, ast.Name) or any(
            isinstance(a, ast.Starred) for a in it.args) or any(k.arg is None for k in it.keywords):
        return False
    if any(isinstance(sub, (ast.Call, ast.NamedExpr, ast.Lambda)) for a in it.args + it.keywords
           for sub in ast.walk(a)):
        return False
    if it.func.id == "enumerate":
        return n == 2 and len(it.args) in (1, 2) and {k.arg for k in it.keywords} <= {"start"} and \
            _rooted_name(it.args[0])
    if it.func.id == "zip":
        return n == len(it.args) and {k.arg for k in it.keywords} <= {"strict"} and \
            all(_rooted_name(a) for a in it.args)
    return False


def _params(names) -> ast.arguments:
    return ast.arguments(posonlyargs=[], args=[ast.arg(arg=n) for n in names], vararg=None, kwonlyargs=[],
                         kw_defaults=[], kwarg=None, defaults=[])


def _inline(node: ast.Lambda) -> ast.Lambda:
    """Mark a lambda that holds the function's own code, moved there by this lowering: the later
    lowerings treat its body as the function's (`x[k]` loads become `jn.ld_item`), not as a
    nested user function's."""
    node.janus_inline = True
    return node


def _replace_node(root, old, new):
    for parent in ast.walk(root):
        for field, value in ast.iter_fields(parent):
            if value is old:
                setattr(parent, field, new)
                return
            if isinstance(value, list):
                for i, item in enumerate(value):
                    if item is old:
                        value[i] = new
                        return
    raise AssertionError("call not found")


transform = JoinCalls.transform
