"""Joined calls: independent recursive calls of a Python loop run as one machine.

See `codegen.lowering.join_calls` for the code that calls these operators.
"""
from __future__ import annotations

import builtins
import contextlib
import logging

import tensorflow as tf

from codegen.errors import JoinBroken
from codegen.operators.calls import every_argument, user_callee
from codegen.operators import failing_ops
from codegen.operators.context import VARIABLE_WRITES, current
from codegen.operators.general import state_before
from codegen.operators.trees import Pointer
from codegen.operators.values import is_symbolic


class Joined:
    """Results of calls a loop makes, computed by one machine before the loop runs."""

    def __init__(self, results, where, graph, ops, writes):
        self.results, self.where = list(results), where
        self.graph, self.ops, self.writes = graph, ops, writes   # graph size and deferred writes when joined
        self.item = None            # while `each` builds its element once: the item's result
        self.cycle = None           # the machine's cycle, whose report names a batched element


def join(items, spec, where, pairs=False):
    """One machine run for `f(*args)` of every item, when the loop will call a recursion the machine
    runs on each item of a Python list or tuple; else None (the loop calls as usual).  `pairs`: the
    items are tuples of the loop's names (`listed`), `spec` takes them one by one."""
    ctx = current()
    if type(items) not in (list, tuple) or len(items) < 2 or ctx.in_machine or ctx.dry_run \
            or ("join", where) in ctx.relaxed:
        return None
    before, printed, written = state_before(ctx, ()), len(ctx.prints), len(ctx.heap.writes)
    calls = [user_callee(*(spec(*item) if pairs else spec(item))) for item in items]
    if (len(ctx.prints), len(ctx.heap.writes)) != (printed, written) or state_before(ctx, ())[0] != before[0]:
        # Reading the calls' arguments ran code with effects (a property that prints): ahead of
        # the loop, they would happen out of eager's order, and again when the loop makes its calls.
        raise JoinBroken(("join", where), "reading the calls' arguments prints or writes Python state",
                         "the calls run one by one")
    if any(c is None for c in calls) or len({c[0] for c in calls}) != 1:
        return None
    fn = calls[0][0]
    full = [every_argument(fn, args, {}, ctx) for _, args in calls]     # (defaults filled in, as one call's)
    if any(args is None for args in full) or not all(ctx.compiler.wants_machine(fn, args) for args in full):
        return None
    machines = len(ctx.recursion)
    results = ctx.compiler.run_machine(fn, full)
    if results is None:
        return None
    graph = tf.compat.v1.get_default_graph()           # the graph the loop is built in (maybe a branch's)
    joined = Joined(results, where, graph, len(graph.get_operations()), len(ctx.heap.writes))
    joined.cycle = ctx.recursion[-1] if len(ctx.recursion) > machines else None
    return joined


def listed(plain, fn, *args, **kwargs):
    """A loop's iterable `fn(*args, **kwargs)`, as a list when it is the builtin `enumerate` or `zip`
    over lists or tuples of tree nodes or tensors (the graph's inputs), so the calls over its items
    can be joined (`join`); else `plain()`, the iterable as the loop makes it.  Items of any other
    kind (Python numbers) are read through `plain`, which records the reads the graph's entry
    checks; a generator stays lazy, its code running between the loop's steps; and a
    `zip(..., strict=True)` over lists of different lengths raises where eager does, after the
    shorter list's items.  The body writes no list (a write after the join redoes the build
    without it), so the listed items are what the loop would have taken one by one."""
    if fn is builtins.enumerate and len(args) in (1, 2) and set(kwargs) <= {"start"}:
        seqs = args[:1]
    elif fn is builtins.zip and args and set(kwargs) <= {"strict"}:
        seqs = args
    else:
        seqs = ()
    if seqs and all(type(a) in (list, tuple) and all(isinstance(x, Pointer) or is_symbolic(x) for x in a)
                    for a in seqs) and (not kwargs.get("strict") or len({len(a) for a in seqs}) == 1):
        return list(fn(*args, **kwargs))
    return plain()


def joined(j, thunk):
    """The next joined result (the loop makes its calls in the order they were joined), or the call."""
    if j is None:
        return thunk()
    if j.item is not None:
        return j.item
    return j.results.pop(0)


def each(j, items, element, plain):
    """`[element(t) for t in items]` (`plain()` builds it), where the element takes the joined
    call's result: built once for all items when it only computes tensors from the item's
    attributes and the result (`tf.vectorized_map`), so the graph runs its ops once per batch
    instead of once per item, as the machine runs the calls.  Built per item otherwise; a
    batched build that did more (wrote or printed anything, asserted, called Python, made a
    stateful op, or returned what is not a tensor) is redone per item (`JoinBroken`)."""
    key = ("each", j.where) if j is not None else None
    if j is None or key in current().relaxed or not _same_tables(items) or len(j.results) != len(items):
        return plain()
    results = [tf.nest.flatten(r) for r in j.results]
    if not all(is_symbolic(leaf) for leaf in results[0]) or any(len(r) != len(results[0]) for r in results):
        return plain()
    try:
        return batched(j, items, element, results)
    except JoinBroken:
        raise
    except Exception as exc:            # the per-item build makes or reports it where it belongs
        raise JoinBroken(key, f"a list comprehension's element could not be built once for all items "
                              f"({type(exc).__name__}: {exc})", "it is built per item") from exc


