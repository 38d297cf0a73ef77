"""A call into Python that is not TensorFlow (an environment's `step`, a library's function, a
random draw) as a Python call inside the graph.

Eager runs such a call on every call of the function, so a graph cannot run it once while it is
built.  Where the profile saw the call return one structure every time (a tuple of NumPy
arrays, Python numbers, and other objects), the graph calls the function itself through a
`tf.numpy_function` op while it runs, and holds its results as the stand-ins eager's values
have in a graph: a NumPy array as a `PyArray`, a Python number as a `PyNumber`, anything else as
an `OutsideValue` that may not be used while building.  After the call returns, a `CALL_RESULT`
guard checks that the result has that structure (otherwise the run fails, the call runs in
Python, and the next build leaves the call in Python).  A run that fails after the call does
not run it again: the re-run in Python answers the call with its recorded result
(`codegen.graph.python_calls`), at the same source span.
"""
from __future__ import annotations

import dis
import sys

import numpy as np
import tensorflow as tf

from codegen.assumptions import Kind
from codegen.errors import ConversionError, Reason
from codegen.operators.arrays import PyArray
from codegen.operators.builtins import made_in_this_call, pending_effects
from codegen.operators.context import current
from codegen.operators.numbers import PyNumber
from codegen.operators.values import OutsideValue, is_symbolic
from profiler import SiteKind
from profiler.values import structure

#: `try_call`'s answer when the call cannot run inside the graph.
NOT_CONVERTED = object()

_NUMBERS = {"bool": (bool, tf.bool), "int": (int, tf.int64), "float": (float, tf.float64)}


class OutsideCall:
    """What a re-run matches a recorded call by: the function and the call's source span."""

    def __init__(self, function, filename: str, span: tuple):
        self.function, self.filename, self.span = function, filename, span


class PythonCall:
    """The function a graph's `tf.numpy_function` op calls: rebuilds the call's arguments from
    the arrays it is given, calls the user's function, and returns the result's leaves."""

    def __init__(self, record: OutsideCall, args_template, kwargs_template, expected, guard_message: str):
        self.record, self.expected, self.guard_message = record, expected, guard_message
        self.args_template, self.kwargs_template = args_template, kwargs_template

    def run(self, *arrays):
        """The user's call, on Python values rebuilt from the graph's arrays."""
        args = _rebuild(self.args_template, arrays)
        kwargs = {k: _rebuild(v, arrays) for k, v in self.kwargs_template.items()}
        return self.record.function(*args, **kwargs)

    def leaves(self, result) -> list:
        """The arrays the graph gets from `result`; the guard's message when its structure is not
        the profiled one (or an int leaves int64)."""
        if structure(result) != self.expected:
            raise ValueError(self.guard_message)
        out = []
        _leaves(result, self.expected, out)
        for x in out:
            if type(x) is int and not -2 ** 63 <= x < 2 ** 63:
                raise ValueError(self.guard_message)
        return [np.asarray(x, np.int64 if type(x) is int else None) for x in out]

    def __call__(self, *arrays):
        return self.leaves(self.run(*arrays))


def _leaves(value, expected, out):
    if expected[0] in ("tuple", "list"):
        for v, e in zip(value, expected[1]):
            _leaves(v, e, out)
    elif _carried(expected):
        out.append(value)


def _carried(leaf) -> bool:
    return leaf[0] in ("array", "scalar") or leaf[0] in _NUMBERS


def _rebuild(template, arrays):
    kind = template[0]
    if kind == "const":
        return template[1]
    if kind == "seq":
        return template[1](_rebuild(t, arrays) for t in template[2])
    value = arrays[template[1]]
    if kind == "number":
        return template[2](value.item())
    return tf.constant(value)                   # eager hands the function a tensor


def try_call(f, args, kwargs):
    """The graph's stand-in for the result of `f(*args, **kwargs)` called in Python while the graph
    runs; `NOT_CONVERTED` when it cannot be one (the caller then stops the build as before)."""
    ctx = current()
    if ctx.in_machine or ctx.dry_run or not ctx.frames:
        return NOT_CONVERTED
    filename, span = _call_site(ctx)
    fprof = ctx.profile.functions.get(ctx.frame.converted.key) if ctx.profile is not None else None
    site = _profiled_site(fprof, span) if fprof is not None and span is not None else None
    if site is None or len(site.value.structures) != 1:
        return NOT_CONVERTED
    span = site.span                # (the span the instrumented re-run sees at the call)
    expected = next(iter(site.value.structures))
    key = (ctx.frame.converted.key, Kind.CALL_RESULT.name, span)
    if expected is None or key in ctx.relaxed or _holds_list(expected) or site.value.repeated:
        return NOT_CONVERTED        # (a list, or an array returned again, is the library's own object)
    where = ctx.user_line()
    if pending_effects(ctx) or _made_by_the_call(ctx, f):
        raise ConversionError(Reason("python-call", where, "a Python call inside the graph would run before the "
                                     "state writes or prints before it, or on an object the function made",
                                     "it runs in Python between graph segments"))
    inputs = []
    args_t = _template(ctx, tuple(args), inputs)
    kwargs_t = {k: _template(ctx, v, inputs) for k, v in kwargs.items()}
    if args_t is None or None in kwargs_t.values():
        return NOT_CONVERTED
    name = getattr(f, "__qualname__", None) or type(f).__name__
    assumption = ctx.assume(Kind.CALL_RESULT, key, f"`{name}(...)` returns {_describe(expected)}", "its profiled "
                            "structure", where, fallback="python-call")
    call = PythonCall(OutsideCall(f, filename, span), args_t, kwargs_t, expected, assumption.message())
    dtypes = []
    _leaf_dtypes(expected, dtypes)
    outs = tf.numpy_function(call, inputs, dtypes, stateful=True)
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    return _stand_in(expected, outs[:len(dtypes)], where)


