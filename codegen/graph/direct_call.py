"""Calling a traced graph's kernel directly when nothing can record it.

`ConcreteFunction._call_flat` checks for tapes, selects forward and backward
functions, then runs the function's kernel and packs its outputs; when no tape
or accumulator is active, only the kernel call matters.  On a graph of a few
hundred small ops (one tree's inference) the layers in between cost about 40 us
of a 700 us call.  `call` makes the same kernel call the way TensorFlow makes it
(the context's call options, a cancellation context where one is active, error
messages interpolated, resource outputs given their handle data), and answers
None wherever TensorFlow's own path is needed: a tape or accumulator is active,
eager execution is off, or TensorFlow's internals are not the ones expected.  The same
call can run the graph's single-threaded variant, on the runs where
`codegen.graph.executors` tries it or chose it.
"""
from __future__ import annotations

import itertools
import time

from codegen.graph import executors

try:                                # (TensorFlow's internals; any change leaves the public path)
    from tensorflow.python.eager import cancellation, context, execute, record
    from tensorflow.python.eager.polymorphic_function.atomic_function import InterpolateRuntimeError
    from tensorflow.python.ops import handle_data_util
    from tensorflow.python.ops.gradients_util import POSSIBLE_GRADIENT_TYPES_NONE, PossibleTapeGradientTypes
except ImportError:                 # pragma: no cover - another TensorFlow
    execute = None


class DirectCall:
    """The kernel call of one concrete function (built once per graph).  `variants`: whether
    the single-threaded executor may run it (`codegen.graph.executors`; not for a graph that
    calls Python or compiles with XLA)."""

    def __init__(self, concrete, variants: bool = True):
        self.concrete, self.ok, self.choice = concrete, False, None
        self.variants = variants
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

    @property
    def executor(self) -> str:
        """Which executor runs the graph, and why (for reports)."""
        if self.choice is not None:
            return self.choice.note
        return "default executor" if self.variants else "default executor (the graph calls Python or uses XLA)"

    def __call__(self, args: list):
        """The flat outputs of running the function on `args` (inputs, then captures), or None
        when TensorFlow's own call path must run it."""
        if not self.ok or len(args) != self.n_in or record.could_possibly_record():
            return None
        ctx = context.context()
        if not ctx.executing_eagerly() or PossibleTapeGradientTypes(args) != POSSIBLE_GRADIENT_TYPES_NONE:
            return None
        options = ctx.function_call_options.as_attrs()
        single, phase = self._plan(ctx, options)
        if single and not executors.RUNNING.acquire(blocking=False):
            single, phase = False, None          # (another thread's run holds the executor)
        start = time.perf_counter()
        if not single:
            outs = self._run(ctx, self.name, options, args)
        else:
            try:
                outs = self._run(ctx, self.choice.variant_name, dict(options, executor_type=executors.SINGLE), args)
            except Exception as exc:         # noqa: BLE001 - re-raised unless the executor refused the graph
                if "Single-threaded executor" not in str(exc):
                    raise
                # (it refuses when it is created, before any kernel runs: running the call again is safe)
                self.choice.refuse(str(exc).split("\n")[0][:200])
                return self._run(ctx, self.name, options, args)
            finally:
                executors.RUNNING.release()
        if phase is not None:
            self.choice.record(single, phase, time.perf_counter() - start)
        return outs

    def _plan(self, ctx, options) -> tuple[bool, str | None]:
        """Whether this run uses the single-threaded executor, and what its time counts for."""
        if not self.variants or options.get("executor_type"):     # (an executor the program chose stands)
            return False, None
        if self.choice is None:
            self.choice = executors.Choice()
        single, phase = self.choice.next_run()
        if single and self.choice.variant_name is None:       # (made when first needed)
            found = executors.variant(ctx, self.name)
            if found.startswith("no:"):
                self.choice.refuse(found[3:].strip())
                return False, None
            self.choice.variant_name = found
        return single, phase

    def _run(self, ctx, name, options, args):
        attrs = tuple(itertools.chain(*options.items()))
        cancel = cancellation.context()
        with InterpolateRuntimeError(self.atomic):
            if cancel is None:
                outs = execute.execute(name, num_outputs=self.n_out, inputs=args, attrs=attrs, ctx=ctx)
            else:
                outs = execute.execute_with_cancellation(name, num_outputs=self.n_out, inputs=args,
                                                         attrs=attrs, ctx=ctx, cancellation_manager=cancel)
        for i, data in self.handle_data:
            handle_data_util.set_handle_data(outs[i], data.shape_inference)
        return outs
