"""The depth-first machine for chain recursion: one frame live at a time, an explicit stack.

When every call group of a cycle issues a single call and the machine has one
root call (Ackermann, a linear recursion, mutual recursion that tail-calls),
at most one frame is ever running: a caller waits while its one callee runs.
The frames then form a stack, and the frame at depth `sp` is row `sp` of every
table.  One loop step runs one block for that one frame, picked by
`tf.switch_case` on the program counter, and follows its gotos and branches
into the next blocks (up to `FUSE` of them) before it ends, so a call costs
about two steps.  A call writes the callee's arguments into row `sp + 1` and
the caller's resume block into `resume[sp]`; a return writes its value into
the caller's temporary of the call site it came from (`slot[sp]`) at row
`sp - 1`.  A tail call (`return g(...)`) puts the callee's frame in the
caller's row instead, and each row counts the tail calls folded into the rows
up to it, so the depth checked against the recursion limit is Python's.  No
frame is ever batched, so no block needs `tf.vectorized_map`, and the machine
runs the calls in eager's order.

The inner loop is compiled with XLA, which is what makes a step cheap (about
a microsecond here, where the graph executor pays tens for the `Case` alone);
without XLA the batched machine (`codegen.recursion.machine`) runs the cycle
instead.  The stack has a fixed capacity inside the inner loop (static shapes);
when a call would not fit, the inner loop stops and an outer loop doubles
every per-depth tensor and resumes it.  XLA is used only where it cannot
change what the program computes or raises (`xla_refusal`): integer and
boolean frames only (nothing a gradient flows through, nothing XLA may round
differently), ops XLA compiles to the same result, and each integer division
checked for a zero divisor, on which XLA does not raise: the machine stops
with a fault and the run fails, so the call runs in Python and raises as
eager does.  A Python int that leaves its table's dtype (`exact_ints`) stops
it with a fault of its own, which fails the run's `EXACT` assumption.
"""
from __future__ import annotations

import ast
from typing import NamedTuple

import tensorflow as tf

from codegen.lowering.recursion import Branch, CallGroup, Goto, Return
from codegen.operators.failing_ops import body_graphs
from codegen.operators.guards import check
from codegen.recursion.blocks import Machine, block_vars, is_bare, run_builder
from codegen.recursion.constants import share_constants
from codegen.recursion.frame_specs import leaves, pack
from codegen.recursion.frames import cast, cast_all

INITIAL_DEPTH = 64
FUSE = 4            # blocks one step may run, along gotos and branches
DIVISION, RANGE = 1, 2      # faults: an integer division by zero, a Python int that left its table's dtype
TABLE_SCOPE = "chain_table"      # the machine's own reads and writes of rows, always in range

_INT_DIVISION = frozenset({"FloorDiv", "FloorMod", "TruncateDiv", "TruncateMod", "Div", "Mod"})
# Ops XLA compiles to what TensorFlow computes, on the integer and boolean values the machine
# lets through (`xla_refusal`); bodies of the listed control-flow ops are checked op by op.
_XLA_OPS = frozenset({
    "Const", "Identity", "IdentityN", "NoOp", "Placeholder", "Shape", "Cast", "Pack", "Unpack", "Reshape",
    "ExpandDims", "Squeeze", "ZerosLike", "OnesLike", "Fill", "AddV2", "Add", "Sub", "Mul", "Neg", "Abs",
    "Sign", "Square", "Maximum", "Minimum", "Greater", "GreaterEqual", "Less", "LessEqual", "Equal",
    "NotEqual", "LogicalNot", "LogicalAnd", "LogicalOr", "Select", "SelectV2", "StopGradient",
    "If", "StatelessIf", "Case", "StatelessCase", "While", "StatelessWhile",
    "BitwiseAnd", "BitwiseOr", "LeftShift", "RightShift",     # a packed kind bit (`frame_specs.encode`)
}) | _INT_DIVISION
# Ops XLA compiles like TensorFlow when their inputs from this position on are constants.
_STATIC_ARGS = {"StridedSlice": 1, "Range": 0, "Any": 1, "All": 1}
_OWN_OPS = ("GatherV2", "TensorScatterUpdate", "TensorScatterAdd", "Pack", "Reshape", "Select", "SelectV2", "Const")


