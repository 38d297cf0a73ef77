"""Seeded stateful random ops, which a graph cannot give eager's numbers for.

Eager keeps one kernel per (global seed, op seed) and continues its sequence from call to call;
with only the global seed set, each eager call takes a new op seed.  A graph's op has a kernel
of its own, which starts its sequence again in every graph and takes other seeds.  So a
function whose graph would hold such an op with a seed (`tf.random.uniform(..., seed=5)`, or any
of them after `tf.random.set_seed`) runs in Python.  Unseeded ones give numbers nobody can
predict either way and stay in the graph; `tf.random.Generator` and the stateless ops
(`tf.random.stateless_uniform`, Keras's seed generators) give eager's numbers in a graph."""
from __future__ import annotations

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
