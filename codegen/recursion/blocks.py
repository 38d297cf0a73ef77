"""What every execution of a recursive cycle shares: the typed machine and one block on one frame.

`build_machine` types the frame variables of a cycle for one set of root calls
(tensors every call passes along unchanged become static) and lays out their
tables; `run_builder` runs one block's builder on one frame's values, as both
the batched machine (`codegen.recursion.machine`, inside `tf.vectorized_map`)
and the depth-first chain machine (`codegen.recursion.chain`) do.  Which block
reads and writes which variables is `block_vars`.
"""
from __future__ import annotations

import ast
import dataclasses

import tensorflow as tf
from tensorflow.python.eager import execute
from tensorflow.python.framework import func_graph
from tensorflow.python.framework import ops as ops_lib

from codegen import faults
from codegen.assumptions import Kind
from codegen.errors import unsupported
from codegen.operators.context import Frame
from codegen.operators.gradients import differentiable
from codegen.operators.guards import check
from codegen.operators.unconverted import watched
from codegen.operators.joins import quiet_pfor
from codegen.operators.values import UNDEF, Undefined
from codegen.operators.weak_numbers import WeakNumber
from codegen.recursion import exact_ints
from codegen.recursion.cycles import Cycle
from codegen.recursion.elementwise import is_elementwise, run_batched
from codegen.recursion.kinds import as_eager, kind_guard, result_kind, return_kinds, types_differ
from codegen.recursion.mixed import checked_result, either_kinds, has_mixed, outputs_with_bits, speculated, unmixed
from codegen.recursion.mixed import known_tensors, resolve as resolve_mixed
from codegen.recursion.rows import run_rows
from codegen.recursion.sequences import refuse_list_writes
from codegen.recursion.frame_specs import Spec, exposed_reads, infer_specs, leaves, pack
from codegen.recursion.frames import Widened, cast_all, is_tensors, table_layout, wrap
from codegen.syntax.analysis import assigned_names


@dataclasses.dataclass
class Machine:
    """What every step of one machine reads: the cycle, the types of its frame variables and where
    their leaves live in the tables."""
    ctx: object
    cycle: Cycle
    entry: object
    roots: int                  # frames 0 .. roots-1 are the calls, in order
    specs: dict                 # (function, variable) -> Spec, or a tuple of them
    returns: dict               # function -> the Spec of its return value
    stateful: set               # (function, block id) of blocks with stateful ops
    index: dict                 # (function, variable) -> its table positions (not for static variables)
    leaf_specs: list            # the Spec of each table, in position order
    ret_leaves: list            # the Specs of the entry's return value's leaves
    elementwise: set            # (function, block id) of blocks run without tf.vectorized_map
    reads: dict = dataclasses.field(default_factory=dict)   # variable -> global ids of blocks reading it
    kinds: dict = dataclasses.field(default_factory=dict)   # return block -> its kind (`kinds.return_kinds`)
    kind: object = "T"                                       # the result's speculated kinds
    ptypes: tuple | None = None                              # its leaves' Python or NumPy types
    post: set = dataclasses.field(default_factory=set)      # return blocks that run after a call
    mixed: dict = dataclasses.field(default_factory=dict)   # (function, block id) -> its `mixed.BlockKinds`
    tensors: set = dataclasses.field(default_factory=set)   # (function, variable, leaf) tensors in every frame
    int_range: object = None    # the `EXACT` assumption on its Python ints, once a block computes one

    def range_assumption(self):
        """The assumption that the Python numbers this machine computes are Python's (`exact_ints`)."""
        if self.int_range is None:
            cf = self.cycle.functions[self.entry]
            self.int_range = self.ctx.assume(
                Kind.EXACT, exact_ints.range_key(cf, self.entry),
                f"the Python numbers {self.entry.__qualname__} computes are Python's: its ints fit the "
                "machine's int tables, its divisors are not zero, its float powers are floats; and no frame "
                "takes the side of a tensor `if` that raises", True,
                f"{cf.filename}:{cf.node.lineno}", fallback="python-int")
        return self.int_range

    def result(self, packed):
        """The root's result (its table leaves packed) as eager gives it: Python numbers where the
        machine speculated them, after the check of the kinds where they vary by frame; where that
        check failed too often, the kinds decided after the run (`mixed.either_kinds`)."""
        if has_mixed(self.returns[self.entry]):
            if self._kind_key() in self.ctx.relaxed:
                return either_kinds(self, packed)
            spec = unmixed(self.returns[self.entry])
            packed = pack(spec, checked_result(self, packed))
            return as_eager(self.kind, self.ptypes, wrap(packed, spec))
        return as_eager(self.kind, self.ptypes, wrap(packed, self.returns[self.entry]))

    def _kind_key(self) -> tuple:
        cf = self.cycle.functions[self.entry]
        return "recursion-kind", cf.filename, cf.node.lineno, self.entry.__qualname__

    def guards(self, count) -> list:
        """The assertions on what the run's blocks did (`count(global id)`, how often each ran):
        the variables and gradient paths read (`read_guards`), and the result's kind."""
        reads = {var: [count(gid) for gid in sorted(gids)] for var, gids in self.reads.items()}
        return read_guards(reads) + kind_guard(self.kinds, self.post, self.roots, self.kind, count,
                                               self.kind_assumption)

    def kind_assumption(self):
        """The `RESULT_KIND` assumption of this machine's result; where a run broke it more often
        than the function tolerates (relaxed), the recursion runs in Python (a result whose kind
        varies by frame is left to the run instead, see `result`)."""
        cf = self.cycle.functions[self.entry]
        key = self._kind_key()
        where = f"{cf.filename}:{cf.node.lineno}"
        if key in self.ctx.relaxed:
            raise unsupported("recursion-kind", cf.filename, cf.node,
                              f"{self.entry.__qualname__} returned a Python number on some calls and a tensor "
                              "(or a number of another type) on others, which only running it tells",
                              "return the same kind of value from every `return`")
        expected = "tensor" if self.kind in ("T", "N") else "/".join(
            "Python number" if k == "P" else "tensor" for k in self.kind)
        return self.ctx.assume(Kind.RESULT_KIND, key, f"the result of {self.entry.__qualname__}", expected, where,
                               fallback="recursion-kind")