class ChainState(NamedTuple):
    """The loop variables of the chain machine."""
    steps: tf.Tensor        # steps taken
    calls: tf.Tensor        # frames entered so far (the root included)
    sp: tf.Tensor           # the depth of the running frame
    pc: tf.Tensor           # the global block id it runs next; -1 once the root has returned
    deepest: tf.Tensor      # the largest depth so far (the machine stops past the recursion limit)
    fault: tf.Tensor        # 0, or why the run must fail: DIVISION or RANGE
    ran: tf.Tensor          # per block: how often it ran
    results: list           # per leaf of the entry's return value
    rows: list              # per-depth tensors: one per leaf of every non-static frame variable, then
                            # the block each waiting caller resumes at, then the call site each frame returns to


class _Effect(NamedTuple):
    """What one step does: the new scalars, and two row writes per per-depth tensor, one to the
    running frame's row and one to its callee's or caller's; a write a step does not make goes to
    the spare last row, which no frame uses.  Branches of the step's `tf.switch_case` return only
    these, not the tables: a table passed through a branch is copied, which would make a step
    cost the stack's size."""
    calls: tf.Tensor
    sp: tf.Tensor
    pc: tf.Tensor
    deepest: tf.Tensor
    fault: tf.Tensor
    ran: tf.Tensor
    results: list
    at: list                # per row tensor: the two rows written, int32 [2, 1]
    values: list            # per row tensor: their values, [2] + row shape


def why_not(m: Machine) -> str | None:
    """Why the cycle cannot run depth-first as a chain, or None when it can."""
    if m.roots > 1:
        return f"{m.roots} independent calls into the cycle run together"
    for cf in m.cycle.functions.values():
        for block in cf.blocks:
            if isinstance(block.term, CallGroup) and len(block.term.calls) > 1:
                line = block.anchor(cf.node).lineno
                return (f"{cf.fn.__qualname__} makes {len(block.term.calls)} independent calls at line {line}, "
                        f"which run together as a wavefront")
    return None


def run(m: Machine, args, limit) -> tuple:
    """Build the chain machine for the one call `entry(*args)`: (its result, None), or (None, why
    XLA cannot run it) when its inner loop would not compile to what eager computes and raises."""
    refusal = _dtype_refusal(m)
    if refusal:
        return None, refusal
    plan = _Plan(m)

    def inner(state):
        def cond(*fields):
            s = ChainState(*fields)
            return (s.pc >= 0) & (s.sp + 2 < tf.shape(s.rows[-1])[0]) & (s.deepest <= limit) & (s.fault == 0)

        def body(*fields):
            s = plan.step(ChainState(*fields))
            share_constants(tf.compat.v1.get_default_graph())
            return s
        return ChainState(*tf.while_loop(cond, body, state))

    traced = tf.function(inner, autograph=False).get_concrete_function(_state_specs(m))
    refusal = xla_refusal(traced.graph, plan.checked)
    if refusal:
        return None, refusal
    runner = tf.function(inner, jit_compile=True, autograph=False)

    def outer_cond(*fields):
        s = ChainState(*fields)
        return (s.pc >= 0) & (s.deepest <= limit) & (s.fault == 0)

    state = _initial_state(m, args)
    fills = [fill for _, _, fill in _row_specs(m)]
    out = ChainState(*tf.while_loop(outer_cond, lambda *f: runner(_grow(ChainState(*f), fills)), state,
                                    shape_invariants=_shapes(state)))
    with tf.control_dependencies([
            check(out.fault != DIVISION, ["integer division by zero in a recursive function"]),
            check(out.deepest <= limit, ["recursion deeper than the interpreter's recursion limit", limit])]
            + _range_guard(m, out.fault) + m.guards(lambda g: out.ran[g])):
        results = [tf.identity(r) for r in out.results]
    m.ctx.observe(m.cycle.observe, [out.steps, out.calls, out.ran])
    return pack(m.returns[m.entry], results), None


