"""Test hooks: force the fallback path to prove results never depend on it.

    with janus.testing.forced_fallback():
        f(x)     # the graph runs, then is treated as failed: eager result returned

Used by the runtime tests, which run every function in both modes.
"""
from __future__ import annotations

import contextlib

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
