"""Recursive cycles: finding them, and compiling each into the blocks of a Call/Return machine.

`find_cycle` discovers the functions that recurse through a call (globals,
closure cells and `self.method(...)`); `Cycle` lowers each of them into blocks
(`codegen.lowering.recursion`), numbers every call site, finds the parameters
every call passes along unchanged, and compiles each block into a builder.
`wants_machine` decides, per call, whether the recursion runs as a machine
(on tensors or trees) or is unrolled at build time (on Python values).
"""
from __future__ import annotations

import ast
import dataclasses
import threading
import weakref

from profiler.library import is_user_function

from codegen.compiler import compile_block
from codegen.errors import ConversionError, unsupported
from codegen.lowering.recursion import CallGroup, CycleFunction, dotted
from codegen.operators.calls import unwrap
from codegen.operators.tree_walk import DISPATCHED, method_of, resolves, tree_nodes
from codegen.operators.overrides import bind_method
from codegen.operators.trees import Pointer, is_node
from codegen.operators.values import is_symbolic, user_globals
from codegen.recursion.dispatch import origin
from codegen.syntax.analysis import assigned_names
from codegen.syntax.source import parse_function


def _owner_class(fn):
    """The class a method is defined in (module-level classes), or None."""
    parts = fn.__qualname__.split(".")
    if len(parts) != 2:
        return None
    cls = user_globals(fn).get(parts[0])
    return cls if isinstance(cls, type) and cls.__dict__.get(parts[1]) is fn else None


def _called_functions(fn, on_nodes=True) -> dict[str, object]:
    """Names called in fn's body that resolve to user functions (globals, closure cells, and
    `self.method(...)` for methods; `on_nodes`: also a method called on another receiver, as a
    node's child, `self.left.encode(...)`), keyed as the code spells them ("helper", "self.encode",
    "self.left.encode")."""
    try:
        node = parse_function(fn).node
    except Exception:  # noqa: BLE001 - no source: no cycle through it
        return {}
    out = {}
    code = fn.__code__
    cls = _owner_class(fn)
    first = code.co_varnames[0] if code.co_argcount else None
    merged = DISPATCHED.get(fn)
    local = set(assigned_names(node.body)) | {a.arg for a in node.args.args} if merged is not None else set()
    for sub in ast.walk(node):
        if merged is not None and on_nodes and isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) \
                and sub.func.attr == merged[0] and dotted(sub.func.value) not in (None, first) \
                and dotted(sub.func.value).split(".")[0] in local:
            out[dotted(sub.func)] = fn          # `self.left.encode(m)` of the merged overrides: itself
            continue
        if cls is not None and isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) \
                and isinstance(sub.func.value, ast.Name) and sub.func.value.id == first:
            value = cls.__dict__.get(sub.func.attr)
            value = unwrap(value)
            if is_user_function(value):
                out[f"{first}.{sub.func.attr}"] = value
        elif on_nodes and cls is not None and isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) \
                and dotted(sub.func.value) not in (None, first):
            # `self.left.encode(m)`: taken as the method of fn's class, which the receiver's class must
            # resolve the name to when the recursion runs (`Cycle.dispatches`).
            value = method_of([cls], sub.func.attr)
            if value is not None:
                out[dotted(sub.func)] = value
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name):
            name = sub.func.id
            if name in code.co_freevars:
                try:
                    value = fn.__closure__[code.co_freevars.index(name)].cell_contents
                except ValueError:
                    continue
            else:
                value = user_globals(fn).get(name)
            value = unwrap(value)                           # a speculated function
            if is_user_function(value):
                out[name] = value
    return out


def find_cycle(fn, on_nodes=True) -> dict[object, dict[str, object]] | None:
    """{function: {name: callee in the cycle}} for the recursive cycle through fn, or None
    (`on_nodes`: see `_called_functions`)."""
    graph: dict = {}
    stack = [fn]
    while stack and len(graph) < 64:
        f = stack.pop()
        if f in graph:
            continue
        graph[f] = _called_functions(f, on_nodes)
        stack.extend(graph[f].values())

    def reaches(a, target, seen):
        for g in graph.get(a, {}).values():
            if g is target:
                return True
            if g not in seen:
                seen.add(g)
                if reaches(g, target, seen):
                    return True
        return False

    if not reaches(fn, fn, set()):
        return None
    # The machine takes the whole recursive region below fn: every reachable function that
    # recurses, or leads to one that does, so nested recursion is just more frames.
    recursive = {f for f in graph if reaches(f, f, set())}
    members = [f for f in graph if (f is fn or reaches(fn, f, set()))
               and (f in recursive or any(reaches(f, r, set()) for r in recursive))]
    return {f: {name: g for name, g in graph[f].items() if g in members} for f in members}


