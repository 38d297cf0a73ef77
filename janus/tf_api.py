"""The part of `tf.function`'s object API that users call, with `tf.function`'s meaning.

`get_concrete_function`, `experimental_get_compiler_ir` and a SavedModel export all use one
guard-free trace of the function, made as `tf.function` makes it (AutoGraph: `tf.cond` and
`tf.while_loop` on tensors, no speculation, no guard), so what leaves janus gives eager's
result for every input.  A method saved without an `input_signature` is exported, as under
`tf.function`, with a concrete function for each argument signature it was called with.
"""
from __future__ import annotations

import functools
import inspect
import sys
import types
import weakref

import tensorflow as tf

from codegen import Feed, Source
from codegen.graph.signature import rebuild
from codegen.operators.values import is_composite

_SEEN_LIMIT = 16          # argument signatures kept for an export without `input_signature`


class TfFunctionApi:
    """Mixed into `SpeculativeFunction`."""

    def get_concrete_function(self, *args, **kwargs):
        """A `ConcreteFunction` for these arguments (or the `input_signature`), traced as `tf.function`
        traces it: no speculation and no guard, so it gives eager's result for every input and can
        be exported.  janus's own speculative graphs never leave it."""
        return self._traced_function().get_concrete_function(*args, **kwargs)

    def experimental_get_compiler_ir(self, *args, **kwargs):
        """XLA's IR of that guard-free trace, as `tf.function(...).experimental_get_compiler_ir` gives it."""
        return self._traced_function().experimental_get_compiler_ir(*args, **kwargs)

    def experimental_get_tracing_count(self) -> int:
        """Graphs traced so far: janus's speculative graphs and `tf.function`-style traces."""
        traced = self._autograph.experimental_get_tracing_count() if self._autograph is not None else 0
        return self.counters["graphs_built"] + traced

    # Copied and pickled as the function it speculates is: `copy` keeps a function as it is, and
    # `pickle` stores a module's function by its name.
    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __reduce__(self):
        module = vars(sys.modules.get(self.__module__, types))
        name = next((name for name, value in module.items() if value is self), None)
        if name is not None or module.get(self.__qualname__.partition(".")[0]) is not self.python_function:
            return name or self.__qualname__
        return functools.partial(type(self), **self.options), (self.python_function,)   # a new one of it

    def _traced_function(self):
        """The function as `tf.function` makes it (AutoGraph, no speculation), made once."""
        with self._lock:
            if self._autograph is None:
                target, specs = self.python_function, (self.binding.specs if self.binding else None)
                obj = self.instance() if self.instance is not None else None
                if obj is not None:                     # an instance's function: bound to it, as obj.method
                    target, specs = _weakly_bound(target, obj), (specs[1:] if specs else None)
                self._autograph = tf.function(
                    target, autograph=True, jit_compile=self.jit_compile, reduce_retracing=self.reduce_retracing,
                    input_signature=specs if specs and specs[0] is not None else None)
            return self._autograph

    def _exported(self, obj):
        """What `tf.saved_model.save` finds on the object: the method as that `tf.function`, the
        instance's own, made once, so the save's repeated lookups find the same function; without
        an `input_signature`, traced for every argument signature seen so far."""
        own = self.instances.of(obj)
        if own is None:
            specs = self.binding.specs[1:] if self.binding and self.binding.specs[0] is None else None
            return tf.function(types.MethodType(self.python_function, obj), input_signature=specs, autograph=True)
        traced = own._traced_function()
        if own.binding is None:
            for args, kwargs in own._signatures_seen():     # args[0]: the instance's place
                traced.get_concrete_function(*args[1:], **kwargs)       # without `self`
        return traced

    def _remember_call(self, args, kwargs):
        """Keep the argument specs of a call run in Python, for an export without `input_signature`."""
        seen = self.__dict__.setdefault("_seen_calls", [])
        if len(seen) >= _SEEN_LIMIT or self.instance is None or not args:
            return
        try:            # the instance stays out: a spec must not keep it alive
            specs = tf.nest.map_structure(_spec_of, ((None,) + tuple(args[1:]), dict(kwargs)))
        except _NotExportable:
            return
        if specs not in seen:
            seen.append(specs)

    def _signatures_seen(self) -> list:
        """The argument specs of the graphs built (with their relaxed dimensions) and of the calls
        that ran in Python, each once."""
        out = []
        for graph in self.graphs:
            specs = _graph_specs(graph.signature)
            if specs is not None and specs not in out:
                out.append(specs)
        return out + [s for s in self.__dict__.get("_seen_calls", []) if s not in out]


class _NotExportable(Exception):
    pass


def _spec_of(value):
    if isinstance(value, tf.Tensor) and not isinstance(value, tf.Variable):
        return tf.TensorSpec(value.shape, value.dtype)
    if is_composite(value):
        return tf.type_spec_from_value(value)
    if value is None or type(value) in (bool, int, float, str):
        return value
    raise _NotExportable(type(value).__name__)


def _weakly_bound(fn, obj):
    """`fn` bound to `obj` as `obj.method` is, holding it weakly as `tf.function` holds the instance
    of a method: the function keeps this, and the class keeps the function."""
    ref = weakref.ref(obj)

    def bound(*args, **kwargs):
        return fn(ref(), *args, **kwargs)
    for name in ("__module__", "__name__", "__qualname__", "__doc__"):
        setattr(bound, name, getattr(fn, name))
    bound.__signature__ = inspect.signature(types.MethodType(fn, obj))
    return bound


def _graph_specs(sig):
    """The specs a graph's signature stands for, as (args, kwargs) with None in the instance's
    place; None when it fed trees, Python numbers as tensors (a `tf.function` export would take
    those as constants) or other objects."""
    leaves = []
    for leaf in sig.leaves:
        if leaf.path == Source.arg(0):
            leaves.append(None)
        elif leaf.kind is Feed.TENSOR:
            leaves.append(tf.TensorSpec(leaf.shape, leaf.dtype))
        elif leaf.kind in (Feed.COMPOSITE, Feed.SCALAR):
            leaves.append(leaf.value)
        else:
            return None
    items, kw = sig.template
    return tuple(rebuild(t, leaves) for t in items), {k: rebuild(t, leaves) for k, t in kw.items()}
