"""What a split function cannot spread over frames: the driver and each graph segment are frames
of their own, so a variable lives in several, handed between them as values.

Two things need the function's variables to be one frame's, and keep it whole (in Python):

- a *cell* (a local a nested function, lambda, class or generator expression reads) that is
  written after a closure could see it: the closure reads and writes the driver's cell, while a
  segment holds its own copy.  A cell whose every store comes in statements of the body before
  the first one that makes a closure naming it holds, from then on, the value the closure sees,
  and the copies agree.  A list, dict or set comprehension runs where it stands and is no
  closure here;
- a call that reads the frame itself: `locals()`, `vars()` and `dir()` without an argument,
  `eval` and `exec` without their own namespaces, `sys._getframe`, `inspect.currentframe` (also
  imported by name), or a frame's `f_locals` and `f_back`.
"""
from __future__ import annotations

import ast
import dataclasses
import symtable

_COMPREHENSIONS = {"listcomp", "setcomp", "dictcomp"}
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_CLOSURES = _SCOPES + (ast.GeneratorExp,)
_FRAME_ATTRS = {"_getframe", "currentframe"}
_FRAME_FIELDS = {"f_locals", "f_back"}


@dataclasses.dataclass(frozen=True)
class Refusal:
    kind: str
    line: int
    explanation: str
    hint: str


def refusal(node: ast.FunctionDef) -> Refusal | None:
    """Why `node` (a function's AST) must not be split, or None."""
    return _reads_frame(node) or _written_cell(node)


def _reads_frame(node) -> Refusal | None:
    for n in walk_scope(node.body):
        if isinstance(n, ast.Attribute) and n.attr in _FRAME_FIELDS:      # (a frame reached another way)
            return Refusal("frame-introspection", n.lineno, f"`.{n.attr}` reads a frame's variables, which graph "
                           "segments would hold in frames of their own: the function runs in Python",
                           "pass the values it needs explicitly instead of reading the frame")
        if not isinstance(n, ast.Call):
            continue
        f = n.func
        name = f.id if isinstance(f, ast.Name) else None
        reads = name in ("locals", *_FRAME_ATTRS) or (name in ("vars", "dir") and not n.args and not n.keywords) \
            or (name in ("eval", "exec") and len(n.args) < 2 and not n.keywords) \
            or (isinstance(f, ast.Attribute) and f.attr in _FRAME_ATTRS)
        if reads:
            what = name or f.attr
            return Refusal("frame-introspection", n.lineno,
                           f"{what}() reads the function's own local variables, which graph segments would hold "
                           "in frames of their own: the function runs in Python",
                           "pass the values it needs explicitly instead of reading the frame")
    return None


def _written_cell(node) -> Refusal | None:
    fn_table = _function_table(node)
    if fn_table is None:
        return None
    own = {s.get_name() for s in fn_table.get_symbols() if s.is_local()}
    captured, written = set(), set()
    for child in fn_table.get_children():
        _closure_uses(child, own, captured, written)
    for name in sorted(captured):
        if name in written:
            line = _nonlocal_line(node, name)
            return Refusal("closure-cells", line or node.lineno,
                           f"`{name}` is written by a nested function (nonlocal): the function's graph segments "
                           f"would each hold their own copy of `{name}`, so the function runs in Python",
                           "return the new value from the nested function, or keep it in a list or an object")
        line = _late_store(node, name)
        if line is not None:
            return Refusal("closure-cells", line,
                           f"`{name}` is read by a nested function or lambda and assigned again after it may have "
                           f"been made: the function's graph segments would each hold their own copy of `{name}`, "
                           "so the function runs in Python",
                           f"pass `{name}` to the nested function as an argument")
    return None


def _function_table(node):
    """The symbol table of `node`'s own scope (the AST unparsed, without its decorators)."""
    bare = ast.FunctionDef(name=node.name, args=node.args, body=node.body, decorator_list=[], returns=None,
                           type_params=[])
    try:
        top = symtable.symtable(ast.unparse(ast.fix_missing_locations(bare)), "<split>", "exec")
    except SyntaxError:
        return None
    children = top.get_children()
    return children[0] if children else None


def _closure_uses(table, names: set, captured: set, written: set) -> None:
    """Of `names` (the function's locals): those `table` and the scopes in it capture (`captured`)
    and write (`written`).  A comprehension's own reads are not captures; its nested scopes' are."""
    free = {s.get_name() for s in table.get_symbols() if s.is_free()} & names
    if table.get_name() not in _COMPREHENSIONS:
        captured |= free
        written |= {s.get_name() for s in table.get_symbols() if s.is_free() and s.is_assigned()} & names
    for child in table.get_children():
        _closure_uses(child, free, captured, written)


def _nonlocal_line(node, name) -> int | None:
    for n in ast.walk(node):
        if isinstance(n, ast.Nonlocal) and name in n.names:
            return n.lineno
    return None


def _late_store(node, name: str) -> int | None:
    """The line of a store of the cell `name` that may run after a closure naming it is made: one
    in or after the first statement of the body that makes such a closure; None when every store
    comes before it (then every frame holds the value the closure holds).  A store in an `if` or a
    loop before that statement, or a parameter assigned again there, runs before it too."""
    first_closure = next((i for i, s in enumerate(node.body) if _makes_closure_of(s, name)), len(node.body))
    for stmt in node.body[first_closure:]:
        for n in _stores(stmt, name):
            return getattr(n, "lineno", stmt.lineno)
    return None


def _makes_closure_of(stmt, name) -> bool:
    return any(isinstance(n, _CLOSURES) and any(isinstance(m, ast.Name) and m.id == name for m in ast.walk(n))
               for n in ast.walk(stmt))


def _stores(stmt, name):
    """The nodes of `stmt` (in the function's own scope) that bind or delete `name`."""
    targets = {id(m) for n in walk_scope([stmt]) if isinstance(n, ast.comprehension) for m in ast.walk(n.target)}
    for n in walk_scope([stmt]):
        if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, (ast.Store, ast.Del)) \
                and id(n) not in targets:
            yield n
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.name == name:
            yield n
        elif isinstance(n, (ast.Import, ast.ImportFrom)) and any(
                (a.asname or a.name).split(".")[0] == name for a in n.names):
            yield n
        elif isinstance(n, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and n.name == name:
            yield n
        elif isinstance(n, ast.MatchMapping) and n.rest == name:
            yield n


def walk_scope(stmts):
    """The nodes of `stmts` in the function's own scope: nested scopes are yielded, not entered
    (comprehensions are, as a walrus in one binds the function's name)."""
    todo = list(stmts)
    while todo:
        n = todo.pop()
        yield n
        if not isinstance(n, _SCOPES):
            todo.extend(ast.iter_child_nodes(n))
