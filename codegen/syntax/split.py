"""Graph breaks: a function split into graph segments with Python between them.

A statement that cannot be part of a graph (it needs a tensor's value in Python, draws a
per-call value, is a `for`/`else`) runs in Python; so do the compound statements around it
(`for`, `while`, `if`, `with`), whose bodies are split the same way.  Every maximal run of
other statements becomes a *segment*: a function of the local variables it reads, returning
those it assigns that are read elsewhere, which janus speculates like any function.  The
*driver* is the original function with each run replaced by a call of its segment.

A run becomes a segment only when the split keeps the program's meaning without further
analysis: every variable it reads is bound whenever it starts, every variable it hands on is
bound whenever it ends, no `return`, `break` or `continue` leaves it (a `return` that ends
the function's body is kept, and the driver returns the segment's result), and it holds no
nested function, class or `yield`.  Other runs stay in Python.  Nodes keep the file's line
numbers, so reports and tracebacks name the user's lines.
"""
from __future__ import annotations

import ast
import copy
import dataclasses
import itertools

from codegen.syntax.frames import Refusal, refusal, walk_scope

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_NESTED_BODIES = (ast.For, ast.While, ast.If, ast.With)
_REFLECTION = {"locals", "vars", "eval", "exec", "globals", "dir"}
# A run becomes a segment only when it likely runs this many eager ops (`_work`): a graph call
# costs about as much as ten eager ops, so a shorter run is cheaper in Python.
MIN_WORK = 6
_CONTAINER_METHODS = {"append", "extend", "insert", "pop", "remove", "clear", "update", "setdefault", "add",
                      "discard", "sort", "reverse", "popitem", "get", "keys", "values", "items", "copy", "index",
                      "count"}
_NUMBERS = itertools.count()       # segment names are unique, also across a segment split again
_WORK = (ast.Call, ast.BinOp, ast.UnaryOp, ast.Compare, ast.Subscript)


class CannotSplit(Exception):
    """The function cannot be split at these lines; it runs in Python as a whole.  `refusal` says
    why when the reason is the function's, not the lines' (it is reported)."""

    def __init__(self, message: str, refusal: Refusal | None = None):
        super().__init__(message)
        self.refusal = refusal


@dataclasses.dataclass
class Segment:
    name: str
    node: ast.FunctionDef      # def name(*inputs): <run>; return (*outputs,)
    inputs: list[str]
    outputs: list[str]
    returns: bool              # the run ends the function's body with its `return`
    lines: tuple[int, int]


@dataclasses.dataclass
class Split:
    driver: ast.FunctionDef
    segments: list[Segment]


def split(node: ast.FunctionDef, break_lines: set[int]) -> Split:
    """`break_lines`: lines of the statements that must run in Python."""
    if any(isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await)) for n in walk_scope(node.body)):
        raise CannotSplit("a generator or coroutine")
    if isinstance(node, ast.AsyncFunctionDef):
        raise CannotSplit("an async function")
    why = refusal(node)
    if why is not None:
        raise CannotSplit(why.explanation, why)
    declared = [s for s in walk_scope(node.body) if isinstance(s, (ast.Global, ast.Nonlocal))]
    outside = {name for s in declared for name in s.names}
    params = [a.arg for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs]
    params += [a.arg for a in (node.args.vararg, node.args.kwarg) if a is not None]
    env = _Env(node, set(params), outside, declared, break_lines, params[:1])
    body = env.block(node.body, set(params), top=True, in_loop=False)
    if not env.segments:
        raise CannotSplit("no statement around the break can run as a graph")
    driver = copy.copy(node)
    driver.body, driver.decorator_list, driver.returns = body, [], None
    driver.args = copy.deepcopy(node.args)
    for a in ast.walk(driver.args):          # annotations are evaluated where the driver is made
        if isinstance(a, ast.arg):
            a.annotation = None
    return Split(driver, env.segments)


