"""The static Call/Return machine that runs a recursive cycle inside one graph.

A cycle whose calls fit a cheaper schedule runs that instead (`_other_strategy`):
a recursion over trees whose control reads only the nodes runs level by level
(`codegen.recursion.levels`), a chain of integer frames runs depth-first under
XLA (`codegen.recursion.chain`), another linear recursion as a descending and
an ascending loop (`codegen.recursion.linear`).  Everything else runs as the wavefront below.

The cycle's functions appear once in the graph, as blocks (see
`codegen.lowering.recursion`).  Frames live in tables with a leading frame
axis (see `codegen.recursion.frames`): one table per function variable, plus
the program counter (a global block id), the parent frame and the call site a
frame returns to (its slot), and the number of calls a waiting frame still
expects.  One `tf.while_loop` step (`_step`) runs, for every block, all active
frames waiting at it at once (`_run_block`: gather -> `tf.vectorized_map` over
the block -> scatter); then the block's terminator moves those frames on, one
class per terminator kind (`TERMINATORS`): a goto or branch sets their pc,
a call group allocates child frames, a return writes the value into the
caller's temporary and wakes the caller when its last call has returned.
Independent calls are live at the same time, so a balanced recursion of N
calls takes O(depth) steps.  Tables grow by doubling, so there is no depth or
call limit to set.  The types of the frame variables come from
`codegen.recursion.frame_specs`.
"""
from __future__ import annotations

import os
import sys

import tensorflow as tf

from codegen.errors import ConversionError, NeedsTree, Reason, StagingError, unsupported
from codegen.lowering.recursion import Branch, CallGroup, Goto, Return
from codegen.operators import call_time
from codegen.operators.defaults import check_defaults
from codegen.operators.context import current
from codegen.operators.guards import check
from codegen.operators.numbers import PyNumber, narrowed
from codegen.operators.trees import Pointer, Tables, is_node
from codegen.operators.unconverted import unwatched
from codegen.recursion import chain, levels, linear, linear_xla
from codegen.recursion.blocks import (Machine, block_reads, block_vars, build_machine, op_count, ops_since,
                                      range_assert, run_builder, run_frames)
from codegen.recursion.constants import share_constants
from codegen.recursion.cycles import Cycle, Strategy
from codegen.recursion.frame_specs import leaves, pack, spec_of
from codegen.recursion.frames import (MachineState, cast, cast_all, empty, grow, max_frames, positions, rows, scatter,
                                      take)

INITIAL_FRAMES = 64


def run(cycle: Cycle, entry, args):
    """Build the machine for one call `entry(*args)` into the current graph; returns its result."""
    return run_many(cycle, entry, [args])[0]


@unwatched
def run_many(cycle: Cycle, entry, calls: list, kind=None):
    """One machine for independent calls `entry(*args)` for each args in `calls` (a Python loop over
    a batch of trees): every call is a root frame, they all advance together.  Returns their
    results in order, or None when the calls cannot share a machine (different tree layouts,
    different shared objects).  `kind`: "P" / "T" when every profiled call returned a Python number / a tensor."""
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
                if "." in path:             # the signature feeds trees at argument positions only
                    raise unsupported("recursion", cf.filename, cf.node,
                                      f"the tree passed as `{p}` is an attribute of an argument ({path}); trees "
                                      "are fed as tables only when they are arguments or items of argument "
                                      "lists, tuples and dicts", "pass the tree itself as an argument")
                raise NeedsTree(path, f"{cf.filename}:{cf.node.lineno}", cycle.tree_methods())
    for args in calls:                          # (the entry check of their tables: `trees.flatten`)
        for a in args:
            if isinstance(a, Pointer):
                tables = a.tables.real or a.tables
                tables.followed = (tables.followed or set()) | cycle.followed
    calls = _joined_trees(calls) if len(calls) > 1 else calls
    if calls is None:
        return None
    for g in cycle.defaults:                    # (written into its calls: `call_arguments`)
        check_defaults(ctx, g)
    for args in calls:                          # guarded here, outside the machine, where guards may be
        for a in args:                          # emitted: the frames hold a Python int in int32
            if isinstance(a, PyNumber):
                narrowed(a, tf.int32)
    ctx.general_depth += 1                     # no speculation and no deferred prints inside the machine
    ctx.in_machine += 1
    try:
        return _run(ctx, cycle, entry, calls, kind)
    except StagingError as exc:
        if exc.reason.kind != "held-number" or _feeds_numbers(ctx, calls):
            raise           # (a fed number may be held per frame: a rebuild specialises on it again)
        # A number the frames or nodes hold has no value a rebuild could specialise on: this call
        # runs in Python (a call whose nodes hold other types may still run in the graph).
        raise ConversionError(Reason("held-number", exc.reason.where, f"{entry.__qualname__} holds a Python "
                                     f"number per node or frame, and {exc.reason.explanation}",
                                     exc.reason.hint)) from None
    except (TypeError, AttributeError, ValueError) as exc:
        if not _feeds_numbers(ctx, calls):
            exc.janus_recursion = entry.__qualname__      # (`graph.build` tells a held value's error apart)
        raise
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
            if all(a.tables is first.tables for a in column):
                continue                       # one forest: the roots already index the same tables
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


