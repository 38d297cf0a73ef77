"""The facts a profiled run leaves behind: plain, mergeable dataclasses.

A ``Profile`` holds one ``FunctionProfile`` per user function, keyed by
``code_key``; each function holds ``Site`` records keyed by
``(SiteKind, Span)`` where the span is the source span ``(lineno, col,
end_lineno, end_col)`` of an instruction of the *original* code, as given by
``co_positions()``.  Spans are what codegen uses to find the AST node a fact
belongs to.  Nothing here imports TensorFlow, so profiles can be merged,
printed and stored as JSON anywhere.
"""

from __future__ import annotations

import enum
import json
from collections import Counter
from dataclasses import dataclass, field

from profiler import values as _values

Span = tuple[int, int, int, int]

#: How many distinct scalar values a ValueFact keeps.
MAX_VALUES = 8
#: How many loop entries a Site keeps trip counts for.
MAX_TRIPS = 1000


class SiteKind(enum.Enum):
    """Where a fact was recorded; each value says what the site records."""

    ENTRY = "function entry: call count and argument values"
    BRANCH = "conditional jump: tested value and per-instance outcomes (and while-loop trips)"
    LOOP = "for loop: iterable value and trip count per loop entry"
    CALL = "call: result value and user callees reached from it"
    ATTR_LOAD = "attribute load: owner types and loaded value"
    ATTR_STORE = "attribute store: owner types and stored value"
    RETURN = "return: returned value"


def code_key(fn_or_code) -> str:
    """``"{co_filename}:{co_firstlineno}:{co_qualname}"`` of a function,
    bound method or code object."""
    obj = getattr(fn_or_code, "__func__", fn_or_code)
    code = getattr(obj, "__code__", obj)
    return f"{code.co_filename}:{code.co_firstlineno}:{code.co_qualname}"


@dataclass
class ValueFact:
    """Summary of the values seen at one place.

    ``types`` counts canonical type names (see ``values.type_name``: builtins
    by bare name, others as ``module.qualname``).  ``values`` keeps up to
    ``MAX_VALUES`` distinct Python scalars (exact bool/int/float/str/None);
    ``overflow`` says more were seen, ``other`` counts non-scalar
    observations.  ``lengths`` holds ``len()`` of builtin containers.
    """

    types: Counter = field(default_factory=Counter)
    dtypes: set = field(default_factory=set)
    shapes: set = field(default_factory=set)
    values: list = field(default_factory=list)
    lengths: set = field(default_factory=set)
    #: at a call: ``values.structure`` of the results seen (set by ``recorders.record_value``)
    structures: set = field(default_factory=set)
    #: a call returned a NumPy array some call had returned before, still alive (a buffer the
    #: callee keeps; set by ``recorders.record_value``)
    repeated: bool = False
    count: int = 0
    other: int = 0
    overflow: bool = False

    def only_tensors(self) -> bool:
        """Whether every value seen was a tensor (and some was seen)."""
        return bool(self.types) and all(t.endswith("Tensor") for t in self.types)

    def only_numbers(self) -> bool:
        """Whether every value seen was a Python or NumPy scalar number (and some was seen)."""
        return bool(self.types) and all(t in ("bool", "int", "float") or (
            t.startswith("numpy.") and t[6:].rstrip("_").rstrip("0123456789") in ("int", "uint", "float", "bool"))
            for t in self.types)

    def only_python_numbers(self) -> bool:
        """Whether every value seen was a Python bool, int or float (and some was seen)."""
        return bool(self.types) and set(self.types) <= {"bool", "int", "float"}

    def observe(self, value) -> None:
        self.count += 1
        self.types[_values.type_name(value)] += 1
        if type(value) in _values.SCALAR_TYPES:
            self._add_scalar(value)
        else:
            self.other += 1
        info = _values.array_info(value)
        if info is not None:
            self.dtypes.add(info[0])
            self.shapes.add(info[1])
        n = _values.length(value)
        if n is not None:
            self.lengths.add(n)

    def _add_scalar(self, value) -> None:
        for seen in self.values:
            if type(seen) is type(value) and (seen == value or seen != seen and value != value):
                return
        if len(self.values) < MAX_VALUES:
            self.values.append(value)
        else:
            self.overflow = True

    def merge(self, other: ValueFact) -> ValueFact:
        self.types.update(other.types)
        self.dtypes |= other.dtypes
        self.shapes |= other.shapes
        self.lengths |= other.lengths
        self.structures |= other.structures
        self.repeated |= other.repeated
        self.count += other.count
        self.other += other.other
        self.overflow |= other.overflow
        for value in other.values:
            self._add_scalar(value)
        return self

    @property
    def is_constant(self) -> bool:
        """Every observation was the same Python scalar."""
        return (self.count > 0 and len(self.values) == 1 and self.other == 0
                and not self.overflow)

    @property
    def single_shape(self):
        """The only shape seen, or None."""
        if len(self.shapes) == 1:
            return next(iter(self.shapes))
        return None

    def to_dict(self) -> dict:
        return {"types": dict(self.types), "dtypes": sorted(self.dtypes),
                "shapes": [None if s is None else list(s) for s in self.shapes],
                "values": list(self.values), "lengths": sorted(self.lengths),
                "structures": [_to_lists(x) for x in sorted(self.structures, key=repr)], "repeated": self.repeated,
                "count": self.count, "other": self.other, "overflow": self.overflow}

    @classmethod
    def from_dict(cls, d: dict) -> ValueFact:
        return cls(types=Counter(d["types"]), dtypes=set(d["dtypes"]),
                   shapes={None if s is None else tuple(s) for s in d["shapes"]},
                   values=list(d["values"]), lengths=set(d["lengths"]),
                   structures={_to_tuples(x) for x in d.get("structures", ())}, repeated=d.get("repeated", False),
                   count=d["count"], other=d["other"], overflow=d["overflow"])

    def __str__(self) -> str:
        parts = [f"n={self.count}", "types=" + ",".join(
            f"{t.rsplit('.', 1)[-1]}x{c}" for t, c in self.types.most_common())]
        if self.dtypes:
            parts.append("dtypes=" + ",".join(sorted(self.dtypes)))
        if self.shapes:
            parts.append("shapes=" + ",".join(sorted(map(str, self.shapes))))
        if self.lengths:
            parts.append("len=" + ",".join(map(str, sorted(self.lengths))))
        if self.values:
            parts.append("values=" + ",".join(map(repr, self.values))
                         + ("..." if self.overflow else ""))
        return " ".join(parts)