class _Env:
    def __init__(self, fn, params, outside, declared, break_lines, first_param):
        self.fn, self.outside, self.declared = fn, outside, declared
        self.break_lines, self.first_param = break_lines, first_param
        self.locals = (params | _stored(fn.body)) - outside
        self.segments: list[Segment] = []
        self.catching = 0       # inside a `try` or `with` kept in Python: an exception may be caught

    def block(self, stmts, bound: set, top: bool, in_loop: bool) -> list:
        """The statements of one block for the driver; `bound`: names surely bound at its start.
        A statement holding a break, or one no segment can hold (a `break` leaving it, a nested
        function), runs in Python; the runs between them are segments where they can be."""
        out, run = [], []
        for i, stmt in enumerate(stmts):
            last_return = top and i == len(stmts) - 1 and isinstance(stmt, ast.Return)
            if self._breaks(stmt) or not self._fits([stmt], last_return):
                out += self._run(run, bound, top, in_loop, ends=False)
                bound = _after(run, bound)
                out.append(self._python(stmt, bound, in_loop))
                bound = _after([stmt], bound)
                run = []
            else:
                run.append(stmt)
        out += self._run(run, bound, top, in_loop, ends=True)
        return out

    def _breaks(self, stmt) -> bool:
        return any(stmt.lineno <= line <= stmt.end_lineno for line in self.break_lines)

    def _python(self, stmt, bound, in_loop):
        """A statement holding a break: kept in Python (its header, `for x in ...:`, runs in Python
        too, wherever the break is), its bodies split in turn."""
        if isinstance(stmt, (ast.Try, ast.TryStar)):
            return self._python_try(stmt, bound, in_loop)
        if isinstance(stmt, ast.Match):
            stmt = copy.copy(stmt)
            stmt.cases = [copy.copy(c) for c in stmt.cases]
            for case in stmt.cases:      # (a case's body runs after its whole pattern matched)
                case.body = self.block(case.body, bound | _captured(case), top=False, in_loop=in_loop)
            return stmt
        if not isinstance(stmt, _NESTED_BODIES):
            return stmt
        stmt = copy.copy(stmt)
        loop = isinstance(stmt, (ast.For, ast.While))
        inner = bound | (_stored_targets(stmt) if isinstance(stmt, (ast.For, ast.With)) else set())
        catching = isinstance(stmt, ast.With)         # (its `__exit__` may swallow an exception)
        self.catching += catching
        stmt.body = self.block(stmt.body, inner, top=False, in_loop=in_loop or loop)
        self.catching -= catching
        if getattr(stmt, "orelse", None):
            stmt.orelse = self.block(stmt.orelse, bound, top=False, in_loop=in_loop)
        return stmt

    def _python_try(self, stmt, bound, in_loop):
        """A `try` kept in Python: its body, handlers, `else` and `finally` are split in turn.  A
        handler or `finally` may start after any statement of the body: only what was bound
        before the `try` is surely bound there.  A segment that raises re-runs in Python and
        raises there, so the handler sees eager's exception after eager's effects."""
        stmt = copy.copy(stmt)
        self.catching += 1
        stmt.body = self.block(stmt.body, bound, top=False, in_loop=in_loop)
        handlers = []
        for handler in stmt.handlers:
            handler = copy.copy(handler)
            inner = bound | ({handler.name} if handler.name else set())
            handler.body = self.block(handler.body, inner, top=False, in_loop=in_loop)
            handlers.append(handler)
        stmt.handlers = handlers
        if stmt.orelse:
            stmt.orelse = self.block(stmt.orelse, _after(stmt.body, bound), top=False, in_loop=in_loop)
        if stmt.finalbody:
            stmt.finalbody = self.block(stmt.finalbody, bound, top=False, in_loop=in_loop)
        self.catching -= 1
        return stmt

    def _run(self, run, bound, top, in_loop, ends) -> list:
        """A run of statements as a call of its segment, or as it is when it cannot be one."""
        if _work(run) < MIN_WORK:
            return run          # a graph call costs more than the few eager ops it would replace
        returns = top and ends and isinstance(run[-1], ast.Return)
        if not self._fits(run, returns):
            return run
        # (In a loop, the run's own statements read its locals again on the next round.)
        later = _loaded(self.fn.body) if in_loop else _loaded_outside(self.fn.body, run)
        if self.catching and _stored(run[:-1] if _simple(run[-1]) else run) & later:
            # A segment that raises hands on none of its locals; where the exception may be caught
            # (a `try` or `with` around it), code after it must not see a local assigned before
            # the raise.  Only the last statement, assigning after all it computes, may hand some on:
            # the run is cut after the first statement assigning one.
            cut = next(k for k, stmt in enumerate(run) if _stored([stmt]) & later)
            if cut == len(run) - 1:
                return run
            return self._run(run[:cut + 1], bound, top, in_loop, ends=False) + \
                self._run(run[cut + 1:], _after(run[:cut + 1], bound), top, in_loop, ends)
        loaded, stored = _exposed(run, set()) & self.locals, _stored(run) & self.locals
        if not loaded <= bound:
            return run
        outputs = sorted(stored & later) if not returns else []
        if not set(outputs) <= _after(run, bound) or set(outputs) & _with_targets(run):
            return run          # (a `with` target, such as a tape, stays with the code that uses it)
        # An output the run may leave unassigned (a loop that runs no iteration) keeps the value
        # it had: the segment takes it in too.
        loaded |= set(outputs) - _after(run, set())
        inputs = sorted(loaded, key=lambda n: (n not in self.first_param, n))
        return [self._segment(run, inputs, outputs, returns)]

    def _fits(self, run, returns) -> bool:
        body = run[:-1] if returns else run
        for n in walk_scope(body):
            if isinstance(n, (ast.Return, ast.Global, ast.Nonlocal, ast.Delete, ast.Try, ast.TryStar)) \
                    or isinstance(n, _SCOPES):
                return False
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and (
                    n.func.id in _REFLECTION or (n.func.id == "super" and not n.args)):
                return False
        return not _escapes(body)

    def _segment(self, run, inputs, outputs, returns):
        name = f"__janus_segment_{next(_NUMBERS)}"
        body = [copy.deepcopy(s) for s in run]
        if not returns:
            tail = ast.Return(value=ast.Tuple(elts=[ast.Name(id=n, ctx=ast.Load()) for n in outputs],
                                              ctx=ast.Load()))
            body.append(ast.copy_location(tail, run[-1]))
        decls = [copy.deepcopy(d) for d in self.declared]
        node = ast.FunctionDef(name=name, args=ast.arguments(
            posonlyargs=[], args=[ast.arg(arg=n) for n in inputs], kwonlyargs=[], kw_defaults=[], defaults=[]),
            body=decls + body, decorator_list=[], returns=None, type_params=[])
        ast.copy_location(node, run[0])
        node.end_lineno, node.end_col_offset = run[-1].end_lineno, run[-1].end_col_offset
        ast.fix_missing_locations(node)
        self.segments.append(Segment(name, node, inputs, outputs, returns, (run[0].lineno, run[-1].end_lineno)))
        call = ast.Call(func=ast.Name(id=name, ctx=ast.Load()),
                        args=[ast.Name(id=n, ctx=ast.Load()) for n in inputs], keywords=[])
        if returns:
            stmt = ast.Return(value=call)
        elif outputs:
            stmt = ast.Assign(targets=[ast.Tuple(elts=[ast.Name(id=n, ctx=ast.Store()) for n in outputs],
                                                 ctx=ast.Store())], value=call)
        else:
            stmt = ast.Expr(value=call)
        return ast.fix_missing_locations(ast.copy_location(stmt, run[0]))


