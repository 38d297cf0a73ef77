"""Python's own protocols on a tree node stand-in (`trees.Pointer`): refused while a graph is built.

`hash(node)`, `len(node)`, iterating it, its text, a `==` or truth test that Python (not the
lowered operators) runs, would answer for the stand-in object, not for the node it stands for:
while a graph is built they stop the build, so the call runs in Python; elsewhere (janus's own
bookkeeping) they keep `object`'s meaning.
"""
from __future__ import annotations

import os
import sys

from codegen.errors import ConversionError, Reason
from codegen.operators.context import active

# janus's frames between the user's code and a builtin it relays (`jn.call`, the text builtins).
_RELAYS = frozenset(os.path.join(os.path.dirname(__file__), name) for name in ("calls.py", "text.py"))


def refuse(what: str):
    """Stop the build: `what` would run on the node object, which the graph has only as a row."""
    ctx = active()
    raise ConversionError(Reason("node-object", ctx.user_line() if ctx is not None else "", f"`{what}` of a tree "
                                 "node needs the node object (its hash, length, items, text, identity or class's "
                                 "`==`), which the graph has only as a row of its tables",
                                 "read the node's attributes, or compare nodes with `is`"))


def asked_by_user() -> bool:
    """Whether the caller of the stand-in's `__repr__` is the user's converted code (directly, an
    f-string, or through a builtin janus relays) while a graph is built; janus's and TensorFlow's
    own messages keep the stand-in's text."""
    ctx = active()
    if ctx is None or not ctx.frames:
        return False
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename in _RELAYS:
        frame = frame.f_back
    return frame is not None and frame.f_code.co_filename == ctx.frame.converted.filename


def protocol(what: str, default):
    """A dunder of the stand-in: refused while a graph is built, `default` elsewhere."""
    def method(self, *args):
        if active() is not None:
            refuse(what)
        return default(self, *args)
    return method


def no_protocol(self, *_):
    raise TypeError(f"'{type(self).__name__}' object does not support this operation")
