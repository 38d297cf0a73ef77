"""Ops whose state a graph's kernel keeps from run to run, where eager starts it anew: seeded
stateful random ops, and tables and queues the call makes.

Eager keeps one kernel per (global seed, op seed) and continues its sequence from call to call;
with only the global seed set, each eager call takes a new op seed.  A graph's op has a kernel
of its own, which starts its sequence again in every graph and takes other seeds.  So a
function whose graph would hold such an op with a seed (`tf.random.uniform(..., seed=5)`, or any
of them after `tf.random.set_seed`) runs in Python.  Unseeded ones give numbers nobody can
predict either way and stay in the graph; `tf.random.Generator` and the stateless ops
(`tf.random.stateless_uniform`, Keras's seed generators) give eager's numbers in a graph."""
from __future__ import annotations

from codegen.operators import failing_ops

STATEFUL_RANDOM = frozenset({"RandomUniform", "RandomUniformInt", "RandomStandardNormal", "TruncatedNormal",
                             "ParameterizedTruncatedNormal", "RandomShuffle", "Multinomial", "RandomGamma",
                             "RandomPoisson", "RandomPoissonV2"})
HINT = "use a tf.random.Generator or the stateless random ops (tf.random.stateless_uniform) to keep the graph"


def seeded(graph) -> str:
    """The first seeded stateful random op of `graph` (or of a loop or branch body), described; ""
    if there is none."""
    graph_def = graph.as_graph_def()
    for node in [*graph_def.node, *(n for f in graph_def.library.function for n in f.node_def)]:
        if node.op in STATEFUL_RANDOM and (node.attr["seed"].i or node.attr["seed2"].i):
            return (f"a seeded stateful random op ({node.op}, from tf.random with a seed or after "
                    "tf.random.set_seed) continues eager's sequence from call to call; a graph's starts again")
    return ""


# Resources made by an op in the graph itself (not lifted out of the function): the op's kernel
# makes one on the graph's first run and hands the same one to every later run, where eager
# makes a new one on every call (a `MutableHashTable` built in the call would keep the keys an
# earlier call inserted).
KERNEL_HELD = frozenset({"MutableHashTableV2", "MutableHashTableOfTensorsV2", "MutableDenseHashTableV2",
                         "HashTableV2", "FIFOQueueV2", "PaddingFIFOQueueV2", "RandomShuffleQueueV2",
                         "PriorityQueueV2", "Barrier", "ConditionalAccumulator", "SparseConditionalAccumulator"})


def kernel_held(graph) -> str:
    """The first op of `graph` (or of a body) that makes a resource its kernel keeps, described;
    "" if there is none."""
    graph_def = graph.as_graph_def()
    for node in [*graph_def.node, *(n for f in graph_def.library.function for n in f.node_def)]:
        if node.op in KERNEL_HELD:
            return (f"the call makes a table or queue ({node.op}): a graph's kernel makes it once and keeps "
                    "it, with its contents, for every later run, where eager makes a new one per call")
    return ""


# Writes to tables and queues: a failed run is re-run in Python, and only variables are put back
# first, so such a write before an op that may fail would happen twice.  An import replaces the
# whole contents, so writing it twice leaves what writing it once does, unless what it writes
# was read from a table or queue the failed run may have changed.
RESOURCE_READS = frozenset({"LookupTableFindV2", "LookupTableExportV2", "LookupTableSizeV2", "QueueDequeueV2",
                            "QueueDequeueManyV2", "QueueDequeueUpToV2", "QueueSizeV2", "AccumulatorTakeGradient",
                            "AccumulatorNumAccumulated"})
RESOURCE_WRITES = frozenset({"LookupTableInsertV2", "LookupTableRemoveV2", "LookupTableImportV2",
                             "QueueEnqueueV2", "QueueEnqueueManyV2", "QueueDequeueV2", "QueueDequeueManyV2",
                             "QueueDequeueUpToV2", "QueueCloseV2", "AccumulatorApplyGradient",
                             "AccumulatorTakeGradient", "AccumulatorSetGlobalStep"})


def written_before_failure(graph) -> str:
    """The first table or queue write of `graph` that may run before an op that may fail,
    described; "" if there is none (a write in a body counts where any op may fail)."""
    top = [op for op in graph.get_operations() if op.type in RESOURCE_WRITES and not _repeatable(graph, op)]
    if early := failing_ops.writes_before_failures(graph, top):
        return early[0].type
    graph_def = graph.as_graph_def()
    inner = [n.op for f in graph_def.library.function for n in f.node_def if n.op in RESOURCE_WRITES]
    return inner[0] if inner and failing_ops.graph_may_fail(graph) else ""


def _repeatable(graph, op) -> bool:
    """Whether `op` is an import whose contents wait for no read of a table or queue (an op
    running a body may hold one)."""
    reads = RESOURCE_READS | set(failing_ops.BODY_ATTRS)
    return op.type == "LookupTableImportV2" and not any(
        graph.get_operation_by_name(name).type in reads for name in failing_ops.ancestors(op))


def unrepeatable(graph):
    """(kind, explanation, hint) of the first op of `graph` whose kernel keeps state eager starts
    anew on every call; None if there is none."""
    if why := seeded(graph):
        return "seeded-random", why, HINT
    if why := kernel_held(graph):
        return "kernel-state", why, "make the table or queue outside the function, and pass it in"
    if op := written_before_failure(graph):
        return ("resource-write", f"a table or queue is written ({op}) before an op that may fail: a failed run "
                "runs again in Python, and the write would happen twice", "write it after the ops that may fail")
    return None
