"""Test hooks: force the fallback path, or one assumption's failure, to prove the invariants.

    with janus.testing.forced_fallback():
        f(x)     # the graph runs, then is treated as failed: the variables it wrote are
                 # restored, its Python writes dropped, and the call runs eagerly

Used by the runtime tests, which run every function in both modes.
"""
from __future__ import annotations

import contextlib

from codegen import faults

_STATE = {"force_fallback": False}


def force_fallback_enabled() -> bool:
    return _STATE["force_fallback"]


@contextlib.contextmanager
def forced_fallback():
    previous = _STATE["force_fallback"]
    _STATE["force_fallback"] = True
    try:
        yield
    finally:
        _STATE["force_fallback"] = previous


@contextlib.contextmanager
def force_failure(kind: str | None = None, id: int | None = None):
    """Make in-graph guards of this kind (BRANCH, TRIP_COUNT) and/or id fail while active.

    janus then builds fresh graphs for every call (the cached ones stay untouched) whose
    matching guard fails mid-graph, so the call falls back to eager.  For entry-guard kinds
    (TENSOR_MATCH, CONSTANT, TYPE_MATCH, ID_MATCH) every call is a cache miss.
    """
    previous = dict(faults.FORCED)
    faults.FORCED.update(kind=kind, id=id, active=True)
    try:
        yield
    finally:
        faults.FORCED.clear()
        faults.FORCED.update(previous)
