"""Which ops of a graph may raise when the graph runs.

Two parts of a graph run depend on it:

- before a run, janus snapshots only the variables a write may change before
  an op fails (`writes_before_failures`): the others a failed run has not
  written, and the snapshot costs a read of every variable per call;
- an unused value whose op may fail stays an output of the graph, so the
  graph optimiser cannot prune it and the run raises as eager does.

The answer is conservative: an op is safe only when its type is listed here
and nothing about its inputs is left to run time.  Listed ops fail only on
shapes that do not fit, or on index and size arguments out of range; with
every input and output shape fully known at build time, and every integer
argument of an indexing op a build-time constant, TensorFlow's shape
inference already rejected what would fail.  Integer division (by zero) and
integer powers (negative exponents) are safe only on floats.  Janus's own
guards may fail like any assert: most come before every write (each op built
after a guard waits for it), but a loop's trip-count guard is checked after
the iterations it unrolled, writes included.
"""
from __future__ import annotations

import weakref

import tensorflow as tf

_ALWAYS_SAFE = frozenset({
    "Const", "Placeholder", "PlaceholderWithDefault", "NoOp", "Identity", "IdentityN", "Shape", "ShapeN",
    "Size", "Rank", "ReadVariableOp", "VarHandleOp", "StopGradient", "PreventGradient", "ZerosLike", "OnesLike",
    "PrintV2", "StringFormat",
})
_ELEMENTWISE = frozenset({
    "Add", "AddV2", "AddN", "Sub", "Mul", "Neg", "Abs", "Sign", "Square", "SquaredDifference", "Maximum",
    "Minimum", "Exp", "Expm1", "Log", "Log1p", "Sqrt", "Rsqrt", "SqrtGrad", "RsqrtGrad", "Sigmoid", "SigmoidGrad",
    "Tanh", "TanhGrad", "Relu", "ReluGrad", "Relu6", "Relu6Grad", "Elu", "EluGrad", "Selu", "SeluGrad",
    "LeakyRelu", "LeakyReluGrad", "Softplus", "SoftplusGrad", "Softsign", "Sin", "Cos", "Floor", "Ceil", "Round",
    "Greater", "GreaterEqual", "Less", "LessEqual", "Equal", "NotEqual", "LogicalNot", "LogicalAnd", "LogicalOr",
    "Select", "SelectV2", "Cast", "L2Loss", "BiasAdd", "BiasAddGrad", "Softmax", "LogSoftmax",
    "SoftmaxCrossEntropyWithLogits", "MatMul", "BatchMatMulV2", "BatchMatMulV3", "Conv2D",
    "Conv2DBackpropInput", "Conv2DBackpropFilter", "MaxPool", "MaxPoolGrad", "AvgPool", "AvgPoolGrad",
    "Pack", "Unpack", "Squeeze", "AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp",
    "ResourceApplyGradientDescent", "ResourceApplyAdam", "ResourceApplyMomentum", "ResourceApplyKerasMomentum",
    "ResourceApplyAdagrad", "ResourceApplyAdagradV2", "ResourceApplyRMSProp",
})
_FLOAT_ONLY = frozenset({"RealDiv", "Div", "FloorDiv", "FloorMod", "Mod", "TruncateDiv", "TruncateMod", "Pow",
                         "Reciprocal", "Inv", "DivNoNan", "Xdivy", "Xlogy"})
_INDEXING = frozenset({
    "Reshape", "Tile", "Fill", "Slice", "StridedSlice", "StridedSliceGrad", "Split", "SplitV", "ExpandDims",
    "Transpose", "ConcatV2", "ConcatOffset", "Sum", "Mean", "Max", "Min", "Prod", "All", "Any", "ArgMax", "ArgMin",
    "BroadcastTo", "BroadcastArgs", "BroadcastGradientArgs", "Pad", "PadV2", "ReverseV2", "Cumsum",
    "RandomStandardNormal", "RandomUniform", "TruncatedNormal", "StatelessRandomNormalV2",
    "StatelessRandomUniformV2", "OneHot",
})
# Reductions fail only on an axis out of range (an integer mean of nothing: floats only).
_REDUCTIONS = frozenset({"Sum", "Max", "Min", "Prod", "All", "Any", "Mean"})
# Ops that run function bodies: safe when every op of every body is.
_BODIES = {"If": ("then_branch", "else_branch"), "StatelessIf": ("then_branch", "else_branch"),
           "While": ("cond", "body"), "StatelessWhile": ("cond", "body"), "PartitionedCall": ("f",),
           "StatefulPartitionedCall": ("f",), "Case": ("branches",), "StatelessCase": ("branches",)}
BODY_ATTRS = _BODIES            # op type -> the attributes naming the bodies it runs


