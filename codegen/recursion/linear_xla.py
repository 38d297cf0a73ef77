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

from codegen.operators.context import current
from codegen.operators.failing_ops import body_graphs
from codegen.operators.gradients import UNCONNECTED, UnknownConnectivity, connectivity
from codegen.operators.guards import check
from codegen.recursion.blocks import Machine
from codegen.recursion.frame_specs import pack
from codegen.recursion.frames import cast
from codegen.recursion.linear import _Linear

MAX_CAPACITY = 1 << 14
STACK_BUDGET = 4 << 20      # bytes the frames' stacks may take (their capacity shrinks to fit)
MIN_CAPACITY = 64
_BODIES = ("then_branch", "else_branch", "branches", "cond", "body", "f")
# Ops XLA compiles to what TensorFlow computes, raising where TensorFlow raises (which these do not,
# on the values they are given here: `_op_refusal` checks casts, divisions and slices further).
_SAME_OPS = frozenset({
    "Const", "Identity", "IdentityN", "NoOp", "Placeholder", "Shape", "Size", "Rank", "Pack", "Unpack",
    "ExpandDims", "Squeeze", "ZerosLike", "OnesLike", "Fill", "Cast", "AddV2", "Add", "AddN", "Sub", "Mul",
    "Neg", "Abs", "Sign", "Square", "Sqrt", "Rsqrt", "Exp", "Expm1", "Log", "Log1p", "Tanh", "Sigmoid", "Relu",
    "Relu6", "Elu", "Selu", "Softplus", "Softsign", "LeakyRelu", "Sin", "Cos", "Floor", "Ceil", "Round", "Rint",
    "Maximum", "Minimum", "RealDiv", "Reciprocal", "Pow", "SquaredDifference", "ClipByValue", "Erf",
    "Greater", "GreaterEqual", "Less", "LessEqual", "Equal", "NotEqual", "LogicalNot", "LogicalAnd", "LogicalOr",
    "Select", "SelectV2", "StopGradient", "PreventGradient", "MatMul", "BatchMatMulV2", "BiasAdd", "Transpose",
    "ConcatV2", "Sum", "Mean", "Max", "Min", "Prod", "All", "Any", "Softmax", "LogSoftmax", "Reshape", "Tile",
    "BroadcastTo", "StridedSlice", "Slice", "ReadVariableOp", "ArgMax", "ArgMin",
    "If", "StatelessIf", "Case", "StatelessCase", "While", "StatelessWhile",
    "TensorListReserve", "TensorListSetItem", "TensorListGetItem", "TensorListFromTensor", "TensorListStack",
    "TensorListLength", "TensorListElementShape"})
_STATIC_ARGS = {"Transpose": 1, "ConcatV2": -1, "Sum": 1, "Mean": 1, "Max": 1, "Min": 1, "Prod": 1, "All": 1,
                "Any": 1, "Reshape": 1, "Tile": 1, "BroadcastTo": 1, "StridedSlice": 1, "Slice": 1, "ArgMax": 1,
                "ArgMin": 1}
_VARIABLE_WRITES = ("AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp", "ResourceScatter",
                    "ResourceApply", "ResourceSparseApply")