def _state_specs(m: Machine) -> ChainState:
    """The inner loop's argument types: per-depth tensors of any depth."""
    scalar = tf.TensorSpec([], tf.int32)
    return ChainState(scalar, scalar, scalar, scalar, scalar, scalar,
                      tf.TensorSpec([m.cycle.n_blocks], tf.int32), [tf.TensorSpec(s.shape, s.dtype) for s in m.ret_leaves],
                      [tf.TensorSpec((None,) + shape, dtype) for dtype, shape, _ in _row_specs(m)])


def _row_specs(m: Machine) -> list:
    """(dtype, row shape, fill) of each per-depth tensor, in `ChainState.rows` order: the frame
    variables' leaves, then the resume block, the call site, and the tail calls folded into the
    rows up to this one (a frame's depth in Python is its row plus that count)."""
    return [(s.dtype, s.shape, 0) for s in m.leaf_specs] + [(tf.int32, (), -1), (tf.int32, (), -1), (tf.int32, (), 0)]


def _initial_state(m: Machine, args) -> ChainState:
    entry_cf = m.cycle.functions[m.entry]
    rows = [tf.fill((INITIAL_DEPTH,) + shape, tf.cast(fill, dtype)) for dtype, shape, fill in _row_specs(m)]
    for p, a in zip(entry_cf.params, args):
        for j, leaf in zip(m.index.get((m.entry, p), []), cast_all(a, m.specs[(m.entry, p)])):
            rows[j] = _put(rows[j], 0, leaf)
    pc = tf.constant(m.cycle.offsets[m.entry] + entry_cf.entry)
    zero = tf.constant(0)
    return ChainState(zero, tf.constant(1), zero, pc, zero, zero, tf.zeros([m.cycle.n_blocks], tf.int32),
                      [tf.zeros(s.shape, s.dtype) for s in m.ret_leaves], rows)


def _shapes(state: ChainState) -> ChainState:
    """Shape invariants of the outer loop: the per-depth tensors grow along the depth axis."""
    scalar = tf.TensorShape([])
    return ChainState(scalar, scalar, scalar, scalar, scalar, scalar, state.ran.shape,
                      [r.shape for r in state.results],
                      [tf.TensorShape([None] + t.shape[1:].as_list()) for t in state.rows])


def _grow(s: ChainState, fills: list) -> ChainState:
    """Every per-depth tensor doubled when the next call would not fit, else as it is."""
    size = tf.shape(s.rows[-1])[0]
    extra = tf.where(s.sp + 3 > size, size, 0)       # the next frame's row, and the spare last one

    def pad(t, fill):
        paddings = tf.scatter_nd([[0, 1]], tf.reshape(extra, [1]), [t.shape.rank, 2])
        out = tf.pad(t, paddings, constant_values=tf.cast(fill, t.dtype))
        out.set_shape([None] + t.shape[1:])
        return out
    return s._replace(rows=[pad(t, fill) for t, fill in zip(s.rows, fills)])


def _put(table, i, value):
    """`table` with row `i` replaced by `value`."""
    with tf.name_scope(TABLE_SCOPE):
        return tf.tensor_scatter_nd_update(table, tf.reshape(i, [1, 1]), tf.expand_dims(value, 0))


def _get(table, i):
    with tf.name_scope(TABLE_SCOPE):
        return tf.gather(table, i)


def _range_guard(m: Machine, fault) -> list:
    """The assertion that no Python int left its table's dtype (`exact_ints`), if a block checks one."""
    if m.int_range is None:
        return []
    return [check(fault != RANGE, [m.int_range.message()])]


def _failing(fault, bad, code):
    """The fault after a check that is `bad` when the run must fail, with `code`; the first stands."""
    return tf.where(tf.logical_and(tf.equal(fault, 0), bad), code, fault)


