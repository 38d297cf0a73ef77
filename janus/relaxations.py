"""What janus stopped assuming for one speculated function, read by its next build.

Keys are `codegen.Source`s (where a value comes from) and assumption keys;
the values say how the next graph treats them: argument dimensions fed as
`None`, Python numbers fed as tensors of a dtype, trees fed as tables, and
values pinned back to specialisation because Python code needs them as
numbers.  Every change returns a line for the log, so a reader can follow
each relaxation.
"""
from __future__ import annotations

import collections
import math

import numpy as np
import tensorflow as tf

from codegen import Feed, Kind, NeedsTree, Source
from codegen.assumptions import NUMPY_SCALARS, scalar_dtype


class Relaxations:
    def __init__(self, input_signature=None):
        self.assumptions: set = set()          # in-graph assumption and join keys never made again
        self.dims: dict[Source, set[int]] = collections.defaultdict(set)        # argument dims fed as None
        self.scalars: dict[Source, str] = {}                                  # argument numbers -> dtype fed
        self.state_dims: dict[Source, set[int]] = collections.defaultdict(set)  # state tensors' dims as None
        self.state_scalars: dict[Source, str] = {}                            # state numbers -> dtype fed
        self.state_lengths: set[Source] = set()   # state containers whose len() is fed per call
        self.trees: dict[Source, tuple] = {}   # arguments flattened to tree tables -> node methods
        self.specs: dict[Source, object] = {}  # composite tensor arguments -> the wider spec fed
        self.lists: set[Source] = set()        # argument lists whose length varies: fed by identity
        self.pinned_lists: set[Source] = set()     # the graph reads these lists: fed item by item
        self.pinned_dims: set[Source] = set()      # Python reads these dims as numbers: keep them
        self.pinned_scalars: set[Source] = set()   # these numbers do not trace as tensors: keep values
        self.pinned_state: set[Source] = set()     # same, for numbers read from state
        for i, spec in enumerate(input_signature or ()):
            shape = getattr(spec, "shape", None)
            if shape is not None and shape.rank is not None:
                self.dims[Source.arg(i)] |= {d for d, n in enumerate(shape.as_list()) if n is None}

    # -- from a cache miss: widen where this call differs from the graphs built ------------------
    def against_cache(self, graphs, sig) -> list[str]:
        """Dimensions that differ become None; Python numbers that differ become tensors."""
        notes = []
        for graph in graphs:
            for path, n in sig.lengths.items():
                before = graph.signature.lengths.get(path)
                if before is not None and before != n and path not in self.lists | self.pinned_lists:
                    self.lists.add(path)
                    notes.append(f"{path} changes length; fed by identity, its appends written back")
            old = {leaf.path: leaf for leaf in graph.signature.leaves}
            for leaf in sig.leaves:
                prev = old.get(leaf.path)
                if prev is not None:
                    notes += self._widen_leaf(leaf, prev)
        return notes

    def _widen_leaf(self, leaf, prev) -> list[str]:
        path = leaf.path
        if leaf.kind is prev.kind is Feed.TENSOR and leaf.dtype == prev.dtype and leaf.shape and prev.shape \
                and len(leaf.shape) == len(prev.shape):
            dims = {d for d, (a, b) in enumerate(zip(leaf.shape, prev.shape)) if a != b and a is not None}
            if dims - self.dims[path] and path not in self.pinned_dims:
                self.dims[path] |= dims
                return [f"{path} dims {sorted(dims)} relaxed to None"]
        elif leaf.kind is prev.kind is Feed.COMPOSITE and leaf.value != prev.value:
            wider = prev.value.most_specific_common_supertype([leaf.value])
            if wider is not None and wider != self.specs.get(path):
                self.specs[path] = wider
                return [f"{path} relaxed to {wider}"]
        elif leaf.kind is prev.kind is Feed.SCALAR and type(leaf.value) is type(prev.value) \
                and (type(leaf.value) in (int, float) or type(leaf.value) in NUMPY_SCALARS) \
                and _differ(leaf.value, prev.value) and path not in self.scalars and path not in self.pinned_scalars:
            self.scalars[path] = scalar_dtype(type(leaf.value))
            return [f"{path} varies; fed as a tensor"]
        return []

    def against_state(self, graphs) -> list[str]:
        """State the cached graphs took as fixed but that changed: a tensor's changed dims become
        None, a varying Python number a tensor."""
        notes = []
        for graph in graphs:
            for check in graph.checks:
                try:
                    now = check.current()
                except Exception:  # noqa: BLE001 - a vanished value is just a miss
                    continue
                notes += self._widen_state(check, now)
        return notes

    def _widen_state(self, check, now) -> list[str]:
        if check.kind is Kind.LIST_TENSORS_MATCH and type(now) is list and len(now) != len(check.expected) \
                and check.source not in self.state_lengths:
            self.state_lengths.add(check.source)        # (a growing list: read by identity, items by index)
            return [f"len({check.source}) varies; the list is read as the same list"]
        if check.kind in (Kind.TENSOR_MATCH, Kind.TENSORS_MATCH, Kind.LIST_TENSORS_MATCH, Kind.ARRAY_MATCH):
            if check.kind is Kind.ARRAY_MATCH:
                pairs = [(check.source, tf.convert_to_tensor(now), (tf.as_dtype(check.expected[0]),
                                                                    check.expected[1]))] \
                    if isinstance(now, np.ndarray) else []
            elif check.kind is Kind.TENSOR_MATCH:
                pairs = [(check.source, now, check.expected)]
            elif type(now) in (tuple, list) and len(now) == len(check.expected):
                pairs = [(check.source.item(i), v, e) for i, (v, e) in enumerate(zip(now, check.expected))]
            else:
                pairs = []
            notes = []
            for source, value, (dtype, shape) in pairs:
                if not (isinstance(value, tf.Tensor) and value.dtype == dtype and shape is not None
                        and value.shape.rank == len(shape)):
                    continue
                dims = {d for d, (a, b) in enumerate(zip(value.shape.as_list(), shape)) if b is not None and a != b}
                if dims - self.state_dims[source]:
                    self.state_dims[source] |= dims
                    notes.append(f"{source} dims {sorted(dims)} relaxed to None")
            return notes
        if check.kind is Kind.LENGTH_MATCH and len(now) != check.expected and check.source not in self.state_lengths:
            self.state_lengths.add(check.source)
            return [f"len({check.source}) varies; fed as a number"]
        if check.kind is Kind.CONSTANT and type(now) is type(check.expected) \
                and (type(now) in (int, float) or type(now) in NUMPY_SCALARS) and _differ(now, check.expected) \
                and check.source not in self.state_scalars and check.source not in self.pinned_state:
            self.state_scalars[check.source] = scalar_dtype(type(now))
            return [f"{check.source} varies; fed as a tensor"]
        return []

    # -- from a failed build: narrow what did not trace ----------------------------------------
    def after_staging_error(self, sig, kind: str = "") -> str | None:
        """Undo the relaxation that most likely made tracing fail; None when there is none left.
        Python code may use a dimension as a number (`range(x.shape[0])`), or need the value of a
        Python number fed as a tensor (`lst[n]`, `str(n)`): specialise on it again."""
        lists = [leaf.path for leaf in sig.leaves if leaf.kind is Feed.LIST] if kind == "list-read" else []
        if lists:
            self.lists -= set(lists)
            self.pinned_lists |= set(lists)
            return f"{[str(p) for p in lists]} are fed item by item again"
        dims = [leaf.path for leaf in sig.leaves if leaf.kind is Feed.TENSOR and self.dims.get(leaf.path)
                and leaf.path not in self.pinned_dims]
        if dims:
            for path in dims:
                self.dims[path] = set()
                self.pinned_dims.add(path)
            return f"{[str(p) for p in dims]} stay specialised"
        if self.state_scalars:
            for source in list(self.state_scalars):
                del self.state_scalars[source]
                self.pinned_state.add(source)
            return "state numbers fed as tensors are specialised again"
        scalars = [leaf.path for leaf in sig.leaves if leaf.kind is Feed.SCALAR_TENSOR]
        if scalars:
            for path in scalars:
                del self.scalars[path]
                self.pinned_scalars.add(path)
            return f"{[str(p) for p in scalars]} are specialised again"
        return None

    def tree(self, exc: NeedsTree, args, kwargs) -> bool:
        """Feed the tree argument (and the other trees of its list) as tables; False if it already was."""
        if exc.path in self.trees:
            return False
        self.trees[exc.path] = exc.methods
        for sibling in _siblings(exc.path, args, kwargs):
            self.trees.setdefault(sibling, exc.methods)
        return True

    def to_dict(self) -> dict:
        """The widenings in force, as JSON types (the report's `relaxed`)."""
        return {"dims": {str(p): sorted(int(d) for d in dims) for p, dims in self.dims.items() if dims},
                "scalars": {str(p): dt for p, dt in sorted(self.scalars.items())},
                "state_dims": {str(p): sorted(int(d) for d in dims) for p, dims in self.state_dims.items() if dims},
                "state_scalars": {str(p): dt for p, dt in sorted(self.state_scalars.items())}}


def _siblings(path, args, kwargs) -> list[Source]:
    """The other elements of the same type in the list or tuple that holds `path`."""
    if not isinstance(path, Source) or path.parent is None or path.step[0] != "item":
        return []
    try:
        parent = path.parent.resolve(args, kwargs)
    except Exception:  # noqa: BLE001 - not an argument container
        return []
    if type(parent) not in (list, tuple):
        return []
    me = parent[path.step[1]]
    return [path.parent.item(i) for i, item in enumerate(parent) if type(item) is type(me)]


def _differ(a, b) -> bool:
    """Whether two numbers of one type differ (a NaN differs from itself; -0.0 from 0.0)."""
    return a != b or math.copysign(1.0, a) != math.copysign(1.0, b) if isinstance(a, (float, np.floating)) else a != b
