"""The attributes of library objects a build calls, put back when the build fails.

Library methods are called while the graph is traced, and they may change their object before
the trace fails: Keras's optimizer sets `built = True` in `apply_gradients` and then makes its
slot variables, which no graph may do, so the build stops there.  Eager then runs the call, and
would find an optimizer that says it is built and has no slots.  So the object's attributes, as
they were before the build first called one of its library methods, are put back when the
build fails: a failed build changes nothing, as a failed guard changes nothing.

TensorFlow's own state is kept so too: traced, `tf.map_fn`, `tf.scan` and the v1 RNNs set the
variable scope's caching device and reset it only when they return.  That scope object is shared
with eager, so a trace that stops inside one (the build finds what it cannot stage) would leave
eager's `tf.recompute_grad` raising "Caching devices is not yet supported"."""
from __future__ import annotations

import contextlib
import types

import tensorflow as tf

_MISSING = object()


def note(ctx, f):
    """Keep the attributes of the object whose library method `f` the build is about to call."""
    owner = f.__self__ if isinstance(f, types.MethodType) else None
    attrs = getattr(owner, "__dict__", None)
    if type(attrs) is dict and id(owner) not in ctx.library_before:
        ctx.library_before[id(owner)] = (owner, dict(attrs))


def restore(ctx):
    """Put back the attributes the build's library calls changed (see the module docstring)."""
    for owner, before in ctx.library_before.values():
        attrs = owner.__dict__
        for name in [n for n in attrs if n not in before]:
            del attrs[name]
        for name, value in before.items():
            if attrs.get(name, _MISSING) is not value:
                attrs[name] = value
    ctx.library_before.clear()


@contextlib.contextmanager
def variable_scope_kept():
    """Put back the variable scope's caching device when the trace inside ends, however it ends
    (see the module docstring)."""
    scope = tf.compat.v1.get_variable_scope()
    before = scope.caching_device
    try:
        yield
    finally:
        if scope.caching_device is not before:
            with tf.Graph().as_default():          # (eager refuses to set it, even to None)
                scope.set_caching_device(before)
