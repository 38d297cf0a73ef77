"""Leaves a graph returns as tensors where eager returned Python scalars, made Python scalars.

A recursion whose parameter is a Python number in some frames and a tensor in others may return
a tensor where eager returns a Python number; the call's result is then converted to the types
the last profiled call returned, leaf by leaf, but only within a kind (an int from an integer
tensor, a float from a floating one, a bool from a bool), so no value is rounded.  A leaf whose
type differed between profiled calls is not converted.
"""
from __future__ import annotations

import tensorflow as tf

_PY_SCALARS = (bool, int, float)


def type_template(value):
    """The types of a result's leaves, through lists, tuples and dicts."""
    if type(value) in (list, tuple):
        return (type(value), [type_template(v) for v in value])
    if type(value) is dict:
        return (dict, {k: type_template(v) for k, v in value.items()})
    return type(value)


VARIED = "varied"          # a leaf whose type differed between profiled calls: left as the graph gives it


def merged(old, new):
    """The template of the profiled calls so far: where two calls returned different types at a
    leaf (a Python float on a call whose loop ran no iteration, a tensor on the others), that
    leaf is `VARIED` and no call's result is converted there."""
    if old is None or old == new:
        return new
    if isinstance(old, tuple) and isinstance(new, tuple) and old[0] is new[0]:
        kind, a, b = old[0], old[1], new[1]
        if kind in (list, tuple) and len(a) == len(b):
            return (kind, [merged(x, y) for x, y in zip(a, b)])
        if kind is dict and a.keys() == b.keys():
            return (kind, {k: merged(a[k], b[k]) for k in a})
    return VARIED


def match_types(value, template):
    """`value` with its scalar tensor leaves converted to the Python types of `template`."""
    if template is None or template is VARIED:
        return value
    if isinstance(template, tuple):
        kind, inner = template
        if type(value) is kind and kind in (list, tuple) and len(value) == len(inner):
            return kind(match_types(v, t) for v, t in zip(value, inner))
        if type(value) is dict and kind is dict and value.keys() == inner.keys():
            return {k: match_types(v, inner[k]) for k, v in value.items()}
        return value
    if template in _PY_SCALARS and isinstance(value, tf.Tensor) and value.shape.rank == 0 \
            and _same_kind(template, value.dtype):
        return template(value.numpy())
    return value


def _same_kind(template, dtype) -> bool:
    """Whether a tensor of `dtype` holds what a Python `template` number holds without rounding
    (an int from an integer tensor, never from a float one)."""
    if template is bool:
        return dtype == tf.bool
    if template is int:
        return dtype.is_integer
    return dtype.is_floating if template is float else False