# -- the cycle, compiled ---------------------------------------------------------------------------
@dataclasses.dataclass
class CallSite:
    id: int
    caller: CycleFunction
    target: str                 # the caller's temporary
    callee: CycleFunction


@dataclasses.dataclass
class Strategy:
    """How the last graph built runs a cycle, and why."""
    name: str                   # "levels", "chain" (depth-first under XLA), "linear" (two loops), "linear-xla"
    #                             (the two loops under XLA, with jit_compile=True) or "wavefront"
    why: str                    # why this strategy fits, or why the others do not
    batched: list = dataclasses.field(default_factory=list)   # comprehensions built once on its results

    def describe(self) -> str:
        how = {"chain": "depth-first, compiled with XLA", "levels": "one step per tree level",
               "linear": "down the calls, then up the returns",
               "linear-xla": "down the calls, then up the returns, compiled with XLA",
               "wavefront": "every ready frame at each step"}[self.name]
        after = "".join(f"; the list comprehension at {where} computes its element once for all calls"
                        for where in self.batched)
        return f"{self.name} ({how}): {self.why}{after}"


class Cycle:
    """A recursive cycle lowered to blocks; built once per cycle and reused by every graph."""

    def __init__(self, members: dict):
        self.functions: dict[object, CycleFunction] = {}
        for f, callees in members.items():
            src = parse_function(f)
            self.functions[f] = CycleFunction(f, src.node, src.filename, dict(callees))
        self.names = {f: callees for f, callees in members.items()}
        # Defaults written into calls, by function: its graphs hold while `__defaults__` is this tuple.
        self.defaults = {g: g.__defaults__ for cf in self.functions.values() for g in cf.defaults_read}
        self.offsets: dict[object, int] = {}
        total = 0
        for f, cf in self.functions.items():
            self.offsets[f] = total
            total += len(cf.blocks)
        self.n_blocks = total
        self.sites: list[CallSite] = []
        self.followed: set = set()          # the node attributes the calls pass (`f(node.left)`)
        for f, cf in self.functions.items():
            for block in cf.blocks:
                if isinstance(block.term, CallGroup):
                    for call in block.term.calls:
                        call.site = len(self.sites)
                        callee = self.functions[self.names[f][call.callee]]
                        if len(call.args) != len(callee.params):
                            # A frame holds every parameter; a default the call leaves out would
                            # be the caller's value in the callee's frame.
                            raise unsupported("recursion", cf.filename, cf.node,
                                              f"a recursive call of {callee.fn.__qualname__} passes "
                                              f"{len(call.args)} of its {len(callee.params)} parameters",
                                              "pass every argument, defaults included")
                        self.sites.append(CallSite(call.site, cf, call.target, callee))
        for site in self.sites:
            call = next(c for c in site.caller.calls if c.site == site.id)
            for i, a in enumerate(call.args):
                root = a
                while isinstance(root, ast.Attribute):
                    root = root.value
                if a is not root and isinstance(root, ast.Name) and root.id in site.caller.params \
                        and i < len(site.callee.params):
                    site.caller.tree_params.add(root.id)
                    site.callee.tree_params.add(site.callee.params[i])
                    step = a
                    while isinstance(step, ast.Attribute):      # node.left.right: left and right
                        self.followed.add(step.attr)
                        step = step.value
        self.invariant = self._invariant_params()
        self.builders = {(f, b.id): compile_block(cf, b, origin(f, getattr(b.anchor(cf.node), 'lineno', 0)))
                         for f, cf in self.functions.items() for b in cf.blocks}
        self.strategy: Strategy | None = None
        self._last = None             # the last run's (steps, frames, ran, walked), read when asked for
        self.runs = 0

    def _invariant_params(self) -> dict:
        """{(function, parameter): class} for parameters every call passes along unchanged (`x` in
        `x * power(x, n - 1)`): all frames then hold the entry's value, which the machine feeds to
        every block as one loop-invariant tensor instead of a frame table.  Parameters joined by
        such passing share a class; a class is invariant when no call passes anything else."""
        parent: dict = {}

        def find(k):
            while parent.setdefault(k, k) != k:
                k = parent[k]
            return k

        broken = set()
        for f, cf in self.functions.items():
            reassigned = set(assigned_names(cf.node.body))
            for p in cf.params:
                find((f, p))
            for block in cf.blocks:
                for call in (block.term.calls if isinstance(block.term, CallGroup) else []):
                    callee = self.names[f][call.callee]
                    for i, q in enumerate(self.functions[callee].params):
                        arg = call.args[i] if i < len(call.args) else None
                        if isinstance(arg, ast.Name) and arg.id in cf.params and arg.id not in reassigned:
                            parent[find((f, arg.id))] = find((callee, q))
                        else:
                            broken.add((callee, q))
        bad = {find(k) for k in broken}
        return {k: find(k) for k in list(parent) if find(k) not in bad}

    def dispatches(self, entry, calls) -> str:
        """Why a `self.m(...)` of the cycle might not reach, on these calls' receivers, the function
        the cycle compiled (a subclass's override, an instance attribute of that name), or "".
        The receiver must be passed along unchanged, so that every frame's is the root's.  A method
        called on a node (`self.left.encode(m)`) must be the same function on every node of the
        trees: their classes are part of the graph's signature, so a tree with another class
        builds (and checks) again."""
        first = self.functions[entry].params[:1]
        root = self.invariant.get((entry, first[0])) if first else None
        for f, callees in self.names.items():
            for key, g in callees.items():
                if "." not in key:
                    continue
                if key.rpartition(".")[0] not in self.functions[f].params[:1]:     # a method called on a node
                    entry_cf = self.functions[entry]
                    trees = [[a for p, a in zip(entry_cf.params, args) if p in entry_cf.tree_params] for args in calls]
                    why = _on_nodes(trees, key.rpartition(".")[2], g)
                    if why:
                        return why
                    continue
                name = key.split(".", 1)[1]
                if root is None or self.invariant.get((f, self.functions[f].params[0])) != root:
                    return f"`{key}` is called on a receiver the recursion does not pass along unchanged"
                for args in calls:
                    if _resolved(args[0], name) is not g:
                        return f"`{key}` is another function on a {type(args[0]).__qualname__} (an override)"
        return ""

    def tree_methods(self) -> tuple:
        """Zero-argument methods the cycle calls on some variable (`node.is_leaf()`)."""
        return tuple(sorted(set().union(*(cf.zero_arg_methods for cf in self.functions.values()))))

    def describe(self) -> dict:
        return {"functions": [cf.fn.__qualname__ for cf in self.functions.values()],
                "call_sites": len(self.sites), "segments": self.n_blocks,
                "last_steps": self.last_steps, "last_frames": self.last_frames,
                "last_block_frames": self.last_block_frames, "last_schedule": self.last_schedule,
                "runs": self.runs,
                "strategy": self.strategy.describe() if self.strategy else None}

    def observe(self, steps, frames, ran, walked=None):
        """After a run: its steps, its frames, and how many frames each block ran (per segment, in
        the order of `segment_names`); a block runs once per frame that reaches it, never again.
        `walked`, for the levels strategy: whether the tree walk's depths gave its schedule.  Kept
        as the run's tensors, read when a report asks (a read costs more than a small run)."""
        self._last = (steps, frames, ran, walked)
        self.runs += 1

    @property
    def last_steps(self):
        return None if self._last is None else int(self._last[0])

    @property
    def last_frames(self):
        return None if self._last is None else int(self._last[1])

    @property
    def last_block_frames(self):
        return None if self._last is None else dict(zip(self.segment_names(), (int(r) for r in self._last[2])))

    @property
    def last_schedule(self):
        """Levels: "walked depths" or "spreading loop" (`levels._schedule`)."""
        if self._last is None or self._last[3] is None:
            return None
        return "walked depths" if bool(self._last[3]) else "spreading loop"

    def segment_names(self) -> list[str]:
        """`function:line` of each block's first statement (or its terminator), in global block order."""
        names = []
        for cf in self.functions.values():
            for block in cf.blocks:
                anchor = block.anchor(cf.node)
                names.append(f"{cf.fn.__qualname__}:{block.id}:{block.term.kind}@{anchor.lineno}")
        return names


