"""Binding a call's arguments to an `input_signature`, as `tf.function` binds them.

With an `input_signature`, `tf.function` converts each argument it covers to a tensor of the
spec's dtype (a Python list, number or NumPy array becomes a tensor) and refuses, with a
`TypeError`, an argument whose dtype or shape does not fit, and positional arguments the
signature does not cover.  janus does the same before the call runs, eagerly or as a graph, so
the function body sees what it would see under `tf.function`, and a mismatch is reported at
the call instead of deep inside TensorFlow.
"""
from __future__ import annotations

import inspect

import tensorflow as tf


class InputSignature:
    """The specs of a function's leading parameters (None where a parameter has none: `self`)."""

    def __init__(self, fn, specs):
        self.user_specs = tuple(s for s in specs if s is not None)
        self.fn = fn
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        specs = tuple(specs)
        if specs and specs[0] is not None and params and params[0].name in ("self", "cls") \
                and len(params) == len(specs) + 1:
            specs = (None, *specs)             # a method decorated in its class: as in tf.function, not self
        self.specs = specs
        self.params = params[:len(specs)]

    def bind(self, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        """`args` and `kwargs` with every covered argument conformed to its spec."""
        if len(args) > len(self.specs):
            self._refuse(f"{len(args)} positional arguments, but its input_signature covers {len(self.specs)}")
        args = tuple(self._conform(a, s, self.params[i].name) for i, (a, s) in enumerate(zip(args, self.specs)))
        kwargs = dict(kwargs)
        for param, spec in zip(self.params[len(args):], self.specs[len(args):]):
            if param.name in kwargs:
                kwargs[param.name] = self._conform(kwargs[param.name], spec, param.name)
        return args, kwargs

    def _conform(self, value, spec, path: str):
        if spec is None:
            return value
        if isinstance(spec, (list, tuple)):
            if not isinstance(value, (list, tuple)) or len(value) != len(spec):
                self._refuse(f"argument `{path}` is {_describe(value)}, but its input_signature expects "
                             f"a sequence of {len(spec)}")
            out = [self._conform(v, s, f"{path}[{i}]") for i, (v, s) in enumerate(zip(value, spec))]
            return type(value)(out) if not hasattr(value, "_fields") else type(value)(*out)
        if isinstance(spec, dict):
            if not isinstance(value, dict) or set(value) != set(spec):
                self._refuse(f"argument `{path}` is {_describe(value)}, but its input_signature expects "
                             f"a dict with keys {sorted(spec)}")
            return type(value)((k, self._conform(value[k], spec[k], f"{path}[{k!r}]")) for k in value)
        if isinstance(spec, tf.TensorSpec):
            return self._tensor(value, spec, path)
        if not spec.is_compatible_with(value):
            self._refuse(f"argument `{path}` is {_describe(value)}, not compatible with {spec}")
        return value

    def _tensor(self, value, spec: tf.TensorSpec, path: str):
        if not isinstance(value, (tf.Tensor, tf.Variable)):
            try:
                value = tf.convert_to_tensor(value, spec.dtype)
            except (TypeError, ValueError) as exc:
                self._refuse(f"argument `{path}` ({_describe(value)}) does not convert to {spec.dtype.name}: "
                             f"{str(exc).splitlines()[0]}")
        if value.dtype != spec.dtype or not spec.shape.is_compatible_with(value.shape):
            self._refuse(f"argument `{path}` is {_describe(value)}, but its input_signature expects "
                         f"{spec.dtype.name} of shape {spec.shape}")
        return value

    def _refuse(self, problem: str):
        code = self.fn.__code__
        raise TypeError(f"{self.fn.__qualname__}() ({code.co_filename}:{code.co_firstlineno}): {problem}")


def _describe(value) -> str:
    if isinstance(value, (tf.Tensor, tf.Variable)):
        return f"a {value.dtype.name} tensor of shape {value.shape}"
    return f"a {type(value).__name__}"
