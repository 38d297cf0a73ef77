"""The static Call/Return machine that runs a recursive cycle inside one graph.

The cycle's functions appear once in the graph, as blocks (see
`codegen.lowering.recursion`).  Frames live in tables with a leading frame
axis: one table per function variable, plus the program counter (a global
block id), the parent frame and the call site a frame returns to (its tag),
and the number of calls a waiting frame still expects.  One `tf.while_loop`
step runs, for every block, all active frames waiting at it at once
(gather -> `tf.vectorized_map` over the block -> scatter); calls allocate
child frames, returns write the value into the caller's temporary and wake
the caller when its last call has returned.  Independent calls are live at
the same time, so a balanced recursion of N calls takes O(depth) steps.
Tables grow by doubling, so there is no depth or call limit to set.
The types of the frame variables come from `codegen.frame_specs`.
"""
from __future__ import annotations

import ast
import dataclasses

import tensorflow as tf

from codegen.analysis import assigned_names
from codegen.calls_support import is_symbolic, is_user_function
from codegen.context import Frame, current
from codegen.errors import unsupported
from codegen.frame_specs import Spec, exposed_reads, flatten, infer_specs, leaves, pack, spec_of, term_exprs
from codegen.lowering.recursion import CycleFunction
from codegen.source import parse_function
from codegen.state import UNDEF
from codegen.trees import Pointer, Tables, WeakNumber, _is_node

INITIAL_FRAMES = 64


# -- finding cycles ------------------------------------------------------------------------------
def _owner_class(fn):
    """The class a method is defined in (module-level classes), or None."""
    parts = fn.__qualname__.split(".")
    if len(parts) != 2:
        return None
    cls = fn.__globals__.get(parts[0])
    return cls if isinstance(cls, type) and cls.__dict__.get(parts[1]) is fn else None


def _called_functions(fn) -> dict[str, object]:
    """Names called in fn's body that resolve to user functions (globals, closure cells, and
    `self.method(...)` for methods), keyed as the code spells them ("helper", "self.encode")."""
    try:
        node = parse_function(fn).node
    except Exception:  # noqa: BLE001 - no source: no cycle through it
        return {}
    out = {}
    code = fn.__code__
    cls = _owner_class(fn)
    first = code.co_varnames[0] if code.co_argcount else None
    for sub in ast.walk(node):
        if cls is not None and isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) \
                and isinstance(sub.func.value, ast.Name) and sub.func.value.id == first:
            value = cls.__dict__.get(sub.func.attr)
            value = getattr(value, "python_function", value)
            if is_user_function(value):
                out[f"{first}.{sub.func.attr}"] = value
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name):
            name = sub.func.id
            if name in code.co_freevars:
                try:
                    value = fn.__closure__[code.co_freevars.index(name)].cell_contents
                except ValueError:
                    continue
            else:
                value = fn.__globals__.get(name)
            value = getattr(value, "python_function", value)       # a speculated function
            if is_user_function(value):
                out[name] = value
    return out


def find_cycle(fn) -> dict[object, dict[str, object]] | None:
    """{function: {name: callee in the cycle}} for the recursive cycle through fn, or None."""
    graph: dict = {}
    stack = [fn]
    while stack and len(graph) < 64:
        f = stack.pop()
        if f in graph:
            continue
        graph[f] = _called_functions(f)
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


