"""Speculative graph generation: user function + profile -> guarded graph.

`convert(fn)` lowers the source once into a graph *builder*; `build_graph`
traces that builder with TensorFlow for one argument signature, specialised
on the current profile, and returns the concrete function with its entry
guard and assumptions.  `docs/architecture.md` maps the rooms inside.
"""
from codegen.assumptions import Assumption, Kind
from codegen.compiler import ConvertedFunction, convert
from codegen.errors import ConversionError, JanusError, JoinBroken, NeedsTree, Reason, StagingError
from codegen.graph import GraphArtifact, Signature, analyze, build_graph, current_value
from codegen.operators.calls import Speculated

__all__ = ["Assumption", "Kind", "ConversionError", "JanusError", "JoinBroken", "NeedsTree", "Reason", "StagingError",
           "GraphArtifact", "Signature", "analyze", "build_graph", "current_value", "ConvertedFunction", "convert",
           "Speculated"]