class _Path(NamedTuple):
    """One path through a step's blocks, while it is traced: the scalars so far and the running
    frame's variables (table position -> value), read from its row when first needed."""
    calls: tf.Tensor
    sp: tf.Tensor
    deepest: tf.Tensor
    fault: tf.Tensor
    ran: tf.Tensor
    results: list
    local: dict
    dirty: frozenset        # positions the path assigned


class _Plan:
    """The step of the chain machine: one `tf.switch_case` branch per block."""

    def __init__(self, m: Machine):
        self.m = m
        self.blocks = [(f, cf, b) for f, cf in m.cycle.functions.items() for b in cf.blocks]
        self.specs = _row_specs(m)
        self.resume, self.slot, self.tails = len(self.specs) - 3, len(self.specs) - 2, len(self.specs) - 1
        self.checked: set = set()          # names of the integer divisions whose divisor is checked
        self.frame = None                  # the running frame's row of each per-depth tensor, while a step is traced
        self.caller_resume = None
        self.spare = None                  # their last row, which takes the writes a step does not make

    def step(self, s: ChainState) -> ChainState:
        # The branches read the running frame's row and its caller's resume block, read here: a
        # table passed into a branch is copied too.
        self.frame = [_get(t, s.sp) for t in s.rows]
        self.caller_resume = _get(s.rows[self.resume], tf.maximum(s.sp - 1, 0))
        self.spare = tf.shape(s.rows[-1])[0] - 1
        start = _Path(s.calls, s.sp, s.deepest, s.fault, s.ran, s.results, {}, frozenset())
        branches = [lambda f=f, cf=cf, b=b: self._from(f, cf, b, start, FUSE, ()) for f, cf, b in self.blocks]
        e = _Effect(*tf.switch_case(tf.maximum(s.pc, 0), branches))
        with tf.name_scope(TABLE_SCOPE):
            rows = [tf.tensor_scatter_nd_update(t, at, values) for t, at, values in zip(s.rows, e.at, e.values)]
        return ChainState(s.steps + 1, e.calls, e.sp, e.pc, e.deepest, e.fault, e.ran, e.results, rows)

    def _read(self, path: _Path, j):
        return path.local[j] if j in path.local else self.frame[j]

    def _from(self, f, cf, block, path: _Path, budget, seen) -> _Effect:
        """Run `block` for the running frame, then follow its terminator while the budget lasts."""
        m = self.m
        gid = m.cycle.offsets[f] + block.id
        table_vars, written = block_vars(m, f, cf, block)
        flat = [self._read(path, j) for v in table_vars for j in m.index[(f, v)]]
        graph = tf.compat.v1.get_default_graph()
        before = len(graph.get_operations())
        checked: list = []
        new_leaves, term = run_builder(m, f, cf, block, table_vars, written, flat, checked)
        fault = self._check_divisions(graph.get_operations()[before:], path.fault)
        if checked:
            fault = _failing(fault, tf.logical_not(checked[0]), RANGE)
        positions = [j for v in written for j in m.index[(f, v)]]
        with tf.name_scope(TABLE_SCOPE):
            ran = tf.tensor_scatter_nd_add(path.ran, [[gid]], [1])
        path = path._replace(local={**path.local, **dict(zip(positions, new_leaves))},
                             dirty=path.dirty | set(positions), fault=fault, ran=ran)
        return self._terminate(f, block, term, path, budget - 1, seen + (gid,))

    def _check_divisions(self, ops, fault):
        """`fault`, or'ed with "some integer division among `ops` divides by zero"."""
        for op in ops:
            if op.type in _INT_DIVISION and op.inputs[1].dtype.is_integer:
                self.checked.add(op.name)
                fault = _failing(fault, tf.reduce_any(tf.equal(op.inputs[1], 0)), DIVISION)
        return fault

    def _continue(self, f, target, path, budget, seen) -> _Effect:
        cf = self.m.cycle.functions[f]
        gid = self.m.cycle.offsets[f] + target
        if budget <= 0 or gid in seen:
            return self._effect(path, pc=tf.constant(gid), sp=path.sp, own=path.dirty)
        return self._from(f, cf, cf.blocks[target], path, budget, seen)

    def _terminate(self, f, block, term, path, budget, seen) -> _Effect:
        t, offset = block.term, self.m.cycle.offsets[f]
        if isinstance(t, Goto):
            return self._continue(f, t.target, path, budget, seen)
        if isinstance(t, Branch):
            if not isinstance(term, (tf.Tensor, tf.Variable)):
                return self._continue(f, t.if_true if term else t.if_false, path, budget, seen)
            test = tf.cast(term, tf.bool)
            if budget <= 0:
                return self._effect(path, pc=tf.where(test, offset + t.if_true, offset + t.if_false), sp=path.sp,
                                    own=path.dirty)
            return _Effect(*tf.cond(test, lambda: self._continue(f, t.if_true, path, budget, seen),
                                    lambda: self._continue(f, t.if_false, path, budget, seen)))
        if isinstance(t, CallGroup):
            return self._call(f, t, term, path)
        return self._return(f, t, term, path)

    def _call(self, f, t: CallGroup, term, path: _Path) -> _Effect:
        """The one call of the group: the callee's frame is the next row and the caller waits; or,
        for a tail call (`return f(...)`), the callee's frame replaces the caller's in its row."""
        m = self.m
        (call,), (args,) = t.calls, term
        callee = m.cycle.names[f][call.callee]
        ccf = m.cycle.functions[callee]
        folded = self._read(path, self.tails)
        params = {}
        for p, a in zip(ccf.params, args):
            params.update(zip(m.index.get((callee, p), []), cast_all(a, m.specs[(callee, p)])))
        entry = tf.constant(m.cycle.offsets[callee] + ccf.entry)
        if self._is_tail(f, t, callee):
            path = path._replace(local={**params, self.tails: folded + 1}, dirty=frozenset(params) | {self.tails},
                                 calls=path.calls + 1, deepest=tf.maximum(path.deepest, path.sp + folded + 1))
            return self._effect(path, pc=entry, sp=path.sp, own=path.dirty)
        child = path.sp + 1
        other = {j: (child, leaf, True) for j, leaf in params.items()}
        other[self.slot] = (child, tf.constant(call.site), True)
        other[self.tails] = (child, folded, True)
        path = path._replace(local={**path.local, self.resume: tf.constant(m.cycle.offsets[f] + t.resume)},
                             dirty=path.dirty | {self.resume}, calls=path.calls + 1,
                             deepest=tf.maximum(path.deepest, child + folded))
        return self._effect(path, pc=entry, sp=child, own=path.dirty, other=other)

    def _is_tail(self, f, t: CallGroup, callee) -> bool:
        """`return f(...)`: the block after the call only returns the call's result, of the same type."""
        m, cf = self.m, self.m.cycle.functions[f]
        after = cf.blocks[t.resume]
        value = after.term.value if isinstance(after.term, Return) else None
        # The callee's value reaches the temporaries of f's callers (and the root's result) as it is.
        specs = [m.returns[callee], m.returns[f], m.specs[(f, t.calls[0].target)]] + \
            [m.specs[(cs.caller.fn, cs.target)] for cs in m.cycle.sites if cs.callee is cf]
        kinds = [_kinds(leaves(spec)) for spec in specs]
        return is_bare(after) and isinstance(value, ast.Name) and value.id == t.calls[0].target \
            and all(k == kinds[0] for k in kinds)

    def _return(self, f, t: Return, term, path: _Path) -> _Effect:
        """The value goes to the caller's temporary of the site the frame was called from, and the
        caller resumes; at the root it is the machine's result."""
        m = self.m
        values = cast_all(term if t.value is not None else 0, m.returns[f])
        root = tf.equal(path.sp, 0)
        caller = tf.maximum(path.sp - 1, 0)
        site = self._read(path, self.slot)
        other = {}
        kinds = _kinds(values)
        for cs in m.cycle.sites:
            # The site the frame returns to calls this function, or (through tail calls) one
            # returning the same type.
            target = (cs.caller.fn, cs.target)
            specs = leaves(m.specs[target])
            if cs.callee is m.cycle.functions[f] or _kinds(specs) == kinds:
                for j, value, spec in zip(m.index.get(target, []), values, specs):
                    other[j] = (caller, cast(value, spec), tf.equal(site, cs.id))
        results = path.results
        if f is m.entry or _kinds(m.ret_leaves) == kinds:        # the root, or tail-called by it
            results = [tf.where(root, cast(v, spec), r) for v, spec, r in zip(values, m.ret_leaves, results)]
        pc = tf.where(root, -1, self.caller_resume)
        return self._effect(path._replace(results=results), pc=pc, sp=caller, own=frozenset(), other=other)

    def _effect(self, path: _Path, pc, sp, own, other=None) -> _Effect:
        """The step's effect at the end of one path: the scalars, and per row tensor its writes."""
        other = other or {}
        at, values = [], []
        for j, (dtype, shape, _) in enumerate(self.specs):
            zero = tf.zeros(shape, dtype)
            own_at = path.sp if j in own else self.spare
            other_at = self.spare
            if j in other:
                other_at = other[j][0] if other[j][2] is True else tf.where(other[j][2], other[j][0], self.spare)
            with tf.name_scope(TABLE_SCOPE):
                at.append(tf.reshape(tf.stack([own_at, other_at]), [2, 1]))
                values.append(tf.stack([path.local[j] if j in own else zero, other[j][1] if j in other else zero]))
        return _Effect(path.calls, sp, pc, path.deepest, path.fault, path.ran, path.results, at, values)