class Cycle:
    """A recursive cycle lowered to blocks; built once per cycle and reused by every graph."""

    def __init__(self, members: dict):
        from codegen.pipeline import compile_block
        self.functions: dict[object, CycleFunction] = {}
        for f, callees in members.items():
            src = parse_function(f)
            self.functions[f] = CycleFunction(f, src.node, src.filename, set(callees))
        self.names = {f: callees for f, callees in members.items()}
        self.offsets: dict[object, int] = {}
        total = 0
        for f, cf in self.functions.items():
            self.offsets[f] = total
            total += len(cf.blocks)
        self.n_blocks = total
        self.sites: list[CallSite] = []
        for f, cf in self.functions.items():
            for block in cf.blocks:
                if block.term[0] == "call":
                    for call in block.term[1]:
                        call.site = len(self.sites)
                        callee = self.functions[self.names[f][call.callee]]
                        self.sites.append(CallSite(call.site, cf, call.target, callee))
        for site in self.sites:
            call = next(c for b in site.caller.blocks if b.term[0] == "call" for c in b.term[1] if c.site == site.id)
            for i, a in enumerate(call.args):
                root = a
                while isinstance(root, ast.Attribute):
                    root = root.value
                if a is not root and isinstance(root, ast.Name) and root.id in site.caller.params \
                        and i < len(site.callee.params):
                    site.caller.tree_params.add(root.id)
                    site.callee.tree_params.add(site.callee.params[i])
        self.invariant = self._invariant_params()
        self.builders = {(f, b.id): compile_block(cf, b) for f, cf in self.functions.items() for b in cf.blocks}
        self.last_steps = None
        self.last_frames = None
        self.last_block_frames = None
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
                for call in (block.term[1] if block.term[0] == "call" else []):
                    callee = self.names[f][call.callee]
                    for i, q in enumerate(self.functions[callee].params):
                        arg = call.args[i] if i < len(call.args) else None
                        if isinstance(arg, ast.Name) and arg.id in cf.params and arg.id not in reassigned:
                            parent[find((f, arg.id))] = find((callee, q))
                        else:
                            broken.add((callee, q))
        bad = {find(k) for k in broken}
        return {k: find(k) for k in list(parent) if find(k) not in bad}

    def tree_methods(self) -> tuple:
        """Zero-argument methods the cycle calls on some variable (`node.is_leaf()`)."""
        return tuple(sorted(set().union(*(cf.zero_arg_methods for cf in self.functions.values()))))

    def describe(self) -> dict:
        return {"functions": [cf.fn.__qualname__ for cf in self.functions.values()],
                "call_sites": len(self.sites), "segments": self.n_blocks,
                "last_steps": self.last_steps, "last_frames": self.last_frames,
                "last_block_frames": self.last_block_frames, "runs": self.runs}

    def observe(self, steps, frames, ran):
        """After a run: its steps, its frames, and how many frames each block ran (per segment, in
        the order of `segment_names`); a block runs once per frame that reaches it, never again."""
        self.last_steps, self.last_frames = int(steps), int(frames)
        self.last_block_frames = dict(zip(self.segment_names(), (int(r) for r in ran)))
        self.runs += 1

    def segment_names(self) -> list[str]:
        """`function:line` of each block's first statement (or its terminator), in global block order."""
        names = []
        for cf in self.functions.values():
            for block in cf.blocks:
                anchor = block.stmts[0] if block.stmts else (block.term[1] if block.term[0] in ("branch", "return")
                                                             and block.term[1] is not None else cf.node)
                names.append(f"{cf.fn.__qualname__}:{block.id}:{block.term[0]}@{anchor.lineno}")
        return names


_CYCLES: dict = {}
REFUSED: dict = {}        # function -> why it cannot run as a machine


def wants_machine(fn, args) -> bool:
    """Whether this call runs as a machine: fn recurses, on tensors or on a tree argument.
    Recursion on Python values (nested lists, Python ints) is unrolled at build time instead."""
    from codegen.errors import ConversionError
    if any(is_symbolic(a) or isinstance(a, Pointer) for a in args):
        try:
            return cycle_of(fn) is not None
        except ConversionError as exc:
            # Not machine-shaped (say, recursion inside a loop over a Python list): unroll it at build
            # time; if it turns out to recurse on tensors, the build fails with this reason.
            REFUSED[fn] = exc.reason
            return False
    if any(_is_node(a) for a in args):
        from codegen.errors import ConversionError
        try:
            cycle = cycle_of(fn)
        except ConversionError:
            return False
        if cycle is None:
            return False
        cf = cycle.functions[fn]
        return any(p in cf.tree_params and _is_node(a) for p, a in zip(cf.params, args))
    return False


def cycle_of(fn):
    """The compiled cycle through fn (cached), or None when fn is not recursive."""
    if fn in _CYCLES:
        return _CYCLES[fn]
    members = find_cycle(fn)
    cycle = Cycle(members) if members else None
    for f in (members or {fn: None}):
        _CYCLES[f] = cycle
    return cycle


# -- the machine -------------------------------------------------------------------------------------
def _where(mask):
    """Positions of the true entries of a vector mask (cheaper than `tf.boolean_mask` per value)."""
    return tf.reshape(tf.where(mask), [-1])