def _on_nodes(calls, name: str, fn) -> str:
    """Why `node.name(...)` might not call `fn` on some node of the trees these calls pass (their
    arguments for the parameters that walk trees), or ""."""
    classes, found, schemas = set(), False, []
    for args in calls:
        for a in args:
            if isinstance(a, Pointer):
                found = True
                schema = a.tables.schema
                if name in schema.opaque or any(c.name == name for c in schema.columns):
                    return f"some tree node holds an attribute `{name}` of its own"
                classes |= set(schema.classes)
                schemas.append(schema)
            elif is_node(a):
                found = True
                for node in tree_nodes([a]):
                    if type(vars(node)) is not dict or name in vars(node):
                        return f"some tree node holds an attribute `{name}` of its own"
                    classes.add(type(node))
    if not found:
        return f"`.{name}(...)` is called on a node, and no argument is a tree"
    for cls in sorted(classes, key=lambda c: c.__qualname__):
        if not resolves([cls], name, fn):
            return f"`.{name}(...)` is another function on a {cls.__qualname__} (an override)"
    for schema in schemas:
        bind_method(schema, name, fn)
    return ""


def _resolved(receiver, name: str):
    """The function `receiver.name` calls, found without running code (None: an instance
    attribute of that name, or no plain function)."""
    if type(receiver).__dictoffset__ and name in object.__getattribute__(receiver, "__dict__"):
        return None
    for klass in type(receiver).__mro__:
        if name in klass.__dict__:
            return unwrap(klass.__dict__[name])
    return None


