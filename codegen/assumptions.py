"""Assumptions and guards as data.

An `Assumption` is one thing a graph takes for granted (a branch side, a trip
count, an argument's shape, a global's identity).  Its `key` names it across
graphs and builds, so a failure can relax exactly that assumption the next
time; its `id` is what an in-graph guard's error message carries.  The
report, the log and error messages all print from these objects.
"""
from __future__ import annotations

import dataclasses
import enum
import types

SCALARS = (bool, int, float, str, bytes, type(None), complex)


class Kind(enum.Enum):
    # entry guards, checked in Python before the graph runs
    TENSOR_MATCH = "an argument tensor has this dtype and shape"
    CONSTANT = "a Python scalar argument has this value"
    TYPE_MATCH = "a value has this type / container length"
    ID_MATCH = "a global, closure cell, object or attribute is this very object"
    # in-graph guards, AssertOps that fail the run
    BRANCH = "a tensor predicate takes the side the profile saw"
    TRIP_COUNT = "a loop on a tensor bound runs the number of times the profile saw"

    @property
    def in_graph(self) -> bool:
        return self in (Kind.BRANCH, Kind.TRIP_COUNT)


@dataclasses.dataclass
class Assumption:
    id: int
    kind: Kind
    key: tuple               # stable across builds: (function key, kind, span) or (source path,)
    source: str              # where the value comes from: "args[0].shape", "branch `x > 0`"
    expected: object
    where: str               # user's file:line

    def describe(self) -> str:
        return f"#{self.id} {self.kind.name:<12} {self.source} == {self.expected!r}  ({self.where})"

    def message(self) -> str:
        """The in-graph guard's error text; the runtime parses the id back out of it."""
        return f"janus-assumption:{self.id}: {self.kind.name} {self.source} == {self.expected!r} at {self.where}"


def check_kind(value) -> Kind | None:
    """How a build-time read of `value` is re-checked at entry (None: nothing to check)."""
    if type(value) in SCALARS:
        return Kind.CONSTANT
    if type(value) is tuple and all(type(v) in SCALARS for v in value):
        return Kind.CONSTANT
    if isinstance(value, types.MethodType):
        return None                  # a bound method is a fresh object per lookup; its owner is checked
    if type(value) in (list, tuple) and len(value) <= 64:
        return Kind.TYPE_MATCH       # same container type and length, elements the very same objects
    return Kind.ID_MATCH