_SCALARS = (bool, int, float, str)


def build_machine(ctx, cycle, entry, calls, kind=None) -> Machine:
    """Type the frame variables (shared tensors and Python scalars become static) and lay out their
    tables.  `kind`: "P" / "T" when every profiled call returned a Python number / a tensor, else
    None."""
    cf = cycle.functions[entry]
    if exact_ints.range_key(cf, entry) in ctx.relaxed:
        raise unsupported("recursion", cf.filename, cf.node,
                          f"Python arithmetic {entry.__qualname__} computes failed in the machine on several "
                          "calls: an int left its tables (Python's ints have no bound), or a divisor was zero or "
                          "a float power not a float, where Python raises")
    # Tensors and Python scalars every call passes along unchanged are the entry's value in every
    # frame: no table.  A flag so passed (`encode(node, training)`) stays the Python value it is
    # in the dry traces too, so `if training:` and `a if training else b` take eager's side.  A
    # Python number the graph is fed (`PyNumber`) stays per frame: computing on a shared one, the
    # blocks would lose the guards its Python arithmetic needs (a zero divisor), which cannot be
    # emitted inside the machine.
    shared = {cycle.invariant[(entry, p)]: a for i, (p, a) in enumerate(zip(cycle.functions[entry].params, calls[0]))
              if (entry, p) in cycle.invariant and (is_tensors(a) or type(a) in _SCALARS)
              and all(c[i] is a for c in calls)}
    statics = {key: shared[cls] for key, cls in cycle.invariant.items()
               if cls in shared and type(shared[cls]) in _SCALARS}
    refuse_list_writes(cycle, {}, {}, shared=[key for key, cls in cycle.invariant.items()
                                              if cls in shared and _holds_list(shared[cls])])
    specs, returns, stateful, mixed = infer_specs(ctx, cycle, entry, calls[0], statics)
    shared = {cls: tf.nest.map_structure(Widened.of, value) for cls, value in shared.items()}
    for key, cls in cycle.invariant.items():
        if cls in shared:
            specs[key] = Spec(tf.int32, (), static=shared[cls], is_static=True)
    if mixed:           # numbers that are Python in some frames and tensors in others carry a bit
        specs, returns, tables, result_kinds, tensors = resolve_mixed(ctx, cycle, entry, calls, specs, returns, mixed)
        kinds, post, (result, ptypes) = {}, set(), speculated(result_kinds, returns[entry], kind)
    else:
        tables, tensors = {}, _known_tensors(ctx, cycle, entry, calls, specs, returns)
        kinds, post, ptypes = return_kinds(ctx, cycle, specs, entry)
        result = result_kind(kinds, kind, ptypes)
        if kind == "P" and types_differ(kinds, ptypes):     # every profiled call would fail the check
            raise unsupported("recursion-kind", cf.filename, cf.node,
                              f"{entry.__qualname__} returns Python numbers of different types on different "
                              "paths, or whose type janus cannot tell on every path (a bool, an int, a float or "
                              "a NumPy number; a recursive call's result passed on)",
                              "return the same type from every `return` (int(...), float(...))")
    index, leaf_specs = table_layout(cycle, specs)
    elementwise = {(f, b.id) for f, cf in cycle.functions.items() for b in cf.blocks
                   if (f, b.id) not in stateful and is_elementwise(cf, f, b, specs)}
    return Machine(ctx, cycle, entry, len(calls), specs, returns, stateful, index, leaf_specs,
                   leaves(returns[entry]), elementwise, kinds=kinds, post=post,
                   kind=result, ptypes=ptypes, mixed=tables, tensors=tensors)


