"""The functions probes call, and the session they record into.

Instrumented code objects outlive a profiled call (they are cached), so
probes do not hold a Profile: they record into the innermost active
``Session`` and do nothing when none is active.  Every recorder swallows its
own errors (``except Exception``) -- a probe that raised would be caught by
the user's ``except`` and change the program -- and touches values only
through ``profiler.values``, which never runs user code.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

from profiler.discovery import is_library_file
from profiler.profile import (MAX_TRIPS, FunctionProfile, Profile, Site, SiteKind,
                              ValueFact)
from profiler.values import safe_truth, type_name

#: How many library frames a callee's entry probe looks through for the
#: instrumented frame whose call led to it (e.g. ``model(x)`` -> ``call``).
MAX_CALLER_WALK = 64


@dataclass(eq=False)
class FunctionMeta:
    """Identity of an original code object, shared by its probes."""

    key: str
    qualname: str
    filename: str
    firstlineno: int
    argnames: tuple = ()


@dataclass(eq=False)
class Probe:
    """What one probe records: passed to its recorder as a code constant."""

    func: FunctionMeta
    kind: SiteKind
    span: tuple
    offset: int = -1
    attr: str | None = None
    none_test: bool = False
    #: for while loops: "entry" (first test) or "bottom" (the backward test)
    loop_role: str | None = None

    def __repr__(self) -> str:  # shows up in dis output of instrumented code
        return f"<probe {self.kind.name} {self.span}>"


@dataclass(eq=False)
class Instrumented:
    """An instrumented code object and how to map its offsets back."""

    original: object
    code: object
    meta: FunctionMeta
    #: byte offset of each user call instruction -> original span
    call_spans: dict = field(default_factory=dict)


#: id(instrumented code) -> Instrumented; filled by profiler.instrument.
INSTRUMENTED: dict[int, Instrumented] = {}


class Session:
    """One profiled call (or nest of calls) recording into ``profile``."""

    def __init__(self, profile: Profile):
        self.profile = profile
        self.current_entry: dict = {}

    def function(self, meta: FunctionMeta) -> FunctionProfile:
        fp = self.profile.functions.get(meta.key)
        if fp is None:
            fp = self.profile.functions[meta.key] = FunctionProfile(
                key=meta.key, qualname=meta.qualname, filename=meta.filename,
                firstlineno=meta.firstlineno)
        return fp

    def site(self, meta: FunctionMeta, kind: SiteKind, span, attr=None) -> Site:
        fp = self.function(meta)
        site = fp.sites.get((kind, span))
        if site is None:
            site = fp.sites[(kind, span)] = Site(kind=kind, span=span, attr=attr)
        return site

    def start_entry(self, site: Site, frame) -> None:
        if len(site.trips) < MAX_TRIPS:
            site.trips.append(0)
            self.current_entry[(id(site), id(frame))] = len(site.trips) - 1
        else:
            self.current_entry[(id(site), id(frame))] = -1

    def trip(self, site: Site, frame) -> None:
        index = self.current_entry.get((id(site), id(frame)), -1)
        if index >= 0:
            site.trips[index] += 1


SESSIONS: list[Session] = []


def _site(probe: Probe):
    session = SESSIONS[-1]
    return session, session.site(probe.func, probe.kind, probe.span, probe.attr)


def record_entry(probe):
    if not SESSIONS:
        return
    try:
        session, site = _site(probe)
        frame = sys._getframe(1)
        fp = session.function(probe.func)
        fp.calls += 1
        site.count += 1
        local = frame.f_locals
        for name in probe.func.argnames:
            if name in local:
                fact = fp.args.get(name)
                if fact is None:
                    fact = fp.args[name] = ValueFact()
                fact.observe(local[name])
        _record_caller(session, probe, frame.f_back)
    except Exception:
        pass


def _record_caller(session, probe, caller):
    """Add ``probe``'s function as a callee of the instrumented call that led
    here, looking through library frames (Keras ``__call__`` and the like)."""
    for _ in range(MAX_CALLER_WALK):
        if caller is None:
            return
        inst = INSTRUMENTED.get(id(caller.f_code))
        if inst is not None:
            span = inst.call_spans.get(caller.f_lasti)
            if span is not None:
                site = session.site(inst.meta, SiteKind.CALL, span)
                site.callees[probe.func.key] = site.callees.get(probe.func.key, 0) + 1
            return
        if not is_library_file(caller.f_code.co_filename):
            return
        caller = caller.f_back


def record_branch(probe, value):
    if not SESSIONS:
        return
    try:
        session, site = _site(probe)
        site.count += 1
        site.value.observe(value)
        instance = site.instance(probe.offset)
        truth = (value is None) if probe.none_test else safe_truth(value)
        if truth is None:
            instance.unknown += 1
        elif truth:
            instance.true += 1
        else:
            instance.false += 1
        if probe.loop_role is not None:
            frame = sys._getframe(1)
            if probe.loop_role == "entry":
                session.start_entry(site, frame)
            if truth:
                session.trip(site, frame)
    except Exception:
        pass


def record_loop_enter(probe, iterable):
    if not SESSIONS:
        return
    try:
        session, site = _site(probe)
        site.count += 1
        site.value.observe(iterable)
        session.start_entry(site, sys._getframe(1))
    except Exception:
        pass


def record_loop_trip(probe):
    if not SESSIONS:
        return
    try:
        session, site = _site(probe)
        session.trip(site, sys._getframe(1))
    except Exception:
        pass


def record_value(probe, value):
    """CALL results, RETURN values and LOAD_ATTR results."""
    if not SESSIONS:
        return
    try:
        _, site = _site(probe)
        site.count += 1
        site.value.observe(value)
    except Exception:
        pass


def record_attr_owner(probe, owner):
    """Owner of LOAD_ATTR (counted by the value probe after it)."""
    if not SESSIONS:
        return
    try:
        _, site = _site(probe)
        site.owner_types[type_name(owner)] += 1
    except Exception:
        pass


def record_method_owner(probe, owner):
    """Owner of LOAD_METHOD: the only probe of its site, so it counts."""
    if not SESSIONS:
        return
    try:
        _, site = _site(probe)
        site.count += 1
        site.owner_types[type_name(owner)] += 1
    except Exception:
        pass


def record_attr_store(probe, owner, value):
    if not SESSIONS:
        return
    try:
        _, site = _site(probe)
        site.count += 1
        site.owner_types[type_name(owner)] += 1
        site.value.observe(value)
    except Exception:
        pass