def _take(values, positions):
    """`tf.gather` whose gradient is dense: IndexedSlices reaching a `tf.concat` in a vectorised
    block fail (its axis is not static there); the reshape's gradient densifies them."""
    return tf.gather(tf.reshape(values, tf.shape(values)), positions)


def _scatter(table, idx, values):
    return tf.tensor_scatter_nd_update(table, tf.expand_dims(idx, 1), values)


def _cast(value, spec: Spec):
    if isinstance(value, Pointer):
        value = value.index
    if isinstance(value, WeakNumber):
        value = value.tensor
    t = tf.convert_to_tensor(value)
    return t if t.dtype == spec.dtype else tf.cast(t, spec.dtype)


def _cast_all(value, spec) -> list:
    """The leaves of `value`, cast to the leaves of `spec`."""
    return [_cast(v, s) for v, s in zip(flatten(value, spec), leaves(spec))]


def run(cycle: Cycle, entry, args):
    """Build the machine for one call `entry(*args)` into the current graph; returns its result."""
    return run_many(cycle, entry, [args])[0]


def run_many(cycle: Cycle, entry, calls: list):
    """One machine for independent calls `entry(*args)` for each args in `calls` (a Python loop over
    a batch of trees): every call is a root frame, they all advance together.  Returns their
    results in order, or None when the calls cannot share a machine (different tree layouts,
    different shared objects)."""
    ctx = current()
    cf = cycle.functions[entry]
    if ctx.in_machine:
        raise unsupported("recursion", cf.filename, cf.node,
                          f"{entry.__qualname__} recurses on tensors inside another machine's block")
    for args in calls:
        for p, a in zip(cf.params, args):
            if p in cf.tree_params and _is_node(a):
                from codegen.errors import NeedsTree
                path = ctx.outside.get(id(a))
                if path is None or not path.startswith(("args", "kwargs")):
                    raise unsupported("recursion", cf.filename, cf.node,
                                      f"the tree passed as `{p}` is not an argument of the speculated function",
                                      "pass the tree as an argument")
                raise NeedsTree(path, f"{cf.filename}:{cf.node.lineno}", cycle.tree_methods())
    calls = _joined_trees(calls) if len(calls) > 1 else calls
    if calls is None:
        return None
    ctx.general_depth += 1                     # no speculation and no deferred prints inside the machine
    ctx.in_machine += 1
    try:
        return _run(ctx, cycle, entry, calls)
    finally:
        ctx.general_depth -= 1
        ctx.in_machine -= 1


def _joined_trees(calls):
    """The calls with the trees of each parameter joined into one set of tables (pointer columns
    shifted by the nodes before), so that all roots index the same tables; None if they differ
    in layout, or in a Python object they pass."""
    out = [list(args) for args in calls]
    for i, first in enumerate(calls[0]):
        column = [args[i] for args in calls]
        if isinstance(first, Pointer):
            if not all(isinstance(a, Pointer) and a.tables.schema == first.tables.schema for a in column):
                return None
            schema = first.tables.schema
            if not schema.columns:
                return None
            sizes = [tf.shape(a.tables.columns[schema.columns[0].name][1])[0] for a in column]
            offsets = tf.math.cumsum(tf.stack(sizes), exclusive=True)
            cols = []
            for c in schema.columns:
                parts = [a.tables.columns[c.name][1] for a in column]
                if c.pointer:
                    parts = [tf.where(t >= 0, t + offsets[r], t) for r, t in enumerate(parts)]
                cols.append(tf.concat(parts, 0))
            tables = Tables(schema, cols)
            for r, a in enumerate(column):
                out[r][i] = Pointer(a.index + offsets[r], tables)
        elif spec_of(first) is None and not all(a is first for a in column):
            return None
        elif spec_of(first) is not None and any(spec_of(a) != spec_of(first) for a in column):
            return None
    return [tuple(args) for args in out]


