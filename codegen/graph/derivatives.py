"""Derivatives a caller takes of a graph's run that TensorFlow takes through functions of its own.

TensorFlow differentiates a function call's gradient (a tape around a tape, or a persistent tape
that takes a gradient of a gradient) and runs forward mode through it (`ForwardAccumulator`)
with functions it derives from the graph, and those give zeros where eager's tape finds no
connection and gives None (the second derivative of `3 * x`, the forward derivative of an
output that does not read the input).  A call such a tape or accumulator watches runs in
Python; one first-order tape keeps the graph."""
from __future__ import annotations

import tensorflow as tf
from tensorflow.python import pywrap_tfe
from tensorflow.python.ops import resource_variable_ops


def differentiated_through(inputs, concrete) -> bool:
    """Whether a forward accumulator, or a tape that records derivatives of derivatives, watches
    the run's `inputs` or the values `concrete` captures.  As TensorFlow's own call does first,
    the variables the graph uses are marked read (a tape watches a trainable one on its read)."""
    if pywrap_tfe.TFE_Py_TapeSetIsEmpty():
        return False
    variables = list(concrete.graph.variables) + [x for x in inputs if isinstance(x, tf.Variable)]
    for v in variables:
        resource_variable_ops.variable_accessed(v)
    watched = [x for x in inputs if isinstance(x, tf.Tensor)] + [v.handle for v in variables]
    watched += list(concrete.captured_inputs)
    return pywrap_tfe.TFE_Py_TapeSetPossibleGradientTypes(watched) > 1 or bool(
        pywrap_tfe.TFE_Py_PackJVPs(watched)[0])
