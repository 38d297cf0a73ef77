"""One lowering per Python construct, each a module with `transform(node, ctx)` and its examples
in its docstring; `codegen.lowering.pipeline` runs them in order (`base` holds what they share)."""
