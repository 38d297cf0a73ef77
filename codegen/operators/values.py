"""Values of generated builders that every operator family shares: what is a symbolic
tensor, and the value of a local before its first assignment."""
from __future__ import annotations

import tensorflow as tf
from tensorflow.python.framework.ops import EagerTensor

# The class itself, not `type(tf.constant(0))`: creating a tensor at import would initialise
# TensorFlow's runtime, after which the user can no longer configure devices.
EAGER = EagerTensor

# Code objects of every function a compiled builder defines: a function made from one of them
# while tracing (a helper the user's function defines) shares the builder's own variables, so
# its free variables are the build's current values, not state from outside.
BUILDER_CODE: set = set()


def is_symbolic(x) -> bool:
    """A graph tensor (not an eager one)."""
    return isinstance(x, tf.Tensor) and type(x) is not EAGER


def is_composite(x) -> bool:
    """A composite tensor (ragged, sparse, per-replica) that a graph takes by its component
    tensors, as tf.function takes it; variables, datasets and iterators are composite tensors
    too, but janus reads them as the objects they are."""
    return isinstance(x, tf.__internal__.CompositeTensor) and not isinstance(
        x, (tf.Variable, tf.data.Dataset, tf.data.Iterator))


class _Marker:
    """A value of generated code with one instance per class (compared with `is`)."""

    _instance = None

    def __new__(cls):
        if cls.__dict__.get("_instance") is None:
            cls._instance = super().__new__(cls)
        return cls._instance


class Undefined(_Marker):
    """The value of a local before its first assignment, in generated code."""

    def __repr__(self):
        return "UNDEF"

    def __bool__(self):
        raise UnboundLocalError("janus: a variable is read before it is assigned on this path")


UNDEF = Undefined()


class NoReturn(_Marker):
    """The result of a function that has not reached a `return` yet, in generated code.

    A `tf.cond` whose one side returned and whose other did not carries the result with a
    zero placeholder on the side that did not; `returned` guards that the placeholder is never
    what the function gives back."""

    def __repr__(self):
        return "NO_RETURN"


NO_RETURN = NoReturn()
