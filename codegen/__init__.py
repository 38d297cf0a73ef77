"""Speculative graph generation: user function + profile -> guarded graph.

`convert(fn)` lowers the source once into a graph *builder*; `build_graph`
traces that builder with TensorFlow for one argument signature, specialised
on the current profile, and returns the concrete function with its entry
guard and assumptions.  `docs/architecture.md` maps the rooms inside.
"""
from codegen.assumptions import Assumption, Check, Kind, Source
from codegen.compiler import ConvertedFunction, convert
from codegen.errors import (ConversionError, JanusError, JoinBroken, NeedsPythonValue, NeedsTree, Reason,
                            ReplicaSync, StagingError)
from codegen.graph import GraphArtifact, Signature, analyze, build_graph
from codegen.graph.signature import Feed
from codegen.operators.calls import Speculated

__all__ = ["Assumption", "Check", "Kind", "Source", "ConversionError", "JanusError", "JoinBroken",
           "NeedsPythonValue", "NeedsTree", "Reason", "ReplicaSync", "StagingError", "GraphArtifact", "Signature", "Feed",
           "analyze", "build_graph", "ConvertedFunction", "convert", "Speculated"]
