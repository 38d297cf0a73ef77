"""Around one trace: the argument signature, the entry guard, the write-back plan and the
built artifact (`build_graph` -> `GraphArtifact`)."""
from codegen.graph.build import GraphArtifact, build_graph
from codegen.graph.signature import Signature, analyze

__all__ = ["GraphArtifact", "build_graph", "Signature", "analyze"]
