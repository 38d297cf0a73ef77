"""One speculated function per instance, for a method speculated in its class body.

A graph is specialised on the `self` it ran with (its variables are captured, its Python
attributes checked at entry), so instances of one class cannot share graphs; with more
instances than `max_graphs` one cache would be rebuilt on every call.  As `tf.function` keeps one
function per instance, janus gives each instance its own speculated function, with its own
graphs, guards and counters, created on the instance's first call and dropped with it (its
counters stay in the class-level totals).  What
the bytecode does does not depend on the instance, so they all share one profile: the family
profiles `profile_runs` calls in all, not per instance.  The class-level function's `stats()`
and `report()` cover its instances.
"""
from __future__ import annotations

import collections
import dataclasses
import threading
import weakref

from profiler import Profile


@dataclasses.dataclass
class Family:
    """What a method's per-instance functions share: the profile and what it found."""
    profile: Profile = dataclasses.field(default_factory=Profile)
    profile_runs: int = 0               # profiled calls of the whole family


class Instances:
    """The per-instance functions of one class-level speculated method, keyed by the instance."""

    def __init__(self, make):
        self._make = make                 # instance -> a new function for it
        self._by_id: dict[int, tuple] = {}
        self._lock = threading.Lock()
        self.retired = collections.Counter()    # the counters of the functions of dropped instances

    def of(self, obj):
        """The function of instance `obj`; None when `obj` cannot be held by a weak reference (then
        the class-level function serves it, specialising on it like any argument)."""
        key = id(obj)
        with self._lock:
            entry = self._by_id.get(key)
            if entry is not None and entry[0]() is obj:
                return entry[1]
            try:
                ref = weakref.ref(obj, lambda r, k=key: self._drop(k, r))
            except TypeError:
                return None
            made = self._make(obj)
            self._by_id[key] = (ref, made)
            return made

    def _drop(self, key, ref):
        with self._lock:
            entry = self._by_id.get(key)
            if entry is not None and entry[0] is ref:
                del self._by_id[key]
                self.retired.update(entry[1].counters)

    def all(self) -> list:
        with self._lock:
            return [made for _, made in self._by_id.values()]
