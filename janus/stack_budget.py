"""The user's Python runs with eager's stack budget.

When janus runs the user's function in Python (a profiled run, the re-run after a graph failed,
an imperative function), its own frames stand between the user's call and the function:
`__call__`, `_call_locked`, `_run_graph`, `_after_graph_error`, `_eager` ...  A recursion near
the interpreter's recursion limit would then raise `RecursionError` a dozen or two calls earlier
than eager does.  While the user's Python runs, the recursion limit is raised by exactly the
number of those frames, and set back afterwards.

`sys.setrecursionlimit` is per interpreter, not per thread.  Each thread's raise is the sum of
its own nested runs (a speculated function re-run in Python that calls another one); the limit
is the user's limit plus the largest raise of any thread, kept under one lock, and it goes back
to the user's limit when the last run ends.  A limit the user sets while a run is raised becomes
the new user's limit.  See docs/decisions.md, "The user's Python runs with eager's stack budget".
"""
from __future__ import annotations

import os
import sys
import threading

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_MACHINERY = tuple(os.path.join(_ROOT, package) + os.sep for package in ("janus", "codegen", "profiler"))
# Calling a speculated function (an object with `__call__`) enters CPython's recursion check once
# more than calling a plain function does (the slot wrapper of `__call__`): one level.
_CALL_SLOT = 1

_LOCK = threading.Lock()
_RAISED: dict[int, int] = {}      # thread id -> frames its running user Python was given
_LIMITS = {"user": 0, "set": None}   # the user's limit, and the limit janus set last


def janus_frames(frame) -> int:
    """janus's frames from `frame` up to the user's frame that called the speculated function."""
    count = 0
    while frame is not None and frame.f_code.co_filename.startswith(_MACHINERY):
        count += 1
        frame = frame.f_back
    return count


class EagerStack:
    """`with EagerStack(below):` around the statement that calls the user's function, `below`
    frames of janus's further down (the profiler's `profile_call`): the function's frames get
    the recursion budget they have when the user calls it directly."""

    def __init__(self, below: int = 0):
        self.extra = janus_frames(sys._getframe(1)) + _CALL_SLOT + below

    def __enter__(self):
        with _LOCK:
            tid = threading.get_ident()
            _RAISED[tid] = _RAISED.get(tid, 0) + self.extra
            _apply()
        return self

    def __exit__(self, *exc):
        with _LOCK:
            tid = threading.get_ident()
            left = _RAISED.pop(tid) - self.extra
            if left:
                _RAISED[tid] = left
            _apply()
        return False


def _apply():
    """Set the limit to the user's plus the largest raise (under `_LOCK`)."""
    current = sys.getrecursionlimit()
    if current != _LIMITS["set"]:            # nothing raised yet, or the user set a new limit
        _LIMITS["user"] = current
    wanted = _LIMITS["user"] + max(_RAISED.values(), default=0)
    if wanted != current:
        try:
            sys.setrecursionlimit(wanted)
        except RecursionError:               # this thread is deeper than `wanted`: keep it for now
            wanted = current
    _LIMITS["set"] = wanted