@dataclass
class BranchInstance:
    """One conditional jump instruction of a BRANCH site (``offset`` in the
    original code).  ``unknown`` counts tests whose truth the profiler did
    not compute (it would have run user code)."""

    offset: int
    true: int = 0
    false: int = 0
    unknown: int = 0


def _to_lists(value):
    return [_to_lists(v) for v in value] if isinstance(value, tuple) else value


def _to_tuples(value):
    return tuple(_to_tuples(v) for v in value) if isinstance(value, list) else value


@dataclass
class Site:
    """Facts recorded at one source span for one kind of instruction."""

    kind: SiteKind
    span: Span
    count: int = 0
    value: ValueFact = field(default_factory=ValueFact)
    instances: list = field(default_factory=list)
    trips: list = field(default_factory=list)
    callees: dict = field(default_factory=dict)
    attr: str | None = None
    owner_types: Counter = field(default_factory=Counter)

    def instance(self, offset: int) -> BranchInstance:
        """The instance at ``offset``, created in offset order if missing."""
        for i, inst in enumerate(self.instances):
            if inst.offset == offset:
                return inst
            if inst.offset > offset:
                new = BranchInstance(offset)
                self.instances.insert(i, new)
                return new
        new = BranchInstance(offset)
        self.instances.append(new)
        return new

    def outcomes(self) -> tuple[int, int]:
        """``(true, false)`` summed over instances."""
        return (sum(i.true for i in self.instances), sum(i.false for i in self.instances))

    def constant_trips(self):
        """The trip count when every recorded loop entry had the same, else None."""
        if self.trips and all(t == self.trips[0] for t in self.trips):
            return self.trips[0]
        return None

    def merge(self, other: Site) -> Site:
        self.count += other.count
        self.value.merge(other.value)
        for inst in other.instances:
            mine = self.instance(inst.offset)
            mine.true += inst.true
            mine.false += inst.false
            mine.unknown += inst.unknown
        self.trips.extend(other.trips[:max(0, MAX_TRIPS - len(self.trips))])
        for key, n in other.callees.items():
            self.callees[key] = self.callees.get(key, 0) + n
        self.attr = self.attr or other.attr
        self.owner_types.update(other.owner_types)
        return self

    def to_dict(self) -> dict:
        return {"kind": self.kind.name, "span": list(self.span), "count": self.count,
                "value": self.value.to_dict(),
                "instances": [[i.offset, i.true, i.false, i.unknown] for i in self.instances],
                "trips": list(self.trips), "callees": dict(self.callees),
                "attr": self.attr, "owner_types": dict(self.owner_types)}

    @classmethod
    def from_dict(cls, d: dict) -> Site:
        return cls(kind=SiteKind[d["kind"]], span=tuple(d["span"]), count=d["count"],
                   value=ValueFact.from_dict(d["value"]),
                   instances=[BranchInstance(*i) for i in d["instances"]],
                   trips=list(d["trips"]), callees=dict(d["callees"]), attr=d["attr"],
                   owner_types=Counter(d["owner_types"]))

    def __str__(self) -> str:
        line = f"{self.kind.name:<10} {_span_str(self.span)} n={self.count}"
        if self.attr is not None:
            owners = ",".join(t.rsplit(".", 1)[-1] for t in self.owner_types)
            line += f" .{self.attr} on {owners}"
        if self.instances:
            line += " outcomes=" + " ".join(
                f"@{i.offset}:T{i.true}/F{i.false}" + (f"/?{i.unknown}" if i.unknown else "")
                for i in self.instances)
        if self.trips:
            shown = self.trips[:10]
            line += " trips=" + str(shown)[:-1] + (", ...]" if len(self.trips) > 10 else "]")
        if self.callees:
            line += " callees=" + ",".join(
                f"{k.rsplit(':', 1)[-1]}x{n}" for k, n in self.callees.items())
        if self.value.count:
            line += f" value: {self.value}"
        return line


