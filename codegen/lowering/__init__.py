"""One lowering per Python construct; `codegen.pipeline` runs them in order."""