def _run(ctx, cycle, entry, calls):
    specs, returns, stateful = infer_specs(ctx, cycle, entry, calls[0])
    # Tensors every call passes along unchanged are the entry's value in every frame: no table.
    shared = {cycle.invariant[(entry, p)]: a for i, (p, a) in enumerate(zip(cycle.functions[entry].params, calls[0]))
              if (entry, p) in cycle.invariant and _is_tensors(a) and all(c[i] is a for c in calls)}
    shared = {cls: tf.nest.map_structure(_Widened.of, value) for cls, value in shared.items()}
    for key, cls in cycle.invariant.items():
        if cls in shared:
            specs[key] = Spec(tf.int32, (), static=shared[cls], is_static=True)
    # One table per leaf of every non-static variable: index[(f, v)] -> table positions.
    index: dict = {}
    leaf_specs: list = []
    for f, cf in cycle.functions.items():
        for v in cf.vars:
            spec = specs[(f, v)]
            if isinstance(spec, Spec) and spec.is_static:
                continue
            index[(f, v)] = list(range(len(leaf_specs), len(leaf_specs) + len(leaves(spec))))
            leaf_specs += leaves(spec)
    entry_cf = cycle.functions[entry]
    ret_spec = returns[entry]
    ret_leaves = leaves(ret_spec)

    roots = len(calls)                      # frames 0 .. roots-1 are the calls, in order
    cap = max(INITIAL_FRAMES, roots)
    first = tf.range(roots)
    tables = [tf.zeros((cap,) + s.shape, s.dtype) for s in leaf_specs]
    for p in entry_cf.params:
        if (entry, p) not in index:
            continue
        per_call = [_cast_all(args[entry_cf.params.index(p)], specs[(entry, p)]) for args in calls]
        for k, j in enumerate(index[(entry, p)]):
            tables[j] = _scatter(tables[j], first, tf.stack([leaf[k] for leaf in per_call]))
    pc = _scatter(tf.fill([cap], -1), first, tf.fill([roots], cycle.offsets[entry] + entry_cf.entry))
    parent = tf.fill([cap], -1)
    slot = tf.fill([cap], -1)
    pending = tf.zeros([cap], tf.int32)
    active = _scatter(tf.zeros([cap], tf.bool), first, tf.fill([roots], True))
    results = [tf.zeros((roots,) + s.shape, s.dtype) for s in ret_leaves]
    n = tf.constant(roots)
    steps = tf.constant(0)
    n_res = len(results)

    def grow(need, state):
        """Double the tables when `need` frames do not fit.  A pad, not a `tf.cond`: the gradient of a
        pad only keeps shapes, where a cond's gradient would keep every table of every step."""
        pc, parent, slot, pending, active, tables = state
        size = tf.shape(pc)[0]
        extra = tf.where(need > size, tf.maximum(size, need - size), 0)

        def pad(t, fill):
            return tf.pad(t, [[0, extra]] + [[0, 0]] * (t.shape.rank - 1), constant_values=tf.cast(fill, t.dtype))

        return (pad(pc, -1), pad(parent, -1), pad(slot, -1), pad(pending, 0), pad(active, False),
                [pad(t, 0) for t in tables])

    def _no_frames(f, cf, block, written):
        """What `per_frame` gives, vectorised over zero frames."""
        empty = lambda spec: tf.zeros((0,) + spec.shape, spec.dtype)  # noqa: E731
        out = [empty(leaf_specs[j]) for v in written for j in index[(f, v)]]
        kind = block.term[0]
        if kind == "branch":
            term = [tf.zeros([0], tf.bool)]
        elif kind == "call":
            callees = [cycle.names[f][c.callee] for c in block.term[1]]
            term = [empty(leaf_specs[j]) for g in callees for p in cycle.functions[g].params
                    for j in index.get((g, p), [])]
        elif kind == "return":
            term = [empty(s) for s in leaves(returns[f])]
        else:
            term = [tf.zeros([0], tf.int32)]
        return out, term

    def run_block(f, cf, block, state):
        steps, n, pc, parent, slot, pending, active, ran, results, tables = state
        gid = cycle.offsets[f] + block.id
        idx = tf.cast(tf.reshape(tf.where(tf.logical_and(active, tf.equal(pc, gid))), [-1]), tf.int32)
        # Only the variables the block reads or assigns are gathered, only those it assigns scattered back.
        reads = exposed_reads(block.stmts, term_exprs(block.term), set(cf.vars))
        assigned = set(assigned_names(block.stmts))
        written = [v for v in cf.vars if (f, v) in index and v in assigned]
        table_vars = [v for v in cf.vars if (f, v) in index and (v in reads or v in written)]
        vals = [idx] + [tf.gather(tables[j], idx) for v in table_vars for j in index[(f, v)]]
        converted = cycle.builders[(f, block.id)]

        def per_frame(frame_vals):
            flat = list(frame_vals[1:])
            given = {v: pack(specs[(f, v)], flat) for v in table_vars}
            full = []
            for v in cf.vars:
                spec = specs[(f, v)]
                if isinstance(spec, Spec) and spec.is_static:
                    full.append(tf.nest.map_structure(_Widened.narrow, spec.static))
                else:
                    full.append(_wrap(given[v], spec) if v in given else UNDEF)
            ctx.frames.append(Frame(converted))
            try:
                new_vars, term = converted.builder(*full)
            finally:
                ctx.frames.pop()
            out = []
            for v, value in zip(cf.vars, new_vars):
                if v in written:        # an `if` may leave it unassigned: then it keeps its value
                    out += _cast_all(given[v] if type(value).__name__ == "Undefined" else value, specs[(f, v)])
            kind = block.term[0]
            if kind == "branch":
                term = [tf.cast(term, tf.bool)]
            elif kind == "call":
                arg_leaves = []
                for c, call_args in zip(block.term[1], term):
                    callee = cycle.names[f][c.callee]
                    for p, a in zip(cycle.functions[callee].params, call_args):
                        if (callee, p) in index:
                            arg_leaves += _cast_all(a, specs[(callee, p)])
                term = arg_leaves
            elif kind == "return":
                term = _cast_all(term if block.term[1] is not None else 0, returns[f])
            else:
                term = [tf.constant(0)]
            return out, term

        k = tf.size(idx)
        ran = tf.tensor_scatter_nd_add(ran, [[gid]], [k])
        if (f, block.id) in stateful:
            # pfor's fallback keeps the stateful ops of its trace alive and feeds them frame 0, which
            # does not exist when no frame waits here: run the block only when some frame does.
            new_leaves, term = tf.cond(k > 0, lambda: tf.vectorized_map(per_frame, vals, fallback_to_while_loop=True),
                                       lambda: _no_frames(f, cf, block, written))
        else:
            new_leaves, term = tf.vectorized_map(per_frame, vals, fallback_to_while_loop=True)
        positions = [j for v in written for j in index[(f, v)]]
        for j, value in zip(positions, new_leaves):
            tables[j] = _scatter(tables[j], idx, value)
        kind = block.term[0]
        if kind == "goto":
            pc = _scatter(pc, idx, tf.fill([k], cycle.offsets[f] + block.term[1]))
        elif kind == "branch":
            target = tf.where(term[0], cycle.offsets[f] + block.term[2], cycle.offsets[f] + block.term[3])
            pc = _scatter(pc, idx, target)
        elif kind == "call":
            calls = block.term[1]
            m = len(calls)
            need = n + k * m
            pc, parent, slot, pending, active, tables = grow(need, (pc, parent, slot, pending, active, tables))
            arg_leaves = list(term)
            for j, call in enumerate(calls):
                callee = cycle.names[f][call.callee]
                ccf = cycle.functions[callee]
                ids = n + tf.range(k) * m + j
                for p in ccf.params:
                    for pos in index.get((callee, p), []):
                        tables[pos] = _scatter(tables[pos], ids, arg_leaves.pop(0))
                pc = _scatter(pc, ids, tf.fill([k], cycle.offsets[callee] + ccf.entry))
                parent = _scatter(parent, ids, idx)
                slot = _scatter(slot, ids, tf.fill([k], call.site))
                active = _scatter(active, ids, tf.fill([k], True))
            pc = _scatter(pc, idx, tf.fill([k], cycle.offsets[f] + block.term[2]))
            pending = _scatter(pending, idx, tf.fill([k], m))
            active = _scatter(active, idx, tf.fill([k], False))
            n = need
        else:   # return
            par = tf.gather(parent, idx)
            site = tf.gather(slot, idx)
            is_root = tf.equal(par, -1)
            if f is entry:         # only the entry function's root frames return out of the machine
                roots_here = _where(is_root)
                root_ids = tf.gather(idx, roots_here)
                results = [_scatter(r, root_ids, _cast(_take(t, roots_here), s))
                           for r, t, s in zip(results, term, ret_leaves)]
            for s in cycle.sites:
                if s.callee is not cf:
                    continue
                here = _where(tf.logical_and(tf.equal(site, s.id), tf.logical_not(is_root)))
                to = tf.gather(par, here)
                for pos, value, spec in zip(index[(s.caller.fn, s.target)], term,
                                            leaves(specs[(s.caller.fn, s.target)])):
                    tables[pos] = _scatter(tables[pos], to, _cast(_take(value, here), spec))
            valid = tf.gather(par, _where(tf.logical_not(is_root)))
            pending = tf.tensor_scatter_nd_add(pending, tf.expand_dims(valid, 1), -tf.ones_like(valid))
            pc = _scatter(pc, idx, tf.fill([k], -1))
            active = _scatter(active, idx, tf.fill([k], False))
            # A caller wakes when its last call has returned (callers wait inactive).
            active = _scatter(active, valid, tf.equal(tf.gather(pending, valid), 0))
        return steps, n, pc, parent, slot, pending, active, ran, results, tables

    def body(steps, n, pc, parent, slot, pending, active, ran, *rest):
        state = (steps, n, pc, parent, slot, pending, active, ran, list(rest[:n_res]), list(rest[n_res:]))
        for f, cf in cycle.functions.items():
            for block in cf.blocks:
                with tf.name_scope(f"segment{cycle.offsets[f] + block.id}"):
                    state = run_block(f, cf, block, state)
        steps, n, pc, parent, slot, pending, active, ran, results, tables = state
        return [steps + 1, n, pc, parent, slot, pending, active, ran] + list(results) + list(tables)

    def cond(steps, n, pc, parent, slot, pending, active, ran, *rest):
        return tf.reduce_any(active)

    ran = tf.zeros([cycle.n_blocks], tf.int32)          # frames each block has run (see Cycle.observe)
    loop_vars = [steps, n, pc, parent, slot, pending, active, ran] + results + tables
    invariants = ([tf.TensorShape([]), tf.TensorShape([])] + [tf.TensorShape([None])] * 5
                  + [tf.TensorShape([cycle.n_blocks])]
                  + [tf.TensorShape((roots,) + s.shape) for s in ret_leaves]
                  + [tf.TensorShape([None] + list(s.shape)) for s in leaf_specs])
    out = tf.while_loop(cond, body, loop_vars, shape_invariants=invariants)
    ctx.observe(cycle.observe, [out[0], out[1], out[7]])
    ctx.recursion.append(cycle)
    return [pack(ret_spec, [r[i] for r in out[8:8 + n_res]]) for i in range(roots)]


