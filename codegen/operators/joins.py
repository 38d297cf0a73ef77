"""Joined calls: independent recursive calls of a Python loop run as one machine.

See `codegen.lowering.join_calls` for the code that calls these operators.
"""
from __future__ import annotations

import tensorflow as tf

from codegen.errors import JoinBroken
from codegen.operators.calls import user_callee
from codegen.operators.context import VARIABLE_WRITES, current


class Joined:
    """Results of calls a loop makes, computed by one machine before the loop runs."""

    def __init__(self, results, where, graph, ops, writes):
        self.results, self.where = list(results), where
        self.graph, self.ops, self.writes = graph, ops, writes   # graph size and deferred writes when joined


def join(items, spec, where):
    """One machine run for `f(*args)` of every item, when the loop will call a recursion the machine
    runs on each item of a Python list or tuple; else None (the loop calls as usual)."""
    ctx = current()
    if type(items) not in (list, tuple) or len(items) < 2 or ctx.in_machine or ctx.dry_run \
            or ("join", where) in ctx.relaxed:
        return None
    calls = [user_callee(*spec(item)) for item in items]
    if any(c is None for c in calls) or len({c[0] for c in calls}) != 1:
        return None
    fn = calls[0][0]
    if not all(ctx.compiler.wants_machine(fn, args) for _, args in calls):
        return None
    results = ctx.compiler.run_machine(fn, [args for _, args in calls])
    if results is None:
        return None
    graph = tf.compat.v1.get_default_graph()           # the graph the loop is built in (maybe a branch's)
    return Joined(results, where, graph, len(graph.get_operations()), len(ctx.heap.writes))


def joined(j, thunk):
    """The next joined result (the loop makes its calls in the order they were joined), or the call."""
    if j is None:
        return thunk()
    return j.results.pop(0)


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
