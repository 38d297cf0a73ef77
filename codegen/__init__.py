"""Speculative graph generation: user function + profile -> guarded graph.

`convert(fn)` lowers the source once into a graph *builder*; `build_graph`
traces that builder with TensorFlow for one argument signature, specialised
on the current profile, and returns the concrete function with its entry
guard and assumptions.
"""
from codegen.assumptions import Assumption, Kind
from codegen.errors import ConversionError, JanusError, JoinBroken, NeedsTree, Reason, StagingError
from codegen.graph import GraphArtifact, build_graph
from codegen.pipeline import ConvertedFunction, convert

__all__ = ["Assumption", "Kind", "ConversionError", "JanusError", "JoinBroken", "NeedsTree", "Reason", "StagingError", "GraphArtifact",
           "build_graph", "ConvertedFunction", "convert"]
