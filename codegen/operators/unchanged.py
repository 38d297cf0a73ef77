"""The `UNCHANGED` check: outside state a graph reads after it calls Python stays as it was.

A graph reads outside Python state (a global, an attribute, a closure cell, an argument's list
or array) once, when the call starts: its value is an entry-checked constant or a tensor fed at
entry.  A `tf.numpy_function` the graph calls runs the user's Python in the middle of the run,
and that Python may change the state a later read sees in eager (`len(LOG)` after a call that
appends to `LOG`, or a read in a loop body whose next iteration follows the call).  Such *late*
reads are snapshotted when the graph starts, and after every Python call of the run the
snapshot is compared with what the state holds then; a difference fails the run at that call,
and the call runs in Python with the Python calls so far replayed (`codegen.graph.python_calls`),
as a failed in-graph guard does.  The reads before any call are snapshotted too, so that re-run
starts from the state the run found.

A snapshot holds the value itself (compared by identity; equal ints and strings, and floats
equal bit for bit, count as the same) and, for containers, snapshots of their items (lists,
tuples, dicts in key order, sets, NumPy arrays bit for bit), whose contents can change in place.
A late read too large to compare cheaply on every Python call (`LIMIT` items), or an early one
too large to copy once per run (`EARLY_LIMIT`), keeps the graph from reading it at all.
"""
from __future__ import annotations

import types

import numpy as np

LIMIT = 2000                  # items a late read's snapshot may hold (compared on every Python call)
EARLY_LIMIT = 100_000         # items an early read's snapshot may hold (taken once per run)
_SCALARS = (int, bool, str, bytes)
_TOO_LARGE = object()
GONE = object()               # the state was deleted (an attribute, a global, a cell's contents)


def snapshot(value, limit=LIMIT):
    """What `same` compares `value` with later; `_TOO_LARGE` past `limit` items or a deep nest."""
    return _snapshot(value, [limit], 0)


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


def too_large(value, limit=LIMIT) -> bool:
    return snapshot(value, limit) is _TOO_LARGE


def _same_fresh(value, old) -> bool:
    """Two objects that stand for the same state: equal ints and strings, floats equal bit for bit
    (-0.0 is not 0.0, a NaN is itself), NumPy scalars too, a bound method of the same function on
    the same object (a new one at every read), tuples of such."""
    kind = type(value)
    if kind is not type(old):
        return False
    if kind in _SCALARS:
        return value == old
    if kind in (float, complex):
        return repr(value) == repr(old)
    if isinstance(value, np.generic):                       # NumPy scalars, bit for bit as well
        return value.tobytes() == old.tobytes()
    if kind is types.MethodType:
        return value.__self__ is old.__self__ and value.__func__ is old.__func__
    if kind is tuple:
        return len(value) == len(old) and all(a is b or _same_fresh(a, b) for a, b in zip(value, old))
    return False


def same_value(a, b) -> bool:
    """The same object, or one that stands for the same value (`_same_fresh`); no user `__eq__` runs."""
    return a is b or _same_fresh(a, b)


def same(snap, value) -> bool:
    """Whether `value` is still what `snap` was taken of (the same object, holding the same)."""
    if snap is _TOO_LARGE or snap is GONE:
        return snap is value
    old, inner = snap
    if value is not old:
        return _same_fresh(value, old)
    if inner is None:
        return True
    kind = type(value)
    if kind in (list, tuple):
        return len(value) == len(inner) and all(same(s, v) for s, v in zip(inner, value))
    if kind is dict:
        return len(value) == len(inner) and all(k is k2 or _same_fresh(k, k2) for k, (k2, _) in zip(value, inner)) \
            and all(same(s, value[k]) for k, s in inner)
    if kind in (set, frozenset):
        return value == inner
    return value.shape == inner.shape and value.dtype == inner.dtype and value.tobytes() == inner.tobytes()


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
    elif kind is np.ndarray and old.flags.writeable:
        if old.shape != inner.shape and old.flags.owndata:
            old.resize(inner.shape, refcheck=False)          # (resized in place by the call)
        if old.shape == inner.shape:
            old[...] = inner
    return old


class Watch:
    """The outside state one graph run reads, for the Python the run calls.

    `reads` is `[(reader, writer, message, forced)]`: a read with a message is a late read (its
    state must not change, `UNCHANGED`), one without is read before any Python call, watched
    only so that a re-run can start from it; an argument has no writer (it is restored in
    place).  `variables` are the `tf.Variable`s the graph uses before its first Python call,
    watched in the same way.  The state is snapshotted when the run starts, and the late reads
    are compared after each Python call (`after_call`).  When the run fails and the call runs
    again in Python, replaying the Python calls (`codegen.graph.python_calls`), `finish` takes
    the state the run left, `rewind` puts back the state the run found, and `apply_final` puts
    back what the run left once the last replayed call is reached (no late read changed before
    that call, or the run would have failed there)."""

    def __init__(self, reads, variables=()):
        self.reads = reads
        self.entry = [_TOO_LARGE if forced else _taken(read, LIMIT if text else EARLY_LIMIT)
                      for read, _, text, forced in reads]
        self.final = None
        self.final_contents: list = []
        # tf.Variables the graph uses before its first Python call: their values when the run
        # starts and after its latest Python call (the graph's own writes after it are redone by
        # the re-run, so they are not part of what a replayed call leaves)
        self.variables = list(variables)
        self.variable_entry = [v.read_value() for v in self.variables]
        self.variable_final = None

    def after_python(self):
        """A Python call of the run returned or raised: note what it left in the variables."""
        if self.variables:
            self.variable_final = [v.read_value() for v in self.variables]

    def after_call(self):
        """The message of the first late read whose state changed since the run started, or None."""
        for (read, _, text, _), snap in zip(self.reads, self.entry):
            if text is not None and not same(snap, _value(read)):
                return text
        return None

    def finish(self):
        """Take the state as the run left it, and what the containers the run found hold now (a
        call may change one, then replace it)."""
        if self.final is not None:
            return
        self.final = [_taken(read, EARLY_LIMIT) for read, _, _, _ in self.reads]
        self.final_contents = [snapshot(snap[0], EARLY_LIMIT) for snap in self.entry
                               if snap is not _TOO_LARGE and snap is not GONE and snap[1] is not None]

    def rewind(self):
        self._apply(self.entry)
        for v, value in zip(self.variables, self.variable_entry):
            v.assign(value)

    def apply_final(self):
        if self.final is not None:
            for snap in self.final_contents:
                if snap is not _TOO_LARGE:
                    restore(snap)
            self._apply(self.final)
            self.final = None
            for v, value in zip(self.variables, self.variable_final or ()):
                v.assign(value)

    def _apply(self, state):
        """Put `state` back (`write` gets `GONE` for state to delete)."""
        for (read, write, _, _), snap in zip(self.reads, state):
            if snap is _TOO_LARGE:
                continue
            now = _value(read)
            if snap is GONE or same(snap, now):
                if snap is GONE and now is not GONE and write is not None:
                    write(GONE)
                continue
            if write is not None and now is not snap[0] and not _same_fresh(now, snap[0]):
                write(snap[0])
            restore(snap)


def _value(read):
    try:
        return read()
    except (AttributeError, KeyError, ValueError, NameError):      # deleted (ValueError: an empty cell)
        return GONE


def _taken(read, limit):
    value = _value(read)
    return GONE if value is GONE else snapshot(value, limit)
