"""One constant op per value in the machine's loop body.

Every op of a `tf.while_loop` body runs on every step, constants included.  The machine's
bookkeeping and `tf.vectorized_map` create the same small constants (gather axes, reshape
shapes, fill values) hundreds of times per body; TensorFlow's graph optimizer merges them only
with its arithmetic pass, which janus turns off (see docs/decisions.md).  `share_constants`
points every consumer of a constant at the first constant op with the same dtype, value and
control inputs; the others have no consumer left and are pruned when the function is
instantiated.
"""
from __future__ import annotations


def share_constants(graph) -> int:
    """Rewire the consumers of duplicate `Const` ops of `graph` to one op per value; returns how many
    constant ops lost their consumers."""
    first: dict = {}
    shared = 0
    for op in graph.get_operations():
        if op.type != "Const":
            continue
        key = (op.node_def.attr["dtype"].type, op.node_def.attr["value"].SerializeToString(deterministic=True),
               tuple(sorted(c.name for c in op.control_inputs)), op.device)
        keep = first.setdefault(key, op)
        if keep is op:
            continue
        old, new = op.outputs[0], keep.outputs[0]
        for consumer in old.consumers():
            for i, t in enumerate(consumer.inputs):
                if t is old:
                    consumer._update_input(i, new)      # noqa: SLF001 - TensorFlow's own way to rewire an edge
        shared += 1
    return shared
