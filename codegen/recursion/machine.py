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
The types of the frame variables come from `codegen.recursion.frame_specs`.
"""
from __future__ import annotations

import tensorflow as tf

from codegen.errors import NeedsTree, unsupported
from codegen.lowering.recursion import Branch, CallGroup, Goto, Return
from codegen.operators.context import Frame, current
from codegen.operators.trees import Pointer, Tables, WeakNumber, is_node
from codegen.operators.values import UNDEF, Undefined
from codegen.recursion.cycles import Cycle
from codegen.recursion.frame_specs import Spec, exposed_reads, flatten, infer_specs, leaves, pack, spec_of
from codegen.syntax.analysis import assigned_names

INITIAL_FRAMES = 64


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
            if p in cf.tree_params and is_node(a):
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
        if isinstance(block.term, Branch):
            term = [tf.zeros([0], tf.bool)]
        elif isinstance(block.term, CallGroup):
            callees = [cycle.names[f][c.callee] for c in block.term.calls]
            term = [empty(leaf_specs[j]) for g in callees for p in cycle.functions[g].params
                    for j in index.get((g, p), [])]
        elif isinstance(block.term, Return):
            term = [empty(s) for s in leaves(returns[f])]
        else:
            term = [tf.zeros([0], tf.int32)]
        return out, term

    def run_block(f, cf, block, state):
        steps, n, pc, parent, slot, pending, active, ran, results, tables = state
        gid = cycle.offsets[f] + block.id
        idx = tf.cast(tf.reshape(tf.where(tf.logical_and(active, tf.equal(pc, gid))), [-1]), tf.int32)
        # Only the variables the block reads or assigns are gathered, only those it assigns scattered back.
        reads = exposed_reads(block.stmts, block.term.exprs(), set(cf.vars))
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
                    out += _cast_all(given[v] if isinstance(value, Undefined) else value, specs[(f, v)])
            if isinstance(block.term, Branch):
                term = [tf.cast(term, tf.bool)]
            elif isinstance(block.term, CallGroup):
                arg_leaves = []
                for c, call_args in zip(block.term.calls, term):
                    callee = cycle.names[f][c.callee]
                    for p, a in zip(cycle.functions[callee].params, call_args):
                        if (callee, p) in index:
                            arg_leaves += _cast_all(a, specs[(callee, p)])
                term = arg_leaves
            elif isinstance(block.term, Return):
                term = _cast_all(term if block.term.value is not None else 0, returns[f])
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
        if isinstance(block.term, Goto):
            pc = _scatter(pc, idx, tf.fill([k], cycle.offsets[f] + block.term.target))
        elif isinstance(block.term, Branch):
            target = tf.where(term[0], cycle.offsets[f] + block.term.if_true, cycle.offsets[f] + block.term.if_false)
            pc = _scatter(pc, idx, target)
        elif isinstance(block.term, CallGroup):
            calls = block.term.calls
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
            pc = _scatter(pc, idx, tf.fill([k], cycle.offsets[f] + block.term.resume))
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