def may_fail(op, memo=None) -> bool:
    """Whether running `op` may raise (an `Identity` may, through what it forwards)."""
    memo = {} if memo is None else memo
    op = _forwarded(op)
    if op.type in _ALWAYS_SAFE:
        return False
    if op.type in _BODIES:
        return _bodies_may_fail(op, memo)
    if op.type in _REDUCTIONS and _axes_in_range(op):
        return False
    if op.type == "Range" and (_counts_up_to_a_size(op) or _constant_range(op)):
        return False
    if not _static_shapes(op):
        return True
    if op.type in _ELEMENTWISE:
        return False
    if op.type in _FLOAT_ONLY:
        return not all(t.dtype.is_floating or t.dtype.is_complex for t in op.inputs)
    if op.type in _INDEXING:
        return not all(tf.get_static_value(t) is not None for t in op.inputs if t.dtype.is_integer)
    return True


def graph_may_fail(graph, memo=None) -> bool:
    """Whether some op of `graph` (or of a body it runs) may raise."""
    memo = {} if memo is None else memo
    return any(may_fail(op, memo) for op in graph.get_operations())


def writes_before_failures(graph, writes) -> list:
    """The ops of `writes` that may run before an op of `graph` that may fail: all but those
    waiting for every such op (TensorFlow runs an op only after its data and control inputs,
    so a failure stops the run before them: the optimiser's updates after a loss that may fail)."""
    memo: dict = {}
    failing = {_forwarded(op).name for op in graph.get_operations() if may_fail(op, memo)}
    return [w for w in writes if failing and not failing <= ancestors(w)]


def _forwarded(op):
    """The op whose value an `Identity` chain forwards (an `Identity` fails only as it does)."""
    while op.type in ("Identity", "IdentityN") and op.inputs:
        op = op.inputs[0].op
    return op


def ancestors(op) -> set:
    """The names of the ops `op` waits for, through data and control inputs."""
    return ancestors_of([t.op for t in op.inputs] + list(op.control_inputs))


def prints(op, memo) -> bool:
    """Whether running `op` prints: a `PrintV2`, or a cond, loop or call whose body has one."""
    if op.type == "PrintV2":
        return True
    if op.type not in _BODIES:
        return False
    for body in body_graphs(op, _BODIES[op.type]) or []:
        if ("prints", id(body)) not in memo:
            memo[("prints", id(body))] = False         # a body calling itself: unknown until read
            memo[("prints", id(body))] = any(prints(inner, memo) for inner in body.get_operations())
        if memo[("prints", id(body))]:
            return True
    return False


PYTHON_OPS = {"PyFunc", "PyFuncStateless", "EagerPyFunc"}     # ops that call a Python function


def calls_python(op, memo) -> bool:
    """Whether running `op` calls Python: a PyFunc op, or a cond, loop or call whose body has one."""
    if op.type in PYTHON_OPS:
        return True
    if op.type not in _BODIES:
        return False
    for body in body_graphs(op, _BODIES[op.type]) or []:
        if ("python", id(body)) not in memo:
            memo[("python", id(body))] = False
            memo[("python", id(body))] = any(calls_python(inner, memo) for inner in body.get_operations())
        if memo[("python", id(body))]:
            return True
    return False


def may_fail_through(graph) -> list:
    """The ops of `graph` that may fail, or that use (as data or control input) a value whose
    op may: pruning one of them may drop a failure."""
    memo: dict = {}
    tainted: set = set()
    for op in graph.get_operations():       # in creation order: inputs come first
        if may_fail(op, memo) or any(t.op.name in tainted for t in op.inputs) or \
                any(c.name in tainted for c in op.control_inputs):
            tainted.add(op.name)
    return [op for op in graph.get_operations() if op.name in tainted]


_TRACED_ONLY: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()    # graph -> names of ops


def traced_only(graph, ops) -> None:
    """Mark `ops` as a trace that other ops compute in full (`tf.vectorized_map` traces its function
    once on item 0 and converts that trace into ops on every item): when unused, they are not
    kept as outputs, as the converted ops raise whatever they would."""
    _TRACED_ONLY.setdefault(graph, set()).update(op.name for op in ops)


def unused_failing(graph, outputs) -> list:
    """The values of `graph` that nothing uses (`outputs` aside) and that may fail or use one
    that may: the graph optimiser would prune them, and eager runs them.  Only those are kept
    whose ancestors hold an op that may fail and that neither `outputs` nor a value kept before
    already runs (`loss / t.size` is used; the unused gradient with respect to `t.size`, below
    the same gather that may fail, needs no output of its own).  A graph returns them after its
    outputs, which janus ignores: a control dependency is not enough, as the graph optimiser
    turns a stateless op feeding only control edges into a no-op, and drops loop variables
    nothing reads (a loop or branch whose result is unused outputs a `witness` of its body)."""
    used = {t.ref() for t in outputs if isinstance(t, tf.Tensor)}
    memo: dict = {}
    traced = _TRACED_ONLY.get(graph, ())
    leaves = [t for op in may_fail_through(graph) if op.name not in traced for t in op.outputs
              if t.dtype not in (tf.resource, tf.variant) and not t.consumers() and t.ref() not in used
              and not _safe_loop_variable(t, memo)]
    if not leaves:
        return []
    covered = ancestors_of([t.op for t in outputs if isinstance(t, tf.Tensor) and t.graph is graph])
    clean: set = set()             # ops none of whose ancestors may fail outside `covered`
    kept = []
    for t in leaves:
        seen, found = _uncovered(t.op, covered, clean, memo)
        if found:
            kept.append(t)
            covered |= seen
        else:
            clean |= seen
    return kept


