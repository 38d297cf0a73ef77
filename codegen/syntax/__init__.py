"""The AST toolkit: reading a function's source, templates and fresh names, name
analyses, profile site references.  Knows nothing of TensorFlow or of any lowering."""
