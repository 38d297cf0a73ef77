"""``profile_call``: run one call with user code instrumented.

Instead of tracing, the profiler temporarily points ``__code__`` of every
user function the call can reach at its instrumented copy, runs the call,
and restores the original code objects in a ``finally`` -- so the profiled
run is the real program, at bytecode speed, and leaves nothing behind.
"""

from __future__ import annotations

import types

from profiler.discovery import reachable_functions
from profiler.instrument import NotInstrumentable, instrument, is_instrumented
from profiler.profile import Profile
from profiler.recorders import SESSIONS, Session


def profiling() -> bool:
    """Whether a profiled call is running (its callees run as plain, instrumented Python)."""
    return bool(SESSIONS)


def profile_call(fn, args=(), kwargs=None, profile=None, is_user_code=None):
    """Run ``fn(*args, **kwargs)`` instrumented; return ``(outcome, profile)``.

    ``outcome`` is ``("return", value)`` or ``("raise", exc)``; exceptions are
    not re-raised.  Facts are merged into ``profile`` when given (and it is
    returned), else into a new Profile.  ``is_user_code(fn) -> bool`` chooses
    which reachable functions are instrumented (default:
    ``library.is_user_code``).
    """
    kwargs = kwargs or {}
    profile = Profile() if profile is None else profile
    swapped = []
    session = Session(profile)
    try:
        try:
            for f in reachable_functions(fn, args, kwargs, is_user_code):
                _swap_in(f, swapped)
        except Exception:  # a profiler bug must not stop the user's call
            pass
        SESSIONS.append(session)
        try:
            outcome = ("return", fn(*args, **kwargs))
        except BaseException as exc:  # noqa: B902 - handed to the caller
            outcome = ("raise", exc)
    finally:
        if SESSIONS and SESSIONS[-1] is session:
            SESSIONS.pop()
        elif session in SESSIONS:
            SESSIONS.remove(session)
        for f, code in reversed(swapped):
            f.__code__ = code
    if outcome[0] == "return":
        try:
            profile.results.observe(outcome[1])
        except Exception:  # a profiler bug must not change the user's call
            pass
    return outcome, profile


def _swap_in(f: types.FunctionType, swapped: list) -> None:
    code = f.__code__
    if is_instrumented(code):  # an enclosing profile_call already did it
        return
    try:
        inst = instrument(code)
    except NotInstrumentable:
        return
    try:
        f.__code__ = inst.code
    except (ValueError, TypeError):  # e.g. closure size mismatch
        return
    swapped.append((f, code))
