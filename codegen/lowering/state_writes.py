"""Lowers writes to the heap (attributes, subscripts, globals, nonlocals) to deferred operators.

The operators write to the build's local copies (`codegen.operators.heap`); janus
applies the writes to the real objects only after the graph has run and
every guard passed.  Runs right after the unsupported-construct check, on
the user's own scopes, because it must see `global`/`nonlocal` declarations
before names are classified as local or free.
"""
from __future__ import annotations

import ast

from codegen.errors import unsupported
from codegen.lowering.base import Lowering
from codegen.syntax.templates import JN, replace, replace_expr


class StateWrites(Lowering):
    """Writes to attributes, subscripts, globals and nonlocals become deferred operators.
    Reads are left to the calls/reads lowering, but `x[k]` loads become `jn.ld_item(x, k)` so
    that reads of an outside container are known to the entry guard.

    Example::

        def step(self, cache, k, h):
            global count
            self.h = h
            self.n += 1
            cache[k] = cache[k] + 1
            count = 3
            del self.old

    lowers to::

        def step(self, cache, k, h):
            jn.st_attr(self, 'h', h)
            obj_1 = self
            jn.st_attr(obj_1, 'n', jn.inplace('add', jn.ld_attr(obj_1, 'n'), 1))
            jn.st_item(cache, k, jn.ld_item(cache, k) + 1)
            jn.st_name('count', 3)
            jn.del_attr(self, 'old')
    """

    # -- declarations disappear: the operators know where the names live --------------------
    def visit_Global(self, node):
        return []

    visit_Nonlocal = visit_Global

    def visit_Lambda(self, node):
        if getattr(node, "janus_inline", False):        # the function's own code, moved into a lambda
            self.generic_visit(node)
        else:
            self.lower_defaults(node.args)                   # (evaluated here, as the function's own reads)
        return node

    def nested_function(self, node):
        node.decorator_list = [self.visit(d) for d in node.decorator_list]
        self.lower_defaults(node.args)
        return node

    # -- loads ------------------------------------------------------------------------------
    def visit_Subscript(self, node):
        self.generic_visit(node)
        if isinstance(node.ctx, ast.Load):
            return ast.copy_location(replace_expr(f"{JN}.ld_item(obj, key)", node, obj=node.value,
                                                  key=node.slice), node)
        return node

    # -- stores -----------------------------------------------------------------------------
    def _needs_lowering(self, target) -> bool:
        if isinstance(target, (ast.Attribute, ast.Subscript)):
            return True
        if isinstance(target, ast.Name):
            return target.id in self.declared
        if isinstance(target, (ast.Tuple, ast.List)):
            return any(self._needs_lowering(e) for e in target.elts)
        if isinstance(target, ast.Starred):
            return self._needs_lowering(target.value)
        return False

    def _store(self, target, value: ast.expr, anchor) -> list[ast.stmt]:
        """Statements that store `value` (an expression evaluated once) into `target`."""
        if isinstance(target, ast.Attribute):
            return replace(f"{JN}.st_attr(obj, name, value)", anchor, obj=self.visit(target.value),
                           name=ast.Constant(target.attr), value=value)
        if isinstance(target, ast.Subscript):
            return replace(f"{JN}.st_item(obj, key, value)", anchor, obj=self.visit(target.value),
                           key=self.visit(target.slice), value=value)
        if isinstance(target, ast.Name) and target.id in self.declared:
            return replace(f"{JN}.st_name(name, value)", anchor, name=ast.Constant(target.id), value=value)
        if isinstance(target, ast.Name):
            (stmt,) = replace("name = value", anchor, name=target.id, value=value)
            return [stmt]
        if isinstance(target, (ast.Tuple, ast.List)):
            temps = [self.namer.new("unpack") for _ in target.elts]
            (unpack,) = replace("tmp = value", anchor, tmp="placeholder", value=value)
            unpack.targets = [ast.copy_location(ast.Tuple(
                elts=[ast.Starred(value=ast.Name(id=t, ctx=ast.Store()), ctx=ast.Store())
                      if isinstance(e, ast.Starred) else ast.Name(id=t, ctx=ast.Store())
                      for t, e in zip(temps, target.elts)], ctx=ast.Store()), anchor)]
            out = [unpack]
            for t, e in zip(temps, target.elts):
                inner = e.value if isinstance(e, ast.Starred) else e
                out += self._store(inner, ast.Name(id=t, ctx=ast.Load()), anchor)
            return out
        raise unsupported("state-write", self.filename, anchor, f"cannot store into `{ast.unparse(target)}`")

    def visit_Assign(self, node):
        node.value = self.visit(node.value)
        if not any(self._needs_lowering(t) for t in node.targets):
            return node
        if len(node.targets) == 1:
            return self._store(node.targets[0], node.value, node)
        tmp = self.namer.new("value")
        out = replace("tmp = value", node, tmp=tmp, value=node.value)
        for target in node.targets:
            out += self._store(target, ast.Name(id=tmp, ctx=ast.Load()), node)
        return out

    def visit_AnnAssign(self, node):
        if node.value is None:
            return []
        return self.visit_Assign(ast.copy_location(ast.Assign(targets=[node.target], value=node.value), node))

    def visit_AugAssign(self, node):
        node.value = self.visit(node.value)
        op = type(node.op).__name__.lower()
        target = node.target
        if isinstance(target, ast.Attribute):
            tmp = self.namer.new("obj")
            out = replace("tmp = obj", node, tmp=tmp, obj=self.visit(target.value))
            current = replace_expr(f"{JN}.ld_attr(tmp, name)", node, tmp=tmp, name=ast.Constant(target.attr))
            new = replace_expr(f"{JN}.inplace(op, current, value)", node, op=ast.Constant(op), current=current, value=node.value)
            return out + replace(f"{JN}.st_attr(tmp, name, new)", node, tmp=tmp, name=ast.Constant(target.attr),
                                 new=new)
        if isinstance(target, ast.Subscript):
            obj, key = self.namer.new("obj"), self.namer.new("key")
            out = replace("obj = o\nkey = k\n", node, obj=obj, o=self.visit(target.value), key=key,
                          k=self.visit(target.slice))
            current = replace_expr(f"{JN}.ld_item(obj, key)", node, obj=obj, key=key)
            new = replace_expr(f"{JN}.inplace(op, current, value)", node, op=ast.Constant(op), current=current, value=node.value)
            return out + replace(f"{JN}.st_item(obj, key, new)", node, obj=obj, key=key, new=new)
        if isinstance(target, ast.Name) and target.id in self.declared:
            current = ast.copy_location(ast.Name(id=target.id, ctx=ast.Load()), node)
            new = replace_expr(f"{JN}.inplace(op, current, value)", node, op=ast.Constant(op), current=current, value=node.value)
            return replace(f"{JN}.st_name(name, new)", node, name=ast.Constant(target.id), new=new)
        return node

    def visit_Delete(self, node):
        out = []
        for target in node.targets:
            if isinstance(target, ast.Attribute):
                out += replace(f"{JN}.del_attr(obj, name)", node, obj=self.visit(target.value),
                               name=ast.Constant(target.attr))
            elif isinstance(target, ast.Subscript):
                out += replace(f"{JN}.del_item(obj, key)", node, obj=self.visit(target.value),
                               key=self.visit(target.slice))
            elif isinstance(target, ast.Name) and target.id in self.declared:
                out += replace(f"{JN}.del_name(name)", node, name=ast.Constant(target.id))
            else:
                out.append(ast.copy_location(ast.Delete(targets=[target]), node))
        return out

    def visit_For(self, node):
        if self._needs_lowering(node.target):
            tmp = self.namer.new("item")
            stores = self._store(node.target, ast.Name(id=tmp, ctx=ast.Load()), node)
            node.target = ast.copy_location(ast.Name(id=tmp, ctx=ast.Store()), node.target)
            self.generic_visit(node)
            node.body = stores + node.body
            return node
        return self.generic_visit(node)

    def visit_With(self, node):
        for item in node.items:
            if item.optional_vars is not None and self._needs_lowering(item.optional_vars):
                raise unsupported("state-write", self.filename, node,
                                  f"`with ... as {ast.unparse(item.optional_vars)}` stores into state")
        self.generic_visit(node)
        for item in node.items:      # (whether the build may enter it once: `codegen.operators.contexts`)
            item.context_expr = replace_expr(f"{JN}.entered(manager)", item.context_expr, manager=item.context_expr)
        return node


transform = StateWrites.transform
