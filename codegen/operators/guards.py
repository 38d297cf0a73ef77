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
from codegen.operators.context import current


def emit_guard(pred, assumption):
    """Assert `pred` in the graph for `assumption`; a failed guard stops the run."""
    if faults.matches(assumption):
        pred = tf.constant(False)
    op = tf.debugging.Assert(pred, [assumption.message()], name=f"janus_guard_{assumption.id}")
    current().wait_for([op])
