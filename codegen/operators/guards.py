"""In-graph guards: an `Assert` that every op built after it waits for.

The control dependency stays open until the build ends, so no variable
write built after a guard can run before it passed; that is why a guard may
only be emitted where `BuildContext.may_speculate` allows it.  A loop's
trip-count guard is decided before the loop but checked after the
iterations it unrolled, writes included: a run it stops restores those
variables (`codegen.operators.failing_ops`, `codegen.graph.variable_writes`).
"""
from __future__ import annotations

import tensorflow as tf

from codegen import faults
from codegen.operators.context import active, current


def emit_guard(pred, assumption):
    """Assert `pred` in the graph for `assumption`; a failed guard stops the run."""
    if faults.matches(assumption):
        pred = tf.constant(False)
    op = check(pred, [assumption.message()], name=f"janus_guard_{assumption.id}")
    current().wait_for([op])


def check(pred, data, name=None):
    """`tf.debugging.Assert(pred, data)`.  XLA drops Asserts, so when the function asks for XLA
    (`jit_compile=True`) a check built in the function's own graph (not in a loop or branch
    body) is also recorded: its outcome becomes an output, read after the run, and a failed one
    fails the run as the Assert would have (`codegen.graph.xla`)."""
    op = tf.debugging.Assert(pred, data, name=name)
    ctx = active()
    if ctx is not None and ctx.jit_compile and tf.compat.v1.get_default_graph() is ctx.outer_graph:
        text = " ".join(str(d) for d in data if isinstance(d, str))
        ctx.deferred_checks.append((tf.reshape(tf.convert_to_tensor(pred, tf.bool), []), text, op.name))
    return op
