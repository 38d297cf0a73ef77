"""`SpeculativeFunction`: profile -> speculate -> (guard failed) -> fallback -> relax.

Each call goes one of four ways: a *profiled* eager run while the profile is
young; a *graph* run when an entry guard of a cached graph accepts the
arguments; a *build* on a cache miss (specialised on the profile, relaxed
where earlier graphs were too narrow); an *eager* run when the function is
imperative or a graph could not be built.  An in-graph guard failure
discards the graph's results, re-runs the call eagerly under the profiler,
and relaxes the failed assumption for the next build.
"""
from __future__ import annotations

import collections
import dataclasses
import functools
import re
import time
import types
import weakref

import tensorflow as tf

import codegen
from codegen import faults
from codegen.graph import analyze, current_value
from profiler import Profile, profile_call

from janus import testing
from janus.log import log
from janus.report import render, report_data

_ASSUMPTION_ID = re.compile(r"janus-assumption:(\d+)")
REGISTRY: "weakref.WeakSet[SpeculativeFunction]" = weakref.WeakSet()
MAX_GUARD_FAILURES = 8
MAX_BUILD_FAILURES = 3


@dataclasses.dataclass
class Fallback:
    reason: codegen.Reason
    count: int = 1


class SpeculativeFunction(codegen.Speculated):
    def __init__(self, fn, *, profile_runs=3, max_graphs=8, input_signature=None, jit_compile=False,
                 reduce_retracing=False, strict=False, unroll_limit=200):
        if not isinstance(fn, types.FunctionType):
            raise TypeError(f"janus.speculate expects a Python function, got {type(fn).__name__}")
        if profile_runs < 1:
            raise ValueError("janus.speculate: profile_runs must be at least 1 (the graph is built from a profile)")
        if max_graphs < 1:
            raise ValueError("janus.speculate: max_graphs must be at least 1")
        functools.update_wrapper(self, fn)
        self.python_function = fn
        self.profile_runs = profile_runs
        self.max_graphs = max_graphs
        self.jit_compile = jit_compile
        self.reduce_retracing = reduce_retracing
        self.strict = strict
        self.unroll_limit = unroll_limit
        self.profile = Profile()
        self.graphs: list = []
        self.relaxed: set = set()                       # assumption keys never made again
        self.relaxed_dims: dict[str, set[int]] = collections.defaultdict(set)
        self.relaxed_scalars: dict[str, str] = {}          # path -> dtype it is fed as
        self.relaxed_state_dims: dict[str, set[int]] = collections.defaultdict(set)
        self.relaxed_state_scalars: dict[str, str] = {}    # state source -> dtype it is fed as
        self.tree_paths: dict[str, tuple] = {}             # arguments flattened to tree tables -> methods
        self.assumption_failures: collections.Counter = collections.Counter()
        self.assumption_info: dict = {}                 # key -> Assumption (last seen)
        self.fallbacks: dict[tuple, Fallback] = {}
        self.imperative: codegen.Reason | None = None
        self.counters = collections.Counter()
        self.time_in = collections.Counter()
        self._result_types = None
        if input_signature is not None:
            for i, spec in enumerate(input_signature):
                shape = getattr(spec, "shape", None)
                if shape is not None and shape.rank is not None:
                    self.relaxed_dims[f"args[{i}]"] |= {d for d, n in enumerate(shape.as_list()) if n is None}
        REGISTRY.add(self)

    # -- descriptor: works as a method decorator ------------------------------------------
    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return types.MethodType(self, obj)

    # -- the call --------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        self.counters["calls"] += 1
        if self.imperative is not None:
            return self._eager(args, kwargs)
        if self.counters["profile_runs"] < self.profile_runs:
            return self._profiled(args, kwargs)
        if faults.active():
            return self._forced(args, kwargs)
        for graph in self.graphs:
            inputs = graph.entry_guard(args, kwargs)
            if inputs is not None:
                self.counters["cache_hits"] += 1
                return self._run_graph(graph, inputs, args, kwargs)
        self.counters["cache_misses"] += 1
        log("guards", self, f"cache miss: the entry guards of {len(self.graphs)} cached graph(s) rejected the call")
        self._relax_state()
        graph = self._build(args, kwargs)
        if graph is None:
            return self._eager(args, kwargs) if self.imperative else self._profiled(args, kwargs)
        inputs = graph.entry_guard(args, kwargs)
        if inputs is None:           # a read at build time changed what the guard expects
            self._note(codegen.Reason("guard-mismatch", "", "the new graph's entry guard rejected the call that built it"))
            return self._eager(args, kwargs)
        return self._run_graph(graph, inputs, args, kwargs)

    def _forced(self, args, kwargs):
        """Testing hook active: a fresh, uncached graph whose chosen guard fails."""
        cached = self.graphs
        self.graphs = []
        try:
            graph = self._build(args, kwargs)
        finally:
            self.graphs = cached
        if graph is None:
            return self._eager(args, kwargs)
        inputs = graph.entry_guard(args, kwargs)
        if inputs is None:
            return self._eager(args, kwargs)
        return self._run_graph(graph, inputs, args, kwargs, keep=False)

    def _eager(self, args, kwargs):
        self.counters["eager_runs"] += 1
        start = time.perf_counter()
        try:
            return self.python_function(*args, **kwargs)
        finally:
            self.time_in["eager"] += time.perf_counter() - start

    def _profiled(self, args, kwargs):
        self.counters["eager_runs"] += 1
        self.counters["profile_runs"] += 1
        start = time.perf_counter()
        outcome, _ = profile_call(self.python_function, args, kwargs, profile=self.profile)
        self.time_in["profile"] += time.perf_counter() - start
        kind, value = outcome
        if kind == "raise":
            raise value
        self._result_types = _type_template(value)
        return value

    # -- graphs -----------------------------------------------------------------------------
    def _relax_against_cache(self, sig):
        """Generalise where this call differs from graphs already built: dims -> None, scalars -> tensors."""
        changed = False
        for graph in self.graphs:
            old = {leaf.path: leaf for leaf in graph.signature.leaves}
            for leaf in sig.leaves:
                prev = old.get(leaf.path)
                if prev is None:
                    continue
                if leaf.kind == prev.kind == "tensor" and leaf.dtype == prev.dtype and leaf.shape and prev.shape \
                        and len(leaf.shape) == len(prev.shape):
                    dims = {d for d, (a, b) in enumerate(zip(leaf.shape, prev.shape)) if a != b and a is not None}
                    if dims - self.relaxed_dims[leaf.path] and ("dims", leaf.path) not in self.relaxed:
                        self.relaxed_dims[leaf.path] |= dims
                        changed = True
                        log("graphs", self, f"{leaf.path} dims {sorted(dims)} relaxed to None")
                elif leaf.kind == prev.kind == "scalar" and type(leaf.value) is type(prev.value) \
                        and type(leaf.value) in (int, float) and leaf.value != prev.value \
                        and leaf.path not in self.relaxed_scalars and ("scalar", leaf.path) not in self.relaxed:
                    self.relaxed_scalars[leaf.path] = "int32" if type(leaf.value) is int else "float32"
                    changed = True
                    log("graphs", self, f"{leaf.path} varies; fed as a tensor")
        return changed

    def _build(self, args, kwargs):
        try:
            converted = codegen.convert(self.python_function)
        except codegen.ConversionError as exc:
            return self._make_imperative(exc.reason)
        sig = analyze(args, kwargs, self.relaxed_dims, self.relaxed_scalars, self.tree_paths)
        if self._relax_against_cache(sig):
            sig = analyze(args, kwargs, self.relaxed_dims, self.relaxed_scalars, self.tree_paths)
        outside = {id(leaf.value): leaf.path for leaf in sig.leaves if leaf.kind == "object"}
        try:
            graph = codegen.build_graph(converted, sig, self.profile, self.relaxed, outside,
                                        jit_compile=self.jit_compile, unroll_limit=self.unroll_limit,
                                        relaxed_state_dims=self.relaxed_state_dims,
                                        relaxed_state_scalars=self.relaxed_state_scalars)
        except codegen.ConversionError as exc:
            return self._make_imperative(exc.reason)
        except codegen.NeedsTree as exc:
            if exc.path in self.tree_paths:
                raise codegen.ConversionError(exc.reason) from None
            self.tree_paths[exc.path] = exc.methods  # fed as tables from now on
            for sibling in _siblings(exc.path, args, kwargs):    # the other trees of the same batch too
                self.tree_paths.setdefault(sibling, exc.methods)
            log("recursion", self, f"{exc.path} is a tree walked by recursion: flattened to tables per call")
            return self._build(args, kwargs)
        except codegen.JoinBroken as exc:
            if exc.key in self.relaxed:
                raise codegen.ConversionError(exc.reason) from None
            self.relaxed.add(exc.key)                 # these calls run one machine each from now on
            log("recursion", self, f"{exc.reason.where}: {exc.reason.explanation}; not joined")
            return self._build(args, kwargs)
        except codegen.StagingError as exc:
            scalar_leaves = [leaf.path for leaf in sig.leaves if leaf.kind == "scalar-tensor"]
            relaxed_paths = [leaf.path for leaf in sig.leaves if leaf.kind == "tensor" and self.relaxed_dims.get(leaf.path)
                             and ("dims", leaf.path) not in self.relaxed]
            if relaxed_paths:
                # Python code used a dimension as a number (range(x.shape[0])): keep it specialised.
                for path in relaxed_paths:
                    self.relaxed_dims[path] = set()
                    self.relaxed.add(("dims", path))
                log("graphs", self, f"{relaxed_paths} stay specialised: {exc.reason.explanation}")
                return self._build(args, kwargs)
            if self.relaxed_state_scalars:
                # Same for Python scalars read from state and fed as tensors.
                for source, dtype in list(self.relaxed_state_scalars.items()):
                    if dtype == "int32":
                        self.relaxed_state_scalars[source] = "float32"
                    else:
                        del self.relaxed_state_scalars[source]
                        self.relaxed.add(("state-scalar", source))
                return self._build(args, kwargs)
            if scalar_leaves:
                # A Python int fed as int32 may meet float tensors (`x * k`): try float32; if
                # that does not trace either, keep specialising on its value.
                for path in scalar_leaves:
                    if self.relaxed_scalars[path] == "int32":
                        self.relaxed_scalars[path] = "float32"
                    else:
                        del self.relaxed_scalars[path]
                        self.relaxed.add(("scalar", path))
                return self._build(args, kwargs)
            if self.strict:
                raise codegen.ConversionError(exc.reason) from None
            if "SymbolicTensor" in exc.reason.explanation and any(
                    f"{conv}()" in exc.reason.explanation for conv in ("float", "int", "bool", "len")) \
                    or "has no attribute 'numpy'" in exc.reason.explanation:
                # Python needs a tensor's value here (float(t), t.numpy()): no graph can do that.
                return self._make_imperative(codegen.Reason(
                    "python-value-of-tensor", exc.reason.where, exc.reason.explanation,
                    "keep the decision in TensorFlow ops (tf.cond, tf.where) or move it out of the function"))
            self._note(exc.reason)
            self.counters["build_failures"] += 1
            if self.counters["build_failures"] >= MAX_BUILD_FAILURES:
                return self._make_imperative(codegen.Reason(
                    "keeps-failing", exc.reason.where, f"{MAX_BUILD_FAILURES} graph builds failed; last: "
                    f"{exc.reason.explanation}"))
            return None
        self.counters["graphs_built"] += 1
        self.time_in["build"] += graph.build_seconds
        for a in graph.assumptions:
            self.assumption_info[a.key] = a
        self.graphs.insert(0, graph)           # newest (most relaxed) first
        if len(self.graphs) > self.max_graphs:
            self.graphs.pop()
        if self.counters["graphs_built"] > 4 * self.max_graphs:
            self._make_imperative(codegen.Reason("keeps-recompiling", "", f"built {4 * self.max_graphs} graphs",
                                                 "pass the varying Python values as tensors"))
        log("graphs", self, f"built graph #{self.counters['graphs_built']} "
                      f"({graph.op_count} ops, {graph.build_seconds * 1e3:.0f} ms, "
                      f"{len(graph.assumptions)} assumptions)")
        return graph

    def _relax_state(self):
        """On a miss: state the cached graphs took as fixed but that changed is relaxed
        (a tensor attribute's changed dims become None, a varying Python number a tensor)."""
        for graph in self.graphs:
            for check in graph.checks:
                try:
                    now = current_value(check)
                except Exception:  # noqa: BLE001 - a vanished value is just a miss
                    continue
                if check.mode in ("tensor", "tensors"):
                    pairs = [(check.source, now, check.expected)] if check.mode == "tensor" else (
                        [(f"{check.source}[{i}]", v, e) for i, (v, e) in enumerate(zip(now, check.expected))]
                        if type(now) is tuple and len(now) == len(check.expected) else [])
                    for source, value, (dtype, shape) in pairs:
                        if not (isinstance(value, tf.Tensor) and value.dtype == dtype and shape is not None
                                and value.shape.rank == len(shape)):
                            continue
                        dims = {d for d, (a, b) in enumerate(zip(value.shape.as_list(), shape))
                                if b is not None and a != b}
                        if dims - self.relaxed_state_dims[source]:
                            self.relaxed_state_dims[source] |= dims
                            log("state", self, f"{source} dims {sorted(dims)} relaxed to None")
                elif check.mode == "const" and type(now) is type(check.expected) and type(now) in (int, float) \
                        and now != check.expected and check.source not in self.relaxed_state_scalars \
                        and ("state-scalar", check.source) not in self.relaxed:
                    self.relaxed_state_scalars[check.source] = "int32" if type(now) is int else "float32"
                    log("state", self, f"{check.source} varies; fed as a tensor")

    def _run_graph(self, graph, inputs, args, kwargs, keep=True):
        start = time.perf_counter()
        try:
            outs = graph.run(inputs)
        except tf.errors.InvalidArgumentError as exc:
            match = _ASSUMPTION_ID.search(str(exc))
            if match is None:
                return self._after_graph_error(exc, args, kwargs)
            return self._guard_failed(graph, graph.assumptions[int(match.group(1))], args, kwargs, keep)
        except Exception as exc:                  # noqa: BLE001 - reproduced eagerly below
            return self._after_graph_error(exc, args, kwargs)
        finally:
            self.time_in["graph"] += time.perf_counter() - start
        if testing.force_fallback_enabled():
            self._note(codegen.Reason("forced-fallback", "", "janus.testing.forced_fallback() is active"))
            return self._profiled(args, kwargs)
        self.counters["graph_runs"] += 1
        return self._python_result(graph.commit(outs, args, kwargs))

    def _python_result(self, result):
        """Leaves eager returned as Python scalars come back as Python scalars (a Python
        scalar argument fed as a tensor makes them tensors in the graph)."""
        return _match_types(result, self._result_types)

    def _guard_failed(self, graph, assumption, args, kwargs, keep=True):
        self.counters["guard_failures"] += 1
        if not keep:                        # a failure forced by janus.testing: nothing to relax
            self._note(codegen.Reason("forced-failure", assumption.where, f"forced: {assumption.describe()}"))
            return self._profiled(args, kwargs)
        self.assumption_failures[assumption.key] += 1
        self.assumption_info[assumption.key] = assumption
        self.relaxed.add(assumption.key)
        self.graphs = [g for g in self.graphs if all(a.key not in self.relaxed for a in g.assumptions)]
        self._note(codegen.Reason(f"guard-failed:{assumption.kind.name.lower()}", assumption.where,
                                  f"assumption {assumption.source} == {assumption.expected!r} broke; relaxed"))
        log("guards", self, f"{assumption.describe()} failed; falling back")
        if self.counters["guard_failures"] >= MAX_GUARD_FAILURES:
            self._make_imperative(codegen.Reason("keeps-failing", assumption.where,
                                                 f"{MAX_GUARD_FAILURES} in-graph guards failed"))
        return self._profiled(args, kwargs)

    def _after_graph_error(self, exc, args, kwargs):
        lines = [ln for ln in (getattr(exc, "message", None) or str(exc)).strip().splitlines()
                 if ln.strip() and not ln.startswith(("Graph execution error", "Detected at node", "  "))]
        first = lines[:1]
        self._note(codegen.Reason("graph-error", "", f"{type(exc).__name__} while running the graph"
                                  + (f" ({first[0][:300]})" if first else "") + "; re-running eagerly", ""))
        return self._eager(args, kwargs)

    def _make_imperative(self, reason):
        if self.strict:
            raise codegen.ConversionError(reason)
        self.imperative = reason
        self._note(reason)
        log("fallbacks", self, f"runs imperatively from now on: {reason}")
        return None

    def _note(self, reason):
        key = (reason.kind, reason.where)
        if key in self.fallbacks:
            self.fallbacks[key].count += 1
        else:
            self.fallbacks[key] = Fallback(reason)
        self.counters["fallbacks"] += 1
        log("fallbacks", self, f"{reason}")

    # -- introspection ----------------------------------------------------------------------
    def stats(self) -> dict:
        keys = ("calls", "profile_runs", "graph_runs", "eager_runs", "guard_failures", "graphs_built",
                "cache_hits", "cache_misses", "fallbacks", "build_failures")
        out = {k: self.counters[k] for k in keys}
        out["graphs_cached"] = len(self.graphs)
        out["imperative"] = self.imperative is not None
        return out

    def show_code(self) -> str:
        return codegen.convert(self.python_function).source

    def report(self, format: str = "text"):
        """What janus assumed, what broke, what stayed imperative, what it cost.

        `format="text"`: a readable report (str).  `format="json"`: the same facts as a
        dict of JSON types with stable keys (documented in `janus.report`), so
        `json.loads(json.dumps(r)) == r`."""
        if format == "text":
            return render(self)
        if format == "json":
            return report_data(self)
        raise ValueError(f"report(format={format!r}): format is 'text' or 'json'")


