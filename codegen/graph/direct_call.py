"""Calling a traced graph's kernel directly when nothing can record it.

`ConcreteFunction._call_flat` checks for tapes, selects forward and backward
functions, then runs the function's kernel and packs its outputs; when no tape
or accumulator is active, only the kernel call matters.  On a graph of a few
hundred small ops (one tree's inference) the layers in between cost about 40 us
of a 700 us call.  `call` makes the same kernel call the way TensorFlow makes it
(the context's call options, a cancellation context where one is active, error
messages interpolated, resource outputs given their handle data), and answers
None wherever TensorFlow's own path is needed: a tape or accumulator is active,
eager execution is off, or TensorFlow's internals are not the ones expected.
"""
from __future__ import annotations

import itertools

try:                                # (TensorFlow's internals; any change leaves the public path)
    from tensorflow.python.eager import cancellation, context, execute, record
    from tensorflow.python.eager.polymorphic_function.atomic_function import InterpolateRuntimeError
    from tensorflow.python.ops import handle_data_util
    from tensorflow.python.ops.gradients_util import POSSIBLE_GRADIENT_TYPES_NONE, PossibleTapeGradientTypes
except ImportError:                 # pragma: no cover - another TensorFlow
    execute = None


class DirectCall:
    """The kernel call of one concrete function (built once per graph)."""

    def __init__(self, concrete):
        self.concrete, self.ok = concrete, False
        if execute is None:
            return
        try:
            atomic = concrete._inference_function
            self.atomic = atomic
            self.name = atomic.name.decode("utf-8") if isinstance(atomic.name, bytes) else str(atomic.name)
            outputs = atomic.function_type.flat_outputs
            self.n_out = len(outputs)
            self.n_in = len(atomic.cached_definition.signature.input_arg)
            self.handle_data = [(i, t.dtype._handle_data) for i, t in enumerate(outputs) if t.dtype._handle_data]
            self.ok = not atomic._call_options.control_captures
        except (AttributeError, TypeError):
            self.ok = False

    def __call__(self, args: list):
        """The flat outputs of running the function on `args` (inputs, then captures), or None
        when TensorFlow's own call path must run it."""
        if not self.ok or len(args) != self.n_in or record.could_possibly_record():
            return None
        ctx = context.context()
        if not ctx.executing_eagerly() or PossibleTapeGradientTypes(args) != POSSIBLE_GRADIENT_TYPES_NONE:
            return None
        attrs = tuple(itertools.chain(*ctx.function_call_options.as_attrs().items()))
        cancel = cancellation.context()
        with InterpolateRuntimeError(self.atomic):
            if cancel is None:
                outs = execute.execute(self.name, num_outputs=self.n_out, inputs=args, attrs=attrs, ctx=ctx)
            else:
                outs = execute.execute_with_cancellation(self.name, num_outputs=self.n_out, inputs=args,
                                                         attrs=attrs, ctx=ctx, cancellation_manager=cancel)
        for i, data in self.handle_data:
            handle_data_util.set_handle_data(outs[i], data.shape_inference)
        return outs