def _cost(node) -> int:
    """Eager ops an expression likely runs: a call 3 (an op, or a function of several), an
    operator or subscript 1; a container method (`append`, ...) runs no op."""
    total = 0
    for n in ast.walk(node):
        if isinstance(n, ast.Call):
            total += 0 if isinstance(n.func, ast.Attribute) and n.func.attr in _CONTAINER_METHODS else 3
        elif isinstance(n, _WORK):
            total += 1
    return total


def _work(stmts, weight: int = 1) -> int:
    """The likely eager ops of `stmts`, those in a loop's body counted four times."""
    total = 0
    for s in stmts:
        if isinstance(s, (ast.For, ast.While)):
            total += weight * _cost(s.iter if isinstance(s, ast.For) else s.test)
            total += _work(s.body, weight * 4) + _work(s.orelse, weight)
        elif isinstance(s, (ast.If, ast.With)):
            header = [s.test] if isinstance(s, ast.If) else [i.context_expr for i in s.items]
            total += weight * sum(_cost(h) for h in header)
            total += _work(s.body, weight) + _work(getattr(s, "orelse", []), weight)
        else:
            total += weight * _cost(s)
    return total


def _escapes(stmts, in_loop=False) -> bool:
    """A `break` or `continue` in `stmts` that leaves them (its loop is outside)."""
    for s in stmts:
        if isinstance(s, (ast.Break, ast.Continue)) and not in_loop:
            return True
        if isinstance(s, (ast.For, ast.While)):
            if _escapes(s.body, True) or _escapes(s.orelse, in_loop):
                return True
        elif isinstance(s, (ast.If, ast.With)):
            if _escapes(s.body, in_loop) or _escapes(getattr(s, "orelse", []), in_loop):
                return True
        elif isinstance(s, ast.Match):
            if any(_escapes(c.body, in_loop) for c in s.cases):
                return True
    return False


def _names(stmts, ctx) -> set:
    names = set()
    for n in walk_scope(stmts):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ctx):
            names.add(n.id)
        elif isinstance(n, _SCOPES) and ctx is ast.Load:
            names |= {m.id for m in ast.walk(n) if isinstance(m, ast.Name) and isinstance(m.ctx, ast.Load)}
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and ctx is ast.Store:
            names.add(n.name)
        elif isinstance(n, (ast.Import, ast.ImportFrom)) and ctx is ast.Store:
            names |= {(a.asname or a.name).split(".")[0] for a in n.names}
        elif isinstance(n, ast.ExceptHandler) and n.name and ctx is ast.Store:
            names.add(n.name)
        elif isinstance(n, (ast.MatchAs, ast.MatchStar, ast.MatchMapping)) and ctx is ast.Store:
            names |= {name} if (name := n.rest if isinstance(n, ast.MatchMapping) else n.name) else set()
        elif isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name) and ctx is ast.Load:
            names.add(n.target.id)
    return names


