"""Blocks run once on all their frames as rows, without `tf.vectorized_map`.

Tree models are written one node at a time with a leading dimension of one:
`tf.gather(E, [node.word])` is `[1, H]`, `tf.matmul(tf.concat([l, r], 1), W)`
is `[1, H]`.  Stacking the frames of such a block along that dimension gives
the batched program directly: `[k, H]` rows through the same `MatMul`, `Tanh`
and `ConcatV2`.  `tf.vectorized_map` gets there too, but wraps every op in
its own bookkeeping (reshapes, shape arithmetic, gathers of its inputs) that
costs more than the cell itself, and its gradient loop stores all of it.

`run_rows` traces the block once on one frame, in a scratch graph, and
rewrites it op by op into the current graph.  Every value of the trace is one
of: frame-independent (constants, variables, captured tensors: re-created as
is), a per-frame scalar (batched as `[k]`), or a per-frame row, a value whose
static shape starts with 1 (batched as `[k, ...rest]`).  An op is rewritten
only when a rule below shows that the batched op computes, row by row, what
the op computes on each frame: elementwise ops (broadcasting checked),
`MatMul` of rows by a frame-independent matrix, `ConcatV2`/`Split` off the
frame axis, `GatherV2` of a frame-independent table at per-frame indices,
reductions off the frame axis, cross-entropy on rows, `[x]` of a scalar and
`x[0]` of a one-element row.  Any other op, a frame value of another shape,
or a shape not known statically, and the block runs through
`tf.vectorized_map` as before (`run_rows` returns None).
"""
from __future__ import annotations

import tensorflow as tf
from tensorflow.python.eager import execute
from tensorflow.python.framework import func_graph
from tensorflow.python.ops import gen_resource_variable_ops

_UNARY = {"Identity", "Cast", "Tanh", "Sigmoid", "Relu", "Relu6", "Elu", "Selu", "Softplus", "Exp", "Log",
          "Log1p", "Neg", "Square", "Sqrt", "Rsqrt", "Abs", "Sign", "Floor", "Ceil", "Round", "Reciprocal",
          "LogicalNot", "ZerosLike", "OnesLike", "Sin", "Cos", "Erf", "IsFinite", "StopGradient"}
_BINARY = {"AddV2", "Add", "Sub", "Mul", "RealDiv", "Div", "DivNoNan", "Maximum", "Minimum", "SquaredDifference",
           "Pow", "FloorDiv", "FloorMod", "Greater", "GreaterEqual", "Less", "LessEqual", "Equal", "NotEqual",
           "LogicalAnd", "LogicalOr", "BiasAdd"}
_READS = {"ReadVariableOp", "ResourceGather"}
_REDUCE = {"Sum", "Mean", "Max", "Min", "Prod", "All", "Any"}

FREE, SCALAR, ROW = "free", "scalar", "row"
HANDLE = "handle"           # a variable read only by gathers: its handle, read row by row


class _Refused(Exception):
    pass


def run_rows(per_frame, vals, k):
    """`per_frame` on the `k` frames whose stacked values are `vals`, as one batched program:
    (assigned leaves, terminator leaves), each stacked over the frames; None if the block does
    not qualify (see the module docstring)."""
    specs = [tf.TensorSpec(v.shape[1:], v.dtype) for v in vals]
    if not all(s.shape.is_fully_defined() for s in specs):
        return None
    scratch = func_graph.FuncGraph("frame")
    with scratch.as_default():
        inputs = [tf.compat.v1.placeholder(s.dtype, s.shape) for s in specs]
        new_leaves, term = per_frame(inputs)
        outs = [tf.convert_to_tensor(t) for t in list(new_leaves) + list(term)]
    try:
        env = {t.ref(): _entering(v, s) for t, v, s in zip(inputs, vals, specs)}
        env.update({inner.ref(): (FREE, outer) for outer, inner in scratch.captures})
        sparse = _gathered_reads(scratch, outs)
        for op in scratch.get_operations():
            if op.type == "Placeholder" and op.outputs[0].ref() in env:
                continue
            if op in sparse:
                env[op.outputs[0].ref()] = (HANDLE, env[op.inputs[0].ref()][1])
                continue
            for out, value in zip(op.outputs, _rewrite(op, [env[t.ref()] for t in op.inputs], k)):
                env[out.ref()] = value
        stacked = [_leaving(env[t.ref()], t, k) for t in outs]
    except (_Refused, KeyError, ValueError, TypeError):
        return None
    return stacked[:len(new_leaves)], stacked[len(new_leaves):]