def _holds_list(value) -> bool:
    return type(value) is list or (type(value) is tuple and any(_holds_list(v) for v in value))


def _known_tensors(ctx, cycle, entry, calls, specs, returns) -> set:
    """The int leaves that are tensors in every frame (their arithmetic needs no range check),
    found by the kinds resolution only where the frames hold int scalars at all."""
    if not any(isinstance(s, Spec) and s.dtype.is_integer and s.shape == () and not s.is_static and s.tables is None
               for spec in specs.values() for s in leaves(spec)):
        return set()
    return known_tensors(ctx, cycle, entry, calls, specs, returns)


def is_bare(block) -> bool:
    """Whether the block has no statements but string constants (a docstring)."""
    return all(isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) for s in block.stmts)


def block_vars(m: Machine, f, cf, block) -> tuple[list, list]:
    """The table variables `block` needs (it reads or assigns them) and those it assigns."""
    reads = exposed_reads(block.stmts, block.term.exprs(), set(cf.vars))
    assigned = set(assigned_names(block.stmts))
    written = [v for v in cf.vars if (f, v) in m.index and v in assigned]
    table_vars = [v for v in cf.vars if (f, v) in m.index and (v in reads or v in written)]
    return table_vars, written


def run_builder(m: Machine, f, cf, block, table_vars, written, flat, checked: list | None = None):
    """The block's builder on one frame whose `table_vars` leaves are `flat`: the new leaves of
    the `written` variables, and the raw value the builder gives for the terminator.  Where the
    block computes Python ints (`exact_ints`), the frame's check that they fit is appended to
    `checked`, or, without that list, asserted before the outputs."""
    flat = list(flat)
    given = {v: pack(m.specs[(f, v)], flat) for v in table_vars}
    full = []
    for v in cf.vars:
        spec = m.specs[(f, v)]
        if isinstance(spec, Spec) and spec.is_static:
            full.append(tf.nest.map_structure(Widened.narrow, spec.static))
        else:
            full.append(wrap(given[v], spec) if v in given else UNDEF)
    converted = m.cycle.builders[(f, block.id)]
    m.ctx.frames.append(Frame(converted))
    before, outer = op_count(), (m.ctx.int_checks, m.ctx.int_sources, m.ctx.int_checks_depth)
    m.ctx.int_checks, m.ctx.int_sources, m.ctx.int_checks_depth = [], [], m.ctx.general_depth
    try:
        new_vars, term = watched(converted.builder, *full)
        term = exact_ints.narrowed_term(m, f, block, term)
        oks, noted = m.ctx.int_checks, m.ctx.int_sources    # a tree node's int attributes'
    finally:
        m.ctx.frames.pop()
        m.ctx.int_checks, m.ctx.int_sources, m.ctx.int_checks_depth = outer
    new_vars, term = outputs_with_bits(m, f, cf, block, given, new_vars, term)
    out = []
    for v, value in zip(cf.vars, new_vars):
        if v in written:        # an `if` may leave it unassigned: then it keeps its value
            out += cast_all(given[v] if isinstance(value, Undefined) else value, m.specs[(f, v)])
    taint = {**exact_ints.sources(m, f, given), **{t.ref(): True for t in noted}}
    ok = exact_ints.combined(oks + exact_ints.checks(ops_since(before), taint, cf, f, block))
    if ok is None or ok is True:
        return out, term
    assumption = m.range_assumption()
    if faults.matches(assumption):
        ok = tf.logical_and(ok, False)
    if checked is not None:
        checked.append(ok)
        return out, term
    with tf.control_dependencies([range_assert(m, ok)]):
        return [tf.identity(t) for t in out], tf.nest.map_structure(_after_check, term)


def range_assert(m: Machine, ok):
    """The assertion that every frame's Python ints fit (`ok`, one bool per frame, or one)."""
    return check(tf.reduce_all(ok), [m.range_assumption().message()])