# -- the machine -------------------------------------------------------------------------------------
_LIMITS: dict = {}          # recursion limit -> its eager tensor, fed on every call of a machine's graph


_HEADROOM = 50             # frames below a recursion's deepest one that eager may still need


def _recursion_limit():
    """How deep the recursion may go in the graph, as a tensor fed on every call: the interpreter's
    recursion limit, less the frames already on the stack where the user called the function and
    a headroom for the frames eager adds below the recursion (the functions the graph inlined,
    TensorFlow's own Python in an op).  A recursion deeper than that runs in Python, which raises
    `RecursionError` exactly where eager does, or not.  Made once per value."""
    limit = sys.getrecursionlimit() - _user_depth() - _HEADROOM
    if not tf.executing_eagerly():             # fed inside another trace: a tensor of that graph
        return tf.constant(limit)
    if limit not in _LIMITS:
        if len(_LIMITS) > 256:
            _LIMITS.clear()
        _LIMITS[limit] = tf.constant(limit)
    return _LIMITS[limit]


def _user_depth() -> int:
    """The frames on the stack from the outermost to the one that called the speculated function:
    the frames of the call itself (janus's and TensorFlow's, below it) are not counted; a
    library's frames above it (Keras calling the function) are, as eager counts them."""
    frame, depth, caller = sys._getframe(1), 0, None
    while frame is not None:
        if caller is None and not frame.f_code.co_filename.startswith(_CALL_MACHINERY):
            caller = depth
        frame = frame.f_back
        depth += 1
    return depth - (caller or 0)


_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))     # beside codegen/
_CALL_MACHINERY = (os.path.dirname(tf.__file__) + os.sep,) + tuple(
    os.path.join(_ROOT, package) + os.sep for package in ("codegen", "profiler", "janus"))


def _feeds_numbers(ctx, calls) -> bool:
    """Whether the build feeds a Python number the recursion may hold (an argument's, a state
    value's): a failure on a held number may then go away when janus specialises on it again."""
    return bool(ctx.relaxed_state_scalars) or any(isinstance(a, PyNumber) and not a.computed
                                                  for args in calls for a in args)


def _run(ctx, cycle, entry, calls, kind):
    """Build the machine's loop into the current graph; returns the result of each call."""
    m = build_machine(ctx, cycle, entry, calls, kind)
    with ctx.outer_graph.as_default():         # the limit when the call runs, not when it was built
        limit = call_time.feed(ctx.outer_graph, _recursion_limit, tf.TensorSpec([], tf.int32))
    done, why = _other_strategy(m, calls, limit)
    if done is not None:
        ctx.recursion.append(cycle)
        return [m.result(r) for r in done]
    cycle.strategy = Strategy("wavefront", why)

    # tf.while_loop passes the fields of its loop variables' structure as separate arguments.
    def body(*fields):
        state = _step(m, MachineState(*fields))
        share_constants(tf.compat.v1.get_default_graph())
        return state

    def cond(*fields):
        state = MachineState(*fields)
        return tf.logical_and(tf.reduce_any(state.active), state.deepest <= limit)

    state = _initial_state(m, calls)
    out = tf.while_loop(cond, body, state,
                        shape_invariants=MachineState.shapes(cycle.n_blocks, m.roots, m.ret_leaves, m.leaf_specs))
    share_constants(tf.compat.v1.get_default_graph())     # the tree tables' slicing, before the loop
    # Deeper than the interpreter's recursion limit: eager raises RecursionError there, so the run
    # stops with an op error and the call runs in Python (which raises it).
    with tf.control_dependencies([check(out.deepest <= limit, [
            "recursion deeper than the interpreter's recursion limit", limit])] + m.guards(lambda g: out.ran[g])):
        out = out._replace(results=[tf.identity(r) for r in out.results])
    ctx.observe(cycle.observe, [out.steps, out.n, out.ran])
    ctx.recursion.append(cycle)
    return [m.result(pack(m.returns[entry], [r[i] for r in out.results])) for i in range(m.roots)]