class _ByFunction:
    """A table keyed by function, holding the function weakly where Python allows: a lambda the
    program makes on every call must not stay alive, with what it closes over, for ever."""

    def __init__(self):
        self._weak, self._strong = weakref.WeakKeyDictionary(), {}

    def _of(self, fn):
        try:
            weakref.ref(fn)
        except TypeError:
            return self._strong
        return self._weak

    def __contains__(self, fn) -> bool:
        return fn in self._of(fn)

    def __getitem__(self, fn):
        return self._of(fn)[fn]

    def __setitem__(self, fn, value):
        self._of(fn)[fn] = value

    def get(self, fn, default=None):
        return self._of(fn).get(fn, default)


_CYCLES = _ByFunction()        # function -> its cycle, through methods called on nodes too
_PLAIN = _ByFunction()         # function -> its cycle through globals, closure cells and `self.m(...)` only
REFUSED = _ByFunction()        # function -> why it cannot run as a machine
_CHOSEN = threading.local()    # the (function, cycle) `wants_machine` last chose, for `chosen`


def wants_machine(fn, args) -> bool:
    """Whether this call runs as a machine: fn recurses, on tensors or on a tree argument.
    Recursion on Python values (nested lists, Python ints) is unrolled at build time instead.
    A cycle through a method called on something other than a node of the trees (a layer's
    `self.cell.call(...)` in a `call`) does not fit: the cycle without such calls is tried then."""
    wanted, cycle = _wants(fn, args, True)
    if not wanted and _calls_on_nodes(fn):
        wanted, cycle = _wants(fn, args, False)
    _CHOSEN.last = (fn, cycle) if wanted else None
    return wanted


def chosen(fn):
    """The cycle `wants_machine` chose for fn's call just now (not kept: it holds the function)."""
    last, _CHOSEN.last = getattr(_CHOSEN, "last", None), None
    return last[1] if last is not None and last[0] is fn else cycle_of(fn)


def _calls_on_nodes(fn) -> bool:
    try:
        return cycle_of(fn, True) is not cycle_of(fn, False)
    except ConversionError:
        return True


def _wants(fn, args, on_nodes) -> tuple:
    if any(is_symbolic(a) or isinstance(a, Pointer) for a in args):
        try:
            cycle = cycle_of(fn, on_nodes)
            why = cycle.dispatches(fn, [args]) if cycle is not None else ""
            if why:
                raise unsupported("recursion", cycle.functions[fn].filename, cycle.functions[fn].node, why)
            return cycle is not None, cycle
        except ConversionError as exc:
            # Not machine-shaped (say, recursion inside a loop over a Python list): unroll it at build
            # time; if it turns out to recurse on tensors, the build fails with this reason.
            REFUSED[fn] = exc.reason
            return False, None
    if any(is_node(a) for a in args):
        try:
            cycle = cycle_of(fn, on_nodes)
        except ConversionError:
            return False, None
        if cycle is None or cycle.dispatches(fn, [args]):
            return False, None
        cf = cycle.functions[fn]
        return any(p in cf.tree_params and is_node(a) for p, a in zip(cf.params, args)), cycle
    return False, None


def cycle_of(fn, on_nodes=True):
    """The compiled cycle through fn (cached), or None when fn is not recursive (`on_nodes`: see
    `_called_functions`; where that finds no call on a node, both are one object)."""
    table = _CYCLES if on_nodes else _PLAIN
    if fn in table and (table[fn] is None or all(g.__defaults__ is d for g, d in table[fn].defaults.items())):
        return table[fn]
    members = find_cycle(fn, on_nodes)
    if on_nodes and members == find_cycle(fn, False):
        cycle = cycle_of(fn, False)
    else:
        cycle = Cycle(members) if members else None
    # (a member that does not lead back to fn, as a recursion fn calls at its leaves, has a cycle
    # of its own: this one, entered there, would type fn's frames that never run)
    for f in (members or {fn: None}):
        if f is fn or set(find_cycle(f, on_nodes) or ()) == set(members):
            table[f] = cycle
    return cycle