class _Widened:
    """A float tensor shared by every frame, captured by the loop in float64 and narrowed inside it.

    Its gradient is the sum of one contribution per frame; TensorFlow sums the contributions of a
    loop's captured tensor step after step in the captured dtype.  A sequential float32 sum of a
    thousand similar terms (x^1000) drifts by 1e-5, where eager's AddN stays near 1e-7; summing in
    float64 and rounding once keeps the machine's gradients as exact as eager's."""

    def __init__(self, wide, dtype):
        self.wide, self.dtype = wide, dtype

    @staticmethod
    def of(value):
        if isinstance(value, (tf.Tensor, tf.Variable)) and value.dtype in (tf.float16, tf.bfloat16, tf.float32):
            return _Widened(tf.cast(value, tf.float64), value.dtype)
        return value

    @staticmethod
    def narrow(value):
        return tf.cast(value.wide, value.dtype) if isinstance(value, _Widened) else value


def _is_tensors(value) -> bool:
    if type(value) in (tuple, list):
        return bool(value) and all(_is_tensors(v) for v in value)
    return isinstance(value, (tf.Tensor, tf.Variable)) and not isinstance(value, Pointer)


def _wrap(value, spec):
    """Table values as the builder sees them: tree nodes become Pointers, tuples tuples."""
    if isinstance(spec, tuple):
        return tuple(_wrap(v, s) for v, s in zip(value, spec))
    if spec.tables is not None:
        return Pointer(value, spec.tables)
    return value