def _other_strategy(m: Machine, calls, limit):
    """Run the cycle level by level or as a chain when one fits: (the results, None), or (None, why
    the wavefront machine runs it)."""
    not_levels = levels.why_not(m, calls)
    if not_levels is None:
        m.cycle.strategy = Strategy("levels", "the calls' control depends only on the trees")
        return levels.run(m, calls, limit), None
    not_chain = chain.why_not(m)
    if not_chain is None:
        result, not_xla = chain.run(m, calls[0], limit)
        if not_xla is None:
            m.cycle.strategy = Strategy("chain", "every call waits for its one callee: one frame runs at a time")
            return [result], None
        not_linear = linear.why_not(m)
        if not_linear is None:
            return [_linear(m, calls[0], limit, not_xla)], None
        return None, f"the calls form a chain, but XLA cannot run it: {not_xla}; not linear: {not_linear}"
    on_trees = any(isinstance(a, Pointer) for args in calls for a in args)
    return None, (f"not level by level: {not_levels}" if on_trees else not_chain)


def _linear(m: Machine, args, limit, not_xla: str):
    """A linear recursion's result from its two loops, compiled with XLA when the function asks for
    `jit_compile=True` and XLA computes what they compute (`linear_xla`)."""
    linear_why = "each call makes at most one call, then returns"
    why = f"{linear_why}; XLA cannot run the chain: {not_xla}"
    if m.ctx.jit_compile:
        result, not_compiled = linear_xla.run(m, args, limit)
        if not_compiled is None:
            m.cycle.strategy = Strategy("linear-xla", f"{linear_why}; the function asks for jit_compile=True, so "
                                                      "XLA runs both loops, with its own float rounding")
            return result
        why += f"; jit_compile=True, but XLA cannot run the loops: {not_compiled}"
    m.cycle.strategy = Strategy("linear", why)
    return linear.run(m, args, limit)


def _initial_state(m: Machine, calls) -> MachineState:
    """One active root frame per call, at the entry function's first block, holding its arguments."""
    roots, entry_cf = m.roots, m.cycle.functions[m.entry]
    cap = max(INITIAL_FRAMES, roots)
    first = tf.range(roots)
    tables = [tf.zeros((cap,) + s.shape, s.dtype) for s in m.leaf_specs]
    for p in entry_cf.params:
        if (m.entry, p) not in m.index:
            continue
        per_call = [cast_all(args[entry_cf.params.index(p)], m.specs[(m.entry, p)]) for args in calls]
        for k, j in enumerate(m.index[(m.entry, p)]):
            tables[j] = scatter(tables[j], first, tf.stack([leaf[k] for leaf in per_call]))
    pc = scatter(tf.fill([cap], -1), first, tf.fill([roots], m.cycle.offsets[m.entry] + entry_cf.entry))
    parent = tf.fill([cap], -1)
    slot = tf.fill([cap], -1)
    pending = tf.zeros([cap], tf.int32)
    active = scatter(tf.zeros([cap], tf.bool), first, tf.fill([roots], True))
    results = [tf.zeros((roots,) + s.shape, s.dtype) for s in m.ret_leaves]
    n = tf.constant(roots)
    steps = tf.constant(0)
    ran = tf.zeros([m.cycle.n_blocks], tf.int32)
    depth = tf.zeros([cap], tf.int32)
    return MachineState(steps, n, pc, parent, depth, tf.constant(0), slot, pending, active, ran, results, tables)


def _step(m: Machine, state: MachineState) -> MachineState:
    """One loop step: every block runs the frames waiting at it, in block order."""
    for f, cf in m.cycle.functions.items():
        for block in cf.blocks:
            with tf.name_scope(f"segment{m.cycle.offsets[f] + block.id}"):
                state = _run_block(m, f, cf, block, state)
    return state._replace(steps=state.steps + 1)