def _safe_loop_variable(t, memo) -> bool:
    """Whether `t` is a loop's variable whose body computes it with no op that may fail (a
    counter, a value passed through unchanged): dropping it drops no failure."""
    if t.op.type not in ("While", "StatelessWhile"):
        return False
    bodies = body_graphs(t.op, ("body",))
    if not bodies or len(bodies[0].outputs) != len(t.op.outputs):
        return False
    body = bodies[0]
    names = ancestors_of([body.outputs[t.value_index].op])
    return not any(may_fail(op, memo) for op in body.get_operations() if op.name in names)


def ancestors_of(ops) -> set:
    """The names of `ops` and of every op they wait for, through data and control inputs."""
    seen: set = set()
    stack = list(ops)
    while stack:
        op = stack.pop()
        if op.name not in seen:
            seen.add(op.name)
            stack += [t.op for t in op.inputs] + list(op.control_inputs)
    return seen


def _uncovered(op, covered: set, clean: set, memo: dict) -> tuple[set, bool]:
    """The ops `op` needs outside `covered` and `clean`, and whether one of them may fail.  A loop
    or branch that may fail counts wherever it is met: the optimiser drops the loop variables
    and branch outputs nothing reads, with the ops computing them, even when it keeps the op."""
    seen: set = set()
    found = False
    stack = [op]
    while stack:
        current = stack.pop()
        if current.type in _BODIES and may_fail(current, memo):
            found = True
            continue
        if current.name in seen or current.name in covered or current.name in clean:
            continue
        seen.add(current.name)
        found = found or may_fail(current, memo)
        stack += [t.op for t in current.inputs] + list(current.control_inputs)
    return seen, found


def witness(tensors) -> tf.Tensor:
    """An int32 scalar that needs the values of `tensors` (0 when they hold no NaN): a body of a
    `tf.cond` or `tf.while_loop` outputs it so that its unused values that may fail still run
    (the optimiser can fold neither `x != x` nor what it reads)."""
    parts = [tf.cast(tf.reduce_any(tf.not_equal(t, t)), tf.int32) for t in tensors]
    return tf.add_n(parts) if parts else tf.constant(0)


def _axes_in_range(op) -> bool:
    """A reduction whose axes are constants within its input's known rank, or `range(rank(x))`
    of its own input (a reduction over every axis, as `tf.reduce_sum(x)` of unknown rank builds)."""
    x, axes = op.inputs[0], op.inputs[1]
    if op.type == "Mean" and not (x.dtype.is_floating or x.dtype.is_complex):
        return False
    if _every_axis(axes.op, x):
        return True
    value, rank = tf.get_static_value(axes), x.shape.rank
    return value is not None and rank is not None and all(-rank <= a < rank for a in value.reshape(-1))


def _every_axis(op, x) -> bool:
    """Whether `op` is `tf.range(0, tf.rank(x), 1)`."""
    if op.type != "Range" or op.inputs[1].op.type != "Rank":
        return False
    return op.inputs[1].op.inputs[0].ref() == x.ref() and tf.get_static_value(op.inputs[0]) == 0 \
        and tf.get_static_value(op.inputs[2]) == 1


def _counts_up_to_a_size(op) -> bool:
    """`tf.range(start, n, delta)` with constants `start <= 0 < delta` and `n` a rank or size, never
    negative: the one way `Range` fails (a limit on the wrong side of the start) cannot happen."""
    start, delta = tf.get_static_value(op.inputs[0]), tf.get_static_value(op.inputs[2])
    return start is not None and delta is not None and start <= 0 < delta \
        and op.inputs[1].op.type in ("Rank", "Size")


def _constant_range(op) -> bool:
    """`tf.range` of build-time constants that counts up by a positive step."""
    start, limit, delta = (tf.get_static_value(t) for t in op.inputs)
    return start is not None and limit is not None and delta is not None and delta > 0


def _static_shapes(op) -> bool:
    return all(t.shape.is_fully_defined() for t in list(op.inputs) + list(op.outputs)
               if t.dtype not in (tf.resource, tf.variant))


def body_graphs(op, attrs):
    """The graphs of the functions `op` runs (named by its `attrs`), or None where one cannot
    be read."""
    graphs = []
    for attr in attrs:
        try:
            value = op.get_attr(attr)
        except ValueError:
            continue
        for fn in value if isinstance(value, list) else [value]:
            found = op.graph._get_function(fn.name)  # noqa: SLF001 - the body of a cond/while/call
            body = getattr(found, "graph", None)
            if body is None:
                return None
            graphs.append(body)
    return graphs


def _bodies_may_fail(op, memo) -> bool:
    bodies = body_graphs(op, _BODIES[op.type])
    if bodies is None:
        return True
    for body in bodies:
        if id(body) not in memo:
            memo[id(body)] = True            # a body calling itself: unknown until read
            memo[id(body)] = graph_may_fail(body, memo)
        if memo[id(body)]:
            return True
    return False