def _kinds(items) -> list:
    """(dtype, shape) of each leaf spec or tensor: values of equal kinds go through a table as they are."""
    return [(x.dtype, tuple(x.shape)) for x in items]


def _dtype_refusal(m: Machine) -> str | None:
    """Why the cycle's values rule XLA out, or None: floats may round differently under XLA, and a
    gradient may flow through them; stateful ops would run in XLA's order."""
    if not tf.test.is_built_with_xla():
        return "this TensorFlow is built without XLA"
    floats = [s for s in m.leaf_specs + m.ret_leaves if not (s.dtype.is_integer or s.dtype == tf.bool)]
    if floats:
        return f"its frames hold {floats[0].dtype.name} values, which XLA may round differently and gradients use"
    if m.stateful:
        return "a block has stateful ops"
    return None


def xla_refusal(graph, checked: set) -> str | None:
    """Why the chain's inner loop (traced into `graph`) must not be compiled with XLA, or None."""
    for t in graph.external_captures:
        if not (t.dtype.is_integer or t.dtype == tf.bool):
            return f"it reads a {t.dtype.name} value from outside the recursion"
    return _ops_refusal(graph, checked, set())


def _ops_refusal(graph, checked: set, seen: set) -> str | None:
    for op in graph.get_operations():
        if TABLE_SCOPE in op.name and op.type in _OWN_OPS:
            continue
        if op.type in _STATIC_ARGS and all(tf.get_static_value(t) is not None
                                           for t in op.inputs[_STATIC_ARGS[op.type]:]):
            continue                    # constant slices and axes: in range, or shape inference rejected them
        if op.type not in _XLA_OPS:
            return f"it uses {op.type}, which XLA may not compile to the same result"
        if op.type in _INT_DIVISION and op.inputs[1].dtype.is_integer and op.name not in checked:
            return f"an integer {op.type} inside a nested branch or loop is not checked for a zero divisor"
        if any(not (t.dtype.is_integer or t.dtype == tf.bool) for t in op.outputs if t.dtype != tf.variant) \
                and op.type not in ("NoOp",):
            return f"{op.type} makes a {op.outputs[0].dtype.name} value"
        bodies = body_graphs(op, ("then_branch", "else_branch", "branches", "cond", "body", "f"))
        for body in bodies or []:
            if id(body) not in seen:
                seen.add(id(body))
                why = _ops_refusal(body, checked, seen)
                if why:
                    return why
    return None
