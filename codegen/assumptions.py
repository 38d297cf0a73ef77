"""Assumptions and guards as data.

A `Source` says where a value comes from (`args[0].state`, `mod.W[1]`) as a
root and a list of steps; its text is its rendering.  A `Check` is one thing
the entry guard tests in Python before a graph runs (a `Kind`, a `Source`, the
expected value); an `Assumption` is one thing a graph takes for granted
inside it (a branch side, a trip count).  An assumption's `key` names it
across graphs and builds, so a failure can relax exactly that assumption the
next time; its `id` names the in-graph guard op.  The entry guard is
generated from the checks, and the report, the log and `explain` all print
from these objects, so they print the same words.
"""
from __future__ import annotations

import dataclasses
import enum
import inspect
import types
import weakref

import numpy as np

SCALARS = (bool, int, float, str, bytes, type(None), complex)
# NumPy scalars the graph computes as NumPy does: checked by value, and fed once they vary
NUMPY_SCALARS = (np.float16, np.float32, np.float64, np.int32, np.int64, np.bool_)
GUARD_MARK = "janus-assumption:"          # an in-graph guard's message starts with it, then the id


class Weak(weakref.ref):
    """How a graph holds an object it was specialised on (an object argument, what its checks
    reach from one), wherever it keeps it (a check's holder or value, a write-back's object, an
    argument leaf): a strong reference would keep the object alive as long as the function, and a
    class's per-instance functions live as long as the class (`codegen.graph.held_weakly`)."""
    __slots__ = ()


def held(value):
    """`value`, or the object a `Weak` refers to, or a new bound method of a `weakref.WeakMethod`
    (None once it is gone)."""
    return value() if type(value) is Weak or type(value) is weakref.WeakMethod else value


class Kind(enum.Enum):
    # entry guards, checked in Python before the graph runs
    TENSOR_MATCH = "an argument tensor has this dtype and shape"
    CONSTANT = "a Python scalar argument has this value"
    TYPE_MATCH = "a value has this type"
    ITEMS_MATCH = "a container has this type and length and holds the very same items"
    LENGTH_MATCH = "a container has this length (only its length was read)"
    TENSORS_MATCH = "a tuple of tensors with these dtypes and shapes"
    LIST_TENSORS_MATCH = "a list of tensors with these dtypes and shapes (its tensors fed per call)"
    ARRAY_MATCH = "a NumPy array read from outside has this dtype and shape (its values are fed per call)"
    ID_MATCH = "a global, closure cell, object or attribute is this very object"
    # in-graph guards, AssertOps that fail the run
    BRANCH = "a tensor predicate takes the side the profile saw"
    TRIP_COUNT = "a loop on a tensor bound runs the number of times the profile saw"
    EXACT = ("Python arithmetic on a number fed as a tensor divides by no zero and stays inside int64; "
             "a function whose return depends on a tensor reaches one")
    RESULT_KIND = "a recursion's result is a Python number, or a tensor, as its profiled calls' was"
    # checked after each Python function the graph calls (tf.numpy_function) returns
    UNCHANGED = "outside state the graph reads after it calls Python is as it was when the call started"
    CALL_RESULT = "a Python call inside the graph returns the structure, types, dtypes and shapes its profiled calls did"

    @property
    def in_graph(self) -> bool:
        return self in (Kind.BRANCH, Kind.TRIP_COUNT, Kind.EXACT, Kind.RESULT_KIND, Kind.UNCHANGED,
                        Kind.CALL_RESULT)


@dataclasses.dataclass
class Assumption:
    id: int
    kind: Kind
    key: tuple               # stable across builds: (function key, kind, span) or (source path,)
    source: str              # where the value comes from: "args[0].shape", "branch `x > 0`"
    expected: object
    where: str               # user's file:line
    # For an EXACT assumption, the reason noted when it fails and that call runs in Python.
    fallback: str = "python-arithmetic"

    def describe(self) -> str:
        return f"#{self.id} {self.kind.name:<12} {self.source} == {self.expected!r}  ({self.where})"

    def message(self) -> str:
        """The in-graph guard's error text; `GraphArtifact.failed_assumption` reads the id in it."""
        return f"{GUARD_MARK}{self.id}: {self.kind.name} {self.source} == {self.expected!r} at {self.where}"


def subnormal(value) -> bool:
    """Whether a float is subnormal in its own type (a Python float in float64): fed, TensorFlow's
    CPU kernels would flush it to zero where Python and NumPy keep it, so it stays a constant."""
    if not isinstance(value, (float, np.floating)):
        return False
    return 0 < abs(value) < np.finfo(type(value) if isinstance(value, np.floating) else np.float64).tiny


def scalar_dtype(kind) -> str:
    """The dtype a number argument of type `kind` is fed as: a Python number as 64 bits (its
    arithmetic there is Python's), a NumPy number as its own dtype."""
    return "int64" if kind is int else "float64" if kind is float else np.dtype(kind).name


def check_kind(value) -> Kind | None:
    """How a build-time read of `value` is re-checked at entry (None: nothing to check)."""
    if type(value) in SCALARS or type(value) in NUMPY_SCALARS:
        return Kind.CONSTANT
    if type(value) is tuple and all(type(v) in SCALARS for v in value):
        return Kind.CONSTANT
    if isinstance(value, types.MethodType):
        return None                  # a bound method is a fresh object per lookup; its owner is checked
    if type(value) in (list, tuple) and len(value) <= 64:
        return Kind.ITEMS_MATCH      # same container type and length, elements the very same objects
    return Kind.ID_MATCH


