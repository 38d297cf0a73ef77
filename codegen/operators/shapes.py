"""Static shapes as Python reads them: eager's numbers, never a relaxed `None`.

Once a dimension is relaxed (the batch size varied), the graph's static
shape has `None` where eager has a number.  User code reading `x.shape`
gets a `PartialShape`: known dimensions read as usual; reading an unknown
one as a number, iterating, comparing or printing the shape stops the build
(`shape-read`), and janus specialises the arguments' dimensions again (a
speculated constant with an entry guard), so Python sees eager's numbers.
TensorFlow's own code never sees this class: it reads `tensor.shape`
directly.
"""
from __future__ import annotations

import tensorflow as tf

from codegen.operators.context import current


def _unknown(what: str):
    current().fail("shape-read", f"{what} of a shape whose dimensions vary between calls",
                   "janus keeps those dimensions specialised; use tf.shape(x) for a dynamic size")


class PartialShape(tf.TensorShape):
    """A static shape with unknown dimensions, handed to user code."""

    def __getitem__(self, key):
        result = super().__getitem__(key)
        if isinstance(key, slice):
            return guarded(result)
        if result is None:
            _unknown(f"dimension {key}")
        return result

    def _whole(self, what):
        if not self.is_fully_defined():
            _unknown(what)

    def as_list(self):
        self._whole("as_list()")
        return super().as_list()

    def __iter__(self):
        self._whole("iterating")
        return super().__iter__()

    def __eq__(self, other):
        self._whole("comparing")
        return super().__eq__(other)

    def __ne__(self, other):
        self._whole("comparing")
        return super().__ne__(other)

    __hash__ = tf.TensorShape.__hash__

    def __str__(self):
        self._whole("the text")
        return super().__str__()

    def __repr__(self):
        self._whole("the text")
        return super().__repr__()


def guarded(shape):
    """`shape` as user code may read it: itself when every dimension is known."""
    if shape.rank is not None and shape.is_fully_defined():
        return shape
    return PartialShape(shape)
