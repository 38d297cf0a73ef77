"""`tape.gradient` in a graph gives what eager gives: None where this call's path is unconnected.

Eager's tape records only the ops that ran, so when a tensor `if` takes a
branch whose value does not depend on a source (`y = tf.ones_like(x)`), the
gradient for that source is None.  The graph holds both branches, and
TensorFlow's gradient of a `tf.cond` gives zeros for the branch not taken:
a different answer (`if grad is None`, or an optimizer that updates its
moments with zeros where eager skips the variable).

`checked_gradient` computes the real gradient, then decides per source
whether eager's would be connected, from the ops between the sources and the
targets: an op connects its outputs to its inputs unless it is not
differentiable (registered so, like `OnesLike`, or `StopGradient`) or its
output is not a float; an `If`/`StatelessIf` connects an output as its taken
branch does (a `tf.where` on the predicate, evaluated when the graph runs).
Where that is known when the graph is built, an unconnected source gets None
as in eager.  Where it depends on a predicate, the gradient waits on an
assertion that it is connected: on a call where eager's gradient is None the
run fails and the call runs in Python, which gives None.  A branch nested in a
branch whose sides connect a source differently raises `UnknownConnectivity`
(the code runs in Python).  A `tf.while_loop` connects a loop variable as it
entered when it ran zero times, and as its body's rounds do otherwise (its
iteration count, TensorFlow's first loop variable, chooses when the graph
runs).  Calls of other functions are taken as connected whenever one of
their inputs is, as TensorFlow's gradient takes them.
"""
from __future__ import annotations

import tensorflow as tf

from tensorflow.python.framework import func_graph
from tensorflow.python.framework import ops as ops_lib

from codegen.operators.guards import check
from codegen.operators.unconverted import unwatched

_NOT_CONNECTING = frozenset({"StopGradient", "PreventGradient"})
_IFS = frozenset({"If", "StatelessIf"})
_WHILES = frozenset({"While", "StatelessWhile"})
UNCONNECTED = "eager's gradient is None for this source on this call's path"


@unwatched
def checked_gradient(gradient, args, kwargs):
    """`tape.gradient(*args, **kwargs)` in the current graph, with eager's None where this call's
    path leaves a source unconnected to the targets."""
    grads = gradient(*args, **kwargs)
    names = ("target", "sources", "output_gradients", "unconnected_gradients")
    bound = dict(zip(names, args), **kwargs)
    if bound.get("unconnected_gradients") in (tf.UnconnectedGradients.ZERO, "zero"):
        return grads
    targets = [t for t in tf.nest.flatten(bound.get("target")) if isinstance(t, tf.Tensor)]
    sources = tf.nest.flatten(bound.get("sources"))
    flat = tf.nest.flatten(grads, expand_composites=False)
    if len(flat) != len(sources) or not targets:
        return grads
    graph = tf.compat.v1.get_default_graph()
    if not any(op.type in _IFS | _WHILES for op in _ancestors(graph, targets).values()):
        return grads                    # no branch or loop whose path differs between calls
    out = []
    for source, grad in zip(sources, flat):
        known = isinstance(source, tf.Tensor) or isinstance(getattr(source, "handle", None), ops_lib.EagerTensor)
        out.append(_checked(graph, targets, source, grad) if grad is not None and known else grad)
    return tf.nest.pack_sequence_as(grads, out)


def _checked(graph, targets, source, grad):
    conn = _Connectivity(graph, source).of_any(targets)
    if conn is True:
        return grad
    if conn is False:
        return None
    with tf.control_dependencies([check(conn, [UNCONNECTED])]):
        return tf.nest.map_structure(tf.identity, grad)


def connectivity(graph, source, targets) -> list:
    """Per target of `graph`: whether it depends on `source` along the ops this call runs (True,
    False, or a bool tensor of `graph`); raises `UnknownConnectivity` where that cannot be told."""
    conn = _Connectivity(graph, source).in_graph(graph, targets, {})
    return [conn.get(id(t), False) for t in targets]


def _any(values):
    """OR of connectivities: True, False, or a boolean tensor."""
    if any(v is True for v in values):
        return True
    tensors = [v for v in values if v is not False]
    if not tensors:
        return False
    out = tensors[0]
    for t in tensors[1:]:
        out = tf.logical_or(out, t)
    return out


def _select(pred, then, other):
    if then is other or (isinstance(then, bool) and isinstance(other, bool) and then == other):
        return then
    pred = tf.cast(pred, tf.bool) if pred.dtype != tf.bool else pred
    return tf.where(tf.reshape(pred, []), then, other)


def differentiable(op, unknown: bool = False) -> bool:
    """Whether a gradient passes `op`; `unknown` for an op TensorFlow knows no gradient for."""
    if op.type in _NOT_CONNECTING:
        return False
    try:
        return ops_lib.get_gradient_function(op) is not None
    except LookupError:
        return unknown


def _carries(t) -> bool:
    return t.dtype.is_floating or t.dtype.is_complex or t.dtype in (tf.resource, tf.variant)