def run(m: Machine, args, limit) -> tuple:
    """The recursion `entry(*args)` run by XLA: (its result, None), or (None, why it is not)."""
    if m.stateful:
        return None, "a block has stateful ops"
    if any(s.dtype.is_complex for s in m.leaf_specs + m.ret_leaves):
        return None, "its frames hold complex values"
    capacity = _capacity(m)
    if capacity < MIN_CAPACITY:
        return None, f"a frame's values are too large to keep {MIN_CAPACITY} of them in XLA's fixed stacks"
    lin = _Linear(m, capacity)
    root = lin.root_frame(args)
    n_values = len(lin.returns)

    sources: dict = {}

    def forward(*frame_and_limit):
        *frame, bound = frame_and_limit
        depth, done, ran, value, stacks = lin.descend(list(frame), bound)
        _, value, ran = lin.ascend(depth, value, ran, stacks)
        return list(value) + [depth, done, ran] + _connected(frame, value, sources)

    specs = [tf.TensorSpec.from_tensor(t) for t in root] + [tf.TensorSpec([], tf.int32)]
    try:
        compiled = tf.function(forward, jit_compile=True, autograph=False).get_concrete_function(*specs)
    except UnknownConnectivity:
        return None, "branches nested in a branch decide whether a gradient is connected"
    why = why_not_compiled(compiled.graph)
    if why:
        return None, why
    m.ctx.bounded_functions.add(compiled.function_def.signature.name)     # (its loops stop at capacity)
    if any(not v.trainable for v in compiled.graph.variables):
        return None, "it reads a variable that is not trainable (its gradient, when watched, would be lost)"
    outside = sources["outside"]
    variables = {id(v.handle): v for v in compiled.graph.variables}
    if any(id(h) not in variables for h in sources["handles"]):
        return None, "it reads a resource that is not a variable"
    sources["variables"] = [variables[id(h)] for h in sources["handles"]]
    if any(t.dtype.is_complex for t in outside):
        return None, "it reads a complex value from outside the recursion"
    outs = _differentiable(forward, compiled, root, limit, sources, n_values)
    value, depth, done, ran = outs[:n_values], outs[n_values], outs[n_values + 1], outs[n_values + 2]
    with tf.control_dependencies([check(done, [
            "recursion deeper than the interpreter's recursion limit, or than the frames XLA holds", limit])]
            + m.guards(lambda g: ran[g])):
        value = [tf.identity(v) for v in value]
    m.ctx.observe(m.cycle.observe, [2 * depth + 1, depth + 1, ran])
    return pack(m.returns[m.entry], [cast(v, s) for v, s in zip(value, m.ret_leaves)]), None