def _gathered_reads(graph, outs) -> set:
    """The variable reads of the trace whose every use is a gather of rows on the first axis.

    Inside a recursion machine a variable attribute is read whole (`tf.convert_to_tensor`), since
    `tf.vectorized_map` cannot batch a resource op.  Run as rows, `tf.gather(E, [node.word])`
    needs only the rows it gathers: reading an embedding whole copies all of it on every call
    (TensorFlow copies a variable's buffer on read once sparse ops have touched it) and keeps
    that copy alive past the weight update.  Such reads become `ResourceGather`s, as eager's
    `tf.gather` on the variable is."""
    uses: dict = {}
    for op in graph.get_operations():
        for i, t in enumerate(op.inputs):
            if t.op.type == "ReadVariableOp" and not t.op.control_inputs:
                uses.setdefault(t.op, []).append((op, i))
    for op in graph.get_operations():
        for c in op.control_inputs:
            uses.setdefault(c, []).append((op, -1))
    for t in outs:
        uses.setdefault(t.op, []).append((None, -1))
    return {read for read, used in uses.items() if read.type == "ReadVariableOp" and all(
        i == 0 and op is not None and op.type == "GatherV2" and op.get_attr("batch_dims") == 0
        and tf.get_static_value(op.inputs[2]) == 0 for op, i in used)}


def _entering(value, spec):
    if spec.shape.rank == 0:
        return SCALAR, value
    if spec.shape[0] == 1:
        return ROW, tf.squeeze(value, 1)
    raise _Refused(f"a frame value of shape {spec.shape}")


def _leaving(entry, t, k):
    kind, value = entry
    shape = t.shape.as_list()
    if kind == FREE:
        return tf.broadcast_to(value, tf.concat([tf.reshape(k, [1]), tf.constant(shape, tf.int32)], 0))
    if kind == ROW:
        return tf.expand_dims(value, 1)
    return value


def _rewrite(op, args, k) -> list:
    """The batched outputs of `op` ((kind, value) each) from its batched inputs `args`."""
    if op.control_inputs or (op.op_def.is_stateful and op.type not in _READS):
        raise _Refused(f"{op.type} must run once per frame, in order")
    if any(a.HasField("func") or len(a.list.func) for a in op.node_def.attr.values()):
        raise _Refused(f"{op.type} calls a function of the one-frame trace")
    if args and args[0][0] == HANDLE:
        return _sparse_gather(op, args)
    if all(kind == FREE for kind, _ in args):
        return [(FREE, out) for out in _emit(op, [v for _, v in args])]
    t = op.type
    if t in _UNARY:
        return [(args[0][0], out) for out in _emit(op, [args[0][1]])]
    if t in _BINARY:
        return _binary(op, args)
    if t == "AddN":
        return _binary(op, args)
    if t == "MatMul" and args[0][0] == ROW and args[1][0] == FREE and op.inputs[0].shape.rank == 2 \
            and not op.get_attr("transpose_a"):
        return [(ROW, out) for out in _emit(op, [args[0][1], args[1][1]])]
    if t == "ConcatV2" and _const_axis(op, -1, op.inputs[0].shape.rank) and all(a[0] == ROW for a in args[:-1]):
        return [(ROW, out) for out in _emit(op, [a[1] for a in args])]
    if t in ("Split", "SplitV"):
        return _split(op, args)
    if t in ("GatherV2", "ResourceGather"):
        return _gather(op, args)
    if t in _REDUCE and args[0][0] == ROW and _const_axis(op, 1, op.inputs[0].shape.rank):
        return [(ROW, out) for out in _emit(op, [args[0][1], args[1][1]])]
    if t == "SparseSoftmaxCrossEntropyWithLogits" and args[0][0] == ROW and args[1][0] == ROW:
        return [(ROW, out) for out in _emit(op, [args[0][1], args[1][1]])]
    if t == "Pack" and len(args) == 1 and args[0][0] == SCALAR and op.get_attr("axis") == 0:
        return [(ROW, args[0][1])]                       # [x] of a scalar: a one-element row
    if t == "StridedSlice":
        return _slice(op, args)
    if t == "SelectV2" and all(kind in (SCALAR, FREE) for kind, _ in args) and op.outputs[0].shape.rank == 0:
        return _binary(op, args)
    raise _Refused(t)


