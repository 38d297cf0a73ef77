"""The lock of a function's Python state, shared by every speculated function of it.

A graph reads the Python state it uses at entry and writes its updates back after the run, so a
call running beside it would lose its update (or, for a graph that restores the variables it
wrote when an op fails, have its variable writes undone).  Profiling, building, graphs that
write Python state, call Python or restore variables, and functions split at graph breaks
therefore run one at a time, per function: the speculated functions of two instances of a class,
or two wrappers of one function, share one lock, as they share the state they write.  Graphs
that write no Python state still run side by side.  (One lock for all functions would also
order two functions writing one global, but would hang a function whose Python waits for a
thread that calls another speculated function: that is state changed by other code, which the
README says graphs assume does not happen while they run.)

A lock is re-entrant for the thread that holds it, and for the Python a graph run by that thread
calls itself (`tf.numpy_function`): TensorFlow runs that Python on a thread of its own while the
holder waits for it, in a copy of the holder's context (`codegen.graph.python_calls`), where
`_HOLDING` names the lock.  Such a call goes ahead instead of waiting for a holder that waits for it.
"""
from __future__ import annotations

import contextvars
import threading
import weakref

_HOLDING = contextvars.ContextVar("janus_state_locks_held", default=frozenset())
_ENTERED = threading.local()          # .tokens: per `with`, the context token it set, or None
_LOCKS = weakref.WeakKeyDictionary()  # function -> its StateLock
_MAKING = threading.Lock()


class StateLock:
    def __init__(self):
        self._lock = threading.RLock()

    def __enter__(self):
        tokens = _ENTERED.__dict__.setdefault("tokens", [])
        held = _HOLDING.get()
        if id(self) in held:
            tokens.append(None)
            return self
        self._lock.acquire()
        tokens.append(_HOLDING.set(held | {id(self)}))
        return self

    def __exit__(self, *exc):
        token = _ENTERED.tokens.pop()
        if token is not None:
            _HOLDING.reset(token)
            self._lock.release()
        return False


def state_lock(fn) -> StateLock:
    """The lock of function `fn`: one for every speculated function of it.  (Keyed by the function,
    not its code: the profiler swaps the code of a function it instruments.)"""
    with _MAKING:
        lock = _LOCKS.get(fn)
        if lock is None:
            lock = _LOCKS[fn] = StateLock()
        return lock