def _run_block(m: Machine, f, cf, block, state: MachineState) -> MachineState:
    """Run one block for all active frames waiting at it, vectorised over those frames."""
    gid = m.cycle.offsets[f] + block.id
    idx = tf.cast(tf.reshape(tf.where(tf.logical_and(state.active, tf.equal(state.pc, gid))), [-1]), tf.int32)
    # Only the variables the block reads or assigns are gathered, only those it assigns scattered back.
    table_vars, written = block_vars(m, f, cf, block)
    vals = [idx] + [tf.gather(state.tables[j], idx) for v in table_vars for j in m.index[(f, v)]]
    terminator = TERMINATORS[type(block.term)](m, f, block)

    checks: list = []           # the check that the frame's Python ints fit (`exact_ints`), if any

    def per_frame(frame_vals):
        checks.clear()
        out, term = run_builder(m, f, cf, block, table_vars, written, frame_vals[1:], checks)
        return out, terminator.frame_leaves(term) + checks

    def no_frames():
        return ([empty(m.leaf_specs[j]) for v in written for j in m.index[(f, v)]],
                terminator.no_frames() + [tf.zeros([0], tf.bool) for _ in checks])

    k = tf.size(idx)
    ran = tf.tensor_scatter_nd_add(state.ran, [[gid]], [k])
    # A block with stateful ops runs only when some frame waits at it.
    before = op_count()
    new_leaves, term = run_frames(m, f, [block], per_frame, vals, k, no_frames, (f, block.id) in m.stateful)
    if checks:
        with tf.control_dependencies([range_assert(m, term.pop())]):
            ran = tf.identity(ran)
    for var in block_reads(ops_since(before)):
        m.reads.setdefault(var, set()).add(gid)
    tables = list(state.tables)
    for j, value in zip([j for v in written for j in m.index[(f, v)]], new_leaves):
        tables[j] = scatter(tables[j], idx, value)
    return terminator.advance(state._replace(ran=ran, tables=tables), idx, k, term)


# -- terminators: how frames leave a block ------------------------------------------------------------
class _Terminator:
    """The terminator of one block of function `f`.

    `frame_leaves` turns the value the block's builder gives for its terminator into tensors, per
    frame (inside `tf.vectorized_map`); `no_frames` is the same for zero frames; `advance` moves
    the frames `idx` (`k` of them) on, given those tensors stacked over the frames."""

    def __init__(self, m: Machine, f, block):
        self.m, self.f, self.term = m, f, block.term
        self.offset = m.cycle.offsets[f]            # global id of the function's block 0

    def frame_leaves(self, value) -> list:
        raise NotImplementedError

    def no_frames(self) -> list:
        raise NotImplementedError

    def advance(self, state: MachineState, idx, k, values: list) -> MachineState:
        raise NotImplementedError


class _GotoStep(_Terminator):
    """`Goto`: the frames wait at the target block."""

    def frame_leaves(self, value) -> list:
        return [tf.constant(0)]

    def no_frames(self) -> list:
        return [tf.zeros([0], tf.int32)]

    def advance(self, state, idx, k, values):
        return state._replace(pc=scatter(state.pc, idx, tf.fill([k], self.offset + self.term.target)))


class _BranchStep(_Terminator):
    """`Branch`: each frame waits at the block its condition chose."""

    def frame_leaves(self, value) -> list:
        return [tf.cast(value, tf.bool)]

    def no_frames(self) -> list:
        return [tf.zeros([0], tf.bool)]

    def advance(self, state, idx, k, values):
        target = tf.where(values[0], self.offset + self.term.if_true, self.offset + self.term.if_false)
        return state._replace(pc=scatter(state.pc, idx, target))