_MISSING = object()


def lacks(obj, name: str) -> bool:
    """Whether Python's plain lookup finds no `name` on `obj`: not in its own `__dict__` (nor a set
    slot), not on its class or a base; run by the entry guard, so it runs none of the user's code."""
    found = inspect.getattr_static(obj, name, _MISSING)
    if type(found) is types.MemberDescriptorType and not isinstance(obj, type):
        try:
            found.__get__(obj, type(obj))           # a slot: present once it is set
        except AttributeError:
            return True
    return found is _MISSING


class Source(str):
    """Where a value comes from: a root (`args[0]`, `kwargs['h']`, `mod.W`, a closure cell)
    and steps (`.attr`, `[key]`, `[...]` for a key known only in the graph).  It is a `str`
    whose text is its rendering, so it keys dicts and prints as the user reads it; code
    walks its structure (`parent`, `step`) instead of parsing the text."""

    parent: "Source | None"
    step: tuple              # a root: ("args", i) | ("kwargs", k) | ("global", module, name) |
    #                          ("closure", qualname, name); a step: ("attr", name) | ("item", key) | ("any",)

    def __new__(cls, text: str, parent: "Source | None", step: tuple):
        self = super().__new__(cls, text)
        self.parent = parent
        self.step = step
        return self

    @classmethod
    def arg(cls, index: int) -> "Source":
        return cls(f"args[{index}]", None, ("args", index))

    @classmethod
    def kwarg(cls, name: str) -> "Source":
        return cls(f"kwargs[{name!r}]", None, ("kwargs", name))

    @classmethod
    def global_name(cls, module: str, name: str) -> "Source":
        return cls(f"{module}.{name}", None, ("global", module, name))

    @classmethod
    def closure(cls, qualname: str, name: str) -> "Source":
        return cls(f"{qualname}.<closure {name}>", None, ("closure", qualname, name))

    def attr(self, name: str) -> "Source":
        return Source(f"{self}.{name}", self, ("attr", name))

    def item(self, key) -> "Source":
        return Source(f"{self}[{key!r}]", self, ("item", key))

    def any_item(self) -> "Source":
        return Source(f"{self}[...]", self, ("any",))

    def owns(self, name: str) -> "Source":
        """Whether the object's own `__dict__` holds `name` (not its class)."""
        return Source(f"{name!r} in vars({self})", self, ("owns", name))

    def lacks(self, name: str) -> "Source":
        """Whether the object, its class and its bases lack `name` (see `lacks`)."""
        return Source(f"not hasattr({self}, {name!r})", self, ("lacks", name))

    def resolve(self, args: tuple, kwargs: dict):
        """The value this source names in a call's arguments (a source rooted at `args`/`kwargs`)."""
        tag, key = self.step[0], self.step[1] if len(self.step) > 1 else None
        if self.parent is None:
            if tag not in ("args", "kwargs"):
                raise LookupError(f"{self} is not an argument")
            return (args if tag == "args" else kwargs)[key]
        base = self.parent.resolve(args, kwargs)
        if tag == "any":
            raise LookupError(f"{self} has no key known outside the graph")
        if tag == "owns":
            return key in vars(base)
        if tag == "lacks":
            return lacks(base, key)
        return getattr(base, key) if tag == "attr" else base[key]


@dataclasses.dataclass
class Check:
    """A build-time read of an outside value that the entry guard re-checks before each run."""

    kind: Kind
    source: Source           # "mod.W", "args[0].units"
    expected: object         # the value (CONSTANT, ID_MATCH), type, items, (dtype, shape)(s)
    holder: object           # the dict, cell or object the value is read from
    name: str                # key / attribute name ("" for a cell)
    access: str              # "global", "closure", "attr", "item" (of a container), "method" (its function),
                             # "bound" (the object a method is bound to), "owns" (whether its `__dict__` has it),
                             # "absent" (whether `lacks` finds it missing),
                             # "self" (the holder itself); "item-method", "global-bound"...: the same of a
                             # method held in an item, a global or a cell
    where: str = ""          # the user's file:line of the read

    def describe(self) -> str:
        """One line for the log, the report and a cache miss: what is checked and where."""
        return f"{self.kind.name} {self.source}" + (f" ({self.where})" if self.where else "")

    def current(self):
        """The value the check tests, read now."""
        holder = held(self.holder)
        base, _, part = self.access.rpartition("-")
        if base:                     # "item-method": the function of the method at `holder[name]`
            method = Check(self.kind, self.source, self.expected, self.holder, self.name, base).current()
            return getattr(method, "__func__" if part == "method" else "__self__", None)
        if self.access in ("global", "item"):
            return holder[self.name]
        if self.access == "closure":
            return holder.cell_contents
        if self.access == "method":
            return getattr(getattr(holder, self.name), "__func__", None)
        if self.access == "bound":
            return getattr(getattr(holder, self.name), "__self__", None)
        if self.access == "owns":
            return self.name in vars(holder)
        if self.access == "absent":
            return lacks(holder, self.name)
        if self.access == "self":
            return holder
        return getattr(holder, self.name)
