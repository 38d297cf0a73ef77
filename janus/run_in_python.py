"""Calls a cached graph accepts but that still run in Python, and why.

- A forward accumulator, or a tape taking a gradient of a gradient, watches the call:
  TensorFlow's derivatives of a graph give zeros where eager's give None.
- The graph writes a variable that an op which may fail then uses, so a failed run puts the
  variable back by value before the call runs again in Python.  Any write another thread made
  meanwhile would be put back too, so while other threads are alive such a call runs in Python.
  (A write that no such op uses waits for them in the graph: a failed run has written nothing;
  `codegen.graph.print_order`.)
"""
from __future__ import annotations

import threading

import codegen


def reason(graph, inputs):
    """The `codegen.Reason` this run of `graph` on `inputs` must be a Python run, or None."""
    if graph.differentiated_through(inputs):
        return codegen.Reason("outside-derivatives", "", "a forward accumulator, or a tape taking a gradient "
                              "of a gradient, watches this call: TensorFlow's derivatives of a graph give "
                              "zeros where eager's give None, so the call ran in Python",
                              "take the derivatives inside the speculated function")
    if graph.restored_variables and graph.replays_python and threading.active_count() > 1:
        return codegen.Reason("undo-beside-threads", "", "the graph writes a variable that an op which may fail "
                              "then uses, and a failed run puts it back by value, which would also undo "
                              "what another thread wrote to it meanwhile: with other threads running, the "
                              "call ran in Python", "check the values before the write, or write after the check")
    return None
