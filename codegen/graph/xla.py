"""Running a graph through XLA when the function asks for it (`jit_compile=True`).

XLA drops `Assert` ops, so a guard, an exactness check or a recursion's depth
check would pass silently inside an XLA cluster.  janus's own checks built in
the function's graph (`codegen.operators.guards.check`) are therefore also
outputs of the graph: after an XLA run their outcomes are read, and a failed
one fails the run as its Assert would have.  A graph keeps running without XLA
when an Assert is not one of those (the program's own assertion, or a check
inside a loop or branch body); when it checks and writes variables (the writes
would happen before the checks are read, and undoing them could undo another
thread's writes to the same variable); when it calls Python; and when it holds
a loop not bounded by janus that a failed check would have stopped: run on the
values of a broken assumption, it might not end.  The loops janus compiles
itself with static bounds (a linear recursion's, `codegen.recursion.linear_xla`)
are exempt.
"""
from __future__ import annotations

import tensorflow as tf
from tensorflow.python.eager.polymorphic_function.polymorphic_function import OptionalXlaContext

_WHILES = frozenset({"While", "StatelessWhile"})
_CHECKS = frozenset({"Assert", "CheckNumerics", "CheckNumericsV2"})     # ops that raise, which XLA drops
_DROPPED = "it checks assumptions or values with Assert or CheckNumerics ops, which XLA drops"
_UNBOUNDED = ("it checks assumptions, which XLA would only let janus read after the run, and has a "
              "loop that could run on the values of a failed one")
_PYTHON = "it calls Python (a tf.numpy_function or tf.py_function), which XLA cannot run"
_WRITES = ("it writes variables and checks assumptions: under XLA the writes would happen before "
           "the checks are read, and undoing them could undo another thread's writes")
# What the user can change so that the graph compiles, per reason.
HINTS = {
    _DROPPED: "move the program's own tf.debugging.Assert or check_numerics out of the function, or keep "
              "the branch or loop whose condition janus checks out of it",
    _UNBOUNDED: "give the program's tf.while_loop a maximum_iterations, or keep the loop out of the function",
    _PYTHON: "move the tf.numpy_function or tf.py_function call out of the function",
    _WRITES: "return the new values and assign the variables outside the function",
}
TRACE_FAILED = ("the message in brackets is what tracing the function for XLA raised; traced without XLA it "
                "built, so the code it names is what to change or move out of the function")


def traced_for_xla(wrapper):
    """`wrapper`, traced in XLA's control-flow context, as `tf.function(jit_compile=True)` traces
    (the gradients of `tf.cond` and `tf.while_loop` then take forms XLA compiles)."""
    def traced(*inputs):
        with OptionalXlaContext(True):
            return wrapper(*inputs)
    return traced


def compile_with_xla(artifact, sig, deferred: list, bounded: set) -> None:
    """Run `artifact`'s graph through XLA, unless `why_not` says otherwise (then `artifact.xla`
    says why).  `deferred`: (condition, text, Assert op name) of the checks whose outcomes the
    graph returns at `artifact.checks_at`; `bounded`: the functions janus compiled whose loops
    have static bounds.  The analysis of the graph (writes, ops that may fail) stays on the
    traced graph."""
    graph_def = artifact.concrete.graph.as_graph_def()
    checked = any(node.op == "Assert" for node in graph_def.node)
    why = why_not(graph_def, {name for _, _, name in deferred}, bounded)
    if artifact.python_ops:
        why = _PYTHON
    elif checked and artifact.written_variables:
        why = _WRITES
    if why:
        artifact.xla = why
        return
    inner = artifact.concrete
    artifact.concrete = tf.function(lambda *inputs: inner(*inputs), autograph=False,
                                    jit_compile=True).get_concrete_function(*sig.specs())
    artifact.xla = "on"
    if checked:
        artifact.check_texts = [text for _, text, _ in deferred]


def why_not(graph_def, deferred: set, bounded: set) -> str | None:
    """Why the graph must run without XLA, or None."""
    functions = {f.signature.name: f for f in graph_def.library.function}
    if any(node.op in _CHECKS for f in functions.values() for node in f.node_def):
        return _DROPPED
    asserts = [node.name for node in graph_def.node if node.op in _CHECKS]
    if any(name not in deferred for name in asserts):
        return _DROPPED
    if asserts:
        compiled = _called(functions, bounded)
        if any(node.op in _WHILES for node in graph_def.node) or any(
                node.op in _WHILES for name, f in functions.items() if name not in compiled for node in f.node_def):
            return _UNBOUNDED
    return None


def _called(functions: dict, roots: set) -> set:
    """`roots` and the functions they call, directly or not."""
    out = set()
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in out or name not in functions:
            continue
        out.add(name)
        for node in functions[name].node_def:
            for value in node.attr.values():
                todo += [value.func.name] if value.func.name else []
                todo += [f.name for f in value.list.func]
    return out


def first_failed(outcomes, texts: list):
    """The error a failed check's Assert would have raised, or None when all held."""
    held = outcomes.numpy()
    if held.all():
        return None
    return tf.errors.InvalidArgumentError(None, None, texts[int((~held).argmax())])
