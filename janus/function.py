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
import time
import types
import weakref

import tensorflow as tf
from tensorflow.python.saved_model import save_context

import codegen
from codegen import faults
from codegen.graph import analyze, python_calls
from codegen.operators.defaults import Defaults
from profiler import profile_call, profiling

from janus import run_in_python, testing
from janus.input_signature import InputSignature
from janus.instances import Family, Instances
from janus.log import log
from janus.relaxations import Relaxations
from janus.report import Reported
from janus.segmented import BREAKS, try_split
from janus.state_lock import state_lock
from janus.stack_budget import EagerStack
from janus.tf_api import TfFunctionApi

REGISTRY: "weakref.WeakSet[SpeculativeFunction]" = weakref.WeakSet()
MAX_GUARD_FAILURES = 8
MAX_WRONG_ERRORS = 4
# Guards whose failure says only that this call differs (a zero divisor, a recursion's result of
# the other kind): the graph stays for the next call until they failed MAX_GUARD_FAILURES times.
_TOLERATED = (codegen.Kind.EXACT, codegen.Kind.RESULT_KIND, codegen.Kind.UNCHANGED)
MAX_BUILD_FAILURES = 3
# Reasons a build stops with that come from the call's data, not the program (a tree attribute
# holding another type on one node, a node of a class read through code, a number a recursion
# holds per node or frame used where Python needs its value, whose type and whether it is held
# follow the call's data): that call runs in
# Python and the cached graphs stay; MAX_DATA_FAILURES of them with no graph run between make
# the function imperative.
DATA_DEPENDENT = frozenset({"tree-attribute-types", "tree-node-class", "held-number", "variable-creation"})
MAX_DATA_FAILURES = 4
MAX_REBUILDS = 16          # relax-and-retry rounds within one build (each relaxes something new)
_MISS = object()           # no cached graph accepted the call


@dataclasses.dataclass
class Fallback:
    reason: codegen.Reason
    count: int = 1


