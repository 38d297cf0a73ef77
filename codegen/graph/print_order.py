"""A `tf.print` that stays an op prints once per call, also when the run fails; Python the
graph calls, and variable writes, run only where eager would reach them.

Janus defers `print` and a top-level `tf.print` until the graph ran, but a
`tf.print` inside a `tf.cond` branch, a `tf.while_loop` body or the recursion
machine stays an op and prints when it runs.  When an op of the program then
fails, janus re-runs the call eagerly, which prints again.  So, in the traced
graph, every op that may fail runs before every op that prints (a control
edge), and a failure stops the run before any line is printed.  Where that
order is impossible (the printing op may fail itself, or an op that may fail
uses what it computes) the build fails and the call runs in Python.
"""
from __future__ import annotations

import tensorflow as tf
from tensorflow.python.framework.auto_control_deps import op_is_stateful

from codegen.errors import Reason, StagingError
from codegen.operators import failing_ops


def order_prints_after_failures(graph, where: str) -> None:
    memo: dict = {}
    printing = [op for op in graph.get_operations() if failing_ops.prints(op, memo)]
    if not printing:
        return
    failing = [op for op in graph.get_operations() if failing_ops.may_fail(op, memo)]
    uses = {f.name: failing_ops.ancestors(f) for f in failing}
    for p in printing:
        if p.name in uses or any(p.name in used for used in uses.values()):
            raise StagingError(Reason(
                "print-before-failure", where, "a tf.print inside a tf.cond, tf.while_loop or recursive call "
                "may run before an op that can fail, and the failed call is re-run in Python, which prints again",
                "print after the branch or loop, or check the values before it"))
        before = failing_ops.ancestors(p)
        for f in failing:
            if f.name not in before:
                p._add_control_input(f)  # noqa: SLF001 - the graph is still being traced


def order_python_after_failures(graph) -> None:
    """An op that calls Python (`tf.numpy_function`, or a loop or branch holding one) runs after
    every op created before it that may fail: eager stops at such a failure before it reaches
    the call.  (A failure after the call is handled by replaying it: `codegen.graph.python_calls`.)"""
    memo: dict = {}
    _after_failures(graph, lambda op: failing_ops.calls_python(op, memo), memo)


def order_python_among_variables(graph) -> None:
    """An op that calls Python runs after every op created before it that reads or writes a
    variable (or any resource), and such an op created after it runs after it: the Python may
    assign the variable, and eager's reads before the call see the old value, those after it the
    new one.  TensorFlow orders ops on the same resource, not a Python call against them."""
    memo: dict = {}
    touching: list = []
    last_call = None
    for op in graph.get_operations():    # in creation order, which is the program's order
        calls = failing_ops.calls_python(op, memo)
        uses = any(t.dtype == tf.resource for t in op.inputs)
        if (calls or uses) and (touching if calls else last_call is not None):
            before = failing_ops.ancestors(op)
            for other in (touching if calls else [last_call]):
                if other.name not in before and other is not op:
                    op._add_control_input(other)  # noqa: SLF001 - the graph is still being traced
        if calls:
            last_call, touching = op, []
        elif uses:
            touching.append(op)


def order_writes_after_failures(graph, writes) -> None:
    """A variable write (or a loop or branch holding one) runs after every op created before it
    that may fail: eager has raised before it reaches the write, and a failed run that wrote
    nothing needs no snapshot of the variables to undo it (`failing_ops.writes_before_failures`
    then finds only the ops created after the write).  Optimisers update counters that no
    gradient waits for (Adam's step count), which the graph would otherwise run first.  Not in
    a graph with collective ops: replicas build their ops on threads, interleaved, and a write
    waiting for another replica's op that waits for a collective this write precedes would
    never run."""
    if _rendezvous(graph, set()):
        return                          # replicas' ops interleave: creation order is not the program's
    ids, memo = {id(w) for w in writes}, {}
    _after_failures(graph, lambda op: id(op) in ids, memo)
    _after_independent_failures(graph, writes, memo)


def _after_independent_failures(graph, writes, memo: dict) -> None:
    """A write also waits for every op created after it that may fail and does not use it.
    Eager writes and then fails there; the graph fails before writing, and the Python re-run
    writes once, so no variable has to be put back (which would also undo what other threads
    wrote meanwhile).  An op that uses the write (a read of the variable after it) cannot run
    first: that write stays one a failed run puts back."""
    ops = graph.get_operations()
    failing = [op for op in ops if failing_ops.may_fail(op, memo)]
    if not failing:
        return
    chains = _Chains(ops)
    for w in writes:
        after, before = chains.descendants(w), failing_ops.ancestors(w)
        for f in failing:
            if f.name not in after and f.name not in before:
                w._add_control_input(f)  # noqa: SLF001 - the graph is still being traced


class _Chains:
    """The edges TensorFlow adds when the trace ends (automatic control dependencies): an op
    using a resource waits for the ops created before it that use it, and a stateful op with no
    resource input for the one created before it.  Ordering a write after an op must not make a
    cycle through edges not yet there.  Each use is taken to lead to the next use of the same
    resource (more than TensorFlow adds between two reads, never less), so a walk follows one
    link per use."""

    def __init__(self, ops):
        self.next: dict = {}             # op name -> the ops that will wait for it
        last: dict = {}
        for op in ops:
            handles = [t.name for t in op.inputs if t.dtype == tf.resource]
            if not handles and op._control_flow_context is None and op_is_stateful(op):  # noqa: SLF001
                handles = [None]
            for h in handles:
                if h in last:
                    self.next.setdefault(last[h].name, []).append(op)
                last[h] = op

    def descendants(self, op) -> set:
        """The names of `op` and of every op that waits, or will wait, for it."""
        seen: set = set()
        stack = [op]
        while stack:
            op = stack.pop()
            if op.name not in seen:
                seen.add(op.name)
                stack += [c for t in op.outputs for c in t.consumers()] + list(op._control_outputs)  # noqa: SLF001
                stack += self.next.get(op.name, ())
        return seen


def _after_failures(graph, chosen, memo: dict) -> None:
    """Give every op `chosen` picks control inputs from every op created before it that may fail
    (and is not already among its ancestors)."""
    failing: list = []
    for op in graph.get_operations():    # in creation order, which is the program's order
        if failing and chosen(op):
            before = failing_ops.ancestors(op)
            for f in failing:
                if f.name not in before:
                    op._add_control_input(f)  # noqa: SLF001 - the graph is still being traced
        if failing_ops.may_fail(op, memo):
            failing.append(op)


_RENDEZVOUS = ("Collective", "Nccl", "Send", "Recv")


def _rendezvous(graph, seen: set) -> bool:
    """Whether `graph` (or a body it runs) has an op that waits for other replicas or devices."""
    for op in graph.get_operations():
        if op.type.startswith(_RENDEZVOUS) or op.type.startswith(tuple("_" + r for r in _RENDEZVOUS)):
            return True
        for body in failing_ops.body_graphs(op, failing_ops.BODY_ATTRS.get(op.type, ())) or []:
            if id(body) not in seen:
                seen.add(id(body))
                if _rendezvous(body, seen):
                    return True
    return False