def _after_check(value):
    if isinstance(value, tf.Tensor):
        return tf.identity(value)
    if isinstance(value, WeakNumber):
        return WeakNumber(tf.identity(value.tensor), value.ptype, value.either)
    return value


def run_frames(m: Machine, f, blocks, per_frame, vals, k, no_frames, only_if_any: bool):
    """`per_frame` (which runs the list `blocks`) on the `k` frames whose values are `vals`,
    batched: when every block is elementwise in one go (`run_batched`); else, without stateful
    ops, as rows when every op allows it (`run_rows`); else through `tf.vectorized_map`, with
    `only_if_any` under a `tf.cond` that returns `no_frames()` when no frame waits (pfor's
    fallback keeps the stateful ops of its trace alive and feeds them frame 0, which does not
    exist then)."""
    if all((f, block.id) in m.elementwise for block in blocks):
        return run_batched(per_frame, vals, k)
    if not any((f, block.id) in m.stateful for block in blocks):
        done = run_rows(per_frame, vals, k)
        if done is not None:
            return done
    with quiet_pfor():
        if only_if_any:
            return tf.cond(k > 0, lambda: tf.vectorized_map(per_frame, vals, fallback_to_while_loop=True), no_frames)
        return tf.vectorized_map(per_frame, vals, fallback_to_while_loop=True)


_READS = ("ReadVariableOp", "ResourceGather", "ResourceGatherNd")


def op_count() -> int:
    """How many ops the current graph has (`ops_since` takes it)."""
    return len(tf.compat.v1.get_default_graph().get_operations())


def ops_since(count: int) -> list:
    """The ops added to the current graph after it had `count` of them."""
    return tf.compat.v1.get_default_graph().get_operations()[count:]


def variables_read(ops) -> set:
    """The variables (by the id of their eager handle) that `ops` read, through the captures of
    the loop and branch functions they sit in."""
    out = set()
    for op in ops:
        if op.type in _READS:
            handle = op.inputs[0]
            while isinstance(handle.graph, func_graph.FuncGraph):
                outer = next((e for e, i in handle.graph.captures if i is handle), None)
                if outer is None:
                    break
                handle = outer
                if not hasattr(handle, "graph") or isinstance(handle, ops_lib.EagerTensor):
                    break
            out.add(id(handle))
    return out


class GradientPath:
    """The key under which `reads` counts the runs of one block whose ops may pass a gradient
    from a floating value they take to one the block hands on.  Whether they do is decided when
    the guards are built (`carries`), once the ops that consume the block's values exist."""

    def __init__(self, ops):
        self.ops = ops

    def carries(self) -> bool:
        inside, carrying = set(self.ops), set()
        for op in self.ops:
            # An op TensorFlow knows no gradient for counts: eager would not silently skip it either.
            if differentiable(op, unknown=True) and any(_floating(t) and (t.op not in inside or t.ref() in carrying)
                                         for t in op.inputs):
                carrying.update(t.ref() for t in op.outputs if _floating(t))
        return any(any(c not in inside for c in t.deref().consumers()) or _is_output(t.deref())
                   for t in carrying)


def _floating(t) -> bool:
    return t.dtype.is_floating or t.dtype.is_complex


def _is_output(t) -> bool:
    return any(t is o for o in getattr(t.graph, "outputs", ()))


def block_reads(ops) -> set:
    """What a block's `ops` read for `read_guards`: the variables, and their `GradientPath`."""
    return variables_read(ops) | {GradientPath(ops)}


def read_guards(reads: dict) -> list:
    """Under a gradient tape: for each variable the blocks read, an assertion that some frame did
    read it.  When none does (a batch of single-leaf trees never runs the inner nodes' cell),
    eager never reads the variable and its gradient is None; the graph would give zeros.  The
    same holds for every tensor fed into the recursion when no frame ran an op a gradient flows
    through (`power(x, n)` whose root is its base case returns `tf.ones_like(x)`): the
    assertion over the `GradientPath`s fails the run there.  Then the call runs in Python."""
    if not execute.must_record_gradient():
        return []
    paths = [c for key, counts in reads.items() if isinstance(key, GradientPath) and key.carries() for c in counts]
    reads = {key: counts for key, counts in reads.items() if not isinstance(key, GradientPath)}
    if paths:
        reads["path"] = paths
    return [check(tf.add_n([tf.cast(c, tf.int32) for c in counts]) > 0, [
                "no call ran an op a gradient flows through: eager's gradient is None" if var == "path"
                else "a variable the recursion reads was read by no call: eager's gradient is None"])
            for var, counts in reads.items()]