class SpeculativeFunction(TfFunctionApi, Reported, codegen.Speculated):
    autograph_info__ = None     # (AutoGraph, converting a function TensorFlow calls back, leaves it as it is)
    def __init__(self, fn, *, profile_runs=3, max_graphs=8, input_signature=None, jit_compile=False,
                 reduce_retracing=False, strict=False, unroll_limit=200, family: Family | None = None,
                 instance=None):
        if not isinstance(fn, types.FunctionType):
            raise TypeError(f"janus.speculate expects a Python function, method, functools.partial or "
                            f"callable object, got {type(fn).__name__} {fn!r}")
        if profile_runs < 1:
            raise ValueError("janus.speculate: profile_runs must be at least 1 (the graph is built from a profile)")
        if max_graphs < 1:
            raise ValueError("janus.speculate: max_graphs must be at least 1")
        functools.update_wrapper(self, fn)
        self.python_function = fn
        self.profile_runs, self.max_graphs, self.jit_compile = profile_runs, max_graphs, jit_compile
        self.reduce_retracing, self.strict, self.unroll_limit = reduce_retracing, strict, unroll_limit
        self.options = dict(profile_runs=profile_runs, max_graphs=max_graphs, input_signature=input_signature,
                            jit_compile=jit_compile, reduce_retracing=reduce_retracing, strict=strict,
                            unroll_limit=unroll_limit)
        self.family = family or Family()
        self.profile = self.family.profile
        self.instances = Instances(lambda obj: SpeculativeFunction(fn, **self.options, family=self.family,
                                                                   instance=obj))
        self.instance = weakref.ref(instance) if instance is not None else None   # the one it is bound to
        self.graphs: list = []
        self.binding = InputSignature(fn, input_signature) if input_signature is not None else None
        self.defaults = Defaults(fn)
        self.input_signature = self.binding.user_specs if self.binding else None
        self.relaxations = Relaxations(self.binding.specs if self.binding else None)
        self.assumption_failures: collections.Counter = collections.Counter()
        self.guard_relaxations = 0          # guard failures that relaxed an assumption
        self.wrong_errors = 0               # graph runs in a row that raised where Python did not
        self.data_failures = 0              # builds since the last graph run that the call's data stopped
        self.assumption_info: dict = {}                 # key -> Assumption (last seen)
        self.fallbacks: dict[tuple, Fallback] = {}
        self.misses: collections.Counter = collections.Counter()   # the check that rejected a call
        self.imperative: codegen.Reason | None = None
        self.segmented = None                           # graph segments with Python between (janus.segmented)
        self.parent_split = None                        # the split this function is a segment of
        self.counters = collections.Counter()
        self.time_in = collections.Counter()
        self._failed_build: codegen.StagingError | None = None
        self._autograph = None                          # the tf.function of get_concrete_function
        self._converted = None                          # AutoGraph's version, run inside an outer trace
        self._lock = state_lock(fn)                     # (shared by every speculated function of fn)
        if family is None:                              # an instance's function is reported by its class's
            REGISTRY.add(self)

    # -- descriptor: works as a method decorator ------------------------------------------
    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        if save_context.in_save_context():
            return self._exported(obj)
        return types.MethodType(self.instances.of(obj) or self, obj)

    # -- the call --------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        self.counters["calls"] += 1
        if self.binding is not None:
            args, kwargs = self.binding.bind(args, kwargs)
        args, kwargs = self.defaults.fill(args, kwargs)
        if not tf.executing_eagerly():
            return self._in_outer_trace(args, kwargs)
        if tf.config.functions_run_eagerly():      # (as `tf.function` does: to debug the Python)
            return self._eager(args, kwargs)
        if self.segmented is not None and not profiling():
            return self._run_segmented(args, kwargs)
        if self.imperative is not None or profiling():
            # Inside another speculated function's profiled run, this one runs as the plain
            # (instrumented) Python it is, so that profile sees its branches and loops.
            return self._eager(args, kwargs)
        if self.family.profile_runs >= self.profile_runs and not faults.active():
            result = self._run_cached(args, kwargs, lock_free=True)
            if result is not _MISS:
                return result
        # Profiling, building, and graphs that write Python state run one thread at a time: a
        # graph reads that state at entry and writes it back after the run, and a concurrent
        # call in between would lose its update.
        with self._lock:
            return self._call_locked(args, kwargs)

    def _run_cached(self, args, kwargs, lock_free: bool):
        """Run the first cached graph whose entry guard accepts the call, or return `_MISS`.
        Without the lock, stop at the first graph that writes Python state."""
        for graph in self.graphs:
            if lock_free and (graph.plan or graph.calls_python or graph.restored_variables):
                break         # (its Python calls are recorded per run; a failed run restores variables)
            inputs = graph.entry_guard(args, kwargs)
            if inputs is not None:
                self.counters["cache_hits"] += 1
                return self._run_graph(graph, inputs, args, kwargs)
        return _MISS

    def _call_locked(self, args, kwargs):
        if self.imperative is not None:
            return self._eager(args, kwargs)
        if self.family.profile_runs < self.profile_runs:
            return self._profiled(args, kwargs)
        if faults.active():
            return self._forced(args, kwargs)
        result = self._run_cached(args, kwargs, lock_free=False)
        if result is not _MISS:
            return result
        self.counters["cache_misses"] += 1
        self._log_miss(args, kwargs)
        for note in self.relaxations.against_state(self.graphs):
            log("state", self, note)
        graph = self._build(args, kwargs)
        if graph is None:
            return self._eager(args, kwargs) if self.imperative else self._after_failed_build(args, kwargs)
        inputs = graph.entry_guard(args, kwargs)
        if inputs is None:           # a read at build time changed what the guard expects, or aliasing
            self._failed_build = codegen.StagingError(codegen.Reason(
                "guard-mismatch", "", f"the new graph's entry guard rejected the call that built it "
                f"({graph.rejected_by(args, kwargs)})"))
            return self._after_failed_build(args, kwargs)
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

    def _in_outer_trace(self, args, kwargs):
        """Called while TensorFlow traces another function (a `tf.function`, Keras, a SavedModel
        export): that graph has no way back to Python when an assumption breaks, so the function is
        traced as `tf.function` traces it (AutoGraph: tensor `if`/`while` become `tf.cond` /
        `tf.while_loop`), with no speculation and no guard."""
        self.counters["outer_traces"] += 1
        with self._lock:
            self._note(codegen.Reason("outer-trace", "", "called while TensorFlow traces another function: "
                                      "traced as tf.function traces it, without speculation", ""))
            if self._converted is None:
                self._converted = tf.autograph.to_graph(self.python_function)
        # Inlined into the outer graph, not a nested function: a synchronisation point inside
        # (an optimizer's all-reduce under `strategy.run`) needs the replica context of that graph.
        return self._converted(*args, **kwargs)

    def _run_segmented(self, args, kwargs):
        self.counters["segmented_runs"] += 1
        start = time.perf_counter()
        try:
            with self._lock, EagerStack():   # (its segments write state) the driver stands where the function would
                return self.segmented.driver(*args, **kwargs)
        finally:
            self.time_in["segmented"] += time.perf_counter() - start

    def _eager(self, args, kwargs):
        if python_calls.replays_outside_calls():      # only instrumented code answers those calls
            return self._profiled(args, kwargs)
        self.counters["eager_runs"] += 1
        start = time.perf_counter()
        try:
            with EagerStack():
                return self.python_function(*args, **kwargs)
        finally:
            self.time_in["eager"] += time.perf_counter() - start

    def _profiled(self, args, kwargs):
        self.counters["eager_runs"] += 1
        self.counters["profile_runs"] += 1
        self.family.profile_runs += 1
        start = time.perf_counter()
        self._remember_call(args, kwargs)
        with EagerStack(below=1):            # (profile_call calls the function)
            outcome, _ = profile_call(self.python_function, args, kwargs, profile=self.profile)
        self.time_in["profile"] += time.perf_counter() - start
        kind, value = outcome
        if kind == "raise":
            raise value
        return value

    # -- graphs -----------------------------------------------------------------------------
    def _log_miss(self, args, kwargs):
        """Say which check of the newest cached graph rejected the call."""
        if not self.graphs:
            self.misses["no graph cached"] += 1
            log("guards", self, "cache miss: no graph cached")
            return
        failed = self.graphs[0].rejected_by(args, kwargs)
        self.misses[failed] += 1
        log("guards", self, f"cache miss: {len(self.graphs)} cached graph(s) rejected the call; "
                            f"the newest failed: {failed}")

    def _build(self, args, kwargs):
        """Build a graph for this call, relaxing and retrying where the trace asks for it (a tree
        to flatten, a join to undo, a relaxation to narrow); at most MAX_REBUILDS times."""
        try:
            converted = codegen.convert(self.python_function)
        except codegen.ConversionError as exc:
            return self._make_imperative(exc.reason)
        for _ in range(MAX_REBUILDS):
            sig = None
            try:
                sig = self._signature(args, kwargs)
                return self._built(self._trace(converted, sig))
            except codegen.ConversionError as exc:
                if exc.reason.kind in DATA_DEPENDENT:
                    return self._data_failed(exc)
                return self._make_imperative(exc.reason, exc)
            except codegen.NeedsTree as exc:
                if not self.relaxations.tree(exc, args, kwargs):
                    return self._make_imperative(exc.reason)
                log("recursion", self, f"{exc.path} is a tree walked by recursion: flattened to tables per call")
            except codegen.JoinBroken as exc:
                if exc.key in self.relaxations.assumptions:
                    return self._make_imperative(exc.reason)
                self.relaxations.assumptions.add(exc.key)      # these calls run one machine each from now on
                log("recursion", self, f"{exc.reason.where}: {exc.reason.explanation}; {exc.reason.hint}")
            except codegen.StagingError as exc:
                narrowed = None if sig is None else self.relaxations.after_staging_error(sig, exc.reason.kind)
                if narrowed is None:
                    return self._staging_failed(exc)
                log("graphs", self, f"{narrowed}: {exc.reason.explanation}")
        return self._make_imperative(codegen.Reason(
            "keeps-failing", "", f"{MAX_REBUILDS} rebuilds of one call did not trace"))

    def _signature(self, args, kwargs):
        r = self.relaxations
        sig = analyze(args, kwargs, r.dims, r.scalars, r.trees, r.specs, r.lists)
        notes = r.against_cache(self.graphs, sig)
        for note in notes:
            log("graphs", self, note)
        return analyze(args, kwargs, r.dims, r.scalars, r.trees, r.specs, r.lists) if notes else sig

    def _trace(self, converted, sig):
        r = self.relaxations
        outside = sig.outside()
        return codegen.build_graph(converted, sig, self.profile, r.assumptions, outside,
                                   jit_compile=self.jit_compile, unroll_limit=self.unroll_limit,
                                   relaxed_state_dims=r.state_dims, relaxed_state_scalars=r.state_scalars,
                                   relaxed_state_lengths=r.state_lengths)

    def _staging_failed(self, exc):
        """A trace failed and nothing is left to relax: imperative if no graph can do it, else a
        counted failure (this call runs eagerly)."""
        if self.strict:
            raise codegen.ConversionError(exc.reason) from None
        if isinstance(exc, (codegen.NeedsPythonValue, codegen.ReplicaSync)) or exc.reason.kind in BREAKS:
            return self._make_imperative(exc.reason, exc)
        if exc.reason.kind in DATA_DEPENDENT:
            return self._data_failed(exc)
        self._failed_build = exc             # counted once the call has run in Python
        return None

    def _data_failed(self, exc):
        """The call's data stopped the build: this call runs in Python, as eager, unprofiled (its
        odd data stays out of the profile), unless such builds keep failing."""
        if self.strict:
            raise codegen.ConversionError(exc.reason) from None
        self.data_failures += 1
        if self.data_failures >= MAX_DATA_FAILURES:
            return self._make_imperative(codegen.Reason(
                "keeps-failing", exc.reason.where, f"{MAX_DATA_FAILURES} graph builds in a row failed on "
                f"the call's data; last: [{exc.reason.kind}] {exc.reason.explanation}", exc.reason.hint))
        self._note(exc.reason)
        self.counters["build_failures"] += 1
        self._failed_build = exc
        return None

    def _after_failed_build(self, args, kwargs):
        """The call runs in Python after its trace failed.  A trace that raised what the program
        itself raises (eager raises the same exception: a wrong argument, a `raise ValueError`)
        is the program's behaviour, not a failure of janus, and is not counted."""
        failed, self._failed_build = self._failed_build, None
        if failed is not None and failed.reason.kind in DATA_DEPENDENT:
            return self._eager(args, kwargs)       # (counted by _data_failed)
        try:
            return self._profiled(args, kwargs)
        except Exception as exc:
            cause = getattr(failed, "__cause__", None)
            if cause is not None and type(cause) is type(exc) and str(cause) == str(exc):
                failed = None
            raise
        finally:
            if failed is not None:
                self._count_build_failure(failed)

    def _count_build_failure(self, exc):
        self._note(exc.reason)
        self.counters["build_failures"] += 1
        if self.counters["build_failures"] >= MAX_BUILD_FAILURES:
            self._make_imperative(codegen.Reason(
                "keeps-failing", exc.reason.where, f"{MAX_BUILD_FAILURES} graph builds failed; last: "
                f"{exc.reason.explanation}"))

    def _built(self, graph):
        self.counters["graphs_built"] += 1
        self.time_in["build"] += graph.build_seconds
        for a in graph.assumptions:
            self.assumption_info[a.key] = a
        self.graphs.insert(0, graph)           # newest (most relaxed) first
        if len(self.graphs) > self.max_graphs:
            self.graphs.pop()
        if graph.xla not in ("", "on"):
            self._note(codegen.Reason("xla", "", f"this graph runs without XLA: {graph.xla}", graph.xla_hint))
        if self.counters["graphs_built"] > 4 * self.max_graphs or (
                self.parent_split is not None and self.counters["graphs_built"] >= self.max_graphs
                and self.counters["cache_hits"] < self.counters["graphs_built"]):
            # (a graph segment that builds more graphs than it reuses is cheaper in Python)
            self._make_imperative(codegen.Reason("keeps-recompiling", "", f"built {self.counters['graphs_built']} "
                                                 f"graphs, reused {self.counters['cache_hits']} times",
                                                 "pass the varying Python values as tensors"))
        log("graphs", self, f"built graph #{self.counters['graphs_built']} "
                      f"({graph.op_count} ops, {graph.build_seconds * 1e3:.0f} ms, "
                      f"{len(graph.assumptions)} assumptions)")
        return graph

    def _run_graph(self, graph, inputs, args, kwargs, keep=True):
        held = [ref() for ref in graph.weak]      # (held for the run: see `codegen.graph.held_weakly`)
        if (why := run_in_python.reason(graph, inputs)) is not None:
            self._note(why)
            return self._eager(args, kwargs)
        start = time.perf_counter()
        forced = testing.force_fallback_enabled()
        saved = graph.snapshot_variables() if forced else None
        try:
            watch = graph.watch(args, kwargs) if graph.python_tokens else None
            with python_calls.recording(graph.python_tokens, watch) as called:
                outs = graph.run(inputs)          # a failed run has restored the variables it wrote
        except Exception as exc:                  # noqa: BLE001 - reproduced eagerly below
            assumption = graph.failed_assumption(exc)
            # In the call's run in Python, the Python the graph called returns what it returned.
            with self._lock, python_calls.replaying(called, watch):
                if assumption is None:
                    return self._after_graph_error(graph, exc, args, kwargs)
                return self._guard_failed(graph, assumption, args, kwargs, keep)
        finally:
            self.time_in["graph"] += time.perf_counter() - start
        if forced:                                # the run is treated as failed: undo it, run in Python
            graph.undo(saved)
            self._note(codegen.Reason("forced-fallback", "", "janus.testing.forced_fallback() is active"))
            return self._profiled(args, kwargs)
        self.counters["graph_runs"] += 1
        self.wrong_errors = self.data_failures = 0
        result = graph.commit(outs, args, kwargs)
        del held                                  # (only now: the write-back is done)
        return result

    def _guard_failed(self, graph, assumption, args, kwargs, keep=True):
        self.counters["guard_failures"] += 1
        if not keep:                        # a failure forced by janus.testing: nothing to relax
            self._note(codegen.Reason("forced-failure", assumption.where, f"forced: {assumption.describe()}"))
            return self._profiled(args, kwargs)
        self.assumption_failures[assumption.key] += 1
        self.assumption_info[assumption.key] = assumption
        if assumption.kind in _TOLERATED and self.assumption_failures[assumption.key] < MAX_GUARD_FAILURES:
            # The program's own arithmetic left the graph's range (a zero divisor, an int past
            # 64 bits): this call runs in Python, as eager, and the graph stays for the next.
            self._note(codegen.Reason(assumption.fallback, assumption.where, f"{assumption.source} failed; this call ran in Python"))
            if assumption.kind is codegen.Kind.RESULT_KIND:
                return self._eager(args, kwargs)     # (a profiled run would set the result types for all)
            return self._profiled(args, kwargs)
        self.relaxations.assumptions.add(assumption.key)
        self.guard_relaxations += 1
        self.graphs = [g for g in self.graphs if all(a.key not in self.relaxations.assumptions
                                                     for a in g.assumptions)]
        self._note(codegen.Reason(f"guard-failed:{assumption.kind.name.lower()}", assumption.where,
                                  f"assumption {assumption.source} == {assumption.expected!r} broke; relaxed"))
        log("guards", self, f"{assumption.describe()} failed; falling back")
        if self.guard_relaxations >= MAX_GUARD_FAILURES:     # (a tolerated failure relaxes nothing)
            self._make_imperative(codegen.Reason("keeps-failing", assumption.where,
                                                 f"{MAX_GUARD_FAILURES} in-graph guards failed"))
        return self._profiled(args, kwargs)

    def _after_graph_error(self, graph, exc, args, kwargs):
        message = getattr(exc, "message", None) or str(exc)
        lines = [ln for ln in message.strip().splitlines()
                 if ln.strip() and not ln.startswith(("Graph execution error", "Detected at node", "  "))]
        first = lines[:1]
        if self.jit_compile and "_XlaMustCompile=true" in message:
            # XLA could not compile the graph (nothing ran): raise it, as tf.function(jit_compile=True)
            # does, instead of quietly running eagerly on every call.
            self._note(codegen.Reason("xla", "", f"XLA cannot compile the graph ({first[0][:300] if first else ''})",
                                      "drop jit_compile=True, or keep the op XLA lacks out of the function"))
            raise exc
        if not graph.replays_python:
            # A tf.py_function may have run before the op failed, and its result cannot be
            # replayed (codegen.graph.python_calls): running the call again would run it twice.
            self._note(codegen.Reason("python-in-graph", "", f"{type(exc).__name__} in a graph that calls Python"
                                      + (f" ({first[0][:300]})" if first else "") + "; raised as the graph's"))
            raise exc
        self._note(codegen.Reason("graph-error", "", f"{type(exc).__name__} while running the graph"
                                  + (f" ({first[0][:300]})" if first else "") + "; re-running eagerly", ""))
        result = self._eager(args, kwargs)       # (eager raising too: the graph was right to fail)
        self.wrong_errors += 1
        if self.wrong_errors >= MAX_WRONG_ERRORS:
            # The graph keeps failing where Python does not (an op whose shapes vary by frame):
            # each such call would pay for the graph and for Python.
            self._make_imperative(codegen.Reason("keeps-failing", "", f"the graph raised on {self.wrong_errors} "
                                                 f"calls in a row where Python did not ({first[0][:200] if first else ''})"))
        return result

    def _make_imperative(self, reason, exc=None):
        """No single graph will do for `reason`: when Python can run that statement between graph
        segments (`janus.segmented.BREAKS`), the function is split there (or, if it is a segment,
        the function it belongs to is split again); otherwise it runs imperatively from now on."""
        if self.strict:
            raise codegen.ConversionError(reason)
        self._note(reason)
        if self.parent_split is not None and self.parent_split.add_break(self.python_function, reason, exc):
            self.imperative = reason            # replaced by the new split; runs this call in Python
            return None
        self.segmented, refused = try_split(self.python_function, reason, exc, lambda f: SpeculativeFunction(
            f, **{**self.options, "input_signature": None, "max_graphs": min(self.max_graphs, 4)}))
        if self.segmented is not None:
            log("fallbacks", self, f"runs as graph segments with Python at {reason.where}")
            return None
        if refused is not None:             # the break could run in Python, but not this function split
            self._note(refused)
            reason = refused
        self.imperative = reason
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
