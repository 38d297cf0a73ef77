"""The functions probes call, and the session they record into.

Instrumented code objects outlive a profiled call (they are cached), so
probes do not hold a Profile: they record into the innermost active
``Session`` and do nothing when none is active.  Every recorder swallows its
own errors (``except Exception``) -- a probe that raised would be caught by
the user's ``except`` and change the program -- and touches values only
through ``profiler.values``, which never runs user code.  Recorders are
also not re-entrant: should recording ever reach instrumented code (say an
instrumented ``__hash__``), the nested probes do nothing.
"""

from __future__ import annotations

import sys
import weakref
from dataclasses import dataclass, field

from profiler.library import is_library_file
from profiler.profile import (MAX_TRIPS, FunctionProfile, Profile, Site, SiteKind,
                              ValueFact)
from profiler.values import arrays_in, safe_truth, structure, type_name

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

    #: (session serial, Site): the site this probe last recorded into
    cached: tuple = field(default=(0, None), repr=False)

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

    _serials = iter(range(1, 1 << 62))

    def __init__(self, profile: Profile):
        self.profile = profile
        self.current_entry: dict = {}
        self.serial = next(Session._serials)

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
_busy = False


def _recorder(body):
    """Wrap ``body(session, site, frame, probe, *values)`` as a probe target:
    a no-op without a session or while another recorder runs, silent on
    errors.  ``frame`` is the instrumented frame that ran the probe."""

    def record(probe, *values):
        global _busy
        if _busy or not SESSIONS:
            return
        _busy = True
        try:
            session = SESSIONS[-1]
            serial, site = probe.cached
            if serial != session.serial:
                site = session.site(probe.func, probe.kind, probe.span, probe.attr)
                probe.cached = (session.serial, site)
            body(session, site, sys._getframe(1), probe, *values)
        except Exception:
            pass
        finally:
            _busy = False

    record.__name__ = record.__qualname__ = body.__name__.lstrip("_")
    record.__doc__ = body.__doc__
    return record


@_recorder
def record_entry(session, site, frame, probe):
    """Function entry: call count, argument values, and the caller's CALL site."""
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


@_recorder
def record_branch(session, site, frame, probe, value):
    """Conditional jump: tested value, outcome per instance, while-loop trips."""
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
    if probe.loop_role == "entry":
        session.start_entry(site, frame)
    if probe.loop_role is not None and truth:
        session.trip(site, frame)


@_recorder
def record_loop_enter(session, site, frame, probe, iterable):
    """Before GET_ITER of a ``for``: the iterable; starts a loop entry."""
    site.count += 1
    site.value.observe(iterable)
    session.start_entry(site, frame)


@_recorder
def record_loop_trip(session, site, frame, probe):
    """Start of a ``for`` body: one more trip for this frame's current entry."""
    session.trip(site, frame)


@_recorder
def record_value(session, site, frame, probe, value):
    """CALL results, RETURN values and LOAD_ATTR results."""
    site.count += 1
    site.value.observe(value)
    if probe.kind is SiteKind.CALL:        # (what a graph needs to call the callee itself)
        if len(site.value.structures) < MAX_STRUCTURES:
            site.value.structures.add(structure(value))
        _note_returned_arrays(site, value)


#: How many result structures a call site keeps (more than one already keeps the call in Python).
MAX_STRUCTURES = 8

#: id -> (weak reference, the call site's facts) of each NumPy array a call returned, across calls
#: and sites: a call that returns one of them again, still alive, returns a buffer its callee keeps.
_RETURNED: dict = {}


def _note_returned_arrays(site, value):
    """Both calls that returned the same alive array are marked (either may read it stale)."""
    for array in arrays_in(value):
        seen = _RETURNED.get(id(array))
        if seen is not None and seen[0]() is array:
            site.value.repeated = seen[1].repeated = True
            continue
        if len(_RETURNED) > 4096:
            for key in [k for k, (r, _) in _RETURNED.items() if r() is None]:
                del _RETURNED[key]
        _RETURNED[id(array)] = (weakref.ref(array), site.value)


@_recorder
def record_attr_owner(session, site, frame, probe, owner):
    """Owner of LOAD_ATTR (the value probe after it does the counting)."""
    site.owner_types[type_name(owner)] += 1


@_recorder
def record_method_owner(session, site, frame, probe, owner):
    """Owner of LOAD_METHOD: the only probe of its site, so it counts."""
    site.count += 1
    site.owner_types[type_name(owner)] += 1


@_recorder
def record_attr_store(session, site, frame, probe, owner, value):
    """STORE_ATTR: owner type and stored value."""
    site.count += 1
    site.owner_types[type_name(owner)] += 1
    site.value.observe(value)


#: ``hook(callable, filename, span) -> callable``, set by a runtime that answers some calls
#: itself (a re-run replaying the Python calls a graph made); None: calls run as written.
CALL_HOOK = None


def intercept(callee, probe):
    """The callable a call in instrumented code calls: ``callee`` unless ``CALL_HOOK`` answers
    the call at this site instead.  Never raises (a failure leaves the call as written)."""
    hook = CALL_HOOK
    if hook is None:
        return callee
    try:
        return hook(callee, probe.func.filename, probe.span)
    except Exception:
        return callee
