"""janus: run imperative TensorFlow-eager functions as speculative graphs.

    @janus.speculate
    def step(x): ...

The first calls run eagerly under the profiler; later calls run a graph
specialised on what the profile saw, guarded, with the original Python as the
fallback.  See DESIGN.md for the architecture.
"""
from __future__ import annotations

import functools
import types

from codegen.errors import ConversionError, JanusError, Reason, StagingError
from profiler.library import is_user_function

from janus import testing
from janus.exactness import keep_eager_arithmetic
from janus.explain import Explanation, explain
from janus.function import REGISTRY, SpeculativeFunction
from janus.report import render_all, report_all_data

__all__ = ["speculate", "report", "explain", "Explanation", "SpeculativeFunction", "ConversionError",
           "StagingError", "JanusError", "Reason", "testing"]

keep_eager_arithmetic()

_OPTIONS = {"profile_runs", "max_graphs", "input_signature", "jit_compile", "reduce_retracing", "strict",
            "unroll_limit", "autograph", "experimental_follow_type_hints", "experimental_implements",
            "experimental_autograph_options", "experimental_attributes", "experimental_relax_shapes",
            "experimental_compile", "name"}
_IGNORED = {"autograph", "experimental_follow_type_hints", "experimental_implements",
            "experimental_autograph_options", "experimental_attributes", "name"}
# tf.function's deprecated spellings, with its meaning: the old name, where given, wins.
_ALIASES = {"experimental_relax_shapes": "reduce_retracing", "experimental_compile": "jit_compile"}


def speculate(fn=None, **options):
    """Drop-in for `@tf.function`: `@janus.speculate` or `@janus.speculate(profile_runs=2, ...)`."""
    unknown = set(options) - _OPTIONS
    if unknown:
        raise TypeError(f"janus.speculate got unexpected option(s) {sorted(unknown)}; "
                        f"accepted: {sorted(_OPTIONS - _IGNORED)}")
    options = {k: v for k, v in options.items() if k not in _IGNORED}
    for old, new in _ALIASES.items():
        value = options.pop(old, None)
        if value is not None:
            options[new] = value

    def wrap(f):
        if isinstance(f, types.MethodType):           # obj.method: the function, bound to obj
            if isinstance(f.__func__, SpeculativeFunction):
                return f
            bound = dict(options)
            if bound.get("input_signature") is not None:     # as in tf.function, it leaves out self
                bound["input_signature"] = (None, *bound["input_signature"])
            return types.MethodType(SpeculativeFunction(f.__func__, **bound), f.__self__)
        if isinstance(f, functools.partial):
            speculated = _Partial(wrap(f.func))
            speculated.__setstate__((speculated.func, f.args, f.keywords, None))   # the very keywords dict:
            return speculated                                          # a change to it in place is seen
        call = getattr(f, "__call__", None)
        if not isinstance(f, (types.FunctionType, type)) and isinstance(call, types.MethodType):
            if not isinstance(call.__func__, types.FunctionType) or is_user_function(call.__func__):
                return wrap(call)                     # a callable object: its __call__, bound to it
            return SpeculativeFunction(_calling(f), **options)   # a Keras layer or model: through its __call__
        return SpeculativeFunction(f, **options)

    return wrap(fn) if fn is not None else wrap


def _calling(obj):
    """A function calling `obj` whose `__call__` is a framework's (a Keras layer or model): the
    framework's machinery runs as it is, and the user's `call` behind it is converted."""
    def call_object(*args, **kwargs):
        return obj(*args, **kwargs)
    call_object.__qualname__ = call_object.__name__ = f"{type(obj).__name__}.__call__"
    return call_object


class _Partial(functools.partial):
    """`functools.partial` of a speculated function; `report()`, `stats()` and the rest are its."""

    def __getattr__(self, name):
        return getattr(self.func, name)


def report(format: str = "text"):
    """Reports of every speculated function in the process, most time spent first.

    `format="text"` returns a str; `format="json"` returns `{"schema": 1, "functions": [...]}`,
    each entry `fn.report(format="json")` (keys in `janus.report`'s module docstring)."""
    if format == "text":
        return render_all(list(REGISTRY))
    if format == "json":
        return report_all_data(list(REGISTRY))
    raise ValueError(f"janus.report(format={format!r}): format is 'text' or 'json'")