def _loaded(stmts) -> set:
    return _names(stmts, ast.Load)


def _stored(stmts) -> set:
    # A comprehension's targets are its own (by node: the same name stored by the function, a
    # `with ... as q` before `[... for q in ...]`, stays the function's).
    own = {id(m) for n in walk_scope(stmts) if isinstance(n, _COMPREHENSIONS)
           for g in n.generators for m in ast.walk(g.target) if isinstance(m, ast.Name)}
    walrus = {n.target.id for n in walk_scope(stmts) if isinstance(n, ast.NamedExpr)}
    stores = [n for n in walk_scope(stmts) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)]
    return (_names(stmts, ast.Store) - {n.id for n in stores}) | {n.id for n in stores if id(n) not in own} | walrus


def _stored_targets(stmt) -> set:
    if isinstance(stmt, ast.For):
        return {n.id for n in ast.walk(stmt.target) if isinstance(n, ast.Name)}
    return {n.id for item in stmt.items if item.optional_vars is not None
            for n in ast.walk(item.optional_vars) if isinstance(n, ast.Name)}


def _with_targets(stmts) -> set:
    return {name for n in walk_scope(stmts) if isinstance(n, ast.With) for name in _stored_targets(n)}


def _loaded_outside(body, run) -> set:
    inside = {id(n) for s in run for n in ast.walk(s)}
    names = set()
    for n in ast.walk(ast.Module(body=body, type_ignores=[])):
        if id(n) in inside:
            continue
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            names.add(n.id)
        elif isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name):
            names.add(n.target.id)
    return names


def _exposed(stmts, assigned: set) -> set:
    """The names `stmts` may read before they surely assigned them: what they need bound."""
    out = set()
    for s in stmts:
        if isinstance(s, ast.With):
            out |= _loaded(s.items) - assigned
            out |= _exposed(s.body, assigned | _stored_targets(s))
        elif isinstance(s, (ast.If, ast.While)):
            out |= _loaded([s.test]) - assigned
            out |= _exposed(s.body, assigned) | _exposed(s.orelse, assigned)
        elif isinstance(s, ast.For):
            out |= _loaded([s.iter]) - assigned
            out |= _exposed(s.body, assigned | _stored_targets(s)) | _exposed(s.orelse, assigned)
        else:
            out |= _loaded([s]) - assigned
        assigned = _after([s], assigned)
    return out


def _after(stmts, bound: set) -> set:
    """The names surely bound after `stmts` run to their end, given those bound before."""
    bound = set(bound)
    for s in stmts:
        if isinstance(s, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = s.targets if isinstance(s, ast.Assign) else ([s.target] if s.value is not None else [])
            bound |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(s, ast.With):
            bound = _after(s.body, bound | _stored_targets(s))
        elif isinstance(s, ast.If):
            bound = _after(s.body, bound) & _after(s.orelse, bound)
        elif isinstance(s, ast.Match):
            ends = [_after(c.body, bound | _captured(c)) for c in s.cases]
            if not _irrefutable(s.cases[-1]):
                ends.append(bound)              # no case may match
            bound = set.intersection(*ends)
        elif isinstance(s, (ast.Try, ast.TryStar)):
            # Past the `try`: its body and `else` ran to their end, or a handler did.
            ends = [_after(s.body + s.orelse, bound)]
            ends += [_after(h.body, bound | ({h.name} if h.name else set())) for h in s.handlers]
            bound = _after(s.finalbody, set.intersection(*ends))
        elif isinstance(s, (ast.FunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)):
            bound |= _stored([s])
        elif isinstance(s, ast.Delete):
            bound -= {n.id for t in s.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(s, ast.Expr):
            bound |= {n.target.id for n in ast.walk(s) if isinstance(n, ast.NamedExpr)}
    return bound


def _captured(case) -> set:
    """The names a `case` binds before its body runs: its pattern's captures, and the names its
    guard binds with `:=` (the guard was true)."""
    names = {n.target.id for n in ast.walk(case.guard) if isinstance(n, ast.NamedExpr)} if case.guard else set()
    return names | _names([case.pattern], ast.Store)


def _irrefutable(case) -> bool:
    """`case _:` or `case name:` without a guard: matches whatever reaches it."""
    return case.guard is None and isinstance(case.pattern, ast.MatchAs) and case.pattern.pattern is None


def _simple(stmt) -> bool:
    """A statement that assigns its names only after all it computes (so not after a raise)."""
    return isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr, ast.Return)) and not any(
        isinstance(n, ast.NamedExpr) for n in ast.walk(stmt))