_PY_SCALARS = {bool: bool, int: int, float: float}


def _type_template(value):
    if type(value) in (list, tuple):
        return (type(value), [_type_template(v) for v in value])
    if type(value) is dict:
        return (dict, {k: _type_template(v) for k, v in value.items()})
    return type(value)


def _match_types(value, template):
    if template is None:
        return value
    if isinstance(template, tuple):
        kind, inner = template
        if type(value) is kind and kind in (list, tuple) and len(value) == len(inner):
            return kind(_match_types(v, t) for v, t in zip(value, inner))
        if type(value) is dict and kind is dict and value.keys() == inner.keys():
            return {k: _match_types(v, inner[k]) for k, v in value.items()}
        return value
    if template in _PY_SCALARS and isinstance(value, tf.Tensor) and value.shape.rank == 0:
        return template(value.numpy())
    return value


def _siblings(path: str, args, kwargs) -> list[str]:
    """Paths of the other elements of the list or tuple that holds `path` ("args[1][3]")."""
    match = re.fullmatch(r"(.*)\[(\d+)\]", path)
    if match is None:
        return []
    parent_path = match.group(1)
    try:
        parent = eval(parent_path, {}, {"args": args, "kwargs": kwargs})   # noqa: S307 - our own path syntax
    except Exception:  # noqa: BLE001
        return []
    if type(parent) not in (list, tuple):
        return []
    me = parent[int(match.group(2))]
    return [f"{parent_path}[{i}]" for i, item in enumerate(parent) if type(item) is type(me)]
