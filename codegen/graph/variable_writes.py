"""Which `tf.Variable`s a built graph may write, so a failed run can be undone.

When an op of the user's program fails in the middle of a graph run (an
out-of-range `tf.gather`, a `tf.debugging.assert_*`, an integer division by
zero), the variable writes that ran before it have happened, and janus re-runs
the call eagerly to raise eager's error with eager's state. Before each run,
janus snapshots the variables that a write may change before an op that may
fail (`codegen.operators.failing_ops`), and restores them before that re-run,
so every write happens once, as in eager.

The graph is read, not the program: a write is any op taking a variable's
resource handle other than a read, followed into `tf.cond` branches,
`tf.while_loop` bodies and function calls; a handle passed to an op this
module does not know counts as written.
"""
from __future__ import annotations

import tensorflow as tf

from codegen.graph.random_ops import RESOURCE_WRITES
from codegen.operators import failing_ops
from codegen.operators.failing_ops import body_graphs

_READS = frozenset({"ReadVariableOp", "ResourceGather", "ResourceGatherNd", "VariableShape", "VarIsInitializedOp",
                    "Identity", "NoOp", "LookupTableFindV2", "LookupTableSizeV2", "LookupTableExportV2"})
# Ops whose resource inputs are the inputs of function bodies: op type -> (body attrs, offset of input 0).
_CALLS = {"If": (("then_branch", "else_branch"), 1), "StatelessIf": (("then_branch", "else_branch"), 1),
          "While": (("cond", "body"), 0), "StatelessWhile": (("cond", "body"), 0),
          "PartitionedCall": (("f",), 0), "StatefulPartitionedCall": (("f",), 0), "Case": (("branches",), 1),
          "StatelessCase": (("branches",), 1)}


def _origin(tensor):
    """The tensor a resource handle comes from, through `Identity` ops."""
    while tensor.op.type == "Identity" and tensor.op.inputs:
        tensor = tensor.op.inputs[0]
    return tensor


def _written_inputs(graph, memo, ops=None) -> set:
    """The `graph.inputs` positions whose resource the graph (or only its `ops`) may write."""
    key = id(graph) if ops is None else None
    if key in memo:
        return memo[key]
    if key is not None:
        memo[key] = set()                # a function calling itself: what is known so far
    written: set = set()
    for op in graph.get_operations() if ops is None else ops:
        for k, t in enumerate(op.inputs):
            if _writes_input(op, k, memo):
                written.add(_origin(t).ref())
    inputs = {t.ref(): i for i, t in enumerate(graph.inputs)}
    result = {inputs[r] for r in written if r in inputs} | ({-1} if any(r not in inputs for r in written) else set())
    if key is not None:
        memo[key] = result
    return result


def _writes_input(op, k, memo) -> bool:
    """Whether `op` may write its k-th input: a resource it does not only read."""
    return op.inputs[k].dtype == tf.resource and op.type not in _READS and _writes_through_call(op, k, memo)


def _writes_through_call(op, k, memo) -> bool:
    """Whether `op` may write its k-th (resource) input."""
    if op.type not in _CALLS:
        return True
    attrs, offset = _CALLS[op.type]
    graphs = body_graphs(op, attrs)
    if graphs is None:
        return True
    for body in graphs:
        if k - offset >= len(body.inputs) or k - offset in _written_inputs(body, memo):
            return True
    return False


def write_ops(graph) -> list:
    """The ops of `graph` that may write a variable (a cond, loop or call whose body writes)."""
    memo: dict = {}
    return [op for op in graph.get_operations() if any(_writes_input(op, k, memo) for k in range(len(op.inputs)))]


def written_variables(concrete, ops=None) -> list:
    """The captured variables `concrete` (or only its `ops`) may write (all of them where the
    graph cannot be read)."""
    graph = concrete.graph
    variables = {id(v.handle): v for v in graph.variables}
    try:
        positions = _written_inputs(graph, {}, ops)
    except Exception:  # noqa: BLE001 - an unreadable graph: every variable may be written
        return list(variables.values())
    inputs = list(graph.inputs)
    written = []
    for external, internal in graph.captures:
        if internal.dtype != tf.resource or id(external) not in variables:
            continue
        position = next((i for i, t in enumerate(inputs) if t is internal), None)
        if -1 in positions or position is None or position in positions:
            written.append(variables[id(external)])
    return written


def writes_unknown(concrete, handles) -> bool:
    """Whether the program reached a resource by one of `handles` that is no variable of the
    graph (a variable's handle kept in a global, or `tf.identity` of one) where the graph cannot
    keep eager's effects: a variable's handle beside another variable while something is written
    (it may be a second handle to the same one, which TensorFlow orders with nothing), or written
    before an op that may fail (the undo of a failed run cannot put it back)."""
    known = {id(v.handle) for v in concrete.graph.variables}
    unknown = {id(h) for h in handles if id(h) not in known}
    if any(_names_a_variable(h) for h in handles if id(h) in unknown) and write_ops(concrete.graph) \
            and sum(_names_a_variable(outer) for outer, _ in concrete.graph.captures) > 1:
        return True
    writes = [op for op in write_ops(concrete.graph) if op.type not in RESOURCE_WRITES] if unknown else []
    ops = failing_ops.writes_before_failures(concrete.graph, writes)       # (tables: `random_ops`)
    if not ops:
        return False
    try:
        positions = _written_inputs(concrete.graph, {}, ops)
    except Exception:  # noqa: BLE001 - an unreadable graph: any handle may be written
        return True
    at = {id(t): i for i, t in enumerate(concrete.graph.inputs)}
    return any(id(external) in unknown and (-1 in positions or at.get(id(internal), -1) in positions)
               for external, internal in concrete.graph.captures if internal.dtype == tf.resource)


def _names_a_variable(tensor) -> bool:
    """Whether an eager resource handle is a variable's (it carries the variable's dtype and shape;
    a table's carries nothing)."""
    data = getattr(tensor, "_handle_data", None) if tensor.dtype == tf.resource else None
    return data is not None and data.is_set and bool(data.shape_and_type)


class Snapshot:
    """Reads the variables' values in one graph call (one read per variable, dispatched from
    Python, costs more than a small graph run); a later in-place write copies the buffer first."""

    def __init__(self, variables):
        self.variables = list(variables)
        self._read = None

    def take(self) -> list:
        if self._read is None:
            self._read = tf.function(lambda: [v.read_value() for v in self.variables],
                                     autograph=False).get_concrete_function()
        return list(self._read())

    def restore(self, values) -> None:
        for v, value in zip(self.variables, values):
            v.assign(value)


def read_before_python(concrete) -> list:
    """The captured variables an op created before the graph's first call to Python uses: the
    Python may assign them, and a re-run after a failed run must read them as the run found them
    (`codegen.operators.unchanged.Watch`)."""
    graph = concrete.graph
    memo: dict = {}
    used = set()
    for op in graph.get_operations():
        if failing_ops.calls_python(op, memo):
            break
        used.update(id(t) for t in op.inputs if t.dtype == tf.resource)
    else:
        return []
    variables = {id(v.handle): v for v in graph.variables}
    return [variables[id(external)] for external, internal in graph.captures
            if id(internal) in used and id(external) in variables]