class _Connectivity:
    """Whether tensors of one graph depend on `source` along the ops this call runs."""

    def __init__(self, graph, source):
        self.graph = graph
        self.source = source
        handle = getattr(source, "handle", None) if not isinstance(source, tf.Tensor) else None
        self.handle = id(handle) if handle is not None else None

    def of_any(self, targets):
        return _any([self.in_graph(self.graph, targets, {})[id(t)] for t in targets])

    def in_graph(self, graph, targets, env: dict) -> dict:
        """id(tensor) -> connectivity, for the ancestors of `targets` in `graph`; `env` gives the
        connectivity of a branch graph's inputs."""
        ops = _ancestors(graph, targets)
        conn: dict = {}
        for op in graph.get_operations():
            if id(op) not in ops:
                continue
            ins = [conn.get(id(t), False) for t in op.inputs]
            if op.type == "Placeholder":
                outs = [env[id(op.outputs[0])] if id(op.outputs[0]) in env else self._outside(op.outputs[0])]
            elif op.type in _IFS:
                outs = self._if(op, ins)
            elif op.type in _WHILES and op.graph is self.graph and type(self) is _Connectivity:
                outs = self._while(op, ins)
            elif not differentiable(op):
                outs = [False] * len(op.outputs)
            else:
                either = _any(ins)
                outs = [either if _carries(t) else False for t in op.outputs]
            for t, c in zip(op.outputs, outs):
                conn[id(t)] = True if self._is_source(t) else c
        return conn

    def _if(self, op, ins):
        branches = [op.graph._functions[op.get_attr(a).name].graph for a in ("then_branch", "else_branch")] \
            if hasattr(op.graph, "_functions") and op.get_attr("then_branch").name in op.graph._functions else None
        if branches is None or op.graph is not self.graph:
            return [_any(ins[1:]) if _carries(t) else False for t in op.outputs]
        per_branch = []
        for body in branches:
            env = {id(p): c for p, c in zip(body.inputs, ins[1:])}
            inner = _Nested(self, body).in_graph(body, body.outputs, env)
            per_branch.append([inner.get(id(t), False) for t in body.outputs])
        return [_select(op.inputs[0], a, b) if _carries(t) else False
                for t, a, b in zip(op.outputs, *per_branch)]

    def _while(self, op, ins):
        """A `tf.while_loop` (TensorFlow's first loop variable counts its iterations): a loop
        variable is connected as it entered when the loop ran zero times, else as after the
        body's rounds: exactly when every round gives the same answer, else connected if some
        round connects it (as TensorFlow's gradient takes it)."""
        body = getattr(op.graph, "_functions", {}).get(op.get_attr("body").name)
        generic = [_any(ins) if _carries(t) else False for t in op.outputs]
        if body is None:
            return generic
        body, n = body.graph, len(op.outputs)
        conn, rounds = list(ins), []
        try:
            for _ in range(n + 1):
                env = {id(p): c for p, c in zip(body.inputs, conn)}
                inner = _Nested(self, body).in_graph(body, body.outputs, env)
                conn[:n] = [inner.get(id(t), False) for t in body.outputs]
                rounds.append(conn[:n])
        except UnknownConnectivity:
            return generic
        if all(all(isinstance(c, bool) for c in r) for r in rounds) and all(r == rounds[0] for r in rounds):
            after = rounds[0]           # the same after every round: exact
        else:
            after = [_any(cs) for cs in zip(*rounds)]
        ran = op.outputs[0] > 0
        return [_select(ran, a, before) if _carries(t) else False
                for t, a, before in zip(op.outputs, after, ins[:n])]

    def _is_source(self, t) -> bool:
        return self.handle is None and t is self.source

    def _outside(self, t):
        """A placeholder of this graph: an argument (unconnected unless it is the source), or a
        capture: connected when it is the source or its variable, unconnected when it is another
        value from outside every graph, unknown (so connected) when it is computed in an enclosing
        graph."""
        while True:
            if self._is_source(t):
                return True
            graph = t.graph
            if not isinstance(graph, func_graph.FuncGraph):
                return True
            outer = next((e for e, i in graph.captures if i is t), None)
            if outer is None:
                return t.op.type != "Placeholder"
            if isinstance(outer, ops_lib.EagerTensor) or not hasattr(outer, "graph"):
                return self.handle is not None and id(outer) == self.handle
            t = outer


class _Nested(_Connectivity):
    """Inside a branch graph.  A nested `If`'s predicate lives there, not in the graph that asks,
    so where its branches connect an output differently the answer is not known when the graph
    runs: `UnknownConnectivity`."""

    def __init__(self, outer: _Connectivity, graph):
        super().__init__(outer.graph, outer.source)
        self.branch = graph

    def _if(self, op, ins):
        per_branch = []
        for attr in ("then_branch", "else_branch"):
            function = getattr(op.graph, "_functions", {}).get(op.get_attr(attr).name)
            if function is None:
                raise UnknownConnectivity()
            body = function.graph
            env = {id(p): c for p, c in zip(body.inputs, ins[1:])}
            inner = _Nested(self, body).in_graph(body, body.outputs, env)
            per_branch.append([inner.get(id(t), False) for t in body.outputs])
        out = []
        for t, a, b in zip(op.outputs, *per_branch):
            if a is not b and not (isinstance(a, bool) and isinstance(b, bool) and a == b):
                raise UnknownConnectivity()
            out.append(a if _carries(t) else False)
        return out


class UnknownConnectivity(Exception):
    """Branches nested in a branch connect a source differently: the graph cannot tell, when it
    runs, whether eager's gradient would be None."""


def _ancestors(graph, targets) -> dict:
    """The ops of `graph` that the targets depend on, by id."""
    seen, stack = {}, [t.op for t in targets if t.graph is graph]
    while stack:
        op = stack.pop()
        if id(op) in seen:
            continue
        seen[id(op)] = op
        stack.extend(t.op for t in op.inputs if t.graph is graph)
        stack.extend(c for c in op.control_inputs if c.graph is graph)
    return seen
