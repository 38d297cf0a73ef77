"""Values a graph reads when it is called, not when it is built.

The interpreter's recursion limit, a Python number or a tensor the program keeps outside the
function: the graph takes them as deferred captures (`FuncGraph.capture_call_time_value`), whose
closures TensorFlow runs on every call and then checks against their spec, a cast costing about
10 us a value on this machine — more than the rest of janus's own work on a small graph's call.

`feed` makes such a capture and records its closure beside it; `Feeds.of` pairs the recorded
closures with the function's captured inputs once, after the trace (and forgets them);
`Feeds.values` then runs each closure itself.  A value that is an eager tensor of exactly the spec's dtype and (fully known)
shape is fed as it is, which is what TensorFlow's cast would have returned; any other value goes
through the spec's own `to_tensors`, which casts or raises as TensorFlow's call would.  Each
closure runs once per call, as under TensorFlow.
"""
from __future__ import annotations

import threading
import weakref

import tensorflow as tf

from codegen.operators.values import EAGER

_RECORDED: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()     # graph -> {key: closure}


def feed(graph, closure, spec: tf.TensorSpec, keys: dict | None = None):
    """`graph.capture_call_time_value(closure, spec)`, recorded for `Feeds`.  `keys`: where the
    placeholder's key is noted (by its ref), so a result that is the placeholder comes back as
    the very object the call fed (`fed_value`)."""
    key = FedKey()

    def read():
        value = closure()
        if key.returned:                       # (this thread's call: the objects it fed, by key)
            _fed_now()[key] = value
        return value
    placeholder = graph.capture_call_time_value(read, spec, key=key)
    _RECORDED.setdefault(graph, {})[key] = read
    if keys is not None:
        keys[placeholder.ref()] = key
    return placeholder


class FedKey:
    """Names one value fed at the call.  Only a value the graph hands back (`returned`, set when
    the write-back is planned) is kept for `fed_value`, until it is taken there: the thread's table
    holds no value past the call that took it."""
    __slots__ = ("returned",)

    def __init__(self):
        self.returned = False


_THREAD = threading.local()


def _fed_now() -> dict:
    found = getattr(_THREAD, "fed", None)
    if found is None:
        found = _THREAD.fed = {}
    return found


def fed_value(key, output):
    """The object this thread's latest call fed for `key` (eager returns the caller's own
    tensor), or `output`, the graph's copy of it, where none was fed as it is."""
    value = _fed_now().pop(key, None)
    return value if value is not None and type(value) is type(output) and value.dtype == output.dtype \
        and value.shape == output.shape else output


def forget_fed(concrete):
    """Drop what this thread kept of the values `concrete`'s failed run fed: no write-back takes them."""
    fed = getattr(_THREAD, "fed", None)
    if fed:
        for key in concrete.graph.function_captures.by_ref_external:
            if type(key) is FedKey:
                fed.pop(key, None)


class _Fed:
    __slots__ = ("closure", "spec", "dtype", "shape")

    def __init__(self, closure, spec):
        self.closure, self.spec = closure, spec
        self.dtype = spec.dtype
        self.shape = tuple(spec.shape.as_list()) if spec.shape.is_fully_defined() else None


class Feeds:
    """How a concrete function's captured inputs are made on an eager call."""

    def __init__(self, plan):
        self._plan = plan

    @classmethod
    def of(cls, concrete, traced) -> "Feeds | None":
        """The plan for `concrete`, or None when it captures what `feed` did not make (its inputs
        are then TensorFlow's `captured_inputs`).  `traced`: the graph `feed` was given, which is
        `concrete`'s own or that of a function it calls (a capture lifted into the caller keeps
        its key)."""
        recorded = _RECORDED.pop(traced, {})
        wrapped = {id(external): recorded[key]
                   for key, external in concrete.graph.function_captures.by_ref_external.items() if key in recorded}
        plan = []
        for x in concrete._captured_inputs:          # noqa: SLF001 - the list `captured_inputs` evaluates
            if callable(x):
                spec = getattr(x, "output_spec", None)
                if id(x) not in wrapped or type(spec) is not tf.TensorSpec:
                    return None
                plan.append(_Fed(wrapped[id(x)], spec))
            elif isinstance(x, tf.Tensor):
                plan.append(x)
            else:
                return None
        return cls(plan)

    def values(self) -> list:
        out = []
        for x in self._plan:
            if type(x) is not _Fed:
                out.append(x)
                continue
            value = x.closure()
            if type(value) is EAGER and value.dtype is x.dtype and value._shape_tuple() == x.shape:  # noqa: SLF001
                out.append(value)
            else:
                out.extend(x.spec.to_tensors(value))
        return out
