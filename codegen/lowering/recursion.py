"""Lowers a recursive function into the blocks of a static Call/Return machine.

Every recursive call (to a function of the same cycle) is first hoisted into
its own assignment, `tmp = f(args)`.  The body is then split into blocks
at call groups, at `if`s that contain calls or returns, and at `return`s.
Each block is straight-line code (plus `if`s without calls) ending in one
terminator:

    Goto(b)                          continue in block b
    Branch(test, b_true, b_false)    a per-frame predicate picks the block
    CallGroup([Call(tmp, callee, args), ...], b)
                                     issue independent calls together, resume in b
    Return(expr)                     deliver expr to the caller's tmp

`codegen.recursion.machine` runs all frames waiting at a block at once.  A
block is compiled, through the ordinary pipeline, into a builder function
`block(*frame_vars) -> (frame_vars, terminator_values)`.
"""
from __future__ import annotations

import ast
import copy
import dataclasses

from codegen.syntax.analysis import assigned_names, parameter_names
from codegen.syntax.annotations import only_tested
from codegen.errors import unsupported
from codegen.syntax.call_arguments import positional
from codegen.syntax.templates import JN, Namer, replace, replace_expr


@dataclasses.dataclass
class Call:
    target: str                  # the temporary receiving the result
    callee: str                  # the name the user's code calls
    args: list                   # AST expressions
    site: int = -1               # global call-site number (Yaghi's transformation)
    method: str = ""             # for `node.left.encode(m)`: "encode"; the receiver, args[0], must not be None


@dataclasses.dataclass
class Goto:
    target: int
    kind = "goto"

    def exprs(self) -> list:
        return []


@dataclasses.dataclass
class Branch:
    test: ast.expr
    if_true: int
    if_false: int
    kind = "branch"

    def exprs(self) -> list:
        return [self.test]


@dataclasses.dataclass
class CallGroup:
    calls: list[Call]
    resume: int
    kind = "call"

    def exprs(self) -> list:
        return [a for c in self.calls for a in c.args]


@dataclasses.dataclass
class Return:
    value: ast.expr | None
    kind = "return"

    def exprs(self) -> list:
        return [self.value] if self.value is not None else []


Terminator = Goto | Branch | CallGroup | Return


@dataclasses.dataclass
class Block:
    id: int
    stmts: list
    term: Terminator = dataclasses.field(default_factory=lambda: Return(None))

    def anchor(self, default):
        """The node a block's generated code and its name are located at."""
        if self.stmts:
            return self.stmts[0]
        exprs = self.term.exprs() if isinstance(self.term, (Branch, Return)) else []
        return exprs[0] if exprs else default


def dotted(expr) -> str | None:
    """"a.b.c" for a chain of attribute reads on a name, else None."""
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute):
        inner = dotted(expr.value)
        return None if inner is None else f"{inner}.{expr.attr}"
    return None


def call_key(func) -> str | None:
    """How a call names its callee: "f" for f(...), "self.m" for self.m(...), "self.left.m" for a
    method called on a node (`self.left.m(...)`)."""
    return dotted(func)


def _is_cycle_call(node, names) -> bool:
    return isinstance(node, ast.Call) and call_key(node.func) in names


def _call_args(call: ast.Call) -> list:
    """Positional arguments; a method call passes its receiver first."""
    if isinstance(call.func, ast.Attribute):
        receiver = ast.fix_missing_locations(ast.copy_location(copy.deepcopy(call.func.value), call))
        return [receiver] + list(call.args)
    return list(call.args)


class _Hoist(ast.NodeTransformer):
    """Replaces recursive calls inside one expression by temporaries, innermost first; each call
    passes every parameter positionally where it can (`call_arguments.positional`)."""

    def __init__(self, callees: dict, namer, filename):
        self.callees, self.names, self.namer, self.filename = callees, set(callees), namer, filename
        self.hoisted: list[ast.stmt] = []
        self.defaults_read: set = set()

    def visit_Call(self, node):
        self.generic_visit(node)
        if not _is_cycle_call(node, self.names):
            return node
        callee = self.callees[call_key(node.func)]
        full = positional(node, callee)
        if full is not None and len(full.args) > len(node.args) + len(node.keywords):
            self.defaults_read.add(callee)            # a default written into the call
        node = full or node
        if node.keywords:
            raise unsupported("recursion", self.filename, node, "keyword arguments in a recursive call")
        tmp = self.namer.new("ret")
        (stmt,) = replace("tmp = call", node, tmp=tmp, call=node)
        self.hoisted.append(stmt)
        return ast.copy_location(ast.Name(id=tmp, ctx=ast.Load()), node)

    def _refuse(self, node):
        for sub in ast.walk(node):
            if _is_cycle_call(sub, self.names):
                raise unsupported("recursion", self.filename, node,
                                  "a recursive call inside a short-circuit, conditional expression or comprehension",
                                  "assign the call to a variable first")
        return node

    def visit_BoolOp(self, node):
        node.values[0] = self.visit(node.values[0])
        for v in node.values[1:]:
            self._refuse(v)
        return node

    def visit_IfExp(self, node):
        node.test = self.visit(node.test)
        self._refuse(node.body)
        self._refuse(node.orelse)
        return node

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = visit_Lambda = _refuse


