"""The build's heap: what the builder read from outside state and what it wrote.

`Heap` holds the builder's deferred writes (attributes, globals, closure
cells), the copies (`Shadow`s) of outside lists and dicts the builder may
mutate, and the tensors fed fresh on every call.  `codegen.operators.state`
fills it while TensorFlow traces; `codegen.graph.writeback` turns it into the
write-back plan.
"""
from __future__ import annotations

import dataclasses

from codegen.assumptions import Source
from codegen.errors import Reason, StagingError

DELETED = type("Deleted", (), {"__repr__": lambda self: "<deleted>"})()
NON_READING_MUTATORS = {"append", "extend", "insert", "clear", "add", "update", "setdefault", "__setitem__",
                         "__delitem__", "discard"}


@dataclasses.dataclass
class Shadow:
    """A container the builder sees in place of the user's list or dict."""

    real: object                 # the user's container; None for a rebuilt argument (see `path`)
    path: tuple | None           # ("args", 1) for argument containers, resolved when writing back
    copy: object
    snapshot: object
    source: Source
    holder: tuple | None = None  # (access, holder, name) it was read from, for the identity check
    read: bool = False
    length_read: bool = False    # len() was taken; its items were not read
    mutated: bool = False        # changed by more than appends and dict item assignments
    assigned: set = dataclasses.field(default_factory=set)   # dict keys assigned (written even if unchanged)
    exposed: bool = False        # the lists and dicts it holds were swapped for their copies
    fed: bool = False            # a list of tensors fed item by item (`fed_lists`)
    identity: bool = False       # its identity matters to the build (`fed_lists.identity_of`)
    # (key, value) of `d[n] = v` with a varying Python number `n`, written back after the copy's
    # other writes (`keyed_writes`); from the first, any use of the copy stops the build
    keyed: list = dataclasses.field(default_factory=list)
    keyed_line: str = ""

    def __setattr__(self, name, value):
        if value is True and name in _USES and self.__dict__.get("keyed"):
            self.keyed_use()
        object.__setattr__(self, name, value)

    def keyed_use(self):
        raise StagingError(Reason(
            "python-number", self.keyed_line,
            f"{self.source} is used again after an item write whose key is a Python number that varies between "
            "calls: the build cannot know which item that write replaced",
            "janus specialises on the number's value instead"))


_USES = frozenset({"read", "length_read", "mutated", "exposed"})


class Heap:
    def __init__(self, outside: dict | None = None):
        self.outside = outside if outside is not None else {}   # id -> Source of objects from outside
        self.flat: dict[int, tuple] = {}        # id -> (value, its write-back template): one object, one template
        self.arg_tuples: dict[int, tuple] = {}  # id of a tuple among the arguments -> its path in them
        self.attrs: dict[tuple, list] = {}      # (id(obj), name) -> [obj, name, value, source]
        self.names: dict[tuple, list] = {}      # (id(holder), name) -> [holder, access, name, value, source]
        self.shadows: dict[int, Shadow] = {}    # id(real or rebuilt) -> Shadow
        self.by_copy: dict[int, Shadow] = {}    # id(copy) -> Shadow
        self.fed: dict[tuple, object] = {}      # (access, id(holder), name) -> placeholder
        self.fed_keys: dict = {}                # placeholder ref -> its key in `call_time`
        self.arg_tensors: dict = {}             # input placeholder ref -> its path in the arguments
        self.arg_arrays: dict = {}              # the same, of NumPy arguments (the array stand-in itself)
        # tf.cond output ref -> (predicate, argument path if true, if false): a tensor `if` that
        # passes a tensor argument through gives back the caller's own object on that side
        self.arg_choices: dict = {}
        # attrs key -> (the value written, predicate, side): a write one side of a tensor `if`
        # made, set after the run only where the predicate took that side (`cond_writes`)
        self.cond_writes: dict = {}
        self.reads: list[Source] = []
        self.writes: list[Source] = []

    def shadow(self, real, source, path=None, holder=None):
        sh = self.shadows.get(id(real))
        if sh is None:
            copy = list(real) if type(real) is list else dict(real)
            sh = Shadow(None if path else real, path, copy, list(real) if type(real) is list else dict(real),
                        source, holder)
            self.shadows[id(real)] = sh
            self.by_copy[id(copy)] = sh
        return sh.copy

    def real_of(self, value):
        """The user's list or dict `value` is the build's copy of (`value` itself otherwise): a copy
        an outside container holds in place of its own item stands for that item."""
        sh = self.by_copy.get(id(value))
        return sh.real if sh is not None and sh.real is not None else value

    def mark_read(self, value):
        sh = self.by_copy.get(id(value))
        if sh is not None:
            sh.read = True