class _CallStep(_Terminator):
    """`CallGroup`: every frame allocates one child frame per call, holding the call's arguments,
    and waits inactive at the resume block until all its children have returned."""

    def callees(self) -> list:
        return [self.m.cycle.names[self.f][c.callee] for c in self.term.calls]

    def frame_leaves(self, value) -> list:
        arg_leaves = []
        for callee, call_args in zip(self.callees(), value):
            for p, a in zip(self.m.cycle.functions[callee].params, call_args):
                if (callee, p) in self.m.index:
                    arg_leaves += cast_all(a, self.m.specs[(callee, p)])
        return arg_leaves

    def no_frames(self) -> list:
        return [empty(self.m.leaf_specs[j]) for g in self.callees() for p in self.m.cycle.functions[g].params
                for j in self.m.index.get((g, p), [])]

    def advance(self, state, idx, k, values):
        calls = self.term.calls
        fanout = len(calls)                 # children per calling frame
        need = state.n + k * fanout
        cap = max_frames(self.m.leaf_specs)
        with tf.control_dependencies([check(need <= cap, [
                "the recursion made more calls than the machine holds (frames, at most):", need, cap])]):
            state = grow(state, tf.identity(need))
        pc, parent, slot, active, tables = state.pc, state.parent, state.slot, state.active, list(state.tables)
        depth = state.depth
        child_depth = tf.gather(depth, idx) + 1
        arg_leaves = list(values)
        for j, (call, callee) in enumerate(zip(calls, self.callees())):
            ccf = self.m.cycle.functions[callee]
            ids = state.n + tf.range(k) * fanout + j    # child j of frame idx[i] is frame n + i*fanout + j
            for p in ccf.params:
                for pos in self.m.index.get((callee, p), []):
                    tables[pos] = scatter(tables[pos], ids, arg_leaves.pop(0))
            pc = scatter(pc, ids, tf.fill([k], self.m.cycle.offsets[callee] + ccf.entry))
            parent = scatter(parent, ids, idx)
            depth = scatter(depth, ids, child_depth)
            slot = scatter(slot, ids, tf.fill([k], call.site))
            active = scatter(active, ids, tf.fill([k], True))
        pc = scatter(pc, idx, tf.fill([k], self.offset + self.term.resume))
        pending = scatter(state.pending, idx, tf.fill([k], fanout))
        active = scatter(active, idx, tf.fill([k], False))
        deepest = tf.maximum(state.deepest, tf.reduce_max(tf.concat([child_depth, [0]], 0)))
        return state._replace(n=need, pc=pc, parent=parent, depth=depth, deepest=deepest, slot=slot,
                              pending=pending, active=active, tables=tables)


class _ReturnStep(_Terminator):
    """`Return`: root frames of the entry function write the machine's results; other frames write
    their value into the caller's temporary of their call site, and a caller wakes when its last
    call has returned.  The returning frames are done."""

    def frame_leaves(self, value) -> list:
        return cast_all(value if self.term.value is not None else 0, self.m.returns[self.f])

    def no_frames(self) -> list:
        return [empty(s) for s in leaves(self.m.returns[self.f])]

    def advance(self, state, idx, k, values):
        par = tf.gather(state.parent, idx)
        site = tf.gather(state.slot, idx)
        is_root = tf.equal(par, -1)
        results = state.results
        if self.f is self.m.entry:     # only the entry function's root frames return out of the machine
            roots_here = positions(is_root)
            root_ids = tf.gather(idx, roots_here)
            results = [scatter(r, root_ids, cast(take(t, roots_here), s))
                       for r, t, s in zip(results, values, self.m.ret_leaves)]
        tables = self._to_callers(list(state.tables), par, site, is_root, values)
        valid = tf.gather(par, positions(tf.logical_not(is_root)))
        pending = tf.tensor_scatter_nd_add(state.pending, rows(valid), -tf.ones_like(valid))
        pc = scatter(state.pc, idx, tf.fill([k], -1))
        active = scatter(state.active, idx, tf.fill([k], False))
        # A caller wakes when its last call has returned (callers wait inactive).
        active = scatter(active, valid, tf.equal(tf.gather(pending, valid), 0))
        return state._replace(pc=pc, pending=pending, active=active, results=results, tables=tables)

    def _to_callers(self, tables, par, site, is_root, values) -> list:
        """The tables with each returned value written into its caller's temporary, site by site."""
        cf = self.m.cycle.functions[self.f]
        for s in self.m.cycle.sites:
            if s.callee is not cf:
                continue
            here = positions(tf.logical_and(tf.equal(site, s.id), tf.logical_not(is_root)))
            to = tf.gather(par, here)
            target = (s.caller.fn, s.target)
            for pos, value, spec in zip(self.m.index[target], values, leaves(self.m.specs[target])):
                tables[pos] = scatter(tables[pos], to, cast(take(value, here), spec))
        return tables


TERMINATORS = {Goto: _GotoStep, Branch: _BranchStep, CallGroup: _CallStep, Return: _ReturnStep}