def _span_str(span: Span) -> str:
    lineno, col, end_lineno, end_col = span
    return f"{lineno}:{col}-{end_lineno}:{end_col}"


@dataclass
class FunctionProfile:
    """Everything recorded for one function (one original code object)."""

    key: str
    qualname: str
    filename: str
    firstlineno: int
    calls: int = 0
    args: dict = field(default_factory=dict)
    sites: dict = field(default_factory=dict)

    def site(self, kind: SiteKind, span: Span) -> Site | None:
        return self.sites.get((kind, tuple(span)))

    def sites_of(self, kind: SiteKind) -> list[Site]:
        """All sites of one kind, in source order."""
        return sorted((s for s in self.sites.values() if s.kind is kind),
                      key=lambda s: s.span)

    def merge(self, other: FunctionProfile) -> FunctionProfile:
        self.calls += other.calls
        for name, fact in other.args.items():
            self.args.setdefault(name, ValueFact()).merge(fact)
        for key, site in other.sites.items():
            if key in self.sites:
                self.sites[key].merge(site)
            else:
                self.sites[key] = Site.from_dict(site.to_dict())
        return self

    def to_dict(self) -> dict:
        return {"key": self.key, "qualname": self.qualname, "filename": self.filename,
                "firstlineno": self.firstlineno, "calls": self.calls,
                "args": {k: v.to_dict() for k, v in self.args.items()},
                "sites": [s.to_dict() for s in self.sites.values()]}

    @classmethod
    def from_dict(cls, d: dict) -> FunctionProfile:
        sites = [Site.from_dict(s) for s in d["sites"]]
        return cls(key=d["key"], qualname=d["qualname"], filename=d["filename"],
                   firstlineno=d["firstlineno"], calls=d["calls"],
                   args={k: ValueFact.from_dict(v) for k, v in d["args"].items()},
                   sites={(s.kind, s.span): s for s in sites})

    def __str__(self) -> str:
        lines = [f"{self.qualname} ({self.filename}:{self.firstlineno}) calls={self.calls}"]
        for name, fact in self.args.items():
            lines.append(f"  arg {name}: {fact}")
        for site in sorted(self.sites.values(), key=lambda s: (s.span, s.kind.name)):
            lines.append(f"  {site}")
        return "\n".join(lines)


@dataclass
class Profile:
    """Facts for every function reached by one or more profiled calls, and the values the
    profiled calls themselves returned (`results`)."""

    functions: dict = field(default_factory=dict)
    results: ValueFact = field(default_factory=ValueFact)

    def get(self, fn_or_code) -> FunctionProfile | None:
        key = fn_or_code if isinstance(fn_or_code, str) else code_key(fn_or_code)
        return self.functions.get(key)

    def merge(self, other: Profile) -> Profile:
        for key, fp in other.functions.items():
            if key in self.functions:
                self.functions[key].merge(fp)
            else:
                self.functions[key] = FunctionProfile.from_dict(fp.to_dict())
        self.results.merge(other.results)
        return self

    def to_json(self) -> str:
        return json.dumps({"functions": [f.to_dict() for f in self.functions.values()],
                           "results": self.results.to_dict()})

    @classmethod
    def from_json(cls, text: str) -> Profile:
        data = json.loads(text)
        fps = [FunctionProfile.from_dict(f) for f in data["functions"]]
        results = ValueFact.from_dict(data["results"]) if "results" in data else ValueFact()
        return cls(functions={f.key: f for f in fps}, results=results)

    def __str__(self) -> str:
        if not self.functions:
            return "Profile(empty)"
        return "\n".join(str(f) for f in self.functions.values())
