"""Lowers calls, free-name reads and attribute reads to janus operators.

Runs first among the lowerings, on the user's own scopes, so it can tell a
function's locals from its free names before control-flow lowering adds
nested functions.  At build time the operators resolve the real objects:
user functions are converted and inlined, framework functions are called on
symbolic values, and every free name or attribute read of an outside object
becomes an entry guard.
"""
from __future__ import annotations

import ast

from codegen.lowering.base import Lowering
from codegen.syntax.analysis import _target_names, local_names
from codegen.syntax.templates import JN, replace_expr


class CallsAndReads(Lowering):
    """Calls become `jn.call`, free names `jn.ld`, attribute reads `jn.ld_attr`.

    Example::

        def f(self, x):
            y = helper(self.w, tf.matmul(x, W))
            return y

    lowers to::

        def f(self, x):
            y = jn.call(jn.ld('helper'), jn.ld_attr(self, 'w'), jn.call(jn.ld_attr(jn.ld('tf'), 'matmul'), x, jn.ld('W')))
            return y
    """

    def lower_function(self, node):
        # The function's own locals, before control-flow lowering hides them in nested functions.
        self.scopes: list[set[str]] = [local_names(node) - self.declared]
        node.body = [self.visit(stmt) for stmt in node.body]
        return node

    def _is_local(self, name: str) -> bool:
        return any(name in scope for scope in self.scopes)

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Load) and not self._is_local(node.id) and node.id != JN:
            return ast.copy_location(replace_expr(f"{JN}.ld(name)", node, name=ast.Constant(node.id)), node)
        return node

    def visit_Attribute(self, node):
        self.generic_visit(node)
        if isinstance(node.ctx, ast.Load):
            return ast.copy_location(replace_expr(f"{JN}.ld_attr(obj, name)", node, obj=node.value,
                                                          name=ast.Constant(node.attr)), node)
        return node

    def visit_Call(self, node):
        if isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name) \
                and node.func.value.id == JN:
            # Already a janus operator (made by the state lowering): lower its operands only.
            node.args = [self.visit(a) for a in node.args]
            return node
        self.generic_visit(node)
        new = replace_expr(f"{JN}.call(func)", node, func=node.func)
        new.args += node.args
        new.keywords = node.keywords
        return ast.copy_location(new, node)

    def nested_function(self, node):
        """A nested `def`: its body is converted when it is called; its decorators and defaults are
        evaluated here, in this scope, and read as this function's own expressions."""
        node.decorator_list = [ast.copy_location(replace_expr(f"{JN}.decorator(d)", d, d=self.visit(d)), d)
                               for d in node.decorator_list]
        self.lower_defaults(node.args)
        return node

    # Nested scopes: their own parameters and targets are locals there.
    def visit_Lambda(self, node):
        self.lower_defaults(node.args)
        params = {a.arg for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs}
        if node.args.vararg:
            params.add(node.args.vararg.arg)
        if node.args.kwarg:
            params.add(node.args.kwarg.arg)
        self.scopes.append(params)
        node.body = self.visit(node.body)
        self.scopes.pop()
        return node

    def _comprehension(self, node):
        names: list[str] = []
        for gen in node.generators:
            _target_names(gen.target, names)
        # The first iterable is evaluated in the enclosing scope.
        node.generators[0].iter = self.visit(node.generators[0].iter)
        node.generators[0].iter = ast.copy_location(
            replace_expr(f"{JN}.py_iter(it)", node, it=node.generators[0].iter), node)
        self.scopes.append(set(names))
        for i, gen in enumerate(node.generators):
            if i:                       # (a later clause walks, say, an item of an outside list)
                gen.iter = ast.copy_location(replace_expr(f"{JN}.py_iter(it)", gen.iter, it=self.visit(gen.iter)),
                                             gen.iter)
            gen.ifs = [self.visit(cond) for cond in gen.ifs]
        for field in ("elt", "key", "value"):
            if hasattr(node, field):
                setattr(node, field, self.visit(getattr(node, field)))
        self.scopes.pop()
        return node

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _comprehension


transform = CallsAndReads.transform