def _binary(op, args) -> list:
    """An elementwise op (numpy broadcasting) on frame values and frame-independent ones."""
    out_shape = op.outputs[0].shape
    if not out_shape.is_fully_defined():
        raise _Refused("an unknown shape")
    rank = out_shape.rank
    if rank > 0 and out_shape[0] != 1:
        raise _Refused("a result that is not a row")
    operands = []
    for (kind, value), t in zip(args, op.inputs):
        r = t.shape.rank
        if kind == FREE:
            if r is None or (rank > 0 and r == rank and t.shape[0] != 1):
                raise _Refused("a frame-independent operand across the frame axis")
            operands.append(value)
        elif kind == SCALAR:
            operands.append(value if rank == 0 else tf.reshape(value, [-1] + [1] * (rank - 1)))
        else:
            if r is None or r > rank:
                raise _Refused("an unknown shape")
            rest = t.shape.as_list()[1:]
            operands.append(value if r == rank else tf.reshape(value, [-1] + [1] * (rank - r) + rest))
    return [(SCALAR if rank == 0 else ROW, out) for out in _emit(op, operands)]


def _split(op, args) -> list:
    dim_at, value_at = (0, 1) if op.type == "Split" else (2, 0)
    value = args[value_at]
    if value[0] != ROW or not _const_axis(op, dim_at, op.inputs[value_at].shape.rank):
        raise _Refused(op.type)
    return [(ROW, out) for out in _emit(op, [a[1] for a in args])]


def _gather(op, args) -> list:
    pk, ik = args[0][0], args[1][0]
    if pk != FREE or ik == FREE or op.get_attr("batch_dims") != 0:
        raise _Refused("a gather of frame values")
    if op.type == "GatherV2" and tf.get_static_value(op.inputs[2]) != 0:
        raise _Refused("a gather off the first axis")
    out = op.outputs[0].shape
    if ik == ROW or out.rank == 0:
        return [(ik if ik == ROW else SCALAR, o) for o in _emit(op, [a[1] for a in args])]
    raise _Refused("a gather of whole rows at a scalar index")


def _sparse_gather(op, args) -> list:
    """A gather of a variable's rows (see `_gathered_reads`), as eager's `tf.gather` on it."""
    (_, handle), (kind, indices) = args[0], args[1]
    if kind == ROW or kind == FREE or op.outputs[0].shape.rank == 0:
        out = gen_resource_variable_ops.resource_gather(handle, indices, dtype=op.outputs[0].dtype)
        return [(SCALAR if kind == SCALAR else kind, out)]
    raise _Refused("a gather of whole rows at a scalar index")


def _slice(op, args) -> list:
    """`x[0]` of a one-element row is the frame's scalar; a slice that keeps the frame axis whole
    is the same slice of every row."""
    (kind, value), begin, end, strides = args[0], *[tf.get_static_value(t) for t in op.inputs[1:]]
    if kind != ROW or begin is None or end is None or strides is None:
        raise _Refused("a slice of frame values")
    masks = {m: op.get_attr(m) for m in ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask",
                                         "shrink_axis_mask")}
    if op.inputs[0].shape.rank == 1 and len(begin) == 1 and masks["shrink_axis_mask"] == 1 and begin[0] in (0, -1) \
            and not masks["ellipsis_mask"] and not masks["new_axis_mask"]:
        return [(SCALAR, value)]
    whole = masks["begin_mask"] & 1 and masks["end_mask"] & 1 and strides[0] == 1
    if whole and not (masks["ellipsis_mask"] | masks["new_axis_mask"] | masks["shrink_axis_mask"]) & 1:
        return [(ROW, out) for out in _emit(op, [value] + [v for _, v in args[1:]])]
    raise _Refused("a slice across frames")


def _const_axis(op, at, rank):
    """Whether input `at` of `op` is a constant axis (or axes) that is not the frame axis."""
    axes = tf.get_static_value(op.inputs[at])
    if axes is None or rank is None:
        return False
    return all((a % rank if rank else a) != 0 for a in ([axes] if getattr(axes, "ndim", 0) == 0 else list(axes)))


def _emit(op, inputs) -> list:
    """`op` again, in the current graph, on `inputs` (same type and attributes), recorded on the
    active gradient tapes as TensorFlow's own op wrappers record theirs."""
    attrs = {name: value for name, value in op.node_def.attr.items() if not name.startswith("_")}
    graph = tf.compat.v1.get_default_graph()
    new = graph._create_op_internal(op.type, [tf.convert_to_tensor(i) for i in inputs],
                                    dtypes=[o.dtype for o in op.outputs], attrs=attrs, op_def=op.op_def)
    if execute.must_record_gradient():
        execute.record_gradient(op.type, new.inputs, _flat_attrs(new), new.outputs)
    return list(new.outputs)


def _flat_attrs(op) -> tuple:
    """The attributes of `op` as a generated op wrapper passes them to the tape."""
    out = []
    for attr in op.op_def.attr:
        value = op.get_attr(attr.name)
        if attr.type == "type":
            value = op._get_attr_type(attr.name)
        elif attr.type == "list(type)":
            value = [tf.as_dtype(v).as_datatype_enum for v in value]
        out += [attr.name, value]
    return tuple(out)