def _unpacks(stmt, temps) -> bool:
    """`a, b = tmp` or `a = tmp` for a call's temporary `tmp`: a copy without side effects."""
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.value, ast.Name)
            and stmt.value.id in temps):
        return False
    target = stmt.targets[0]
    names = target.elts if isinstance(target, ast.Tuple) else [target]
    return all(isinstance(n, ast.Name) for n in names)


def _contains(node, pred) -> bool:
    return any(pred(sub) for sub in ast.walk(node))


class CycleFunction:
    """One function of a recursive cycle, split into blocks."""

    def __init__(self, fn, node: ast.FunctionDef, filename: str, callees: dict):
        self.fn = fn
        self.node = node
        self.filename = filename
        self.callees = callees                  # how the code names each function of the cycle it calls
        self.cycle_names = set(callees)
        self.defaults_read: set = set()         # callees whose defaults its calls' frames take
        self.params = parameter_names(node)
        if node.args.vararg or node.args.kwarg or node.args.kwonlyargs:
            raise unsupported("recursion", filename, node, "recursive functions take positional parameters only")
        for sub in ast.walk(node):
            if isinstance(sub, (ast.Global, ast.Nonlocal)):
                # Blocks keep every assigned name in the frame tables: the write would be lost.
                raise unsupported("write-in-recursion", filename, sub,
                                  f"`{', '.join(sub.names)}` is written inside a recursive function",
                                  "return the value from the recursion and write it outside")
        self.namer = Namer({n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | set(self.params))
        # Zero-argument method calls on variables (`node.is_leaf()`): candidate computed tree columns.
        self.zero_arg_methods = {sub.func.attr for sub in ast.walk(node)
                                 if isinstance(sub, ast.Call) and not sub.args and not sub.keywords
                                 and isinstance(sub.func, ast.Attribute) and isinstance(sub.func.value, ast.Name)
                                 and call_key(sub.func) not in self.cycle_names}
        body = self._hoist_block(node.body)
        self.blocks: list[Block] = []
        self.entry = self._lower(body, None)
        names = assigned_names(body)
        self.vars = self.params + [n for n in names if n not in self.params]
        self.calls = [c for b in self.blocks if isinstance(b.term, CallGroup) for c in b.term.calls]
        self.tree_params: set[str] = set()      # parameters that walk a tree (set by the cycle)

    # -- hoisting ----------------------------------------------------------------------------
    def _hoist_block(self, stmts):
        out = []
        for stmt in stmts:
            out.extend(self._hoist_stmt(stmt))
        return out

    def _hoist_stmt(self, stmt):
        names = self.cycle_names
        if isinstance(stmt, (ast.For, ast.While, ast.AsyncFor, ast.With, ast.Try)) and \
                _contains(stmt, lambda n: _is_cycle_call(n, names) or isinstance(n, ast.Return)):
            raise unsupported("recursion", self.filename, stmt,
                              "a recursive call or return inside a loop, with or try block")
        if isinstance(stmt, ast.If):
            hoist = _Hoist(self.callees, self.namer, self.filename)
            stmt.test = hoist.visit(stmt.test)
            self.defaults_read |= hoist.defaults_read
            stmt.body = self._hoist_block(stmt.body)
            stmt.orelse = self._hoist_block(stmt.orelse)
            return hoist.hoisted + [stmt]
        if isinstance(stmt, (ast.FunctionDef, ast.ClassDef)):
            return [stmt]
        hoist = _Hoist(self.callees, self.namer, self.filename)
        stmt = hoist.visit(stmt)
        self.defaults_read |= hoist.defaults_read
        # `tmp = f(x)` itself stays as it is (it is already hoisted form).
        if hoist.hoisted and isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 \
                and isinstance(stmt.targets[0], ast.Name) and isinstance(stmt.value, ast.Name) \
                and stmt.value.id == hoist.hoisted[-1].targets[0].id:
            last = hoist.hoisted.pop()
            last.targets = stmt.targets
            return hoist.hoisted + [last]
        return hoist.hoisted + [stmt]

    # -- blocks ------------------------------------------------------------------------------
    def _new(self) -> Block:
        block = Block(len(self.blocks), [])
        self.blocks.append(block)
        return block

    def _call_of(self, stmt):
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                and _is_cycle_call(stmt.value, self.cycle_names):
            return self._call(stmt.targets[0].id, stmt.value)
        if isinstance(stmt, ast.Expr) and _is_cycle_call(stmt.value, self.cycle_names):
            return self._call(self.namer.new("ret"), stmt.value)
        return None

    def _call(self, target, node: ast.Call) -> Call:
        key = call_key(node.func)
        receiver, _, method = key.rpartition(".")
        on_node = receiver and receiver != (self.params[0] if self.params else None)
        return Call(target, key, _call_args(node), method=method if on_node else "")

    def _group(self, stmts, i, call):
        """The calls from `stmts[i]` on that do not depend on each other's results, issued together:
        (the calls, the unpackings of their results met between them, the index of the last call).
        An unpacking (`h, loss = tmp`) only copies a result into names, so it may wait until the
        group has returned, unless a later call reads one of those names."""
        group, unpacked = [call], []
        written = {call.target}
        j = i + 1
        while j < len(stmts):
            stmt = stmts[j]
            nxt = self._call_of(stmt)
            if nxt is None and _unpacks(stmt, {c.target for c in group}):
                unpacked.append(stmt)
                written |= set(assigned_names([stmt]))
                j += 1
                continue
            if nxt is None or any(isinstance(n, ast.Name) and n.id in written for a in nxt.args for n in ast.walk(a)):
                break
            group.append(nxt)
            written.add(nxt.target)
            i = j
            j += 1
        moved = [s for s in unpacked if stmts.index(s) < i]        # those after the last call stay where they are
        return group, moved, i

    def _lower(self, stmts, cont) -> int:
        """Blocks for `stmts`, continuing at block `cont` (None: return None). Returns the entry."""
        cur = self._new()
        entry = cur.id
        i = 0
        while i < len(stmts):
            stmt = stmts[i]
            call = self._call_of(stmt)
            if call is not None:
                group, unpacked, i = self._group(stmts, i, call)
                nxt_block = self._new()
                cur.term = CallGroup(group, nxt_block.id)
                cur = nxt_block
                cur.stmts.extend(unpacked)
            elif isinstance(stmt, ast.Return):
                cur.term = Return(stmt.value)
                return entry
            elif isinstance(stmt, ast.If) and _contains(
                    stmt, lambda n: isinstance(n, ast.Return) or _is_cycle_call(n, self.cycle_names)):
                rest = stmts[i + 1:]
                join = self._lower(rest, cont) if rest else cont
                b_true = self._lower(stmt.body, join)
                b_false = self._lower(stmt.orelse, join) if stmt.orelse else (
                    join if join is not None else self._lower([], None))
                only_tested(stmt.test)
                cur.term = Branch(stmt.test, b_true, b_false)
                return entry
            else:
                cur.stmts.append(stmt)
            i += 1
        cur.term = Goto(cont) if cont is not None else Return(None)
        return entry

    def block_source(self, block: Block) -> ast.FunctionDef:
        """`def block_k(*vars): stmts; return (vars...), terminator_values` as an AST."""
        params = ", ".join(self.vars)
        term = block.term
        anchor = block.anchor(self.node)
        (fn,) = replace(f"def block_{block.id}({params}):\n    return (VARS,), TERM\n", anchor,
                        VARS=ast.Tuple(elts=[ast.Name(id=v, ctx=ast.Load()) for v in self.vars], ctx=ast.Load()),
                        TERM=ast.Constant(0))
        ret = fn.body[-1]
        values = ret.value.elts
        values[0] = ast.Tuple(elts=[ast.Name(id=v, ctx=ast.Load()) for v in self.vars], ctx=ast.Load())
        if isinstance(term, Branch):
            values[1] = replace_expr(f"{JN}.truth(test)", anchor, test=term.test)
        elif isinstance(term, CallGroup):
            values[1] = ast.Tuple(elts=[ast.Tuple(elts=_passed(c, anchor), ctx=ast.Load()) for c in term.calls],
                                  ctx=ast.Load())
        elif isinstance(term, Return) and term.value is not None:
            values[1] = term.value
        fn.body = list(block.stmts) + [ret]
        for sub in ast.walk(fn):
            if "lineno" in sub._attributes and getattr(sub, "lineno", None) is None:
                ast.copy_location(sub, anchor)
        return fn


def _passed(call: Call, anchor) -> list:
    """A call's arguments as its block hands them over: a node a method is called on
    (`self.left.encode(m)`) must not be None, where Python would raise before the call."""
    if not call.method:
        return list(call.args)
    receiver = replace_expr(f"{JN}.receiver(node, {call.method!r})", anchor, node=call.args[0])
    return [receiver] + list(call.args[1:])
