"""A linear recursion compiled with XLA, when the function asks for it (`jit_compile=True`).

The two loops of `codegen.recursion.linear` (down the calls, back up the returns)
run inside one XLA-compiled function.  XLA needs static sizes, so the stacks of
saved values hold as many frames as the interpreter's recursion limit when the
graph was built (at most `MAX_CAPACITY`), and both loops stop there; a deeper
recursion fails the run's `done` check, and the call runs in Python.

A gradient cannot leave an XLA function as TensorFlow's loop gradients want it
(their per-iteration lists do not cross the XLA boundary), so the call is a
`tf.custom_gradient`: its gradient is a second XLA function that runs the two
loops again and differentiates them inside (`tf.gradients`), toward the root
call's arguments, the tensors the blocks read from outside the recursion, and
the variables they read.  The forward pass thus runs twice in a training step,
both times compiled.

XLA may round floats otherwise than TensorFlow's kernels (it fuses `a * b + c`
into one rounding), which a user of `jit_compile=True` accepts, as with
`tf.function`.  What it would change beyond rounding keeps the plain loops
(`why_not_compiled`): checks the graph makes with `Assert` (XLA drops them),
integer divisions by a divisor that is not a constant (XLA does not raise on
zero), reads at an index that is not a constant (XLA clamps where eager
raises), and blocks with stateful ops.
"""
from __future__ import annotations

import sys

import tensorflow as tf

from codegen.operators.failing_ops import body_graphs
from codegen.recursion.blocks import Machine
from codegen.recursion.frame_specs import pack
from codegen.recursion.frames import cast
from codegen.recursion.linear import _Linear

MAX_CAPACITY = 1 << 14
_INT_DIVISION = frozenset({"FloorDiv", "FloorMod", "TruncateDiv", "TruncateMod", "Div", "Mod", "DivNoNan"})
_INDEXED = {"GatherV2": 1, "GatherNd": 1, "ResourceGather": 1, "StridedSlice": 1, "Slice": 1, "ScatterNd": 0,
            "TensorScatterUpdate": 1, "TensorScatterAdd": 1, "OneHot": 0, "UnsortedSegmentSum": 1}
_BODIES = ("then_branch", "else_branch", "branches", "cond", "body", "f")


def run(m: Machine, args, limit) -> tuple:
    """The recursion `entry(*args)` run by XLA: (its result, None), or (None, why it is not)."""
    if m.stateful:
        return None, "a block has stateful ops"
    capacity = min(sys.getrecursionlimit(), MAX_CAPACITY)
    lin = _Linear(m, capacity)
    root = lin.root_frame(args)
    n_values = len(lin.returns)

    def forward(*frame_and_limit):
        *frame, bound = frame_and_limit
        depth, done, ran, value, stacks = lin.descend(list(frame), bound)
        _, value, ran = lin.ascend(depth, value, ran, stacks)
        return list(value) + [depth, done, ran]

    specs = [tf.TensorSpec.from_tensor(t) for t in root] + [tf.TensorSpec([], tf.int32)]
    compiled = tf.function(forward, jit_compile=True, autograph=False).get_concrete_function(*specs)
    why = why_not_compiled(compiled.graph)
    if why:
        return None, why
    outside = [t for t in compiled.graph.external_captures if t.dtype.is_floating]
    outs = _differentiable(forward, compiled, root, limit, outside, n_values)
    value, depth, done, ran = outs[:n_values], outs[n_values], outs[n_values + 1], outs[n_values + 2]
    with tf.control_dependencies([tf.debugging.Assert(done, [
            "recursion deeper than the interpreter's recursion limit, or than the frames XLA holds", limit])]
            + m.guards(lambda g: ran[g])):
        value = [tf.identity(v) for v in value]
    m.ctx.observe(m.cycle.observe, [2 * depth + 1, depth + 1, ran])
    return pack(m.returns[m.entry], [cast(v, s) for v, s in zip(value, m.ret_leaves)]), None


def _differentiable(forward, compiled, root: list, limit, outside: list, n_values: int) -> list:
    """`compiled(*root, limit)`, whose gradient toward the root's values, the `outside` tensors and
    the variables the blocks read runs `forward` again inside a second XLA function."""
    n_root = len(root)

    @tf.custom_gradient
    def call(*xs):
        outs = compiled(*xs[:n_root], limit)
        floats = [i for i in range(n_values) if outs[i].dtype.is_floating]

        def grad(*dys, variables=None):
            variables = list(variables or [])

            def backward(upstream, frame, bound):
                again = forward(*frame, bound)
                inner = {id(outer): placeholder for outer, placeholder in tf.compat.v1.get_default_graph().captures}
                wrt = list(frame) + [inner.get(id(t), t) for t in outside] + variables
                return tf.gradients([again[i] for i in floats], wrt, grad_ys=upstream, unconnected_gradients="zero")
            upstream = [tf.zeros_like(outs[i]) if dys[i] is None else dys[i] for i in floats]
            grads = tf.function(backward, jit_compile=True, autograph=False)(upstream, list(xs[:n_root]), limit)
            return grads[:n_root + len(outside)], grads[n_root + len(outside):]
        return outs, grad
    return call(*root, *outside)


def why_not_compiled(graph) -> str | None:
    """Why the loops traced into `graph` must not run under XLA, or None."""
    for op in graph.get_operations():
        if op.type == "Assert":
            return "the recursion checks values in the graph (an Assert), which XLA drops"
        if op.type in _INT_DIVISION and op.inputs[1].dtype.is_integer and tf.get_static_value(op.inputs[1]) is None:
            return f"an integer {op.type} by a value XLA does not check for zero"
        if op.type in _INDEXED and any(tf.get_static_value(t) is None for t in op.inputs[_INDEXED[op.type]:][:1]):
            return f"{op.type} at an index that is not a constant, which XLA clamps where eager raises"
        for body in body_graphs(op, _BODIES) or []:
            why = why_not_compiled(body)
            if why:
                return why
    return None