def _call_site(ctx):
    """The user's file and the span of the call being built: the builder keeps the user's file
    and each call's position, so its frame's current instruction has them."""
    filename = ctx.frame.converted.filename
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename != filename:
        frame = frame.f_back
    if frame is None or frame.f_code.co_code[frame.f_lasti] == dis.opmap["CALL_FUNCTION_EX"]:
        return filename, None           # (a call with `*args` or `**kwargs`: the re-run cannot answer it)
    lineno, end_lineno, col, end_col = list(frame.f_code.co_positions())[frame.f_lasti // 2]
    return filename, (lineno, col, end_lineno, end_col)


def _profiled_site(fprof, span):
    """The profile's site of the call at `span`.  The builder's position of a call written over
    several lines, or made inside a lowering's `lambda`, may start elsewhere, but a call ends at
    its own closing parenthesis, which no other call shares."""
    site = fprof.site(SiteKind.CALL, span)
    if site is None:
        ends = [s for s in fprof.sites_of(SiteKind.CALL) if s.span[2:] == span[2:]]
        site = ends[0] if len(ends) == 1 else None
    return site


def _made_by_the_call(ctx, f) -> bool:
    if id(f) in ctx.outside:        # read from outside (a module's function, a bound method it holds)
        return False
    owner = getattr(f, "__self__", None)
    if owner is not None and not isinstance(owner, type(sys)):
        return made_in_this_call(ctx, owner)
    return made_in_this_call(ctx, f) if not hasattr(f, "__module__") or hasattr(f, "__code__") else False


def _template(ctx, value, inputs):
    """How the call rebuilds `value` from the graph's arrays; None when it cannot."""
    if is_symbolic(value) or isinstance(value, PyNumber):
        inputs.append(value.tensor if isinstance(value, PyNumber) else value)
        return ("number", len(inputs) - 1, value.ptype) if isinstance(value, PyNumber) else ("tensor", len(inputs) - 1)
    if type(value) is tuple or (type(value) is list and id(value) not in ctx.outside):
        if id(value) in ctx.heap.by_copy:
            return None
        children = [_template(ctx, v, inputs) for v in value]
        return None if None in children else ("seq", type(value), children)
    if (type(value).__module__ or "").startswith("codegen.") or id(value) in ctx.heap.by_copy \
            or made_in_this_call(ctx, value):
        return None                 # a stand-in, the build's copy, or an object this call made
    return ("const", value)


def _holds_list(expected) -> bool:
    return expected[0] == "list" or expected[0] == "tuple" and any(map(_holds_list, expected[1]))


def _leaf_dtypes(expected, out):
    if expected[0] in ("tuple", "list"):
        for child in expected[1]:
            _leaf_dtypes(child, out)
    elif expected[0] in ("array", "scalar"):
        out.append(tf.as_dtype(expected[1]))
    elif expected[0] in _NUMBERS:
        out.append(_NUMBERS[expected[0]][1])


def _stand_in(expected, outs, where):
    kind = expected[0]
    if kind in ("tuple", "list"):
        items = [_stand_in(child, outs, where) for child in expected[1]]
        return tuple(items) if kind == "tuple" else items
    if kind == "none":
        return None
    if kind == "other":
        return OutsideValue(expected[1], where)
    tensor = outs.pop(0)
    if kind in _NUMBERS:
        tensor.set_shape([])
        return PyNumber(tensor, _NUMBERS[kind][0], computed=True)     # (no fed value to specialise on)
    tensor.set_shape(expected[2] if kind == "array" else [])
    return PyArray(tensor, scalar=kind == "scalar")


def _describe(expected) -> str:
    kind = expected[0]
    if kind in ("tuple", "list"):
        inner = ", ".join(_describe(c) for c in expected[1])
        return f"({inner})" if kind == "tuple" else f"[{inner}]"
    if kind == "array":
        return f"array {expected[1]} {tuple(expected[2])}"
    if kind == "scalar":
        return f"numpy {expected[1]}"
    return expected[1].rsplit(".", 1)[-1] if kind == "other" else kind
