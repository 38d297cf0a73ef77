"""The `UNCHANGED` check: outside state a graph reads after it calls Python stays as it was.

A graph reads outside Python state (a global, an attribute, a closure cell) once, when the call
starts: its value is an entry-checked constant or a tensor fed at entry.  A `tf.numpy_function`
the graph calls runs the user's Python in the middle of the run, and that Python may change the
state a later read sees in eager (`len(LOG)` after a call that appends to `LOG`, or a read in a
loop body whose next iteration follows the call).  Such *late* reads are snapshotted when the
graph starts, and after every Python call of the run the snapshot is compared with what the
state holds then; a difference fails the run at that call, and the call runs in Python with the
Python calls so far replayed (`codegen.graph.python_calls`), as a failed in-graph guard does.

A snapshot holds the value itself (compared by identity; equal numbers and strings count as
the same) and, for containers, snapshots of their items (lists, tuples, dicts, sets, NumPy
arrays, whose contents can change in place).  A value too large to compare cheaply on every
Python call (`too_large`) keeps the graph from reading it late at all.
"""
from __future__ import annotations

import numpy as np

LIMIT = 2000                  # items a late read's snapshot may hold (compared on every Python call)
_SCALARS = (int, float, bool, str, bytes, complex)
_TOO_LARGE = object()
GONE = object()               # the state was deleted (an attribute, a global, a cell's contents)


def snapshot(value):
    """What `same` compares `value` with later; `_TOO_LARGE` past `LIMIT` items or a deep nest."""
    return _snapshot(value, [LIMIT], 0)


def _snapshot(value, budget, depth):
    budget[0] -= 1
    if budget[0] < 0 or depth > 16:
        return _TOO_LARGE
    kind = type(value)
    if kind in (list, tuple):
        inner = [_snapshot(v, budget, depth + 1) for v in value]
        nested = inner
    elif kind is dict:
        inner = [(k, _snapshot(v, budget, depth + 1)) for k, v in value.items()]
        nested = [s for _, s in inner]
    elif kind in (set, frozenset):
        budget[0] -= len(value)
        inner, nested = frozenset(value), ()
    elif kind is np.ndarray:
        budget[0] -= value.size // 64
        inner, nested = value.copy(), ()
    else:
        return value, None
    if budget[0] < 0 or any(s is _TOO_LARGE for s in nested):
        return _TOO_LARGE
    return value, inner


def too_large(value) -> bool:
    return snapshot(value) is _TOO_LARGE


def same(snap, value) -> bool:
    """Whether `value` is still what `snap` was taken of (the same object, holding the same)."""
    if snap is _TOO_LARGE or snap is GONE:
        return snap is value
    old, inner = snap
    if value is not old:
        return type(value) is type(old) and type(value) in _SCALARS and value == old
    if inner is None:
        return True
    kind = type(value)
    if kind in (list, tuple):
        return len(value) == len(inner) and all(same(s, v) for s, v in zip(inner, value))
    if kind is dict:
        return len(value) == len(inner) and all(k in value and same(s, value[k]) for k, s in inner)
    if kind in (set, frozenset):
        return value == inner
    return value.shape == inner.shape and value.dtype == inner.dtype and bool(
        np.array_equal(value, inner, equal_nan=value.dtype.kind in "fc"))


def restore(snap):
    """Put back, in place, what the containers of `snap` held; returns the value `snap` was of."""
    old, inner = snap
    kind = type(old)
    if inner is None or same(snap, old):
        return old
    if kind is list:
        old[:] = [restore(s) for s in inner]
    elif kind is dict:
        old.clear()
        old.update((k, restore(s)) for k, s in inner)
    elif kind is set:
        old.clear()
        old.update(inner)
    elif kind is tuple:
        for s in inner:
            restore(s)
    elif kind is np.ndarray and old.shape == inner.shape and old.flags.writeable:
        old[...] = inner
    return old


class Watch:
    """The outside state one graph run reads, for the Python the run calls.

    `reads` is `[(reader, writer, message, forced)]`: a read with a message is a late read (its
    state must not change, `UNCHANGED`), one without is read before any Python call, watched
    only so that a re-run can start from it.  The state is snapshotted when the run starts;
    `after_call` compares it after each Python call.  When the run fails and the call runs
    again in Python, replaying the Python calls (`codegen.graph.python_calls`), `rewind` puts
    the state back as the run found it, and `apply` puts back what a replayed call left."""

    def __init__(self, reads):
        self.reads = reads
        self.entry = [_TOO_LARGE if forced else _taken(read) for read, _, _, forced in reads]
        self.now = list(self.entry)

    def after_call(self):
        """(the message of the first late read whose state changed, or None; the state now if
        any of it changed, else None)."""
        message, changed = None, False
        for i, (read, _, text, _) in enumerate(self.reads):
            if not same(self.now[i], _value(read)):
                changed = True
                self.now[i] = _taken(read)
                message = message or text
        return message, (list(self.now) if changed else None)

    def rewind(self):
        self.apply(self.entry)

    def apply(self, state):
        """Put `state` back (`write` gets `GONE` for state to delete)."""
        for (read, write, _, _), snap in zip(self.reads, state):
            if snap is _TOO_LARGE:
                continue
            now = _value(read)
            if snap is GONE:
                if now is not GONE:
                    write(GONE)
                continue
            if now is not snap[0]:
                write(snap[0])
            restore(snap)


def _value(read):
    try:
        return read()
    except (AttributeError, KeyError, ValueError, NameError):      # deleted (ValueError: an empty cell)
        return GONE


def _taken(read):
    value = _value(read)
    return GONE if value is GONE else snapshot(value)