def _capacity(m: Machine) -> int:
    """How many frames the stacks hold: the recursion limit, less where the values a frame keeps
    are large (`STACK_BUDGET`)."""
    per_frame = sum(s.dtype.size * max(1, _elements(s.shape)) for s in m.leaf_specs) or 1
    return min(sys.getrecursionlimit(), MAX_CAPACITY, STACK_BUDGET // per_frame)


def _elements(shape) -> int:
    out = 1
    for d in shape:
        out *= int(d)
    return out


def _connected(frame: list, value: list, sources: dict) -> list:
    """Inside the forward function: for each float source (the root's values, the float tensors
    read from outside, the variables read) and each result, whether eager's gradient connects
    them on this call (`gradients.connectivity`, one bool each, flattened)."""
    graph = tf.compat.v1.get_default_graph()
    outside = [(external, internal) for external, internal in graph.captures
               if external.dtype.is_floating or external.dtype.is_complex]
    handles = [(external, internal) for external, internal in graph.captures if external.dtype == tf.resource]
    bits, static = [], []
    for source in list(frame) + [i for _, i in outside] + [i for _, i in handles]:
        for c in connectivity(graph, source, value):
            bits.append(tf.constant(c) if isinstance(c, bool) else c)
            static.append(c if isinstance(c, bool) else None)
    if "outside" not in sources:            # (the first trace's; the gradient's traces it again)
        sources.update(outside=[e for e, _ in outside], handles=[e for e, _ in handles], static=static)
    return bits


def _differentiable(forward, compiled, root: list, limit, sources: dict, n_values: int) -> list:
    """`compiled(*root, limit)`, whose gradient toward the root's values, the `outside` tensors and
    the variables the blocks read runs `forward` again inside a second XLA function.  A source no
    result the loss reads connects to on this call gets eager's None (the run checks it)."""
    n_root, outside, read = len(root), sources["outside"], sources["variables"]
    graph = tf.compat.v1.get_default_graph()

    @tf.custom_gradient
    def call(*xs):
        outs = compiled(*xs[:n_root], limit)
        after = len(graph.get_operations())

        def grad(*dys, variables=None):
            _unchanged_since(graph, after, [v.handle for v in read])
            variables = list(variables or [])
            floats = [i for i in range(n_values) if outs[i].dtype.is_floating and not _unused(dys[i])]
            if not floats:                       # (the loss reads none of the recursion's values)
                return [None] * len(xs), [None] * len(variables)

            def backward(upstream, frame, bound):
                again = forward(*frame, bound)
                inner = {id(outer): placeholder for outer, placeholder in tf.compat.v1.get_default_graph().captures}
                wrt = list(frame) + [inner.get(id(t), t) for t in outside] + read
                return tf.gradients([again[i] for i in floats], wrt, grad_ys=upstream)    # (None: no path)
            upstream = [dys[i] for i in floats]
            gradient = tf.function(backward, jit_compile=True, autograph=False).get_concrete_function(
                upstream, list(xs[:n_root]), limit)
            current().bounded_functions.add(gradient.function_def.signature.name)
            grads = gradient(upstream, list(xs[:n_root]), limit)
            bits, static = outs[n_values + 3:], sources["static"]
            kept = [_as_eager(g, [(bits[j * n_values + i], static[j * n_values + i]) for i in floats])
                    for j, g in enumerate(grads)]
            by_variable = {id(v): g for v, g in zip(read, kept[n_root + len(outside):])}
            return kept[:n_root + len(outside)], [by_variable.get(id(v)) for v in variables]
        return outs, grad
    return call(*root, *outside)


def _as_eager(grad, connected: list):
    """`grad`, or None where no result the loss reads connects to its source on this call
    (`connected`: (the run's bit, what the trace knew: True, False or None)); where that is known
    only when the graph runs, a run it is not connected on fails (the call then runs in Python,
    which gives None)."""
    if grad is None or all(known is False for _, known in connected):
        return None
    if any(known is True for _, known in connected):
        return grad
    bits = [bit for bit, known in connected if known is None]
    with tf.control_dependencies([check(tf.reduce_any(tf.stack(bits)), [UNCONNECTED])]):
        return tf.identity(grad)


def _unused(upstream) -> bool:
    """Whether a result's upstream gradient says the loss does not read it: None, or the zeros the
    tape fills in for a result it does not reach (then no gradient flows from it, and a source
    only it leads to has eager's None)."""
    if upstream is None:
        return True
    if upstream.op.type not in ("Const", "Fill"):     # (what `tf.zeros` makes; the tape's are zeros)
        return False
    value = tf.get_static_value(upstream)
    return value is not None and not value.any()


def _unchanged_since(graph, after: int, read: list):
    """The gradient runs the loops again: a variable they read, assigned between the forward pass
    and the gradient, would give the gradient at its new value, where eager's uses the old."""
    outer = {id(internal): external for external, internal in graph.captures}
    for op in graph.get_operations()[after:]:
        if op.type.startswith(_VARIABLE_WRITES) and op.inputs:
            handle = outer.get(id(op.inputs[0]), op.inputs[0])
            if any(handle is h for h in read):
                current().fail("recursion", "a variable a recursion under XLA reads is assigned between the "
                               "recursion and its gradient, which runs the recursion again",
                               "assign it after the gradient")


def why_not_compiled(graph) -> str | None:
    """Why the loops traced into `graph` must not run under XLA, or None."""
    for op in graph.get_operations():
        why = _op_refusal(op)
        if why:
            return why
        for body in body_graphs(op, _BODIES) or []:
            why = why_not_compiled(body)
            if why:
                return why
    return None


def _op_refusal(op) -> str | None:
    """Why XLA may compute or raise otherwise than TensorFlow for `op`, or None."""
    if op.type == "Assert":
        return "the recursion checks values in the graph (an Assert), which XLA drops"
    if op.type not in _SAME_OPS:
        return f"it uses {op.type}, which XLA may not compute or raise as TensorFlow does"
    if op.type == "Cast" and op.inputs[0].dtype.is_floating and op.outputs[0].dtype.is_integer:
        return "a float cast to an int, which XLA saturates where TensorFlow does not"
    if op.type in ("RealDiv", "Pow", "Reciprocal") and not op.outputs[0].dtype.is_floating:
        return f"an integer {op.type}, which XLA does not check as TensorFlow does"
    if op.type in _STATIC_ARGS:
        if any(tf.get_static_value(t) is None for t in op.inputs[_STATIC_ARGS[op.type]:]):
            return f"{op.type} with arguments that are not constants"
        if op.type in ("StridedSlice", "Slice") and not op.inputs[0].shape.is_fully_defined():
            return f"{op.type} of a value whose shape varies, which XLA clamps where TensorFlow raises"
    return None
