"""Traces a builder into a TensorFlow graph for one argument signature.

The graph is built with TensorFlow's own machinery (`tf.function(...,
autograph=False).get_concrete_function(specs)`), so variable capture,
gradients and XLA work as they do for `tf.function`.  The wrapper rebuilds
the user's arguments from the graph's inputs, runs the builder under a
`BuildContext`, and returns the result's tensors plus the tensors deferred
prints need; Python values in the result are kept in its template.
"""
from __future__ import annotations

import dataclasses
import time

import tensorflow as tf

from codegen.calls_support import is_symbolic, replay_prints
from codegen.context import BuildContext, Frame
from codegen.errors import JanusError, Reason, StagingError
from codegen.guards import Signature, compile_entry_guard, rebuild


@dataclasses.dataclass
class GraphArtifact:
    signature: Signature
    concrete: object                  # tf ConcreteFunction
    entry_guard: object               # generated function: (args, kwargs) -> inputs | None
    assumptions: list
    checks: list
    result_template: object
    n_result: int
    prints: list
    op_count: int
    build_seconds: float

    def run(self, inputs):
        outs = self.concrete(*inputs)
        outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
        result = _unflatten(self.result_template, outs[:self.n_result])
        return result, outs[self.n_result:]

    def replay_prints(self, values):
        replay_prints(self.prints, values)

    def in_graph_assumptions(self):
        return [a for a in self.assumptions if a.kind.in_graph]


def _flatten(value, tensors: list):
    t = type(value)
    if t in (list, tuple):
        return (t.__name__, [_flatten(v, tensors) for v in value])
    if t is dict:
        return ("dict", list(value), [_flatten(v, tensors) for v in value.values()])
    if isinstance(value, tf.Tensor) and is_symbolic(value):
        tensors.append(value)
        return ("tensor", len(tensors) - 1)
    if type(value).__name__ == "Undefined":
        raise StagingError(Reason("undefined-result", "", "the result is undefined on some path"))
    return ("const", value)


def _unflatten(template, outs):
    tag = template[0]
    if tag == "tensor":
        return outs[template[1]]
    if tag == "const":
        return template[1]
    if tag == "list":
        return [_unflatten(t, outs) for t in template[1]]
    if tag == "tuple":
        return tuple(_unflatten(t, outs) for t in template[1])
    return {k: _unflatten(t, outs) for k, t in zip(template[1], template[2])}


def build_graph(converted, sig: Signature, profile, relaxed: set, outside: dict,
                jit_compile=False, unroll_limit=200) -> GraphArtifact:
    from codegen.pipeline import convert

    ctx = BuildContext(profile, relaxed, convert, outside, unroll_limit)
    holder = {}

    def wrapper(*inputs):
        values = []
        for leaf in sig.leaves:
            if leaf.input_index is not None:
                values.append(inputs[leaf.input_index])
            else:
                values.append(leaf.value)
        args, kwargs = rebuild(("list", sig.template[0]), values), {
            k: rebuild(t, values) for k, t in sig.template[1].items()}
        with ctx:
            ctx.frames.append(Frame(converted))
            result = converted.builder(*args, **kwargs)
            ctx.frames.pop()
        tensors: list = []
        holder["template"] = _flatten(result, tensors)
        holder["n"] = len(tensors)
        return tensors + list(ctx.print_tensors)

    start = time.perf_counter()
    fn = tf.function(wrapper, autograph=False, jit_compile=jit_compile or None)
    try:
        concrete = fn.get_concrete_function(*sig.specs())
    except JanusError:
        raise
    except Exception as exc:                      # the builder failed while tracing
        raise StagingError(Reason("staging", _user_frame(exc, converted),
                                  f"{type(exc).__name__}: {exc}".splitlines()[0][:300],
                                  "this call runs imperatively")) from exc
    elapsed = time.perf_counter() - start
    checks = list(ctx.checks.values())
    guard = compile_entry_guard(sig, checks)
    return GraphArtifact(sig, concrete, guard, ctx.assumptions, checks, holder["template"], holder["n"],
                         ctx.prints, len(concrete.graph.get_operations()), elapsed)


def _user_frame(exc, converted) -> str:
    """The innermost traceback frame in the user's file: their line, not TensorFlow's."""
    tb = exc.__traceback__
    found = ""
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == converted.filename:
            found = f"{converted.filename}:{tb.tb_lineno}"
        tb = tb.tb_next
    return found or converted.filename