def join_end(j):
    """After the loop: the joined calls ran before its body; if the body wrote a variable or deferred
    state, they might have read it too late, so the build is redone without this join."""
    if j is None:
        return
    ctx = current()
    graph = j.graph
    # A write inside a tf.cond/while_loop sits in its branch graph: such a stateful control-flow op
    # counts as a write (at worst the calls run one machine each).
    wrote = ctx.heap.writes[j.writes:] or any(
        op.type.startswith(VARIABLE_WRITES) or op.type in ("If", "While", "StatefulPartitionedCall")
        for op in graph.get_operations()[j.ops:])
    if wrote or j.results:
        raise JoinBroken(("join", j.where))


_READ_ONLY = ("ReadVariableOp", "VarHandleOp", "VariableShape")


def batched(j, items, element, results):
    """The list of `element(t)` for every item, built once on all items through `tf.vectorized_map`
    (see `each`); raises JoinBroken when the build did more than compute tensors."""
    ctx = current()
    k = len(items)
    tables = items[0].tables
    roots = stacked([t.index for t in items])
    columns = [stacked([r[x] for r in results]) for x in range(len(results[0]))]
    structure, before = j.results[0], _effects(ctx)
    graph = tf.compat.v1.get_default_graph()
    start = len(graph.get_operations())
    shape: list = []

    def one(row):
        j.item = tf.nest.pack_sequence_as(structure, list(row[1:]))
        traced = len(graph.get_operations())
        try:
            out = element(Pointer(row[0], tables))
        finally:
            j.item = None
        leaves = tf.nest.flatten(out)
        if not leaves or not all(is_symbolic(leaf) for leaf in leaves):
            raise JoinBroken(("each", j.where), "a list comprehension's element is not a tensor or a "
                                                "structure of tensors", "it is built per item")
        ops = graph.get_operations()
        _no_unused_failures(j, ops[traced:], leaves)
        # The trace on item 0 (the map's gathers of its rows, then the element) is converted into
        # ops on every item; unused itself, it is not kept as an output.
        failing_ops.traced_only(graph, ops[start:])
        shape[:] = [out]
        return leaves

    ctx.vectorized += 1
    try:
        with quiet_pfor():
            out = tf.vectorized_map(one, [roots] + columns, fallback_to_while_loop=False)
    finally:
        ctx.vectorized -= 1
    stateful = sorted({op.type for op in graph.get_operations()[start:]
                       if op._is_stateful and op.type not in _READ_ONLY})
    if stateful or _effects(ctx) != before:
        what = f"makes stateful ops ({', '.join(stateful)})" if stateful else "writes, prints or asserts"
        raise JoinBroken(("each", j.where), f"a list comprehension's element {what}", "it is built per item")
    j.results = []
    if j.cycle is not None and j.cycle.strategy is not None:
        j.cycle.strategy.batched.append(j.where)
    rows = [tf.unstack(leaf, num=k) for leaf in out]
    return [tf.nest.pack_sequence_as(shape[0], [r[i] for r in rows]) for i in range(k)]


def _no_unused_failures(j, trace, leaves) -> None:
    """Raise JoinBroken when the element makes an op that may fail and that its value does not
    need (a helper's unused `tf.gather`): eager raises it for the item where it fails, and
    `tf.vectorized_map` converts only what the value needs, so the batch would not."""
    needed = failing_ops.ancestors_of([leaf.op for leaf in leaves])
    memo: dict = {}
    if any(op.name not in needed and failing_ops.may_fail(op, memo) for op in trace):
        raise JoinBroken(("each", j.where), "a list comprehension's element makes a value it does not use "
                                            "that may fail", "it is built per item")


@contextlib.contextmanager
def quiet_pfor():
    """Holds back the log lines `tf.vectorized_map` writes about an op it cannot convert (an
    ERROR, or a WARNING that it falls back to a loop): janus handles both (the element is built
    per item; a machine's frames run in the loop), and the eager run of the user's program logs
    nothing."""
    log = logging.getLogger("tensorflow")
    log.addFilter(_pfor_failures)
    try:
        yield
    finally:
        log.removeFilter(_pfor_failures)


def _pfor_failures(record) -> bool:
    return "parallel_for" not in (record.pathname or "")


def stacked(rows):
    """The tensor whose rows are `rows`: the one they were unstacked from when they are its rows
    in order (the machine hands out its roots' results so), else their stack."""
    op = rows[0].op
    if (op.type == "Unpack" and len(op.outputs) == len(rows) and op.get_attr("axis") == 0
            and all(r is out for r, out in zip(rows, op.outputs))):
        return op.inputs[0]
    return tf.stack(rows)


def _effects(ctx) -> tuple:
    """What a build has done beyond making ops and reading state: in-graph assumptions, prints,
    deferred writes, observers, machines, Python ints it checks.  (A call into Python is a
    stateful op.)"""
    return (len(ctx.assumptions), len(ctx.prints), len(ctx.print_tensors), len(ctx.heap.writes),
            len(ctx.observers), len(ctx.recursion), len(ctx.int_sources))


def _same_tables(items) -> bool:
    return (type(items) in (list, tuple) and len(items) > 1 and all(type(t) is Pointer for t in items)
            and all(t.tables is items[0].tables for t in items))

